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
    "'SECURE_SSL_REDIRECT', 'SECURE_CONTENT_TYPE_NOSNIFF', 'X_FRAME_OPTIONS', 'DEBUG', 'RTA_ADMIN_ENABLED', 'TRUSTED_PROXIES', "
    "'SECURE_PROXY_SSL_HEADER']}))"
)
PRODUCTION_KEY = "k7Qx-production-test-key-9f2c1e8b7a6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a0"


def _production_env(**extra: str) -> dict[str, str]:
    removed = {"DEBUG", "DJANGO_SETTINGS_MODULE", "RTA_SSL_REDIRECT", "RTA_SECURE_COOKIES", "RTA_HSTS_SECONDS", "SECRET_KEY",
               "SECRET_KEY_FILE", "RTA_ADMIN_ENABLED", "TRUSTED_PROXIES"}
    env = {k: v for k, v in os.environ.items() if k not in removed}
    env.update({"DEBUG": "false", "DJANGO_SETTINGS_MODULE": "config.settings", **extra})
    return env


def test_production_settings_use_secure_cookies_hsts_and_https():
    result = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=_production_env(SECRET_KEY=PRODUCTION_KEY),
                            capture_output=True, text=True, check=True)
    values = json.loads(result.stdout.strip().splitlines()[-1])
    assert values == {
        "SESSION_COOKIE_SECURE": True, "CSRF_COOKIE_SECURE": True, "SESSION_COOKIE_HTTPONLY": True,
        "SECURE_HSTS_SECONDS": 31536000, "SECURE_HSTS_INCLUDE_SUBDOMAINS": True, "SECURE_SSL_REDIRECT": True,
        "SECURE_CONTENT_TYPE_NOSNIFF": True, "X_FRAME_OPTIONS": "DENY", "DEBUG": False,
        # No admin unless asked for; forwarded headers trusted from no one unless proxies are named.
        # (a META key no client header can produce: HTTP headers arrive as HTTP_*).
        "RTA_ADMIN_ENABLED": False, "TRUSTED_PROXIES": [], "SECURE_PROXY_SSL_HEADER": ["RTA_TRUSTED_FORWARDED_PROTO", "https"],
    }


def test_the_admin_and_trusted_proxies_are_configured_from_the_environment():
    env = _production_env(SECRET_KEY=PRODUCTION_KEY, RTA_ADMIN_ENABLED="true", TRUSTED_PROXIES="10.1.0.5, 172.16.0.0/12")
    result = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    values = json.loads(result.stdout.strip().splitlines()[-1])
    assert values["RTA_ADMIN_ENABLED"] is True and values["TRUSTED_PROXIES"] == ["10.1.0.5", "172.16.0.0/12"]
    bad = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True,
                         env=_production_env(SECRET_KEY=PRODUCTION_KEY, TRUSTED_PROXIES="10.1.0.5,proxy.local"))
    assert bad.returncode != 0 and "TRUSTED_PROXIES: 'proxy.local' is not an IP address or network" in bad.stderr


@pytest.mark.parametrize("key,problem", [
    (None, "SECRET_KEY is not set"),
    ("", "SECRET_KEY is not set"),
    ("change-me-to-a-long-random-string", "a published default"),  # docker-compose.yml's former default
    ("django-insecure-" + "a1b2c3d4e5" * 6, "a published default"),
    ("short-but-random-Zq8", "only 20 characters long"),
    ("ab" * 40, "fewer than 5 different characters"),
])
def test_production_refuses_to_start_with_a_missing_default_or_weak_secret_key(key, problem):
    env = _production_env() if key is None else _production_env(SECRET_KEY=key)
    for command in (["-c", "import django; django.setup()"], ["manage.py", "migrate", "--check"]):
        result = subprocess.run([sys.executable, *command], cwd=ROOT, env=env, capture_output=True, text=True)
        assert result.returncode != 0
        assert problem in result.stderr and "refuses to start" in result.stderr and "SECRET_KEY_FILE" in result.stderr


def test_a_laptop_with_debug_on_starts_without_a_key():
    env = _production_env(DEBUG="true")
    result = subprocess.run([sys.executable, "-c", "import django; django.setup(); from django.conf import settings; print(settings.DEBUG)"],
                            cwd=ROOT, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True"


@pytest.mark.django_db
def test_the_health_url_answers_over_http_with_the_https_redirect_on(client, settings):
    settings.SECURE_SSL_REDIRECT = True
    assert client.get("/accounts/login/").status_code == 301  # everything else goes to https
    response = client.get("/healthz")
    assert response.status_code == 200 and response.json()["database"] == "ok"
    # As docker's healthcheck asks: by the container's address, which ALLOWED_HOSTS need not list.
    assert client.get("/healthz", HTTP_HOST="172.18.0.3:8000").status_code == 200


@pytest.mark.django_db
def test_x_forwarded_proto_is_honoured_only_from_a_trusted_proxy(client, settings):
    settings.SECURE_SSL_REDIRECT = True
    settings.TRUSTED_PROXIES = ["10.1.0.0/24"]
    spoofed = client.get("/accounts/login/", REMOTE_ADDR="203.0.113.9", HTTP_X_FORWARDED_PROTO="https")
    assert spoofed.status_code == 301 and spoofed["Location"].startswith("https://")
    # Nor can a client name the key the middleware uses (a header arrives as HTTP_…).
    assert client.get("/accounts/login/", REMOTE_ADDR="203.0.113.9", HTTP_RTA_TRUSTED_FORWARDED_PROTO="https").status_code == 301
    assert client.get("/accounts/login/", REMOTE_ADDR="10.1.0.5", HTTP_X_FORWARDED_PROTO="https").status_code == 200
    assert client.get("/accounts/login/", REMOTE_ADDR="10.1.0.5", HTTP_X_FORWARDED_PROTO="http").status_code == 301
    # An IPv6 socket reports the proxy as ::ffff:10.1.0.5: still the proxy.
    assert client.get("/accounts/login/", REMOTE_ADDR="::ffff:10.1.0.5", HTTP_X_FORWARDED_PROTO="https").status_code == 200


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
