"""The PostgreSQL backend (config/postgresql): the per-request health check (no round trip on a
healthy connection, a fresh connection after the server dropped the old one), and test databases
that are dropped even while a leftover connection holds them."""

from __future__ import annotations

import time

import psycopg
import pytest
from django.db import connection, connections

pytestmark = [pytest.mark.django_db, pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL only")]


@pytest.fixture
def persistent():
    """A connection of its own (outside the test's transaction), as a web worker holds one between requests."""
    wrapper = connections.create_connection("default")
    wrapper.ensure_connection()
    wrapper.health_check_enabled = True
    yield wrapper
    wrapper.close()


@pytest.fixture
def observer():
    s = connection.settings_dict
    with psycopg.connect(host=s["HOST"] or "127.0.0.1", port=s["PORT"] or 5432, user=s["USER"], password=s["PASSWORD"],
                         dbname=s["NAME"], autocommit=True) as conn:
        yield conn


def _last_query(observer, pid: int) -> str | None:
    row = observer.execute("SELECT query FROM pg_stat_activity WHERE pid = %s", [pid]).fetchone()
    return row[0] if row else None


def _new_request(wrapper) -> None:
    wrapper.close_if_unusable_or_obsolete()  # what Django runs when a request ends
    wrapper.close_if_health_check_failed()  # what it runs when the next request first uses the connection


def test_a_healthy_connection_is_checked_without_a_query(persistent, observer):
    pid = persistent.connection.info.backend_pid
    with persistent.cursor() as cursor:
        cursor.execute("SELECT 'the last query of the request'")
    _new_request(persistent)
    assert persistent.connection is not None and persistent.connection.info.backend_pid == pid
    assert _last_query(observer, pid) == "SELECT 'the last query of the request'"


def test_a_connection_the_server_dropped_is_replaced_before_the_request_uses_it(persistent, observer):
    pid = persistent.connection.info.backend_pid
    observer.execute("SELECT pg_terminate_backend(%s)", [pid])
    deadline = time.monotonic() + 60
    while _last_query(observer, pid) is not None:
        assert time.monotonic() < deadline, "the backend did not exit"
        time.sleep(0.02)
    _new_request(persistent)
    with persistent.cursor() as cursor:  # no error: a new connection
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)
    assert persistent.connection.info.backend_pid != pid


def test_a_test_database_is_dropped_even_while_a_leftover_connection_holds_it(observer):
    name = f"{connection.settings_dict['NAME']}_drop_probe"
    observer.execute(f'DROP DATABASE IF EXISTS "{name}"')
    observer.execute(f'CREATE DATABASE "{name}"')
    s = connection.settings_dict
    leftover = psycopg.connect(host=s["HOST"] or "127.0.0.1", port=s["PORT"] or 5432, user=s["USER"],
                               password=s["PASSWORD"], dbname=name, autocommit=True)
    try:
        connection.creation._destroy_test_db(name, verbosity=0)
        assert observer.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is None
        with pytest.raises(psycopg.OperationalError):
            leftover.execute("SELECT 1")
    finally:
        leftover.close()
        observer.execute(f'DROP DATABASE IF EXISTS "{name}"')
