"""Typed readers for settings taken from environment variables.

Every reader also accepts NAME_FILE, the path of a file holding the value, so
secrets can come from Docker/Kubernetes secret files instead of the environment.
"""

from __future__ import annotations

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
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": str(path if path.is_absolute() else base_dir / path)}
    raise ImproperlyConfigured(f"DATABASE_URL scheme {parsed.scheme!r} is not supported (use postgres:// or sqlite:///)")
