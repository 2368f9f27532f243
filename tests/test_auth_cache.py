"""Sessions and users read from Redis (production with REDIS_URL): fewer round trips, nothing less safe."""

from __future__ import annotations

import pytest
from django.conf import settings as django_settings
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from projects.auth_cache import CACHE_SECONDS, user_cache_key

pytestmark = pytest.mark.skipif(not django_settings.CACHES["default"]["BACKEND"].endswith("RedisCache"),
                                reason="the cached session and user need Redis (REDIS_URL)")


@pytest.fixture(autouse=True)
def cached_auth(settings):
    settings.SESSION_ENGINE = "projects.auth_cache"
    settings.AUTHENTICATION_BACKENDS = ["projects.auth_cache.CachedModelBackend"]


def _signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _tables_read(client: Client, url: str) -> tuple[int, str]:
    with CaptureQueriesContext(connection) as queries:
        status = client.get(url).status_code
    return status, " ".join(q["sql"] for q in queries.captured_queries)


def _redis_ttl(key: str) -> int:
    return cache._cache.get_client(key).ttl(cache.make_and_validate_key(key))


def test_a_warm_request_reads_neither_the_session_nor_the_user_from_the_database(project, analyst):
    client = _signed_in(analyst)
    url = reverse("projects:members", args=[project.uuid])
    assert client.get(url).status_code == 200  # fills the user's cached copy (login saved the user)
    status, sql = _tables_read(client, url)
    assert status == 200
    assert "django_session" not in sql and 'FROM "auth_user"' not in sql
    assert cache.get(user_cache_key(analyst.pk)).username == analyst.username


def test_cached_copies_live_minutes_not_the_sessions_two_weeks(project, analyst):
    client = _signed_in(analyst)
    client.get(reverse("projects:members", args=[project.uuid]))
    session_key = "django.contrib.sessions.cached_db" + client.session.session_key
    assert cache.get(session_key) is not None
    assert 0 < _redis_ttl(session_key) <= CACHE_SECONDS
    assert 0 < _redis_ttl(user_cache_key(analyst.pk)) <= CACHE_SECONDS


def test_a_password_change_still_signs_out_other_sessions(project, analyst):
    client = _signed_in(analyst)
    url = reverse("projects:members", args=[project.uuid])
    assert client.get(url).status_code == 200
    analyst.set_password("a-new-long-passphrase-42")
    analyst.save()
    response = client.get(url)
    assert response.status_code == 302 and reverse("login") in response["Location"]


def test_a_deactivated_user_is_signed_out_at_once(project, analyst):
    client = _signed_in(analyst)
    url = reverse("projects:members", args=[project.uuid])
    assert client.get(url).status_code == 200
    analyst.is_active = False
    analyst.save(update_fields=["is_active"])
    assert client.get(url).status_code == 302


def test_a_session_cookie_is_worthless_after_logout(project, analyst):
    client = _signed_in(analyst)
    url = reverse("projects:members", args=[project.uuid])
    assert client.get(url).status_code == 200
    stolen = client.cookies[django_settings.SESSION_COOKIE_NAME].value
    client.post(reverse("logout"))
    replay = Client()
    replay.cookies[django_settings.SESSION_COOKIE_NAME] = stolen
    assert replay.get(url).status_code == 302


def test_a_warm_request_reads_its_session_and_user_in_one_round_trip(project, analyst, redis_round_trips):
    client = _signed_in(analyst)
    url = reverse("projects:members", args=[project.uuid])
    assert client.get(url).status_code == 200  # this process learns whose session it is
    redis_round_trips.clear()
    response = client.get(url)
    assert response.status_code == 200 and response.wsgi_request.user == analyst
    reads = [c for trip in redis_round_trips for c in trip if c in ("GET", "MGET")]
    assert reads[:1] == ["MGET"] and reads.count("GET") == 0, redis_round_trips


def test_a_wrong_guess_of_whose_session_it_is_never_serves_that_user(project, analyst, owner):
    from projects import auth_cache

    client = _signed_in(analyst)
    url = reverse("projects:members", args=[project.uuid])
    assert client.get(url).status_code == 200
    assert client.get(url).status_code == 200  # the owner's copy is cached too, under its own key
    _signed_in(owner).get(url)
    session_key = client.cookies[django_settings.SESSION_COOKIE_NAME].value
    auth_cache._USER_OF_SESSION[session_key] = str(owner.pk)  # as if the process had it wrong
    response = client.get(url)
    assert response.wsgi_request.user == analyst
    assert auth_cache._USER_OF_SESSION[session_key] == str(analyst.pk)


def test_signing_in_as_someone_else_in_the_same_browser_gives_their_user(project, analyst, owner):
    client = _signed_in(analyst)
    url = reverse("projects:members", args=[project.uuid])
    assert client.get(url).wsgi_request.user == analyst
    client.force_login(owner)
    assert client.get(url).wsgi_request.user == owner
    client.post(reverse("logout"))
    assert client.get(url).status_code == 302
