"""projects.prepared: a hot statement is parsed and planned once per connection, and stays usable
after failures, rollbacks and reconnects."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction
from django.test.utils import CaptureQueriesContext

from projects.prepared import PreparedStatement

pytestmark = [pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL only")]


def _statement(name: str) -> PreparedStatement:
    # `%%` is a literal percent sign, as in any statement with parameters.
    return PreparedStatement(name, "SELECT 100 / %(divisor)s, format('%%s!', %(word)s)",
                             [("divisor", "integer"), ("word", "text")])


def _prepared_names(prefix: str) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM pg_prepared_statements WHERE name LIKE %s ORDER BY name", [prefix + "%"])
        return [name for (name,) in cursor.fetchall()]


@pytest.mark.django_db
def test_the_first_use_on_a_connection_prepares_and_later_uses_only_execute():
    statement = _statement("t_first_use")
    with CaptureQueriesContext(connection) as queries:
        assert statement.fetchone({"divisor": 4, "word": "first"}) == (25, "first!")
        assert statement.fetchone({"divisor": 5, "word": "second", "ignored": 1}) == (20, "second!")
    assert [q["sql"].split()[0] for q in queries.captured_queries] == ["PREPARE", "EXECUTE"]
    assert _prepared_names("t_first_use") == ["t_first_use_1"]


@pytest.mark.django_db
def test_a_failed_call_leaves_the_statement_usable():
    statement = _statement("t_failure")
    for divisor in (0, 2, 0, 10):  # a failing first use, a success, a failing later use, a success
        if divisor == 0:
            with pytest.raises(DatabaseError), transaction.atomic():
                statement.fetchone({"divisor": 0, "word": "x"})
        else:
            assert statement.fetchone({"divisor": divisor, "word": "ok"}) == (100 // divisor, "ok!")


@pytest.mark.django_db
def test_a_rolled_back_transaction_keeps_the_prepared_statement():
    statement = _statement("t_rollback")
    with pytest.raises(RuntimeError), transaction.atomic():
        assert statement.fetchone({"divisor": 1, "word": "a"}) == (100, "a!")
        raise RuntimeError("roll back")
    with CaptureQueriesContext(connection) as queries:
        assert statement.fetchone({"divisor": 50, "word": "b"}) == (2, "b!")
    assert queries.captured_queries[0]["sql"].startswith("EXECUTE t_rollback_1 ")


@pytest.mark.django_db(transaction=True)
def test_a_new_connection_prepares_again():
    statement = _statement("t_reconnect")
    assert statement.fetchone({"divisor": 1, "word": "before"}) == (100, "before!")
    connection.close()
    with CaptureQueriesContext(connection) as queries:
        assert statement.fetchone({"divisor": 2, "word": "after"}) == (50, "after!")
    assert queries.captured_queries[0]["sql"].startswith("PREPARE ")


def test_every_placeholder_needs_a_type():
    with pytest.raises(ValueError, match="no type given for word"):
        PreparedStatement("t_untyped", "SELECT %(divisor)s, %(word)s", [("divisor", "integer")])
