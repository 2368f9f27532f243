"""The signed-in user and their session, read from Redis instead of PostgreSQL on every request.

Applying a code is one SQL statement; before this, a request also read the session row and
the user row, two more database round trips on a machine where PostgreSQL shares the CPU
with the web workers. Both stay in PostgreSQL (the source of truth); Redis holds short-lived
copies. Used only when REDIS_URL is set: a per-process cache could not be invalidated
across processes.

Copies live at most CACHE_SECONDS. That bounds staleness in the one case invalidation can
miss: while Redis is unreachable, deletes are dropped (projects.cache.ResilientRedisCache),
so a logout or a password change made then could otherwise be undone when Redis returns.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.backends import ModelBackend
from django.contrib.sessions.backends import cached_db
from django.core.cache import cache

CACHE_SECONDS = 300


def user_cache_key(user_id: Any) -> str:
    return f"rta:auth-user:{user_id}"


class CachedModelBackend(ModelBackend):
    """Django's ModelBackend; `get_user` (asked on every request) reads through the cache.

    The cached user carries its password hash, so Django's session verification still logs
    out other sessions after a password change; saving or deleting a user drops the copy
    (projects.apps connects the signals).
    """

    def get_user(self, user_id):
        key = user_cache_key(user_id)
        user = cache.get(key)
        if user is None:
            user = super().get_user(user_id)
            if user is not None:
                cache.set(key, user, CACHE_SECONDS)
        return user


def forget_user(sender, instance, **kwargs) -> None:
    cache.delete(user_cache_key(instance.pk))


class _ShortLivedCache:
    """The session cache with every entry's lifetime capped at CACHE_SECONDS (not the session's two weeks)."""

    def __init__(self, backend) -> None:
        self._backend = backend

    def get(self, key: str, default: Any = None) -> Any:
        return self._backend.get(key, default)

    def set(self, key: str, value: Any, timeout: int | None = None) -> None:
        self._backend.set(key, value, CACHE_SECONDS if timeout is None else min(timeout, CACHE_SECONDS))

    def delete(self, key: str) -> None:
        self._backend.delete(key)

    def __contains__(self, key: str) -> bool:
        return key in self._backend


class SessionStore(cached_db.SessionStore):
    """Django's cached_db sessions (written to PostgreSQL, read from Redis) with short-lived cached copies."""

    def __init__(self, session_key: str | None = None) -> None:
        super().__init__(session_key)
        self._cache = _ShortLivedCache(self._cache)
