"""How many requests one endpoint gets at once, counted over every worker process and machine.

An endpoint's owner sets "requests at once" (LiveEndpoint.max_in_flight); probes, the second
reader and live interviews all send through conduct.client.stream_answer, which holds a slot
here for each attempt it sends. With Redis the count is a sorted set per endpoint in Redis:
each holder is a member whose score is when its lease ends. A holder renews its lease while
its request runs; a process that is killed stops renewing, and its slot is free again once the
lease passes, so a crash never leaks a slot for good. The check, the clean-up of expired leases
and the taking of a slot are one Lua script, so two processes never take the last slot both.

Without Redis (laptop mode: one process, tasks in threads) the count is kept in this process.

A request that finds every slot taken waits (bounded by `wait_seconds`), asking again every
few tens of milliseconds; the probe's and the reader's own concurrency still apply on top.
"""

from __future__ import annotations

import logging
import os
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings

log = logging.getLogger(__name__)

DEFAULT_MAX_IN_FLIGHT = 8

# KEYS[1] the endpoint's set; ARGV: holder, limit, lease in ms. Redis' own clock, so machines need not agree.
_ACQUIRE = """
local now = redis.call('TIME')
local now_ms = now[1] * 1000 + math.floor(now[2] / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now_ms)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], now_ms + tonumber(ARGV[3]), ARGV[1])
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]) * 2)
  return 1
end
return 0
"""
# Renew only a lease still held: one that expired may have been given to someone else meanwhile.
_RENEW = """
local now = redis.call('TIME')
local now_ms = now[1] * 1000 + math.floor(now[2] / 1000)
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  redis.call('ZADD', KEYS[1], now_ms + tonumber(ARGV[2]), ARGV[1])
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) * 2)
  return 1
end
return 0
"""


def lease_seconds() -> float:
    """How long a slot stays taken after its holder was last heard from."""
    # The environment variable lets a test (or an operator) tune a worker process without settings edits.
    return float(getattr(settings, "CONDUCT_THROTTLE_LEASE_SECONDS", None) or os.environ.get("CONDUCT_THROTTLE_LEASE_SECONDS", 30.0))


def wait_seconds() -> float:
    """How long a request waits for a free slot before it gives up (and says so)."""
    return float(getattr(settings, "CONDUCT_THROTTLE_WAIT_SECONDS", 600.0))


@dataclass(frozen=True)
class Slot:
    """A slot held for one request; `waited` is how long it took to get it, in seconds; `queued`: every slot was
    taken when it first asked."""

    key: str
    holder: str
    waited: float
    queued: bool = False


class SlotUnavailable(Exception):
    """Every slot stayed taken for the whole wait, or the caller stopped waiting."""

    def __init__(self, waited: float, stopped: bool) -> None:
        super().__init__(f"waited {waited:.1f} s")
        self.waited, self.stopped = waited, stopped


class _RedisCounter:
    def __init__(self, url: str) -> None:
        import redis

        self._client = redis.Redis.from_url(url, socket_connect_timeout=0.5, socket_timeout=2.0)
        self._acquire = self._client.register_script(_ACQUIRE)
        self._renew = self._client.register_script(_RENEW)

    def try_take(self, key: str, holder: str, limit: int, lease: float) -> bool:
        return bool(self._acquire(keys=[key], args=[holder, limit, int(lease * 1000)]))

    def renew(self, key: str, holder: str, lease: float) -> bool:
        return bool(self._renew(keys=[key], args=[holder, int(lease * 1000)]))

    def give_back(self, key: str, holder: str) -> None:
        self._client.zrem(key, holder)

    def holders(self, key: str) -> int:
        """Slots taken now (leases not yet expired)."""
        now = self._client.time()
        return int(self._client.zcount(key, now[0] * 1000 + now[1] // 1000, "+inf"))


class _LocalCounter:
    """One process's count, for laptop mode where every task runs in this process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._leases: dict[str, dict[str, float]] = {}

    def _live(self, key: str) -> dict[str, float]:
        now = time.monotonic()
        leases = self._leases.setdefault(key, {})
        for holder in [h for h, until in leases.items() if until <= now]:
            del leases[holder]
        return leases

    def try_take(self, key: str, holder: str, limit: int, lease: float) -> bool:
        with self._lock:
            leases = self._live(key)
            if len(leases) >= limit:
                return False
            leases[holder] = time.monotonic() + lease
            return True

    def renew(self, key: str, holder: str, lease: float) -> bool:
        with self._lock:
            leases = self._live(key)
            if holder not in leases:
                return False
            leases[holder] = time.monotonic() + lease
            return True

    def give_back(self, key: str, holder: str) -> None:
        with self._lock:
            self._leases.get(key, {}).pop(holder, None)

    def holders(self, key: str) -> int:
        with self._lock:
            return len(self._live(key))


@lru_cache(maxsize=4)
def _counter_for(url: str) -> _RedisCounter | _LocalCounter:
    return _RedisCounter(url) if url else _LocalCounter()


def counter() -> _RedisCounter | _LocalCounter:
    return _counter_for(getattr(settings, "REDIS_URL", "") or "")


def endpoint_key(endpoint_id: int | str) -> str:
    """The Redis key counting one endpoint's requests; the database name keeps deployments (and test runs) apart."""
    database = settings.DATABASES["default"]["NAME"]
    return f"rta:throttle:{database}:{endpoint_id}"


def in_flight(key: str) -> int:
    """Requests holding a slot of this endpoint now."""
    return counter().holders(key)


@contextmanager
def slot(key: str, limit: int, *, should_stop: Callable[[], bool] | None = None, wait: float | None = None,
         sleep: Callable[[float], None] = time.sleep, on_wait: Callable[[], None] | None = None) -> Iterator[Slot]:
    """Hold one of the endpoint's `limit` slots while the block runs; raises SlotUnavailable after `wait` s
    (default: CONDUCT_THROTTLE_WAIT_SECONDS). `on_wait()` is called once if every slot is taken at first."""
    held = _take(key, limit, should_stop, sleep, wait_seconds() if wait is None else wait, on_wait)
    renewing = threading.Event()
    renewer = threading.Thread(target=_keep_renewing, args=(held, renewing), daemon=True)
    renewer.start()
    try:
        yield held
    finally:
        renewing.set()
        renewer.join(timeout=2)
        _safely(counter().give_back, held.key, held.holder)


def _take(key: str, limit: int, should_stop: Callable[[], bool] | None, sleep: Callable[[float], None],
          wait: float, on_wait: Callable[[], None] | None) -> Slot:
    holder, started = str(uuid.uuid4()), time.monotonic()
    pause, last_stop_check, queued = 0.02, started, False
    while True:
        taken = _safely(counter().try_take, key, holder, max(1, limit), lease_seconds(), default=True)
        waited = time.monotonic() - started
        if taken:
            return Slot(key, holder, waited, queued=queued)
        if not queued and on_wait is not None:
            on_wait()
        queued = True
        if waited >= wait:
            raise SlotUnavailable(waited, stopped=False)
        # should_stop may read the database: ask it a few times a second, not on every try.
        if should_stop is not None and time.monotonic() - last_stop_check >= 0.25:
            last_stop_check = time.monotonic()
            if should_stop():
                raise SlotUnavailable(waited, stopped=True)
        sleep(pause * random.uniform(0.5, 1.5))  # jitter: waiters on several machines do not ask in step
        pause = min(pause * 1.5, 0.05)


def _keep_renewing(held: Slot, done: threading.Event) -> None:
    lease = lease_seconds()
    while not done.wait(lease / 3):
        if not _safely(counter().renew, held.key, held.holder, lease, default=True):
            log.warning("The lease on a request slot of %s ran out while the request was running", held.key)
            return


def _safely(call: Callable, *args, default=None):
    """Run a Redis call; while Redis is unreachable requests go unthrottled rather than not at all."""
    from projects.cache import DOWN

    try:
        return call(*args)
    except DOWN as exc:
        log.warning("Request throttle (Redis) unavailable, sending without it: %s", exc)
        return default
