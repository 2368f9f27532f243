"""Faults injected into the real processes: PostgreSQL cut off or restarted under a running
gunicorn, Redis down under coders and background jobs.

Where other apps' tests already inject a fault, they are the reference (not repeated here):
- the Celery worker SIGKILLed mid-import: interviews/tests/test_import_worker.py (nothing partial) and
  tests/test_worker_faults.py (redelivered to the restarted worker, lands whole);
- the model endpoint failing mid-stream: conduct/tests/test_client.py
  (test_a_stream_that_dies_keeps_the_partial_text_and_does_not_retry) and conduct/tests/test_services.py
  (test_a_failed_answer_is_marked_and_the_question_is_kept, test_retry_asks_again_and_keeps_the_earlier_partial_text),
  against the local fake chat-completions server; conduct/tests/test_worker.py
  (test_killing_the_worker_mid_answer_keeps_saved_turns_and_the_answer_can_be_retried) with a real worker.
"""

from __future__ import annotations

import time

import pytest
import requests
from django.db import connection

from coding.models import Coding
from coding.services import code_create
from interviews.models import Segment
from interviews.tests.factories import make_interview, make_participant
from tests.faults import PrivateRedis, TcpProxy, WebProcess, csrf_headers, logged_in_session

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

TURNS = [("interviewer", "Who are you?"), ("participant", "I am a model. I change with each prompt. That is all.")]


@pytest.fixture
def coding_world(project, analyst):
    interview = make_interview(project, make_participant(project), TURNS)
    code = code_create(project=project, actor=analyst, name="Fluidity")
    segments = list(Segment.objects.filter(interview=interview, speaker="participant").order_by("position"))
    return {"project": project, "interview": interview, "code": code, "segments": segments, "user": analyst}


def _database_url(port: int) -> str:
    db = connection.settings_dict
    return f"postgres://{db['USER']}@127.0.0.1:{port}/{db['NAME']}"


def _workspace(w) -> str:
    return f"/p/{w['project'].uuid}/interviews/{w['interview'].uuid}/code/"


def _apply(session, base, w, segment, headers):
    url = f"{base}/p/{w['project'].uuid}/interviews/{w['interview'].uuid}/code/apply/"
    # No redirects: a signed-out session would otherwise end on the login page with a 200.
    return session.post(url, data={"code": w["code"].pk, "segment": [segment.pk]}, headers={**headers, "HX-Request": "true"},
                        timeout=30, allow_redirects=False)


@pytest.fixture
def db_proxy():
    proxy = TcpProxy(upstream_port=int(connection.settings_dict["PORT"] or 5432)).start()
    yield proxy
    proxy.stop()


def test_database_outage_gives_a_clear_503_and_the_same_process_recovers(coding_world, db_proxy):
    w = coding_world
    web = WebProcess(database_url=_database_url(db_proxy.port))
    try:
        session = logged_in_session(w["user"], web)
        headers = csrf_headers(session, web.url)
        assert session.get(web.url + _workspace(w), timeout=30).status_code == 200
        assert _apply(session, web.url, w, w["segments"][0], headers).status_code == 200

        db_proxy.stop()  # PostgreSQL unreachable: open connections cut, new ones refused
        page = session.get(web.url + _workspace(w), timeout=30)
        assert page.status_code == 503
        assert "cannot reach its database" in page.text and "Nothing you saved before this is lost" in page.text
        assert page.headers["Retry-After"]
        assert _apply(session, web.url, w, w["segments"][1], headers).status_code == 503

        db_proxy.start()  # back, on the same address; gunicorn is NOT restarted
        assert session.get(web.url + _workspace(w), timeout=30).status_code == 200
        assert _apply(session, web.url, w, w["segments"][1], headers).status_code == 200
        assert web.proc.poll() is None
    finally:
        web.stop()
    coded = set(Coding.objects.filter(code=w["code"]).values_list("segment_id", flat=True))
    assert coded == {w["segments"][0].pk, w["segments"][1].pk}


def test_terminated_database_connections_are_replaced_without_errors(coding_world, db_proxy):
    """A PostgreSQL restart kills every backend; persistent connections must be health-checked, not reused dead."""
    w = coding_world
    web = WebProcess(database_url=_database_url(db_proxy.port))
    try:
        session = logged_in_session(w["user"], web)
        assert session.get(web.url + _workspace(w), timeout=30).status_code == 200
        with connection.cursor() as cursor:
            # Only this test database's other backends: the web process's. Never other engineers' databases.
            cursor.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                           "WHERE datname = current_database() AND pid <> pg_backend_pid()")
            assert cursor.fetchone()[0] >= 1
        statuses = [session.get(web.url + _workspace(w), timeout=30).status_code for _ in range(3)]
        # The first request may meet the dead connection (a clear 503); after that it is reconnected.
        assert statuses[0] in (200, 503) and statuses[1:] == [200, 200]
    finally:
        web.stop()


@pytest.fixture
def private_redis():
    redis = PrivateRedis().start()
    yield redis
    redis.cleanup()


def test_coding_works_while_redis_is_down(coding_world, private_redis):
    w = coding_world
    web = WebProcess(database_url=_database_url(int(connection.settings_dict["PORT"] or 5432)), redis_url=private_redis.url)
    try:
        session = logged_in_session(w["user"], web)
        headers = csrf_headers(session, web.url)
        assert session.get(web.url + _workspace(w), timeout=30).status_code == 200

        private_redis.stop()
        started = time.monotonic()
        assert session.get(web.url + _workspace(w), timeout=30).status_code == 200
        assert _apply(session, web.url, w, w["segments"][0], headers).status_code == 200
        assert session.get(f"{web.url}/p/{w['project'].uuid}/codebook/", timeout=30).status_code == 200
        # Short socket timeouts: an outage must not stall each request for long.
        assert time.monotonic() - started < 20

        private_redis.start()
        assert _apply(session, web.url, w, w["segments"][1], headers).status_code == 200
    finally:
        web.stop()
    assert Coding.objects.filter(code=w["code"]).count() == 2


def test_healthz_reports_the_broker_down_while_redis_is_down(coding_world, private_redis):
    web = WebProcess(database_url=_database_url(int(connection.settings_dict["PORT"] or 5432)), redis_url=private_redis.url)
    try:
        assert requests.get(web.url + "/healthz", timeout=30).json()["status"] == "ok"
        private_redis.stop()
        health = requests.get(web.url + "/healthz", timeout=30)
        assert health.status_code == 503 and health.json()["database"] == "ok"
        private_redis.start()
        assert requests.get(web.url + "/healthz", timeout=30).status_code == 200
    finally:
        web.stop()


def test_background_jobs_wait_while_redis_is_down_and_run_when_it_returns(project, analyst, private_redis, monkeypatch, tmp_path):
    """An upload during a Redis outage is accepted; its job is sent and run once Redis is back (by the web
    process's retry thread, the fast path; tests/test_worker_faults.py restarts the web process and leaves it
    to the sweeper)."""
    import subprocess
    import sys
    from pathlib import Path

    from interviews.models import ImportJob, Interview
    from tests.faults import ROOT, kill_worker

    sample = Path(__file__).resolve().parents[2] / "shared" / "samples" / "claude" / "claude-history-synthetic-conversations.json"
    queue = f"rta-faults-{private_redis.port}"
    monkeypatch.setenv("MEDIA_ROOT", str(tmp_path))  # shared by the web process and the worker
    db_url = _database_url(int(connection.settings_dict["PORT"] or 5432))
    web = WebProcess(database_url=db_url, redis_url=private_redis.url, queue=queue)
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo", "--loglevel=WARNING", "-Q", queue,
         "-n", f"{queue}@%h", "--without-gossip", "--without-mingle", "--without-heartbeat"],
        cwd=ROOT, start_new_session=True,
        env={**__import__("os").environ, "DATABASE_URL": db_url, "REDIS_URL": private_redis.url, "CELERY_QUEUE": queue,
             "DJANGO_SETTINGS_MODULE": "config.settings_test", "CELERY_TASK_ALWAYS_EAGER": "false"},
    )
    try:
        session = logged_in_session(analyst, web)
        headers = csrf_headers(session, web.url)
        response = session.post(f"{web.url}/p/{project.uuid}/interviews/import/", data={"format": "auto"},
                                files={"files": (sample.name, sample.read_bytes(), "application/json")},
                                headers=headers, allow_redirects=False, timeout=60)
        assert response.status_code == 302, response.text[:500]
        job = ImportJob.objects.get(project=project)
        assert job.status == ImportJob.Status.UPLOADED  # a small file is previewed in the request
        keys = [c["key"] for f in job.preview["files"] for c in f["conversations"]]

        private_redis.stop()
        response = session.post(f"{web.url}/p/{project.uuid}/interviews/import/{job.uuid}/start/",
                                data={"conversations": keys, "participant": "auto"}, headers=headers,
                                allow_redirects=False, timeout=60)
        assert response.status_code == 302, response.text[:500]  # accepted: queued, not lost, no 500
        job.refresh_from_db()
        assert job.status == ImportJob.Status.QUEUED
        assert session.get(web.url + response.headers["Location"], timeout=30).status_code == 200

        private_redis.start()  # same port: the web process's sender and the worker reconnect
        deadline = time.monotonic() + 300
        while job.status not in (ImportJob.Status.FAILED, ImportJob.Status.DONE):
            assert time.monotonic() < deadline, f"the queued job never ran after Redis came back (status {job.status})"
            time.sleep(0.5)
            job.refresh_from_db()
        assert job.status == ImportJob.Status.DONE, job.errors
        assert Interview.objects.filter(project=project).count() == len(keys)
    finally:
        web.stop()
        kill_worker(worker)
