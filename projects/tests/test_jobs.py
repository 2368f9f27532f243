"""The job rows are the outbox (projects/jobs.py): the sweeper sends again every job still waiting
for the worker a minute after its last send, and a job sent twice runs once.

Here tasks run in-process (no `worker` marker), and a send that never happened is simulated by not
running the transaction's on-commit callbacks: what a web process that died (or met a broker
outage and then restarted) leaves behind. tests/test_worker_faults.py does the same with Redis
really stopped, gunicorn really restarted, and Celery beat and a worker really running.
"""

from __future__ import annotations

from datetime import timedelta

import psycopg
import pytest
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from config.celery import app
from interviews.models import ImportJob, Interview
from interviews.services_import import ImportOptions, importjob_create, importjob_queue, importjob_run
from projects.jobs import _kinds, job_lock_key, job_send_again, jobs_resend
from reports.exports import exportjob_run
from reports.models import ExportJob

pytestmark = pytest.mark.django_db

TALK = b"Alice: Hello?\nBob: Hi.\nAlice: Bye?\nBob: Bye.\n"


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path


def queued_import(project, user) -> ImportJob:
    """An import accepted ("queued") whose task never reached the broker."""
    job = importjob_create(project=project, user=user, uploads=[SimpleUploadedFile("talk.txt", TALK)])
    importjob_queue(job=job, options=ImportOptions())  # its on-commit send never runs in this test
    return job


def sent_ago(job, seconds: float) -> None:
    type(job).objects.filter(pk=job.pk).update(sent_at=timezone.now() - timedelta(seconds=seconds))


def test_every_kind_of_background_job_is_registered_with_the_sweeper():
    assert {kind.name for kind in _kinds.values()} == {"import", "export", "answer", "project import"}


def test_celery_beat_runs_the_sweeper_every_half_minute():
    entry = settings.CELERY_BEAT_SCHEDULE["resend-waiting-jobs"]
    app.loader.import_default_modules()  # what a worker does at start: finds every app's tasks.py
    assert entry["task"] in app.tasks and entry["schedule"] == 30.0
    assert settings.RTA_JOB_RESEND_AFTER_SECONDS == 60


def test_a_queued_import_is_sent_again_a_minute_after_its_last_send_and_runs_once(project, analyst):
    job = queued_import(project, analyst)
    assert jobs_resend() == 0  # just sent (or tried): give the fast path its minute
    sent_ago(job, 50)
    assert jobs_resend() == 0
    sent_ago(job, 61)
    assert jobs_resend() == 1
    job.refresh_from_db()
    assert job.status == ImportJob.Status.DONE and Interview.objects.count() == 1
    sent_ago(job, 3600)
    assert jobs_resend() == 0  # done: nothing waits any more
    assert importjob_run(job_id=job.pk).status == ImportJob.Status.DONE  # a late duplicate does nothing
    assert Interview.objects.count() == 1


def test_an_import_waiting_for_its_preview_is_sent_to_the_preview_task(project, analyst, settings):
    settings.RTA_IMPORT_INLINE_PREVIEW_BYTES = 10  # read by the worker
    job = importjob_create(project=project, user=analyst, uploads=[SimpleUploadedFile("talk.txt", TALK)])
    assert job.status == ImportJob.Status.ANALYSING
    sent_ago(job, 61)
    assert jobs_resend() == 1
    job.refresh_from_db()
    assert job.status == ImportJob.Status.UPLOADED and job.progress_total == 1


def test_the_command_sends_waiting_jobs_of_any_age(project, analyst, capsys):
    job = queued_import(project, analyst)
    call_command("resend_jobs", "--older-than", "0")
    assert "1 waiting job sent again." in capsys.readouterr().out
    job.refresh_from_db()
    assert job.status == ImportJob.Status.DONE
    call_command("resend_jobs")
    assert "0 waiting jobs sent again." in capsys.readouterr().out


def test_a_queued_export_is_sent_again_and_written_once(project, owner):
    job = ExportJob.objects.create(project=project, created_by=owner, format="csv", filename="t.csv",
                                   params={"columns": ["code", "quote"]})
    sent_ago(job, 61)
    assert jobs_resend() == 1
    job.refresh_from_db()
    assert job.status == ExportJob.Status.DONE and job.blob
    blob = job.blob_id
    exportjob_run(job_id=job.pk)  # a duplicate delivery
    job.refresh_from_db()
    assert job.blob_id == blob


def test_an_export_another_worker_is_writing_is_left_to_it(project, owner):
    job = ExportJob.objects.create(project=project, created_by=owner, format="csv", filename="t.csv", status=ExportJob.Status.RUNNING,
                                   params={"columns": ["code", "quote"]})
    s = connection.settings_dict
    other_worker = psycopg.connect(host=s["HOST"] or "127.0.0.1", port=s["PORT"] or 5432, user=s["USER"],
                                   password=s["PASSWORD"], dbname=s["NAME"], autocommit=True)
    try:
        other_worker.execute("SELECT pg_advisory_lock(%s, %s)", job_lock_key("export", job.pk))  # it is writing
        exportjob_run(job_id=job.pk)  # a duplicate delivery
        job.refresh_from_db()
        assert job.status == ExportJob.Status.RUNNING and job.blob is None  # not written twice at once
    finally:
        # That worker dies: its lock goes with its backend. Closing the client socket alone lets the
        # backend release the lock a moment later, so wait for the backend to be gone.
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s, 60000)", [other_worker.info.backend_pid])
            assert cursor.fetchone()[0]
        other_worker.close()
    exportjob_run(job_id=job.pk)  # the redelivered task starts the half-run export over
    job.refresh_from_db()
    assert job.status == ExportJob.Status.DONE and job.blob


def test_a_failed_export_is_not_run_again_by_a_duplicate(project, owner):
    job = ExportJob.objects.create(project=project, created_by=owner, format="csv", status=ExportJob.Status.FAILED,
                                   error="The export failed.")
    exportjob_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == ExportJob.Status.FAILED and job.error == "The export failed."


def test_send_again_sends_a_waiting_job_now_and_refuses_a_finished_one(project, analyst):
    job = queued_import(project, analyst)
    assert job_send_again(job=job) is True
    job.refresh_from_db()
    assert job.status == ImportJob.Status.DONE
    with pytest.raises(ValidationError, match="no longer waiting for the worker"):
        job_send_again(job=job)


def test_a_job_discarded_before_the_sweep_is_not_sent(project, analyst):
    from interviews.services_import import importjob_discard

    job = queued_import(project, analyst)
    sent_ago(job, 61)
    importjob_discard(job=job)
    assert jobs_resend() == 0
    assert importjob_run(job_id=job.pk) is None  # a message already in the broker finds nothing to do
    assert Interview.objects.count() == 0
