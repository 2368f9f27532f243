"""Typed readers for settings taken from environment variables.

Every reader also accepts NAME_FILE, the path of a file holding the value, so
secrets can come from Docker/Kubernetes secret files instead of the environment.
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from urllib.parse import unquote, urlparse

from django.core.exceptions import ImproperlyConfigured


def env_str(name: str, default: str = "") -> str:
    file_path = os.environ.get(f"{name}_FILE")
    if file_path:
        return Path(file_path).read_text(encoding="utf-8").strip()
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    raw = env_str(name, "").strip().lower()
    if raw == "":
        return default
    if raw in {"1", "true", "yes", "on"}:
        return True
    if raw in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use true/false)")


def env_int(name: str, default: int) -> int:
    raw = env_str(name, "").strip()
    if raw == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from exc


def env_list(name: str, default: list[str] | None = None) -> list[str]:
    raw = env_str(name, "")
    if raw.strip() == "":
        return list(default or [])
    return [item.strip() for item in raw.split(",") if item.strip()]


def database_from_url(url: str, *, base_dir: Path) -> dict:
    """Turn postgres://user:pass@host:port/name or sqlite:///path into DATABASES['default']."""
    parsed = urlparse(url)
    if parsed.scheme in {"postgres", "postgresql", "pgsql"}:
        return {
            "ENGINE": "config.postgresql",  # Django's, with a cheaper health check
            "NAME": unquote(parsed.path.lstrip("/")),
            "USER": unquote(parsed.username or ""),
            "PASSWORD": unquote(parsed.password or ""),
            "HOST": parsed.hostname or "",
            "PORT": str(parsed.port or ""),
            "CONN_MAX_AGE": 60,
            "CONN_HEALTH_CHECKS": True,
        }
    if parsed.scheme == "sqlite":
        # sqlite:///relative/to/project.sqlite3 or sqlite:////absolute/path.sqlite3
        path = Path(parsed.path[1:])
        # The laptop's web threads and second-reader threads write at once: a transaction takes the write lock
        # when it begins, waiting for it up to the timeout. A deferred one that has read cannot take it while
        # another writes, and fails at once with "database is locked".
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": str(path if path.is_absolute() else base_dir / path),
                "OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": 20}}
    raise ImproperlyConfigured(f"DATABASE_URL scheme {parsed.scheme!r} is not supported (use postgres:// or sqlite:///)")


# Where projects.middleware.TrustedProxyMiddleware puts a trusted proxy's X-Forwarded-Proto.
TRUSTED_FORWARDED_PROTO_META = "RTA_TRUSTED_FORWARDED_PROTO"


def env_networks(name: str) -> list[str]:
    """A list of IP addresses or CIDR networks ("10.0.0.0/8,192.168.1.5"), each checked."""
    networks = env_list(name, [])
    for entry in networks:
        try:
            ipaddress.ip_network(entry, strict=False)
        except ValueError as exc:
            raise ImproperlyConfigured(f"{name}: {entry!r} is not an IP address or network (e.g. 10.0.0.1 or 172.16.0.0/12)") from exc
    return networks


DEVELOPMENT_SECRET_KEY = "django-insecure-dev-key-only-for-local-use-set-SECRET_KEY-in-production"
# Keys that have been published: in this repository (docker-compose.yml, the Dockerfile's build step) or in Django's.
KNOWN_SECRET_KEYS = {DEVELOPMENT_SECRET_KEY, "change-me-to-a-long-random-string", "build-only"}
SECRET_KEY_MIN_LENGTH = 50
SECRET_KEY_MIN_UNIQUE_CHARACTERS = 5


def secret_key_problem(key: str) -> str:
    """Why `key` must not be used in production, or "" when it may (Django's own check_deploy rules, plus known keys)."""
    if not key:
        return "not set"
    if key in KNOWN_SECRET_KEYS or key.startswith("django-insecure-"):
        return "a published default, known to anyone who has read this project's files"
    if len(key) < SECRET_KEY_MIN_LENGTH:
        return f"only {len(key)} characters long (at least {SECRET_KEY_MIN_LENGTH} needed)"
    if len(set(key)) < SECRET_KEY_MIN_UNIQUE_CHARACTERS:
        return f"made of fewer than {SECRET_KEY_MIN_UNIQUE_CHARACTERS} different characters"
    return ""


def refuse_weak_secret_key(key: str) -> None:
    """Stop the process with a clear message when the production SECRET_KEY is unusable."""
    if problem := secret_key_problem(key):
        raise ImproperlyConfigured(
            f"SECRET_KEY is {problem}. With DEBUG off RTA Studio refuses to start: the key signs sessions and "
            "encrypts the API keys stored in the database. Set SECRET_KEY (or SECRET_KEY_FILE) to a long random "
            "string, e.g. the output of: python -c \"import secrets; print(secrets.token_urlsafe(50))\" "
            "(for a laptop, set DEBUG=true instead)."
        )
