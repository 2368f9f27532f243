"""The floor under the apply latency: a WSGI app that only reads the form and answers as many
bytes as an apply does. Served by the same gunicorn setup and driven by the same client, it
shows how much of the coding phase's 1-client p50 is HTTP, gunicorn and `requests` on this
machine, whatever Django and PostgreSQL do."""

from __future__ import annotations

ANSWER = b'<span class="chips" id="chips-0" hx-swap-oob="true">' + b"x" * 260  # ~ an apply's 312 bytes


def application(environ, start_response):
    environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
    start_response("200 OK", [("Content-Type", "text/html; charset=utf-8"), ("Content-Length", str(len(ANSWER)))])
    return [ANSWER]
