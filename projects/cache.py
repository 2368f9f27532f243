"""A Redis cache that degrades to "no cache" while Redis is down.

The cache only speeds things up (progress counts, rendered fragments, login counters), so
an unreachable Redis must not turn coding into 500s: reads miss, writes are dropped, and
the outage is logged once a minute. Everything works again when Redis is back.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.redis import RedisCache, RedisCacheClient
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

logger = logging.getLogger("rta.cache")
DOWN = (RedisConnectionError, RedisTimeoutError, OSError)
_last_warning = 0.0


def _warn(exc: Exception) -> None:
    global _last_warning
    if time.monotonic() - _last_warning > 60:
        _last_warning = time.monotonic()
        logger.warning("Cache (Redis) unavailable, continuing without it: %s", exc)


class _OneClientPerPool(RedisCacheClient):
    """Django's client builds a redis.Redis for every cache call, and redis-py's constructor copies
    its ~170 response callbacks: about 0.2 ms, more than a GET on loopback, twice per request once
    the session and user come from the cache. A redis.Redis is thread-safe (its pool hands out
    the connections), so one per pool serves every call."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, Any] = {}

    def get_client(self, key=None, *, write=False):
        pool = self._get_connection_pool(write)
        client = self._clients.get(id(pool))
        if client is None:
            client = self._clients[id(pool)] = self._client(connection_pool=pool)
        return client


class ResilientRedisCache(RedisCache):
    def __init__(self, server, params) -> None:
        super().__init__(server, params)
        self._class = _OneClientPerPool

    def _safe(self, method: str, default: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return getattr(super(), method)(*args, **kwargs)
        except DOWN as exc:
            _warn(exc)
            return default

    def get(self, key, default=None, version=None):
        return self._safe("get", default, key, default, version)

    def get_many(self, keys, version=None):
        return self._safe("get_many", {}, keys, version)

    def has_key(self, key, version=None):
        return self._safe("has_key", False, key, version)

    def set(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        return self._safe("set", None, key, value, timeout, version)

    def set_many(self, data, timeout=DEFAULT_TIMEOUT, version=None):
        return self._safe("set_many", list(data), data, timeout, version)

    def add(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        return self._safe("add", False, key, value, timeout, version)

    def touch(self, key, timeout=DEFAULT_TIMEOUT, version=None):
        return self._safe("touch", False, key, timeout, version)

    def delete(self, key, version=None):
        return self._safe("delete", False, key, version)

    def delete_many(self, keys, version=None):
        return self._safe("delete_many", None, keys, version)

    def incr(self, key, delta=1, version=None):
        # Without Redis there is no counter: 0 tells callers nothing was counted.
        return self._safe("incr", 0, key, delta, version)

    def clear(self) -> bool:
        """Drop this cache's keys only (those under its KEY_PREFIX): the Redis database may hold keys that are not
        the cache's, such as Celery's queue on the same REDIS_URL, or another test worker's cache."""
        if not self.key_prefix:
            return self._safe("clear", False)
        pattern = "".join("\\" + c if c in "*?[]\\" else c for c in self.key_prefix) + ":*"
        try:
            client = self._cache.get_client(write=True)
            batch: list[bytes] = []
            for key in client.scan_iter(match=pattern, count=5000):
                batch.append(key)
                if len(batch) == 5000:
                    client.unlink(*batch)
                    batch = []
            if batch:
                client.unlink(*batch)
        except DOWN as exc:
            _warn(exc)
            return False
        return True
