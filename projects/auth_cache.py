"""The signed-in user and their session, read from Redis instead of PostgreSQL on every request.

Applying a code is one SQL statement; before this, a request also read the session row and
the user row, two more database round trips on a machine where PostgreSQL shares the CPU
with the web workers. Both stay in PostgreSQL (the source of truth); Redis holds short-lived
copies. Used only when REDIS_URL is set: a per-process cache could not be invalidated
across processes.

Copies live at most CACHE_SECONDS. That bounds staleness in the one case invalidation can
miss: while Redis is unreachable, deletes are dropped (projects.cache.ResilientRedisCache),
so a logout or a password change made then could otherwise be undone when Redis returns.

A request reads both copies in one round trip once its process has seen the session: the
session key names the user whose copy is fetched with it (SessionStore.load).
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from django.contrib.auth import SESSION_KEY
from django.contrib.auth.backends import ModelBackend
from django.contrib.sessions.backends import cached_db
from django.core.cache import cache

CACHE_SECONDS = 300

# Session key → the id of the user it was signed in as, when this process last read it. A session key names one
# user for its whole life (django.contrib.auth.login flushes or cycles the key when the user changes), so a hint
# is missing or right; get_user takes the copy only for the id the session names all the same. Cleared when full:
# a miss costs only the round trip it saves.
_USER_OF_SESSION: dict[str, str] = {}
_USER_OF_SESSION_MAX = 10_000
# The user's cached copy read together with this request's session; get_user takes it. Every session load sets
# it afresh, and a request loads its session before asking for its user, so it never outlives its request.
_user_read_with_session: ContextVar[tuple[str, Any] | None] = ContextVar("user_read_with_session", default=None)


def user_cache_key(user_id: Any) -> str:
    return f"rta:auth-user:{user_id}"


class CachedModelBackend(ModelBackend):
    """Django's ModelBackend; `get_user` (asked on every request) reads through the cache.

    The cached user carries its password hash, so Django's session verification still logs
    out other sessions after a password change; saving or deleting a user drops the copy
    (projects.apps connects the signals).
    """

    def get_user(self, user_id):
        read = _user_read_with_session.get()
        if read is not None and read[0] == str(user_id):
            _user_read_with_session.set(None)
            return read[1]
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

    def get_many(self, keys: list[str]) -> dict[str, Any]:
        return self._backend.get_many(keys)

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

    def load(self) -> dict[str, Any]:
        """The session; with it, in the same round trip, the cached copy of the user it was signed in as."""
        _user_read_with_session.set(None)
        user_id = _USER_OF_SESSION.get(self.session_key) if self.session_key else None
        if user_id is None:
            data = super().load()
        else:
            user_key = user_cache_key(user_id)
            found = self._cache.get_many([self.cache_key, user_key])
            data = found.get(self.cache_key)
            if data is None:
                data = super().load()
            if found.get(user_key) is not None:
                _user_read_with_session.set((user_id, found[user_key]))
        if self.session_key and data.get(SESSION_KEY) is not None:
            if len(_USER_OF_SESSION) >= _USER_OF_SESSION_MAX:
                _USER_OF_SESSION.clear()
            _USER_OF_SESSION[self.session_key] = str(data[SESSION_KEY])
        return data
