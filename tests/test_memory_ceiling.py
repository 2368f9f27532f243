"""The web (gunicorn) and worker (Celery) processes run under the memory ceiling, and a request that runs
past it gets a clear 503 (issue 21)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.http import HttpResponse
from django.test import RequestFactory

from projects.middleware import MemoryLimitMiddleware
from tests.faults import stop_group, wait_until

ROOT = Path(__file__).resolve().parents[1]
CEILING_MB = 900


def data_limit(pid: int) -> int | None:
    """The soft 'Max data size' of a process, from /proc/<pid>/limits (None: unlimited)."""
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max data size"):
            soft = line.split()[3]
            return None if soft == "unlimited" else int(soft)
    raise AssertionError("no 'Max data size' line")


def children(pid: int) -> list[int]:
    kids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                kids.append(int(entry.name))
    return kids


@contextmanager
def started(command: list[str], env: dict[str, str]) -> Iterator[subprocess.Popen]:
    proc = subprocess.Popen(command, cwd=ROOT, env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        yield proc
    finally:
        stop_group(proc, timeout=20)


def _env() -> dict[str, str]:
    return {**os.environ, "RTA_MEMORY_LIMIT_MB": str(CEILING_MB), "DJANGO_SETTINGS_MODULE": "config.settings_test"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_gunicorn_workers_run_under_the_ceiling_and_serve():
    port = _free_port()
    command = [sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py", "config.wsgi:application",
               "--bind", f"127.0.0.1:{port}", "--workers", "2", "--worker-class", "gthread", "--threads", "2"]
    with started(command, _env()) as master:
        workers = wait_until(lambda: (kids := children(master.pid)) and len(kids) == 2 and kids, "two gunicorn workers")
        for pid in workers:
            wait_until(lambda pid=pid: data_limit(pid) == CEILING_MB * 1024 * 1024, f"the ceiling in worker {pid}")
        # Under the ceiling the app still loads and answers.
        import urllib.error
        import urllib.request

        def answered() -> int | None:
            try:
                return urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=5).status
            except urllib.error.HTTPError as e:
                return e.code
            except OSError:
                return None

        assert wait_until(answered, "an answer from gunicorn") < 500


@pytest.mark.slow
def test_celery_worker_processes_run_under_the_ceiling(settings):
    queue = f"{settings.CELERY_TASK_DEFAULT_QUEUE}-memory"
    command = [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=prefork", "--concurrency=1",
               "--loglevel=WARNING", "-Q", queue, "-n", f"{queue}@%h", "--without-gossip", "--without-mingle",
               "--without-heartbeat"]
    with started(command, {**_env(), "CELERY_TASK_ALWAYS_EAGER": "false"}) as worker:
        wait_until(lambda: data_limit(worker.pid) == CEILING_MB * 1024 * 1024, "the ceiling in the main worker process")
        (child,) = wait_until(lambda: children(worker.pid), "the pool's child process")
        assert data_limit(child) == CEILING_MB * 1024 * 1024


def test_a_worker_child_is_replaced_once_it_has_grown_past_three_quarters_of_the_ceiling(settings):
    assert settings.CELERY_WORKER_MAX_MEMORY_PER_CHILD == settings.RTA_MEMORY_LIMIT_MB * 1024 * 3 // 4


@pytest.mark.slow
def test_a_request_past_the_ceiling_in_real_gunicorn_is_a_clear_503_and_the_worker_serves_on(
        transactional_db, project, analyst, monkeypatch):
    from django.db import connection

    from tests.faults import WebProcess, csrf_headers, logged_in_session

    monkeypatch.setenv("RTA_MEMORY_LIMIT_MB", "250")  # a worker's app takes about 80 MB
    db = connection.settings_dict
    web = WebProcess(database_url=f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}")
    try:
        session = logged_in_session(analyst, web)
        headers = {**csrf_headers(session, web.url), "Content-Type": "application/json"}
        themes = f"{web.url}/api/projects/{project.uuid}/themes/"
        # 10 MB of empty lists, within the upload limit and the depth limit: about 200 MB as Python objects.
        body = "[" + "[]," * 3_300_000 + "[]]"
        response = session.post(themes, data=body, headers=headers, timeout=60)
        assert response.status_code == 503, response.text[:300]
        assert "needed more memory than the server allows one process" in response.json()["detail"]
        response = session.post(themes, data='{"name": "Trust"}', headers=headers, timeout=60)
        assert response.status_code == 201 and web.proc.poll() is None
    finally:
        web.stop()


@pytest.mark.parametrize(("path", "content_type"), [("/p/x/interviews/import/", "text/html"), ("/api/projects/", "application/json")])
def test_a_request_that_runs_out_of_memory_gets_a_clear_503(path, content_type):
    def view(request) -> HttpResponse:
        raise AssertionError("not called")

    middleware = MemoryLimitMiddleware(view)
    try:
        bytearray(1 << 62)  # a real MemoryError, with its traceback
    except MemoryError as exc:
        response = middleware.process_exception(RequestFactory().post(path), exc)
    assert response.status_code == 503 and response["Content-Type"].startswith(content_type)
    assert b"needed more memory than the server allows one process" in response.content
    assert b"Nothing was saved" in response.content
