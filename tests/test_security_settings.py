"""Production security settings and the headers every page carries."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROBE = (
    "import django, json; django.setup(); from django.conf import settings as s; print(json.dumps({k: getattr(s, k) for k in "
    "['SESSION_COOKIE_SECURE', 'CSRF_COOKIE_SECURE', 'SESSION_COOKIE_HTTPONLY', 'SECURE_HSTS_SECONDS', 'SECURE_HSTS_INCLUDE_SUBDOMAINS', "
    "'SECURE_SSL_REDIRECT', 'SECURE_CONTENT_TYPE_NOSNIFF', 'X_FRAME_OPTIONS', 'DEBUG']}))"
)


def test_production_settings_use_secure_cookies_hsts_and_https():
    env = {k: v for k, v in os.environ.items() if k not in {"DEBUG", "DJANGO_SETTINGS_MODULE", "RTA_SSL_REDIRECT", "RTA_SECURE_COOKIES", "RTA_HSTS_SECONDS"}}
    env.update({"DEBUG": "false", "DJANGO_SETTINGS_MODULE": "config.settings", "SECRET_KEY": "x" * 60})
    result = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    values = json.loads(result.stdout.strip().splitlines()[-1])
    assert values == {
        "SESSION_COOKIE_SECURE": True, "CSRF_COOKIE_SECURE": True, "SESSION_COOKIE_HTTPONLY": True,
        "SECURE_HSTS_SECONDS": 31536000, "SECURE_HSTS_INCLUDE_SUBDOMAINS": True, "SECURE_SSL_REDIRECT": True,
        "SECURE_CONTENT_TYPE_NOSNIFF": True, "X_FRAME_OPTIONS": "DENY", "DEBUG": False,
    }


@pytest.mark.django_db
def test_pages_carry_a_csp_without_inline_script_and_the_other_security_headers(project, owner, client_for):
    response = client_for(owner).get(f"/p/{project.uuid}/")
    csp = response["Content-Security-Policy"]
    directives = dict(d.strip().split(" ", 1) for d in csp.split(";") if d.strip())
    assert directives["script-src"] == "'self'"  # no 'unsafe-inline', no 'unsafe-eval', no CDN
    assert "unsafe" not in directives["default-src"] and directives["object-src"] == "'none'"
    assert directives["frame-ancestors"] == "'none'"
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"
    body = response.content.decode()
    assert "<script>" not in body and " onclick=" not in body and "hx-on" not in body
