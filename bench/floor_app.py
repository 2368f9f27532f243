"""The floor under the apply latency: a WSGI app that only reads the form and answers as many
bytes as an apply does. Served by the same gunicorn setup and driven by the same client, it
shows how much of the coding phase's 1-client p50 is HTTP, gunicorn and `requests` on this
machine, whatever Django and PostgreSQL do.

`durable_write_application` is the same app plus the one thing an apply cannot skip: an INSERT of
the (code, segment) pair, committed to PostgreSQL (a WAL flush) before the answer. Between the two
floors lies the database's share of an apply; above the second, ours (Django, the membership check,
the chips)."""

from __future__ import annotations

import os
import threading
from urllib.parse import parse_qs

ANSWER = b'<span class="chips" id="chips-0" hx-swap-oob="true">' + b"x" * 260  # ~ an apply's 312 bytes
TABLE = "bench_floor_coding"  # created by the coding phase before it starts this app
CREATE_TABLE = f"CREATE TABLE IF NOT EXISTS {TABLE} (id bigserial PRIMARY KEY, code_id bigint NOT NULL, segment_id bigint NOT NULL)"


def application(environ, start_response):
    _read_form(environ)
    return _answer(start_response)


_local = threading.local()


def durable_write_application(environ, start_response):
    body = _read_form(environ)
    if environ.get("REQUEST_METHOD") == "POST":  # the bench's readiness check GETs
        form = parse_qs(body.decode())
        if not hasattr(_local, "connection"):  # one connection per gunicorn thread, as Django keeps one
            import psycopg

            _local.connection = psycopg.connect(os.environ["DATABASE_URL"], autocommit=True)
        _local.connection.execute(f"INSERT INTO {TABLE} (code_id, segment_id) VALUES (%s, %s)",
                                  (int(form["code"][0]), int(form["segments"][0])))
    return _answer(start_response)


def _read_form(environ) -> bytes:
    return environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))


def _answer(start_response):
    start_response("200 OK", [("Content-Type", "text/html; charset=utf-8"), ("Content-Length", str(len(ANSWER)))])
    return [ANSWER]
