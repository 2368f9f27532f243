"""Answers stream in a real Celery worker process; killing it loses no saved turn."""

from __future__ import annotations

import os
import signal

import pytest
from django.urls import reverse

from conduct import services
from conduct.models import AnswerJob
from conduct.tests.conftest import wait_until
from interviews.models import Turn

pytestmark = [pytest.mark.worker, pytest.mark.slow]

LONG = " ".join(f"Sentence number {i} of a long and careful answer." for i in range(80))


@pytest.fixture
def worker_settings(settings):
    settings.OPENAI_API_KEY = "sk-deployment-test"
    # The worker beats every 0.5 s (see start_worker); ten missed beats, not four, so a busy machine's
    # late beat is not taken for a dead worker.
    settings.CONDUCT_STALE_SECONDS = 5.0


def test_two_answers_stream_at_once_in_the_worker(project, owner, guide, live, fake_openai, worker_settings, start_worker):
    start_worker()
    # Both streams pause after 30 chunks until the test has seen them part-way at the same moment.
    scripts = [fake_openai.script("model-a", answer=LONG[:1500], chunk_chars=12, delay=0.03, model_id="model-a-2026",
                                  hold_after_chunks=30),
               fake_openai.script("model-b", answer=LONG[:1200], chunk_chars=12, delay=0.03, hold_after_chunks=30)]
    session = services.session_start(
        project=project, user=owner, guide_version=guide.versions.get(), participants=[live("A", "model-a"), live("B", "model-b")]
    )
    answers = Turn.objects.filter(interview__conduct_seat__session=session, speaker="participant")

    # Both are part-way at the same moment: streaming, with some text saved, not all.
    def both_partial():
        rows = list(answers.values_list("status", "text"))
        return all(status == "streaming" and 0 < len(text) < 1200 for status, text in rows)

    wait_until(both_partial, message="both answers to be streaming with partial text")
    for script in scripts:
        script.release()
    wait_until(lambda: set(answers.values_list("status", flat=True)) == {"complete"}, message="both answers to complete")
    a = answers.get(interview__participant__label="A")
    assert a.text == LONG[:1500]
    assert a.metadata["provenance"]["model_returned"] == "model-a-2026"
    assert a.metadata["provenance"]["usage"]["completion_tokens"] == len(LONG[:1500].split())
    assert AnswerJob.objects.get(turn=a).state == AnswerJob.State.DONE


def test_killing_the_worker_mid_answer_keeps_saved_turns_and_the_answer_can_be_retried(
    project, owner, guide, live, fake_openai, worker_settings, start_worker, client_for
):
    worker = start_worker()
    # Held after 40 chunks (400 characters) until the worker is dead: it dies mid-answer, never after it.
    held = fake_openai.script("model-a", answer=LONG, chunk_chars=10, delay=0.03, hold_after_chunks=40)
    session = services.session_start(
        project=project, user=owner, guide_version=guide.versions.get(), participants=[live("A", "model-a")]
    )
    question, answer = session.seats.get().interview.turns.order_by("position")
    wait_until(lambda: len(Turn.objects.get(pk=answer.pk).text) > 100, message="part of the answer to be saved")

    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait()
    held.release()  # the stream's listener is gone; let the fake endpoint's handler finish
    saved = Turn.objects.get(pk=answer.pk).text
    assert 100 < len(saved) < len(LONG)
    assert Turn.objects.get(pk=question.pk).text == "What does fairness mean to you?"

    # The page notices the silent worker, keeps the text and offers a retry.
    client = client_for(owner)
    turn_url = reverse("conduct:turn", kwargs={"project_uuid": project.uuid, "turn_uuid": answer.uuid})
    body = wait_until(
        lambda: (b := client.get(turn_url, HTTP_HX_REQUEST="true").content.decode()) and "Interrupted" in b and b,
        message="the answer to be marked interrupted",
    )
    assert "Retry" in body and "The worker stopped while this answer was arriving" in body
    answer.refresh_from_db()
    assert answer.status == Turn.Status.INTERRUPTED and answer.text.startswith(saved)

    start_worker()
    fake_openai.script("model-a", answer="A short complete answer.")
    retry_url = reverse("conduct:retry", kwargs={"project_uuid": project.uuid, "turn_uuid": answer.uuid})
    assert client.post(retry_url, HTTP_HX_REQUEST="true").status_code == 200
    wait_until(lambda: Turn.objects.get(pk=answer.pk).status == "complete", message="the retried answer to complete")
    answer.refresh_from_db()
    assert answer.text == "A short complete answer."
    assert answer.metadata["previous_attempts"][0]["text"].startswith(saved)
    assert Turn.objects.filter(interview=answer.interview).count() == 2


def test_stopping_a_streaming_answer_keeps_what_arrived(
    project, owner, guide, live, fake_openai, worker_settings, start_worker, client_for
):
    start_worker()
    # Held after 20 chunks until the stop is asked for: the worker sees it at the next chunk, mid-answer.
    held = fake_openai.script("model-a", answer=LONG, chunk_chars=10, delay=0.03, hold_after_chunks=20)
    session = services.session_start(
        project=project, user=owner, guide_version=guide.versions.get(), participants=[live("A", "model-a")]
    )
    answer = session.seats.get().interview.turns.get(position=1)
    wait_until(lambda: len(Turn.objects.get(pk=answer.pk).text) > 50, message="part of the answer")

    stop_url = reverse("conduct:stop", kwargs={"project_uuid": project.uuid, "turn_uuid": answer.uuid})
    assert client_for(owner).post(stop_url, HTTP_HX_REQUEST="true").status_code == 200
    held.release()

    wait_until(lambda: Turn.objects.get(pk=answer.pk).status == "interrupted", message="the stop")
    answer.refresh_from_db()
    assert 50 < len(answer.text) < len(LONG) and LONG.startswith(answer.text)
    assert answer.metadata["failure"]["kind"] == "cancelled"
    assert answer.metadata["provenance"]["finish_reason"] is None
