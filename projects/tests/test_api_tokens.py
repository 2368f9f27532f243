"""The account's API tokens page and the REST API's token authentication."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import ApiToken
from accounts.services import api_token_create
from conftest import PASSWORD

pytestmark = pytest.mark.django_db
PAGE = "/accounts/tokens/"


def _api(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def _new_key(page: str) -> str:
    return re.search(r'id="new-token-key" readonly value="([^"]+)"', page).group(1)


def test_a_user_creates_a_token_sees_it_once_and_the_api_accepts_it(project, analyst, client_for):
    client = client_for(analyst)
    response = client.post(PAGE, {"name": "Analysis notebook", "lifetime_days": "30"})
    assert response.status_code == 200
    key = _new_key(response.content.decode())
    token = ApiToken.objects.get(user=analyst)
    assert token.name == "Analysis notebook" and token.prefix == key[:12]
    assert token.expires_at.date() == (timezone.now() + dt.timedelta(days=30)).date()
    # Only a fingerprint is kept, and the page never shows the key again.
    assert key not in {token.key_hash, token.prefix} and len(token.key_hash) == 64
    again = client.get(PAGE).content.decode()
    assert key not in again and "Analysis notebook" in again and "never" in again

    listed = _api(key).get("/api/projects/")
    assert listed.status_code == 200 and [p["uuid"] for p in listed.json()["results"]] == [str(project.uuid)]
    token.refresh_from_db()
    assert token.last_used_at is not None
    assert "never" not in client.get(PAGE).content.decode()


def test_the_page_says_what_a_token_can_do(analyst, client_for):
    page = client_for(analyst).get(PAGE).content.decode()
    assert "acts as you in every project you belong to" in page
    assert "changing your password or deactivating your\n  account revokes them all" in page


def test_anonymous_users_are_sent_to_the_login_page(analyst):
    token = api_token_create(user=analyst, name="script", lifetime_days=7).token
    for response in (Client().get(PAGE), Client().post(PAGE, {"name": "x", "lifetime_days": "7"}),
                     Client().post(f"/accounts/tokens/{token.uuid}/revoke/")):
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert ApiToken.objects.filter(user=analyst).count() == 1


def test_someone_elses_token_cannot_be_seen_or_revoked(analyst, outsider, client_for):
    issued = api_token_create(user=analyst, name="Arjun's script", lifetime_days=7)
    outsider_client = client_for(outsider)
    assert "Arjun's script" not in outsider_client.get(PAGE).content.decode()
    assert outsider_client.post(f"/accounts/tokens/{issued.token.uuid}/revoke/").status_code == 404
    assert _api(issued.key).get("/api/projects/").status_code == 200


def test_revoking_a_token_stops_the_api_accepting_it(analyst, client_for):
    issued = api_token_create(user=analyst, name="old laptop", lifetime_days=7)
    response = client_for(analyst).post(f"/accounts/tokens/{issued.token.uuid}/revoke/", follow=True)
    assert "Token “old laptop” revoked" in response.content.decode()
    assert not ApiToken.objects.filter(user=analyst).exists()
    refused = _api(issued.key).get("/api/projects/")
    assert refused.status_code == 401 and "does not exist or was revoked" in refused.json()["detail"]


def test_an_expired_token_is_refused_and_marked_on_the_page(analyst, client_for):
    issued = api_token_create(user=analyst, name="last year's", lifetime_days=7)
    ApiToken.objects.filter(pk=issued.token.pk).update(expires_at=timezone.now() - dt.timedelta(seconds=1))
    refused = _api(issued.key).get("/api/projects/")
    assert refused.status_code == 401 and "expired" in refused.json()["detail"]
    assert refused.has_header("WWW-Authenticate")
    assert "expired" in client_for(analyst).get(PAGE).content.decode()


def test_changing_the_password_revokes_every_token(analyst):
    keys = [api_token_create(user=analyst, name=f"t{i}", lifetime_days=30).key for i in range(2)]
    client = Client()
    client.force_login(analyst)
    response = client.post("/accounts/password/", {"old_password": PASSWORD, "new_password1": "a-new-unusual-passphrase-42",
                                                    "new_password2": "a-new-unusual-passphrase-42"})
    assert response.status_code == 302
    assert not ApiToken.objects.filter(user=analyst).exists()
    assert all(_api(key).get("/api/projects/").status_code == 401 for key in keys)


def test_a_password_set_anywhere_else_revokes_them_too(analyst):
    # The admin's password form and `manage.py changepassword` both come down to set_password() and save().
    issued = api_token_create(user=analyst, name="t", lifetime_days=30)
    analyst.set_password("another-unusual-passphrase-7")
    analyst.save()
    assert _api(issued.key).get("/api/projects/").status_code == 401


def test_deactivating_the_account_revokes_every_token(analyst):
    issued = api_token_create(user=analyst, name="t", lifetime_days=30)
    analyst.is_active = False
    analyst.save(update_fields=["is_active"])
    assert not ApiToken.objects.filter(user=analyst).exists()
    assert _api(issued.key).get("/api/projects/").status_code == 401


def test_logging_in_does_not_revoke_tokens(analyst):
    issued = api_token_create(user=analyst, name="t", lifetime_days=30)
    assert Client().post("/accounts/login/", {"username": analyst.username, "password": PASSWORD}).status_code == 302
    assert _api(issued.key).get("/api/projects/").status_code == 200


@pytest.mark.parametrize("data,field,message", [
    ({}, "name", "This field is required."),
    ({"name": "", "lifetime_days": "30"}, "name", "This field is required."),
    ({"name": "x", "lifetime_days": "1000"}, "lifetime_days", "Select a valid choice."),
    ({"name": "x" * 101, "lifetime_days": "30"}, "name", "at most 100 characters"),
])
def test_bad_input_names_the_field_and_creates_nothing(analyst, client_for, data, field, message):
    response = client_for(analyst).post(PAGE, data)
    assert response.status_code == 400
    assert message in " ".join(response.context["form"].errors[field])
    assert 'id="new-token-key"' not in response.content.decode()
    assert not ApiToken.objects.exists()


def test_the_token_list_queries_do_not_grow(analyst, client_for, django_assert_num_queries):
    client = client_for(analyst)
    api_token_create(user=analyst, name="first", lifetime_days=7)
    # session, user, the tokens
    with django_assert_num_queries(3):
        assert client.get(PAGE).status_code == 200
    for i in range(5):
        api_token_create(user=analyst, name=f"more {i}", lifetime_days=7)
    with django_assert_num_queries(3):
        page = client.get(PAGE).content.decode()
    assert page.count("Revoke</button>") == 6


def test_a_malformed_authorization_header_is_a_401_not_a_500():
    for header in ("Token", "Token a b", "Token \x00"):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=header)
        assert client.get("/api/projects/").status_code == 401


def test_tokens_from_before_reach_the_accounts_app_hashed_with_an_expiry(analyst):
    """rest_framework.authtoken's plain-text keys → projects.ApiToken (migration 0004: hashed, 90 days) →
    accounts.ApiToken (projects 0005), replayed on the tables as they were between those migrations."""
    import importlib
    from types import SimpleNamespace

    from django.db import connection
    from django.db.migrations.loader import MigrationLoader

    state = MigrationLoader(connection).project_state([("projects", "0004_api_token"), ("accounts", "0001_api_token")]).apps
    with connection.schema_editor() as editor:
        editor.create_model(state.get_model("projects", "ApiToken"))  # 0005 dropped it in this database
    legacy_key = "0123456789abcdef0123456789abcdef01234567"
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE authtoken_token (key varchar(40) PRIMARY KEY, created timestamptz NOT NULL, user_id integer NOT NULL)")
        cursor.execute("INSERT INTO authtoken_token VALUES (%s, %s, %s)", [legacy_key, timezone.now() - dt.timedelta(days=400), analyst.pk])

    editor = SimpleNamespace(connection=connection)
    importlib.import_module("projects.migrations.0004_api_token").import_legacy_tokens(state, editor)
    importlib.import_module("projects.migrations.0005_api_token_to_accounts").copy_tokens_to_accounts(state, editor)

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM authtoken_token")
        assert cursor.fetchone() == (0,)  # no plain-text key left behind
    token = ApiToken.objects.get(user=analyst)
    assert token.created_at < timezone.now() - dt.timedelta(days=399)
    assert dt.timedelta(days=89) < token.expires_at - timezone.now() <= dt.timedelta(days=90)
    assert _api(legacy_key).get("/api/projects/").status_code == 200


def test_the_number_of_tokens_is_capped_with_a_clear_message(analyst, client_for, monkeypatch):
    monkeypatch.setattr("accounts.services.API_TOKENS_PER_USER", 2)
    client = client_for(analyst)
    for i in range(2):
        assert client.post(PAGE, {"name": f"t{i}", "lifetime_days": "7"}).status_code == 200
    refused = client.post(PAGE, {"name": "one too many", "lifetime_days": "7"})
    assert refused.status_code == 400 and "You already have 2 API tokens" in refused.content.decode()
    assert ApiToken.objects.filter(user=analyst).count() == 2
