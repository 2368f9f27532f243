"""docker-compose.yml itself, scaled out: `docker compose up --scale web=2 --scale worker=2` (issue #20).

The stack is tests/compose_stack.py's: the compose file as it is, on free ports and plain HTTP. Any web replica
serves any signed-in request and any worker runs any job: each is shown with the other one stopped.
"""

from __future__ import annotations

import io

import psycopg
import pytest
import requests

import refiqda
from refiqda.tests.helpers import SAMPLES
from tests.compose_stack import Stack, docker_answers
from tests.faults import wait_until

SAMPLE = SAMPLES / "claude" / "claude-history-synthetic-conversations.json"
PASSWORD = "compose-test-password-rta"

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.xdist_group("compose")]


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    if not docker_answers():
        pytest.fail("Docker does not answer: scripts/ensure-docker installs and starts it (root, Debian)")
    stack = Stack(tmp_path_factory.mktemp("compose"))
    try:
        stack.start(web=2, worker=2)
        stack.compose("exec", "-T", "-e", f"DJANGO_SUPERUSER_PASSWORD={PASSWORD}", "web", "python", "manage.py",
                      "createsuperuser", "--noinput", "--username", "lead", "--email", "lead@example.org")
        yield stack
    finally:
        print(stack.stop())  # pytest shows the services' last log lines beside a failure


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
