"""A real Celery worker killed in the middle of an import leaves no partial interview."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from interviews.models import ImportJob, Interview, Segment, Turn
from interviews.services_import import ImportOptions, get_progress, importjob_create, importjob_queue, importjob_run

SAMPLE = Path(__file__).resolve().parents[3] / "shared" / "samples" / "chatgpt" / "chatgpt2graph-conversations.json"
CONVERSATIONS = 400


@pytest.fixture
def worker_env(monkeypatch, settings, tmp_path):
    """Uploads where the worker finds them, and small chunks so progress shows mid-import."""
    monkeypatch.setenv("MEDIA_ROOT", str(tmp_path))
    monkeypatch.setenv("RTA_IMPORT_CHUNK_TURNS", "200")
    settings.MEDIA_ROOT = tmp_path


@pytest.fixture
def import_hold(monkeypatch):
    """Workers started after this stop after each chunk until the test releases the hold."""
    from tests.faults import ImportHold

    hold = ImportHold()
    for name, value in hold.env.items():
        monkeypatch.setenv(name, value)
    yield hold
    hold.release()


def big_export() -> SimpleUploadedFile:
    conv = json.loads(SAMPLE.read_text())[0]
    convs = []
    for i in range(CONVERSATIONS):
        c = dict(conv, id=f"conv-{i}", conversation_id=f"conv-{i}", title=f"Conversation {i}")
        # Distinct content per conversation, or the duplicate check would skip them.
        first_user = next(n for n in c["mapping"].values() if n["message"] and n["message"]["author"]["role"] == "user")
        first_user = json.loads(json.dumps(first_user))
        first_user["message"]["content"]["parts"] = [f"Question number {i}?"]
        c["mapping"] = {**c["mapping"], first_user["id"]: first_user}
        convs.append(c)
    return SimpleUploadedFile("conversations.json", json.dumps(convs).encode())


@pytest.mark.worker
@pytest.mark.slow
def test_killed_worker_leaves_no_partial_interview(worker_env, import_hold, celery_worker, project, analyst):
    job = importjob_create(project=project, user=analyst, uploads=[big_export()])
    importjob_queue(job=job, options=ImportOptions())  # no atomic block here: sent at once
    import_hold.wait_until_an_import_waits()  # the worker has written a first chunk, uncommitted
    assert celery_worker.poll() is None, "the worker died on its own"
    job.refresh_from_db()
    assert job.status == ImportJob.Status.RUNNING
    assert 0 < get_progress(job)["done"] < CONVERSATIONS  # really in the middle
    os.killpg(celery_worker.pid, signal.SIGKILL)
    celery_worker.wait(timeout=10)
    import_hold.release()  # the killed worker's server session ends, its transaction rolled back

    assert Interview.objects.count() == 0
    assert Turn.objects.count() == 0 and Segment.objects.count() == 0
    job.refresh_from_db()
    assert job.status == ImportJob.Status.RUNNING  # left for redelivery, not marked done

    # Running the job again (as a redelivered task would) imports everything once.
    importjob_run(job_id=job.id)
    job.refresh_from_db()
    assert job.status == ImportJob.Status.DONE, job.errors
    assert Interview.objects.count() == CONVERSATIONS
    assert Turn.objects.count() == CONVERSATIONS * 42
