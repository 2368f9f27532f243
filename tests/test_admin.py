"""The Django admin: served only when enabled (off in production by default), its login behind the app's
lockout (projects/ratelimit.py), and staff revoking API tokens."""

from __future__ import annotations

import importlib
import uuid

import pytest
from django.test import Client, override_settings
from django.urls import clear_url_caches

import config.urls
from accounts.models import ApiToken
from accounts.services import api_token_create
from conftest import PASSWORD
from projects.ratelimit import login_failures_clear, login_failures_clear_address

pytestmark = pytest.mark.django_db


def _reload_urls() -> None:
    importlib.reload(config.urls)
    clear_url_caches()


@pytest.fixture
def admin_served():
    with override_settings(RTA_ADMIN_ENABLED=True):
        _reload_urls()
        yield
    _reload_urls()


def test_the_admin_is_not_served_unless_enabled(client):
    # The test settings are production's (DEBUG off), where the admin is off by default.
    assert client.get("/admin/").status_code == 404
    assert client.post("/admin/login/", {"username": "x", "password": "y"}).status_code == 404


def test_the_admin_login_shares_the_lockout(admin_served, make_user):
    staff = make_user(f"staff-{uuid.uuid4().hex[:8]}", is_staff=True, is_superuser=True)
    try:
        for _ in range(5):
            response = Client().post("/admin/login/", {"username": staff.username, "password": "wrong"}, REMOTE_ADDR="10.0.0.9")
            assert response.status_code == 200 and "staff account" in response.content.decode()
        client = Client()
        locked = client.post("/admin/login/", {"username": staff.username, "password": PASSWORD}, REMOTE_ADDR="10.0.0.9")
        assert locked.status_code == 429 and "Too many failed attempts" in locked.content.decode()
        assert "_auth_user_id" not in client.session
        # The same counter guards the app's login page.
        app_login = Client().post("/accounts/login/", {"username": staff.username, "password": PASSWORD}, REMOTE_ADDR="10.0.0.9")
        assert app_login.status_code == 429
        # From elsewhere the admin still works.
        ok = Client().post("/admin/login/", {"username": staff.username, "password": PASSWORD, "next": "/admin/"}, REMOTE_ADDR="10.0.0.10")
        assert ok.status_code == 302 and ok["Location"] == "/admin/"
    finally:
        for address in ("10.0.0.9", "10.0.0.10"):
            login_failures_clear(staff.username, address)
            login_failures_clear_address(address)


def test_staff_can_revoke_anyones_api_token_in_the_admin(admin_served, make_user, analyst):
    staff = make_user(f"staff-{uuid.uuid4().hex[:8]}", is_staff=True, is_superuser=True)
    token = api_token_create(user=analyst, name="leaked", lifetime_days=7).token
    client = Client()
    client.force_login(staff)
    listing = client.get("/admin/accounts/apitoken/")
    assert listing.status_code == 200 and "leaked" in listing.content.decode() and token.key_hash not in listing.content.decode()
    assert client.post(f"/admin/accounts/apitoken/{token.pk}/delete/", {"post": "yes"}).status_code == 302
    assert not ApiToken.objects.filter(pk=token.pk).exists()
