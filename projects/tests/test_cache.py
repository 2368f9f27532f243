"""The project's Redis cache (projects/cache.py): clearing it drops its own keys only."""

from __future__ import annotations

import uuid

import pytest
from django.conf import settings
from django.core.cache import caches

from projects.cache import ResilientRedisCache


@pytest.fixture
def cache() -> ResilientRedisCache:
    if not isinstance(caches["default"], ResilientRedisCache):
        pytest.fail("these tests need REDIS_URL: make test runs them against Redis")
    return caches["default"]


@pytest.fixture
def other_cache(cache):
    """A second cache on the same Redis database under another prefix, as another test worker's or app's."""
    other = ResilientRedisCache(settings.CACHES["default"]["LOCATION"],
                                {**settings.CACHES["default"], "KEY_PREFIX": f"other-{uuid.uuid4().hex}"})
    yield other
    other.clear()


def test_clearing_the_cache_keeps_the_keys_of_others_on_the_same_redis(cache, other_cache):
    raw = cache._cache.get_client(write=True)  # noqa: SLF001 - a key no cache made, e.g. Celery's queue
    queue_key = f"celery-like-{uuid.uuid4().hex}"
    raw.set(queue_key, "a queued task")
    cache.set("mine", 1)
    other_cache.set("theirs", 2)
    try:
        assert cache.clear() is True
        assert cache.get("mine") is None
        assert other_cache.get("theirs") == 2 and raw.get(queue_key) == b"a queued task"
    finally:
        raw.delete(queue_key)


def test_a_prefix_with_pattern_characters_clears_only_itself(cache, other_cache):
    star = ResilientRedisCache(settings.CACHES["default"]["LOCATION"], {**settings.CACHES["default"], "KEY_PREFIX": "a*"})
    star.set("k", 1)
    other_cache.set("k", 2)
    cache.set("k", 3)
    assert star.clear() is True
    assert star.get("k") is None and other_cache.get("k") == 2 and cache.get("k") == 3
