"""Web requests run their SQL under a statement timeout; a cancelled statement is a clear 503, never a 500.

tests/test_big_project.py shows it on a 250,000-interview project; these show the parts on a small one.
"""

from __future__ import annotations

import json

import pytest
from django.db import OperationalError, connection, transaction
from django.test import RequestFactory
from django.urls import reverse

from projects.middleware import StatementTimeoutMiddleware, is_query_cancelled

pytestmark = pytest.mark.django_db


def _statement_timeout() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        return cursor.fetchone()[0]


def test_each_web_request_runs_under_the_configured_timeout(client_for, project, viewer, settings):
    client = client_for(viewer)
    settings.RTA_WEB_STATEMENT_TIMEOUT_MS = 1234
    assert client.get(reverse("interviews:list", args=[project.uuid])).status_code == 200
    assert _statement_timeout() == "1234ms"
    settings.RTA_WEB_STATEMENT_TIMEOUT_MS = 0
    client.get(reverse("interviews:list", args=[project.uuid]))
    assert _statement_timeout() == "0"


def _cancelled_statement() -> OperationalError:
    with pytest.raises(OperationalError) as raised, transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL statement_timeout = 10")
            cursor.execute("SELECT pg_sleep(5)")
    return raised.value


def test_a_cancelled_statement_is_recognised_and_other_database_errors_are_not():
    assert is_query_cancelled(_cancelled_statement())
    assert not is_query_cancelled(OperationalError("connection refused"))
    assert not is_query_cancelled(ValueError("not a database error"))


@pytest.mark.parametrize("path", ["/p/00000000-0000-4000-8000-000000000000/interviews/", "/api/projects/"])
def test_a_cancelled_statement_becomes_a_503_saying_what_to_do(path, settings):
    settings.RTA_WEB_STATEMENT_TIMEOUT_MS = 8000
    middleware = StatementTimeoutMiddleware(lambda request: None)
    response = middleware.process_exception(RequestFactory().get(path), _cancelled_statement())
    assert response.status_code == 503
    body = response.content.decode()
    assert "more than the database can read in the time allowed (8 s)" in body and "Narrow it" in body
    if path.startswith("/api/"):
        assert json.loads(body)["code"] == "statement_timeout"
    else:
        assert "<h1>Too much to read at once</h1>" in body
    assert middleware.process_exception(RequestFactory().get(path), OperationalError("refused")) is None
