"""Fixtures shared by every app's tests: role users, a project, a real Celery worker, a browser."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

# Playwright's sync API runs an event loop in the test thread; the ORM calls tests make
# around it are still synchronous.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

ROOT = Path(__file__).resolve().parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run", "--disable-quic",
]
PASSWORD = "correct-horse-battery-staple"


@pytest.fixture(scope="session", autouse=True)
def _forget_this_runs_cache_keys() -> Iterator[None]:
    """Drop every Redis cache key this run wrote at its end: their prefix is the run's own (config/settings_test.py),
    so no later run reads them, and with 30-day timeouts a big test left 250,000 of them behind each run.
    (The cache's clear() drops only its own prefix's keys: projects/cache.py.)"""
    yield
    from django.core.cache import caches

    caches["default"].clear()


@pytest.fixture(autouse=True)
def _celery_in_process(request) -> Iterator[None]:
    """Tasks run in-process unless a test starts a real worker (marker `worker`)."""
    from config.celery import app

    eager = "worker" not in request.keywords
    previous = app.conf.task_always_eager
    app.conf.task_always_eager = eager
    yield
    app.conf.task_always_eager = previous


@pytest.fixture
def make_user(django_user_model) -> Callable:
    def make(username: str, **extra):
        return django_user_model.objects.create_user(username=username, password=PASSWORD, email=f"{username}@example.org", **extra)

    return make


@pytest.fixture
def owner(make_user):
    return make_user("olivia", first_name="Olivia", last_name="Owner")


@pytest.fixture
def analyst(make_user):
    return make_user("arjun", first_name="Arjun", last_name="Analyst")


@pytest.fixture
def viewer(make_user):
    return make_user("vera", first_name="Vera", last_name="Viewer")


@pytest.fixture
def outsider(make_user):
    return make_user("oscar", first_name="Oscar", last_name="Outsider")


@pytest.fixture
def project(owner, analyst, viewer):
    """A project with an owner, an analyst and a viewer (the outsider is not a member)."""
    from projects.models import Membership, Project, Role

    project = Project.objects.create(name="Chatbots and identity", created_by=owner)
    Membership.objects.create(project=project, user=owner, role=Role.OWNER)
    Membership.objects.create(project=project, user=analyst, role=Role.ANALYST)
    Membership.objects.create(project=project, user=viewer, role=Role.VIEWER)
    return project


@pytest.fixture
def client_for(client) -> Callable:
    """A test client logged in as the given user."""
    from django.test import Client

    def make(user) -> Client:
        c = Client()
        c.force_login(user)
        return c

    return make


@pytest.fixture
def api_key_for() -> Callable:
    """The key of a new API token of the given user, for `Authorization: Token <key>`."""
    from accounts.services import api_token_create

    return lambda user: api_token_create(user=user, name="test", lifetime_days=7).key


@pytest.fixture
def redis_round_trips(monkeypatch):
    """Each Redis round trip this test makes: a command's name, or the commands of one pipeline."""
    import redis

    trips: list[tuple[str, ...]] = []
    command, pipeline = redis.Redis.execute_command, redis.client.Pipeline.execute

    def one(self, *args, **options):
        trips.append((str(args[0]).upper(),))
        return command(self, *args, **options)

    def batch(self, *args, **options):
        trips.append(tuple(str(c[0][0]).upper() for c in self.command_stack))
        return pipeline(self, *args, **options)

    monkeypatch.setattr(redis.Redis, "execute_command", one)
    monkeypatch.setattr(redis.client.Pipeline, "execute", batch)
    return trips


@pytest.fixture
def demo_project(db):
    from reports.demo import demo_load

    return demo_load()


@pytest.fixture
def celery_worker(transactional_db) -> Iterator[subprocess.Popen]:
    """A real Celery worker process on this test run's queue and test database.

    Tests using it need the `worker` marker (so tasks are sent to the broker) and
    committed data (transactional_db).
    """
    from django.conf import settings
    from django.db import connection

    env = dict(os.environ)
    db = connection.settings_dict
    env["DATABASE_URL"] = f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}"
    env["CELERY_QUEUE"] = settings.CELERY_TASK_DEFAULT_QUEUE
    env["DJANGO_SETTINGS_MODULE"] = "config.settings_test"
    env["CELERY_TASK_ALWAYS_EAGER"] = "false"
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo", "--loglevel=WARNING",
         "-Q", settings.CELERY_TASK_DEFAULT_QUEUE, "-n", f"{settings.CELERY_TASK_DEFAULT_QUEUE}@%h", "--without-gossip", "--without-mingle", "--without-heartbeat"],
        cwd=ROOT, env=env, start_new_session=True,
    )
    _wait_for_worker(settings.CELERY_TASK_DEFAULT_QUEUE)
    yield proc
    from tests.faults import stop_group

    stop_group(proc)


def _wait_for_worker(queue: str, timeout: float = 120) -> None:
    from config.celery import app

    # Ping this run's worker by name: other test runs may have workers on the same broker.
    name = f"{queue}@{socket.gethostname()}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        replies = app.control.ping(destination=[name], timeout=0.5) or []
        if replies:
            return
    raise RuntimeError(f"The Celery worker for queue {queue} did not start within {timeout} s")


@pytest.fixture(scope="session")
def browser() -> Iterator:
    if not Path(CHROMIUM).exists():
        pytest.fail("Chromium is missing: `make test` installs Debian's chromium (apt-get install chromium).")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


# How long a browser test waits for a condition (an element, a text, a URL) before it fails. Generous:
# tests wait for conditions, never for time, so this only bounds a failure on a slow or shared machine.
BROWSER_TIMEOUT_MS = int(os.environ.get("RTA_TEST_BROWSER_TIMEOUT_MS", "30000"))


@pytest.fixture(autouse=True)
def _live_server_idle_before_flush(request) -> Iterator[None]:
    """After a browser test, wait until the live server's requests have finished before the database is flushed.

    Closing a browser does not stop a request its server thread is still handling; a flush (TRUNCATE of every
    table) that meets that request's open transaction deadlocks with it and fails, and the next test then finds
    the last one's rows. The server closes its connection at the end of each request, so no other connection to the
    test database is the condition; one still open when the wait ends is ended by the database.
    """
    if "live_server" not in request.fixturenames:
        yield
        return
    request.getfixturevalue("transactional_db")  # set up before this fixture, so torn down after it
    yield
    from django.db import connection

    if connection.vendor != "postgresql":
        return
    others = "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
    deadline = time.monotonic() + BROWSER_TIMEOUT_MS / 1000
    with connection.cursor() as cursor:
        while True:
            cursor.execute(others)
            busy = [pid for (pid,) in cursor.fetchall()]  # usually gone within 0.2 s
            if not busy:
                return
            if time.monotonic() > deadline:
                cursor.execute("SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) AS pid", [busy])
                return
            time.sleep(0.02)  # polls the condition above: the interval sets only how soon it is seen


@pytest.fixture
def page(browser, live_server) -> Iterator:
    """A fresh browser page; console errors (e.g. CSP violations) fail the test."""
    from playwright.sync_api import expect

    expect.set_options(timeout=BROWSER_TIMEOUT_MS)
    context = browser.new_context(viewport={"width": 1280, "height": 800}, base_url=live_server.url)
    context.set_default_timeout(BROWSER_TIMEOUT_MS)
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    assert not errors, f"The browser reported errors: {errors}"


@pytest.fixture
def login(live_server) -> Callable:
    """Log the page in as `user` through the real login form."""

    def do_login(page, user) -> None:
        from projects.ratelimit import login_failures_clear, login_failures_clear_address

        # Earlier tests' wrong passwords (in this process or in web processes they started) must not lock this login out.
        for address in ("127.0.0.1", "::1"):
            login_failures_clear(user.username, address)
            login_failures_clear_address(address)
        page.goto(f"{live_server.url}/accounts/login/")
        page.fill("#id_username", user.username)
        page.fill("#id_password", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(f"{live_server.url}/")

    return do_login
