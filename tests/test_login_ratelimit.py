"""Login lockout: 5 failed attempts per username and address, then a clear 429 for 15 minutes."""

from __future__ import annotations

import logging
import uuid

import pytest
from django.test import Client

from conftest import PASSWORD
from projects.ratelimit import login_failures_clear

pytestmark = pytest.mark.django_db


@pytest.fixture
def user(make_user):
    # A unique name: the cache (Redis) is shared with other test runs logging in as the fixture users.
    user = make_user(f"locktest-{uuid.uuid4().hex[:8]}")
    yield user
    for address in ("127.0.0.1", "10.0.0.9"):
        login_failures_clear(user.username, address)


def _login(client: Client, username: str, password: str, address: str = "127.0.0.1"):
    return client.post("/accounts/login/", {"username": username, "password": password}, REMOTE_ADDR=address)


def test_five_failures_lock_the_account_from_that_address(user, caplog):
    client = Client()
    for _ in range(5):
        response = _login(client, user.username, "wrong")
        assert response.status_code == 200
        assert "enter a correct username and password" in response.content.decode()

    with caplog.at_level(logging.WARNING, logger="rta.security"):
        response = _login(client, user.username, PASSWORD)
    # Even the right password is refused while locked, with a message saying why and for how long.
    assert response.status_code == 429
    body = response.content.decode()
    assert "Too many failed attempts" in body and "15 minutes" in body
    assert "_auth_user_id" not in client.session


def test_the_lockout_is_logged_once(user, caplog):
    with caplog.at_level(logging.WARNING, logger="rta.security"):
        for _ in range(7):
            _login(Client(), user.username, "wrong")
    lockouts = [r for r in caplog.records if r.name == "rta.security" and "locked out" in r.getMessage()]
    assert len(lockouts) == 1
    assert user.username in lockouts[0].getMessage()


def test_four_failures_then_success_resets_the_count(user):
    client = Client()
    for _ in range(4):
        _login(client, user.username, "wrong")
    assert _login(client, user.username, PASSWORD).status_code == 302
    client.logout()
    for _ in range(4):
        _login(client, user.username, "wrong")
    # Four more failures after the reset: still not locked.
    assert _login(client, user.username, PASSWORD).status_code == 302


def test_the_lock_is_per_address(user):
    for _ in range(5):
        _login(Client(), user.username, "wrong", address="10.0.0.9")
    assert _login(Client(), user.username, PASSWORD, address="10.0.0.9").status_code == 429
    assert _login(Client(), user.username, PASSWORD, address="127.0.0.1").status_code == 302


def test_the_username_is_matched_case_insensitively(user):
    for _ in range(5):
        _login(Client(), user.username.upper(), "wrong")
    assert _login(Client(), user.username, PASSWORD).status_code == 429


def test_the_lock_expires(user, settings):
    import time

    settings.RTA_LOGIN_LOCKOUT_SECONDS = 1
    for _ in range(5):
        _login(Client(), user.username, "wrong")
    assert _login(Client(), user.username, PASSWORD).status_code == 429
    time.sleep(1.5)
    assert _login(Client(), user.username, PASSWORD).status_code == 302
