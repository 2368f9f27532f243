"""Helpers for fault-injection tests: a TCP proxy that can cut PostgreSQL off, a private
redis-server, and the real web process (gunicorn) pointed at them.

Nothing here touches the shared PostgreSQL or Redis servers other engineers use.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until[T](condition: Callable[[], T], what: str, timeout: float = 60) -> T:
    """`condition()`'s first truthy value, asked every 50 ms; fails naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        assert time.monotonic() < deadline, f"timed out after {timeout} s waiting for {what}"
        time.sleep(0.05)
    return value


def wait_for_status(job, statuses: set[str], seconds: float, *, worker: subprocess.Popen | None = None) -> None:
    """Until a job row (import or export) reaches one of `statuses`, rereading it; fails after `seconds`, or
    at once if the `worker` process meant to run it has died."""

    def reached() -> bool:
        assert worker is None or worker.poll() is None, f"the worker died while {job} was {job.status!r}"
        job.refresh_from_db()
        return job.status in statuses

    wait_until(reached, f"{job} to leave {job.status!r}", seconds)


def wait_for_port(port: int, timeout: float = 120, host: str = "127.0.0.1") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on {host}:{port} after {timeout} s")


class TcpProxy:
    """127.0.0.1:<port> → upstream; stop() refuses new connections and cuts open ones."""

    def __init__(self, upstream_port: int, port: int | None = None) -> None:
        self.upstream_port = upstream_port
        self.port = port or free_port()
        self._listener: socket.socket | None = None
        self._sockets: set[socket.socket] = set()
        self._lock = threading.Lock()

    def start(self) -> TcpProxy:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return self

    def stop(self) -> None:
        if self._listener is not None:
            # shutdown() wakes the thread blocked in accept(); close() alone leaves it listening.
            try:
                self._listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._listener.close()
            self._listener = None
        with self._lock:
            for s in self._sockets:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()
            self._sockets.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed by stop()
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets.update((client, upstream))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                target.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, target):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


class PrivateRedis:
    """A throwaway redis-server on its own port, started and stopped by the test."""

    def __init__(self) -> None:
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="rta-redis-")
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> PrivateRedis:
        binary = shutil.which("redis-server") or "/usr/bin/redis-server"
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", self.dir],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        wait_for_port(self.port)
        return self

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        self.proc = None

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


class WebProcess:
    """gunicorn serving the app on a free loopback port, with the given database and Redis."""

    def __init__(self, *, database_url: str, redis_url: str = "", queue: str = "", workers: int = 1,
                 host: str = "127.0.0.1", port: int | None = None, access_log: str = "", **extra_env: str) -> None:
        self.port = port or free_port()
        env = dict(os.environ, **extra_env)
        # With Redis, sessions and users are read from it, as in production (config/settings_test.py).
        env.update(DJANGO_SETTINGS_MODULE="config.settings_test", DATABASE_URL=database_url, REDIS_URL=redis_url,
                   CELERY_TASK_ALWAYS_EAGER="false" if redis_url else "true", DEBUG="false",
                   RTA_TEST_CACHED_AUTH="true" if redis_url else "false")
        self.auth_backend = ("projects.auth_cache.CachedModelBackend" if redis_url
                             else "django.contrib.auth.backends.ModelBackend")
        if queue:
            env["CELERY_QUEUE"] = queue
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "config.wsgi:application", "--bind", f"{host}:{self.port}",
             "--workers", str(workers), "--timeout", "60", "--graceful-timeout", "5", "--log-level", "warning",
             *(["--access-logfile", access_log] if access_log else [])],
            cwd=ROOT, env=env, start_new_session=True,
        )
        wait_for_port(self.port, host=host)
        self.url = f"http://{host}:{self.port}"

    def stop(self) -> None:
        stop_group(self.proc)


def stop_group(proc: subprocess.Popen, timeout: float = 10) -> None:
    """TERM a process started in a session of its own and its children (also when it has exited itself and they
    have not); KILL them if it lingers `timeout` s."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:  # nothing of the group is left
        proc.wait()
        return
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def logged_in_session(user, web: WebProcess) -> requests.Session:
    """A requests session carrying a real Django session cookie for `user`, signed in with the
    authentication backend the web process runs (a session names its backend)."""
    from django.test import Client

    client = Client()
    client.force_login(user, backend=web.auth_backend)
    session = requests.Session()
    session.cookies.set("sessionid", client.cookies["sessionid"].value, domain="127.0.0.1")
    session.headers["Referer"] = web.url + "/"
    return session


def csrf_headers(session: requests.Session, base_url: str) -> dict[str, str]:
    # The first request builds the URLconf and templates: on a busy machine that can take more than 10 s.
    session.get(base_url + "/", timeout=60)
    token = session.cookies.get("csrftoken")
    return {"X-CSRFToken": token} if token else {}


def start_worker(**extra_env: str) -> subprocess.Popen:
    """A Celery worker like conftest's celery_worker fixture, started (and restarted) by the test itself."""
    from django.conf import settings
    from django.db import connection

    from conftest import _wait_for_worker

    db = connection.settings_dict
    queue = settings.CELERY_TASK_DEFAULT_QUEUE
    env = dict(os.environ, DATABASE_URL=f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}",
               CELERY_QUEUE=queue, DJANGO_SETTINGS_MODULE="config.settings_test", CELERY_TASK_ALWAYS_EAGER="false", **extra_env)
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo", "--loglevel=WARNING", "-Q", queue,
         "-n", f"{queue}@%h", "--without-gossip", "--without-mingle", "--without-heartbeat"],
        cwd=ROOT, env=env, start_new_session=True,
    )
    _wait_for_worker(queue)
    return proc


def kill_worker(proc: subprocess.Popen, sig: int = signal.SIGKILL) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, sig)
        proc.wait(timeout=15)


class ImportHold:
    """Holds an import at a known point: workers started with `env` stop after each chunk they have
    written (inside the import's open transaction) while this holds a PostgreSQL advisory lock
    (interviews/services_import.py, RTA_IMPORT_HOLD_LOCK). No sleeping and hoping it is mid-import."""

    KEY = 424242

    def __init__(self) -> None:
        import psycopg
        from django.db import connection

        s = connection.settings_dict
        self._conn = psycopg.connect(host=s["HOST"] or "127.0.0.1", port=s["PORT"] or 5432, user=s["USER"],
                                     password=s["PASSWORD"], dbname=s["NAME"], autocommit=True)
        self._conn.execute("SELECT pg_advisory_lock(%s)", [self.KEY])
        self.env = {"RTA_IMPORT_HOLD_LOCK": str(self.KEY)}

    def wait_until_an_import_waits(self, timeout: float = 300) -> None:
        """Until a worker is held at the point (one chunk written, not committed)."""
        deadline = time.monotonic() + timeout
        while not self._conn.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = 0 AND objid = %s"
                " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
                [self.KEY]).fetchone()[0]:
            if time.monotonic() > deadline:
                raise AssertionError(f"no import reached the hold point within {timeout} s")
            time.sleep(0.05)

    def release(self) -> None:
        if not self._conn.closed:
            self._conn.close()
