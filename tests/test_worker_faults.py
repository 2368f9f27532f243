"""The Celery worker SIGKILLed in the middle of an import, then restarted (as compose's restart
policy does): the unacknowledged task is redelivered, the import lands whole and once, and the
import page shows the state throughout. (interviews/tests/test_import_worker.py checks that the
kill leaves nothing partial; this follows the job through to the restarted worker.)"""

from __future__ import annotations

import time

import pytest

from interviews.models import ImportJob, Interview
from interviews.services_import import ImportOptions, get_progress, importjob_create, importjob_queue
from interviews.tests.test_import_worker import CONVERSATIONS, big_export
from tests.faults import kill_worker, start_worker

pytestmark = [pytest.mark.worker, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def worker_env(monkeypatch, settings, tmp_path):
    monkeypatch.setenv("MEDIA_ROOT", str(tmp_path))
    monkeypatch.setenv("RTA_IMPORT_CHUNK_TURNS", "200")
    settings.MEDIA_ROOT = tmp_path


def test_a_killed_import_is_redelivered_to_the_restarted_worker(worker_env, project, analyst, client_for):
    # Redelivery after 3 s instead of 15 minutes, so the test can watch it happen.
    worker = start_worker(CELERY_VISIBILITY_TIMEOUT="3")
    restarted = None
    try:
        job = importjob_create(project=project, user=analyst, uploads=[big_export()])
        importjob_queue(job=job, options=ImportOptions())
        deadline = time.monotonic() + 120
        while get_progress(job)["done"] == 0:
            assert time.monotonic() < deadline, "the worker never reported progress"
            time.sleep(0.05)
        kill_worker(worker)
        assert Interview.objects.filter(project=project).count() == 0

        page = client_for(analyst).get(f"/p/{project.uuid}/interviews/import/{job.uuid}/")
        assert page.status_code == 200 and "Importing" in page.content.decode()  # the user sees it is not done

        restarted = start_worker(CELERY_VISIBILITY_TIMEOUT="3")
        deadline = time.monotonic() + 180
        while True:
            job.refresh_from_db()
            if job.status in (ImportJob.Status.DONE, ImportJob.Status.FAILED):
                break
            assert time.monotonic() < deadline, f"the import was not redelivered (status {job.status})"
            time.sleep(0.5)
        assert job.status == ImportJob.Status.DONE, job.errors
        assert Interview.objects.filter(project=project).count() == CONVERSATIONS  # whole, and once
        page = client_for(analyst).get(f"/p/{project.uuid}/interviews/import/{job.uuid}/").content.decode()
        assert "Importing" not in page
    finally:
        kill_worker(worker)
        if restarted is not None:
            kill_worker(restarted)
