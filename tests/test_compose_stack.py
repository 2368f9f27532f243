"""docker-compose.yml itself, scaled out: `docker compose up --scale web=2 --scale worker=2` (issue #20).

The stack is the compose file's own: its images (or, where Docker Hub cannot be reached, the stand-ins that
scripts/ensure-docker builds from Debian trixie: deploy/offline/compose.yml changes only the images), its migrate
step, health checks, proxy (deploy/nginx.conf) and network. A file of the test's own changes three things: free
published ports instead of 8000/5432/6379, plain HTTP (no TLS in front), and every .qdpx export sent to a worker
(a small project's is otherwise written in its request).

Any web replica serves any signed-in request and any worker runs any job: each is shown with the other one stopped.
"""

from __future__ import annotations

import io
import json
import os
import secrets
import shutil
import subprocess
from pathlib import Path

import psycopg
import pytest
import requests

import refiqda
from refiqda.tests.helpers import SAMPLES
from tests.faults import free_port, wait_until
from tests.test_deploy import compose_command

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = SAMPLES / "claude" / "claude-history-synthetic-conversations.json"
OFFICIAL_IMAGES = ("python:3.13-slim", "postgres:16", "redis:7", "nginx:1.27-alpine")
PASSWORD = "compose-test-password-rta"
APP_IMAGE = "rta-studio:compose-test"

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.xdist_group("compose")]


def _docker_answers() -> bool:
    if not shutil.which("docker"):
        return False
    return subprocess.run(["docker", "info"], capture_output=True, timeout=60).returncode == 0


def _image_id(image: str) -> str | None:
    found = subprocess.run(["docker", "image", "inspect", "--format", "{{.Id}}", image], capture_output=True, text=True,
                           timeout=60)
    return found.stdout.strip() if found.returncode == 0 else None


class Stack:
    """One compose project of the repository's docker-compose.yml, under a name of its own."""

    def __init__(self, workdir: Path) -> None:
        self.name = f"rta-compose-{secrets.token_hex(4)}"
        self.proxy_port, self.db_port = free_port(), free_port()
        files = ["docker-compose.yml"]
        if not all(_image_id(image) for image in OFFICIAL_IMAGES):
            files.append("deploy/offline/compose.yml")
        local = workdir / "this-machine.yml"
        local.write_text(self._local_changes())
        self.files = [arg for f in [*files, str(local)] for arg in ("-f", f)]
        self.env = {**os.environ, "SECRET_KEY": secrets.token_urlsafe(50), "ALLOWED_HOSTS": "127.0.0.1,localhost"}

    def _local_changes(self) -> str:
        # One image for every app service, under one name across runs: the next build starts from its layers.
        app = {"image": APP_IMAGE, "environment": {"RTA_SSL_REDIRECT": "false", "RTA_SECURE_COOKIES": "false",
                               "RTA_EXPORT_INLINE_MAX_SEGMENTS": "0"}}
        return json.dumps({"services": {
            "db": {"ports": [f"127.0.0.1:{self.db_port}:5432"]},
            "redis": {"ports": []},
            "proxy": {"ports": [f"127.0.0.1:{self.proxy_port}:80"]},
            **{service: app for service in ("migrate", "web", "worker", "worker-live", "beat")},
        }}).replace('"ports": [', '"ports": !override [')

    def compose(self, *args: str, timeout: float = 900) -> str:
        done = subprocess.run([*compose_command(), "-p", self.name, *self.files, *args], cwd=ROOT, env=self.env,
                              capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, f"compose {' '.join(args)}:\n{done.stderr[-3000:]}"
        return done.stdout

    def build_app_image(self) -> None:
        """The app services' one image, built once from this checkout; the previous build's image is removed."""
        previous = _image_id(APP_IMAGE)
        self.compose("build", "migrate", timeout=1800)
        if previous and previous != _image_id(APP_IMAGE):
            subprocess.run(["docker", "image", "rm", previous], capture_output=True, timeout=300)

    def container(self, service: str, index: int) -> str:
        return f"{self.name}-{service}-{index}"

    def docker(self, *args: str) -> None:
        subprocess.run(["docker", *args], check=True, capture_output=True, timeout=300)

    def running(self, service: str) -> list[str]:
        return sorted(self.compose("ps", "--status", "running", "--format", "{{.Name}}", service).split())

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.proxy_port}"

    def database(self) -> psycopg.Connection:
        return psycopg.connect(host="127.0.0.1", port=self.db_port, user="rta", password="rta", dbname="rta",
                               autocommit=True)


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    if not _docker_answers():
        pytest.fail("Docker does not answer: scripts/ensure-docker installs and starts it (root, Debian)")
    stack = Stack(tmp_path_factory.mktemp("compose"))
    try:
        stack.build_app_image()
        stack.compose("up", "--detach", "--scale", "web=2", "--scale", "worker=2")
        wait_until(lambda: _answers(f"{stack.url}/healthz"), "the proxy to answer through a web replica", 300)
        stack.compose("exec", "-T", "-e", f"DJANGO_SUPERUSER_PASSWORD={PASSWORD}", "web", "python", "manage.py",
                      "createsuperuser", "--noinput", "--username", "lead", "--email", "lead@example.org")
        yield stack
    finally:
        print(stack.compose("logs", "--no-color", "--tail", "40"))  # pytest shows it beside a failure
        stack.compose("down", "--volumes", "--remove-orphans", "--timeout", "20")


def _answers(url: str) -> bool:
    try:
        return requests.get(url, timeout=10).status_code == 200
    except requests.RequestException:
        return False


def _signed_in(stack: Stack) -> requests.Session:
    session = requests.Session()
    session.headers["Referer"] = stack.url + "/"
    session.get(f"{stack.url}/accounts/login/", timeout=60)
    response = session.post(f"{stack.url}/accounts/login/", timeout=60, allow_redirects=False, data={
        "username": "lead", "password": PASSWORD, "csrfmiddlewaretoken": session.cookies["csrftoken"]})
    assert response.status_code == 302, response.text[:500]
    return session


def _csrf(session: requests.Session) -> dict[str, str]:
    return {"X-CSRFToken": session.cookies["csrftoken"]}


def _one_alone(stack: Stack, service: str, keep: int, other: int):
    """Stops replica `other` of `service`, so replica `keep` is the only one running."""
    stack.docker("start", stack.container(service, keep))
    stack.docker("stop", "--time", "20", stack.container(service, other))
    assert stack.running(service) == [stack.container(service, keep)]


def test_the_scaled_stack_runs_two_web_replicas_and_two_workers_healthy(stack):
    assert stack.running("web") == [stack.container("web", 1), stack.container("web", 2)]
    assert stack.running("worker") == [stack.container("worker", 1), stack.container("worker", 2)]
    for service in ("db", "redis", "proxy", "worker-live", "beat"):
        assert stack.running(service) == [stack.container(service, 1)], service
    # Both workers answer the compose file's own health check command, each under its own node name.
    pong = stack.compose("exec", "-T", "--index", "1", "worker", "celery", "-A", "config", "inspect", "ping",
                         "--timeout", "10")
    nodes = {line.split(":")[0].lstrip("-> ").strip() for line in pong.splitlines() if "@" in line}
    assert len(nodes) == 3, pong  # the two workers and worker-live
    health = {name: state for name, state in (line.split() for line in stack.compose(
        "ps", "--format", "{{.Name}} {{.Health}}", "web", "proxy", "db", "redis").split("\n") if line.strip())}
    assert set(health.values()) == {"healthy"}, health


def test_either_web_replica_alone_serves_the_same_signed_in_session(stack):
    session = _signed_in(stack)
    response = session.post(f"{stack.url}/p/new/", data={"name": "Scaled"}, headers=_csrf(session), timeout=60,
                            allow_redirects=False)
    assert response.status_code == 302, response.text[:500]
    for keep, other in ((2, 1), (1, 2)):
        _one_alone(stack, "web", keep, other)
        # The proxy may still try the stopped replica's address until its DNS answer expires; it then moves on.
        page = wait_until(lambda: _page(session, f"{stack.url}/"), f"web-{keep} alone to answer", 120)
        assert "Scaled" in page  # signed in (the session is in Redis and PostgreSQL, not in a replica)
    stack.docker("start", stack.container("web", 2))


def _page(session: requests.Session, url: str) -> str | None:
    try:
        response = session.get(url, timeout=30, allow_redirects=False)
    except requests.RequestException:
        return None
    return response.text if response.status_code == 200 else None


def test_either_worker_alone_imports_and_exports(stack):
    session = _signed_in(stack)
    response = session.post(f"{stack.url}/p/new/", data={"name": "Worked"}, headers=_csrf(session), timeout=60,
                            allow_redirects=False)
    assert response.status_code == 302, response.text[:500]
    with stack.database() as db:
        project = db.execute("SELECT id, uuid FROM projects_project WHERE name = 'Worked'").fetchone()

        _one_alone(stack, "worker", 2, 1)
        response = session.post(f"{stack.url}/p/{project[1]}/interviews/import/", data={"format": "auto"},
                                files={"files": (SAMPLE.name, SAMPLE.read_bytes(), "application/json")},
                                headers=_csrf(session), allow_redirects=False, timeout=60)
        assert response.status_code == 302, response.text[:500]
        job_url = f"{stack.url}{response.headers['Location']}"
        keys = [c["key"] for f in _import_preview(db, project[0])["files"] for c in f["conversations"]]
        response = session.post(f"{job_url}start/", data={"conversations": keys, "participant": "auto"},
                                headers=_csrf(session), allow_redirects=False, timeout=60)
        assert response.status_code == 302, response.text[:500]
        status = wait_until(lambda: _finished(db, "interviews_importjob", project[0]), "the import on worker-2", 300)
        assert status == "done"
        interviews = db.execute("SELECT title FROM interviews_interview WHERE project_id = %s",
                                [project[0]]).fetchall()
        assert len(interviews) == len(keys) > 0

        _one_alone(stack, "worker", 1, 2)
        response = session.post(f"{stack.url}/p/{project[1]}/reports/exchange/export.qdpx",
                                data={"positions": "codepoints"}, headers=_csrf(session), allow_redirects=False,
                                timeout=60)
        assert response.status_code == 302, response.text[:500]
        status = wait_until(lambda: _finished(db, "reports_exportjob", project[0]), "the export on worker-1", 300)
        assert status == "done"
        export_uuid = db.execute("SELECT uuid FROM reports_exportjob WHERE project_id = %s",
                                 [project[0]]).fetchone()[0]
    download = session.get(f"{stack.url}/p/{project[1]}/reports/exports/{export_uuid}/download/", timeout=60)
    assert download.status_code == 200, download.text[:500]
    qdpx = refiqda.read_project(io.BytesIO(download.content))
    assert sorted(s.name for s in qdpx.sources) == sorted(title for (title,) in interviews)
    stack.docker("start", stack.container("worker", 2))


def _import_preview(db: psycopg.Connection, project_id: int) -> dict:
    def preview():
        row = db.execute("SELECT preview FROM interviews_importjob WHERE project_id = %s", [project_id]).fetchone()
        return row and row[0] and row[0].get("files") and row[0]
    return wait_until(preview, "the upload's preview", 120)


def _finished(db: psycopg.Connection, table: str, project_id: int) -> str | None:
    row = db.execute(f"SELECT status FROM {table} WHERE project_id = %s", [project_id]).fetchone()  # noqa: S608
    return row[0] if row and row[0] in ("done", "failed") else None
