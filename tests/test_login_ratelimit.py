"""Login lockout: 5 failed attempts per username and address (50 per address over all usernames), then a clear
429 for 15 minutes; behind a trusted proxy the address is the client's; the admin's login shares
the counters (tests/test_admin.py)."""

from __future__ import annotations

import logging
import uuid

import pytest
from django.test import Client

from conftest import PASSWORD
from projects.ratelimit import login_failures_clear, login_failures_clear_address

pytestmark = pytest.mark.django_db


@pytest.fixture
def user(make_user):
    # A unique name: the cache (Redis) is shared with other test runs logging in as the fixture users.
    user = make_user(f"locktest-{uuid.uuid4().hex[:8]}")
    yield user
    for address in ("127.0.0.1", "10.0.0.9"):
        login_failures_clear(user.username, address)
        # Failures also count per address, towards a ceiling other tests' logins must not meet.
        login_failures_clear_address(address)


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
    # Attempts while locked do not count, so keep trying until the lock has run out (a generous deadline).
    deadline = time.monotonic() + 60
    while (status := _login(Client(), user.username, PASSWORD).status_code) == 429:
        assert time.monotonic() < deadline, "the one-second lock never expired"
        time.sleep(0.1)
    assert status == 302


def test_guessing_the_current_password_on_the_password_page_counts_as_failed_logins(user):
    # Someone with a stolen session must not get unlimited guesses at the password it protects.
    client = Client()
    client.force_login(user)
    new = {"new_password1": "a-new-unusual-passphrase-42", "new_password2": "a-new-unusual-passphrase-42"}
    for _ in range(5):
        response = client.post("/accounts/password/", {"old_password": "wrong", **new})
        assert response.status_code == 200 and "old password was entered incorrectly" in response.content.decode()
    locked = client.post("/accounts/password/", {"old_password": PASSWORD, **new})
    assert locked.status_code == 429 and "Too many failed attempts" in locked.content.decode()
    user.refresh_from_db()
    assert user.check_password(PASSWORD)
    assert _login(Client(), user.username, PASSWORD).status_code == 429  # one counter for both pages


def test_the_right_current_password_changes_it(user):
    client = Client()
    client.force_login(user)
    response = client.post("/accounts/password/", {"old_password": PASSWORD, "new_password1": "a-new-unusual-passphrase-42",
                                                    "new_password2": "a-new-unusual-passphrase-42"})
    assert response.status_code == 302
    user.refresh_from_db()
    assert user.check_password("a-new-unusual-passphrase-42")


# --- behind a reverse proxy ---------------------------------------------------------------

PROXY = "10.1.0.5"


def _login_via(client: Client, username: str, password: str, *, peer: str, forwarded_for: str = ""):
    extra = {"HTTP_X_FORWARDED_FOR": forwarded_for} if forwarded_for else {}
    return client.post("/accounts/login/", {"username": username, "password": password}, REMOTE_ADDR=peer, **extra)


@pytest.fixture
def clear_addresses():
    """Addresses whose failure counts a test builds up; cleared after it (the cache is shared)."""
    addresses: list[str] = []
    yield addresses
    for address in addresses:
        login_failures_clear_address(address)


def test_an_attacker_behind_the_trusted_proxy_cannot_lock_out_another_user(user, settings, clear_addresses):
    settings.TRUSTED_PROXIES = ["10.1.0.0/24"]
    attacker, victim = "203.0.113.9", "198.51.100.4"
    clear_addresses += [attacker, victim]
    for _ in range(5):
        _login_via(Client(), user.username, "wrong", peer=PROXY, forwarded_for=attacker)
    assert _login_via(Client(), user.username, PASSWORD, peer=PROXY, forwarded_for=attacker).status_code == 429
    # The account's owner comes through the same proxy from elsewhere, and is let in.
    assert _login_via(Client(), user.username, PASSWORD, peer=PROXY, forwarded_for=victim).status_code == 302
    login_failures_clear(user.username, attacker)


def test_the_proxy_chain_is_read_from_the_right(user, settings, clear_addresses):
    # The client may put anything on the left of X-Forwarded-For; the address our proxy
    # appended (the right-most untrusted one) is the client's.
    settings.TRUSTED_PROXIES = ["10.1.0.0/24"]
    attacker = "203.0.113.9"
    clear_addresses.append(attacker)
    for i in range(5):
        _login_via(Client(), user.username, "wrong", peer=PROXY, forwarded_for=f"192.0.2.{i}, {attacker}, 10.1.0.7")
    assert _login_via(Client(), user.username, PASSWORD, peer=PROXY, forwarded_for=f"192.0.2.99, {attacker}").status_code == 429
    login_failures_clear(user.username, attacker)


def test_a_spoofed_forwarded_for_from_an_untrusted_client_is_ignored(user, settings, clear_addresses):
    settings.TRUSTED_PROXIES = ["10.1.0.0/24"]
    attacker = "203.0.113.10"
    clear_addresses.append(attacker)
    for i in range(5):
        _login_via(Client(), user.username, "wrong", peer=attacker, forwarded_for=f"192.0.2.{i}")
    # A new made-up address per attempt did not spread the failures: the real peer is locked.
    assert _login_via(Client(), user.username, PASSWORD, peer=attacker, forwarded_for="192.0.2.200").status_code == 429
    login_failures_clear(user.username, attacker)


def test_without_trusted_proxies_forwarded_headers_are_ignored(user, settings, clear_addresses):
    settings.TRUSTED_PROXIES = []
    clear_addresses.append(PROXY)
    for i in range(5):
        _login_via(Client(), user.username, "wrong", peer=PROXY, forwarded_for=f"192.0.2.{i}")
    assert _login_via(Client(), user.username, PASSWORD, peer=PROXY, forwarded_for="192.0.2.200").status_code == 429
    login_failures_clear(user.username, PROXY)


def test_password_spraying_from_one_address_pauses_that_address(make_user, settings, clear_addresses, caplog):
    settings.RTA_LOGIN_MAX_FAILURES_PER_ADDRESS = 6
    sprayer, elsewhere = "203.0.113.11", "203.0.113.12"
    clear_addresses += [sprayer, elsewhere]
    users = [make_user(f"spray-{uuid.uuid4().hex[:8]}") for _ in range(3)]
    with caplog.at_level(logging.WARNING, logger="rta.security"):
        for target in users:  # two guesses per account: no single account reaches its limit of 5
            for _ in range(2):
                assert _login_via(Client(), target.username, "Summer2026!", peer=sprayer).status_code == 200
    refused = _login_via(Client(), users[0].username, PASSWORD, peer=sprayer)
    assert refused.status_code == 429 and "Too many failed logins from your network" in refused.content.decode()
    assert any("every username from 203.0.113.11" in r.getMessage() for r in caplog.records)
    assert _login_via(Client(), users[0].username, PASSWORD, peer=elsewhere).status_code == 302
    for target in users:
        login_failures_clear(target.username, sprayer)
