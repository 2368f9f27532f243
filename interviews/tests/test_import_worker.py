"""A real Celery worker killed in the middle of an import leaves no partial interview."""

from __future__ import annotations

import json
import os
import signal
import time
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
def test_killed_worker_leaves_no_partial_interview(worker_env, celery_worker, project, analyst):
    job = importjob_create(project=project, user=analyst, uploads=[big_export()])
    importjob_queue(job=job, options=ImportOptions())  # no atomic block here: sent at once
    deadline = time.monotonic() + 120
    # The worker first reads the upload (a preview, with progress of its own), then imports.
    while job.status != ImportJob.Status.RUNNING or get_progress(job)["done"] == 0:
        assert time.monotonic() < deadline, "the worker never reported progress"
        assert celery_worker.poll() is None, "the worker died on its own"
        time.sleep(0.05)
        job.refresh_from_db()
    assert 0 < get_progress(job)["done"] < CONVERSATIONS  # really in the middle
    os.killpg(celery_worker.pid, signal.SIGKILL)
    celery_worker.wait(timeout=10)

    assert Interview.objects.count() == 0
    assert Turn.objects.count() == 0 and Segment.objects.count() == 0
    job.refresh_from_db()
    assert job.status == ImportJob.Status.RUNNING  # left for redelivery, not marked done

    # Running the job again (as a redelivered task would) imports everything once.
    importjob_run(job_id=job.id)
    job.refresh_from_db()
    assert job.status == ImportJob.Status.DONE, job.errors
    assert Interview.objects.count() == CONVERSATIONS
    assert Turn.objects.count() == CONVERSATIONS * 16
