"""A real Celery worker under its memory ceiling: an upload too big for it fails the job with a clear message,
and the worker lives on to run the next one (issue 21)."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from interviews.models import ImportJob, Interview
from interviews.services_import import OUT_OF_MEMORY, importjob_create
from tests.faults import wait_for_status

CEILING_MB = 400


@pytest.fixture
def worker_env(monkeypatch, settings, tmp_path):
    monkeypatch.setenv("MEDIA_ROOT", str(tmp_path))
    monkeypatch.setenv("RTA_MEMORY_LIMIT_MB", str(CEILING_MB))
    settings.MEDIA_ROOT = tmp_path


@pytest.mark.worker
@pytest.mark.slow
def test_an_upload_too_big_for_the_worker_fails_clearly_and_the_worker_lives_on(worker_env, celery_worker, project, analyst):
    # 32 MB of chat messages: as Python objects, several times the worker's 400 MB ceiling (and just under the
    # 5 million JSON values a file may hold, which would refuse it before parsing).
    message = '{"role": "user", "content": "Why?"}, {"role": "assistant", "content": "Because."}, '
    text = '{"messages": [' + message * 400_000 + '{"role": "user", "content": "End."}]}'
    job = importjob_create(project=project, user=analyst, uploads=[SimpleUploadedFile("huge.json", text.encode())])
    assert job.status == ImportJob.Status.ANALYSING  # too big to read in the request: the worker reads it
    wait_for_status(job, {ImportJob.Status.FAILED, ImportJob.Status.UPLOADED}, 180, worker=celery_worker)
    assert (job.status, job.errors) == (ImportJob.Status.FAILED, [OUT_OF_MEMORY])

    small = '{"messages": [' + message * 150_000 + '{"role": "user", "content": "End."}]}'
    job = importjob_create(project=project, user=analyst, uploads=[SimpleUploadedFile("fine.json", small.encode())])
    wait_for_status(job, {ImportJob.Status.FAILED, ImportJob.Status.UPLOADED}, 180, worker=celery_worker)
    assert job.status == ImportJob.Status.UPLOADED, job.errors
    assert Interview.objects.count() == 0
