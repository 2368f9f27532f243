"""The Celery worker SIGKILLed in the middle of an import, then restarted (as compose's restart
policy does): the unacknowledged task is redelivered, the import lands whole and once, and the
import page shows the state throughout. (interviews/tests/test_import_worker.py checks that the
kill leaves nothing partial; this follows the job through to the restarted worker.)

The web process and the workers use a private redis-server: redelivery restores *every*
unacknowledged message on its broker, which must not touch other test runs' tasks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from interviews.models import ImportJob, Interview
from interviews.tests.test_import_worker import CONVERSATIONS, big_export
from tests.faults import ROOT, ImportHold, PrivateRedis, WebProcess, csrf_headers, kill_worker, logged_in_session, wait_for_status

pytestmark = [pytest.mark.worker, pytest.mark.slow, pytest.mark.django_db(transaction=True)]
SAMPLE = Path(__file__).resolve().parents[2] / "shared" / "samples" / "claude" / "claude-history-synthetic-conversations.json"


def _env(db_url: str, redis_url: str, queue: str, **extra: str) -> dict[str, str]:
    return {**os.environ, "DATABASE_URL": db_url, "REDIS_URL": redis_url, "CELERY_QUEUE": queue,
            "DJANGO_SETTINGS_MODULE": "config.settings_test", "CELERY_TASK_ALWAYS_EAGER": "false",
            # Redelivery after 3 s instead of 15 minutes, so the test can watch it happen.
            "CELERY_VISIBILITY_TIMEOUT": "3", "RTA_IMPORT_CHUNK_TURNS": "200", **extra}


def _worker(db_url: str, redis_url: str, queue: str, node: str = "", **extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo", "--loglevel=WARNING", "-Q", queue,
         "-n", f"{node or queue}@%h", "--without-gossip", "--without-mingle", "--without-heartbeat"],
        cwd=ROOT, env=_env(db_url, redis_url, queue, **extra), start_new_session=True,
    )


def _beat(db_url: str, redis_url: str, queue: str, folder, **extra: str) -> subprocess.Popen:
    """Celery beat as compose's `beat` service runs it, with its schedule file in `folder`."""
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "beat", "--loglevel=WARNING",
         "--schedule", str(folder / "celerybeat-schedule"), "--pidfile", str(folder / "celerybeat.pid")],
        cwd=ROOT, env=_env(db_url, redis_url, queue, **extra), start_new_session=True,
    )



def test_a_killed_import_is_redelivered_to_the_restarted_worker(project, analyst, monkeypatch, tmp_path):
    monkeypatch.setenv("MEDIA_ROOT", str(tmp_path))  # uploads shared by the web process and the workers
    redis = PrivateRedis().start()
    db = connection.settings_dict
    db_url = f"postgres://{db['USER']}@127.0.0.1:{db['PORT'] or 5432}/{db['NAME']}"
    queue = f"rta-killed-{redis.port}"
    web = WebProcess(database_url=db_url, redis_url=redis.url, queue=queue)
    hold = ImportHold()
    worker = _worker(db_url, redis.url, queue, **hold.env)
    restarted = None
    try:
        session = logged_in_session(analyst, web)
        headers = csrf_headers(session, web.url)
        export = big_export()
        response = session.post(f"{web.url}/p/{project.uuid}/interviews/import/", data={"format": "auto"},
                                files={"files": (export.name, export.read(), "application/json")},
                                headers=headers, allow_redirects=False, timeout=120)
        assert response.status_code == 302, response.text[:500]
        job_url = web.url + response.headers["Location"]
        job = ImportJob.objects.get(project=project)
        wait_for_status(job, {ImportJob.Status.UPLOADED}, 180)  # the preview (in the request or the worker)
        keys = [c["key"] for f in job.preview["files"] for c in f["conversations"]]
        assert len(keys) == CONVERSATIONS
        response = session.post(f"{job_url}start/", data={"conversations": keys, "participant": "auto"},
                                headers=headers, allow_redirects=False, timeout=60)
        assert response.status_code == 302, response.text[:500]

        hold.wait_until_an_import_waits()  # a first chunk written, inside the import's open transaction
        kill_worker(worker)
        job.refresh_from_db()
        assert job.status == ImportJob.Status.RUNNING
        assert Interview.objects.filter(project=project).count() == 0  # nothing partial
        page = session.get(job_url, timeout=30).text
        assert "Importing" in page  # the user sees it is not done

        hold.release()
        restarted = _worker(db_url, redis.url, queue)
        wait_for_status(job, {ImportJob.Status.DONE, ImportJob.Status.FAILED}, 420)
        assert job.status == ImportJob.Status.DONE, json.dumps(job.errors)
        assert Interview.objects.filter(project=project).count() == CONVERSATIONS  # whole, and once
        assert "Importing" not in session.get(job_url, timeout=30).text
    finally:
        hold.release()
        web.stop()
        kill_worker(worker)
        if restarted is not None:
            kill_worker(restarted)
        redis.cleanup()


def test_a_job_accepted_while_redis_was_down_survives_a_web_restart_and_the_sweeper_sends_it(
        project, analyst, monkeypatch, tmp_path):
    """Redis down when the import is queued, the web process restarted (what it kept in memory is gone),
    Redis back: Celery beat's sweeper finds the job row still queued, sends it, and the worker runs it once."""
    monkeypatch.setenv("MEDIA_ROOT", str(tmp_path))
    redis = PrivateRedis().start()
    db = connection.settings_dict
    db_url = f"postgres://{db['USER']}@127.0.0.1:{db['PORT'] or 5432}/{db['NAME']}"
    queue = f"rta-outbox-{redis.port}"
    web = WebProcess(database_url=db_url, redis_url=redis.url, queue=queue)
    worker = beat = None
    try:
        session = logged_in_session(analyst, web)
        headers = csrf_headers(session, web.url)
        response = session.post(f"{web.url}/p/{project.uuid}/interviews/import/", data={"format": "auto"},
                                files={"files": (SAMPLE.name, SAMPLE.read_bytes(), "application/json")},
                                headers=headers, allow_redirects=False, timeout=60)
        assert response.status_code == 302, response.text[:500]
        job_path = response.headers["Location"]
        job = ImportJob.objects.get(project=project)
        assert job.status == ImportJob.Status.UPLOADED  # a small file is previewed in the request
        keys = [c["key"] for f in job.preview["files"] for c in f["conversations"]]

        redis.stop()
        response = session.post(f"{web.url}{job_path}start/", data={"conversations": keys, "participant": "auto"},
                                headers=headers, allow_redirects=False, timeout=60)
        assert response.status_code == 302, response.text[:500]  # accepted: queued, no 500
        job.refresh_from_db()
        assert job.status == ImportJob.Status.QUEUED
        web.stop()  # the restart: the send this process kept for later is gone with it

        redis.start()  # empty: the broker never had the task
        web = WebProcess(database_url=db_url, redis_url=redis.url, queue=queue)
        fast = {"RTA_JOB_RESEND_AFTER_SECONDS": "1", "RTA_JOB_SWEEP_SECONDS": "1"}
        worker = _worker(db_url, redis.url, queue, **fast)
        beat = _beat(db_url, redis.url, queue, tmp_path, **fast)
        wait_for_status(job, {ImportJob.Status.DONE, ImportJob.Status.FAILED}, 300)
        assert job.status == ImportJob.Status.DONE, json.dumps(job.errors)
        assert Interview.objects.filter(project=project).count() == len(keys)  # whole, and once
        page = logged_in_session(analyst, web).get(web.url + job_path, timeout=30).text
        assert "Import finished" in page
    finally:
        web.stop()
        for proc in (worker, beat):
            if proc is not None:
                kill_worker(proc)
        redis.cleanup()
