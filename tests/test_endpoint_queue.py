"""Every task that waits on a model's endpoint goes to the endpoint queue a deployment names (CONDUCT_QUEUE),
served by a threads-pool worker: a probe asking 16 at once must not be run 2 at a time by the prefork worker."""

from __future__ import annotations

import json
import uuid

import pytest
import redis
from django.conf import settings

from coding.reader import _send_window
from conduct.tasks import enqueue_answer
from config.celery import app
from probes.tasks import enqueue_answers


@pytest.fixture
def endpoint_queue(monkeypatch):
    """A queue of this test's own on the real broker; yields a function reading the task names sent to it."""
    name = f"endpoint-test-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("CONDUCT_QUEUE", name)
    eager, app.conf.task_always_eager = app.conf.task_always_eager, False
    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)

    def sent() -> list[str]:
        return sorted(json.loads(message)["headers"]["task"] for message in broker.lrange(name, 0, -1))

    yield sent
    app.conf.task_always_eager = eager
    broker.delete(name)


def test_live_answers_probe_answers_and_reader_windows_all_go_to_the_endpoint_queue(endpoint_queue, db,
                                                                                    django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        enqueue_answer(1)
        enqueue_answers([2, 3])
        _send_window(4, 0)
    assert endpoint_queue() == ["coding.tasks.reader_window_task", "conduct.tasks.answer_turn_task",
                                "probes.tasks.probe_answer_task", "probes.tasks.probe_answer_task"]
