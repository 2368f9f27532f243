from __future__ import annotations

from collections.abc import Iterator

import pytest

from conduct.testing.fake_openai import FakeOpenAIServer


@pytest.fixture(scope="session")
def fake_openai_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def fake_openai(fake_openai_server: FakeOpenAIServer) -> FakeOpenAIServer:
    """The running local chat-completions server, with no scripts or recorded requests."""
    fake_openai_server.reset()
    fake_openai_server.api_key = None
    fake_openai_server.strict_models = False
    return fake_openai_server


@pytest.fixture
def guide(project, owner):
    from conduct.services import guide_create

    return guide_create(
        project=project,
        user=owner,
        name="Values",
        opening_prompt="What does fairness mean to you?",
        system_prompt="You are taking part in a research interview.",
        planned_questions=[
            {"text": "Where does that view come from?", "probes": ["Can you give an example?"]},
            {"text": "How sure are you?", "probes": []},
        ],
    )


@pytest.fixture
def live(project, fake_openai):
    """Make live participants answering from the fake server: live("GPT", "gpt-x", **endpoint)."""
    from conduct.services import live_participant_save

    def make(label: str, model: str, **kwargs):
        fields = {
            "provider": "Fake",
            "model_id": model,
            "base_url": fake_openai.base_url,
            "temperature": None,
            "top_p": None,
            "seed": None,
            "max_tokens": None,
            "timeout_seconds": 5.0,
            "api_key": None,
        } | kwargs
        return live_participant_save(project=project, participant=None, label=label, **fields)

    return make


@pytest.fixture
def inline_answers(settings):
    """Answers run inside the request (not in a thread), so tests see them in their transaction."""
    settings.CONDUCT_EAGER_IN_THREAD = False
    settings.OPENAI_API_KEY = "sk-deployment-test"
    settings.CONDUCT_SAVE_INTERVAL = 0.05
    settings.CONDUCT_BACKOFF_BASE = 0.01
    settings.CONDUCT_HEARTBEAT_SECONDS = 60  # no heartbeat thread write inside the test transaction


@pytest.fixture
def start_worker(transactional_db):
    """Start real Celery worker processes (threads pool: several answers stream at once).

    Returns a function that starts one and returns its Popen; all are stopped at teardown.
    """
    import os
    import subprocess
    import sys

    from django.conf import settings
    from django.db import connection

    from conftest import ROOT, _wait_for_worker

    procs: list[subprocess.Popen] = []

    def start() -> subprocess.Popen:
        env = dict(os.environ)
        db = connection.settings_dict
        env["DATABASE_URL"] = f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}"
        env["CELERY_QUEUE"] = settings.CELERY_TASK_DEFAULT_QUEUE
        env["DJANGO_SETTINGS_MODULE"] = "config.settings_test"
        env["CELERY_TASK_ALWAYS_EAGER"] = "false"
        env["CONDUCT_HEARTBEAT_SECONDS"] = "0.5"
        env["OPENAI_API_KEY"] = "sk-deployment-test"  # the worker reads its own settings
        queue = settings.CELERY_TASK_DEFAULT_QUEUE
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=threads", "--concurrency=4",
             "--loglevel=" + os.environ.get("CONDUCT_WORKER_LOGLEVEL", "WARNING"), "-Q", queue, "-n", f"{queue}@%h", "--without-gossip", "--without-mingle",
             "--without-heartbeat"],
            cwd=ROOT, env=env, start_new_session=True,
        )
        procs.append(proc)
        _wait_for_worker(queue)
        return proc

    yield start
    from tests.faults import stop_group

    for proc in procs:
        stop_group(proc)


def wait_until(predicate, timeout: float = 60, interval: float = 0.1, message: str = "condition"):
    """Poll `predicate` until it returns something truthy; fail with `message` after `timeout` s."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    pytest.fail(f"Timed out after {timeout} s waiting for {message}")
