"""Settings for the test suite: production settings over plain http on loopback."""

from __future__ import annotations

import os

# Tests run with DEBUG off, as production does, so they need a key production would accept.
# Exported: the web and worker processes tests start sign and decrypt with the same key.
os.environ.pop("SECRET_KEY_FILE", None)
os.environ["SECRET_KEY"] = "rta-test-suite-only-never-in-production-0123456789abcdefghij"

from config.settings import *  # noqa: E402, F403

SECURE_SSL_REDIRECT = False
SESSION_COOKIE_SECURE = False
CSRF_COOKIE_SECURE = False
SECURE_HSTS_SECONDS = 0
# Hashing passwords slowly protects real accounts; in tests it only slows the suite.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# Parallel pytest-xdist workers each get their own Celery queue (their test databases
# differ), unless a worker process started by a test was told its queue explicitly.
if os.environ.get("PYTEST_XDIST_WORKER") and not os.environ.get("CELERY_QUEUE"):
    CELERY_TASK_DEFAULT_QUEUE = f"{CELERY_TASK_DEFAULT_QUEUE}-{os.environ['PYTEST_XDIST_WORKER']}"  # noqa: F405
WHITENOISE_USE_FINDERS = True
# The local fake OpenAI server listens on 127.0.0.1; tests of the egress guard turn this off.
ENDPOINTS_ALLOW_PRIVATE_NETWORKS = True

# The suite's query-count tests count the session and user reads, so tests keep both in the
# database; the Redis-cached copies production uses (projects/auth_cache.py) have tests of their
# own. Benchmarks measure what production runs: they set RTA_TEST_CACHED_AUTH.
if not env_bool("RTA_TEST_CACHED_AUTH", default=False):  # noqa: F405
    SESSION_ENGINE = "django.contrib.sessions.backends.db"
    AUTHENTICATION_BACKENDS = ["django.contrib.auth.backends.ModelBackend"]
# Cached values must not outlive a run nor cross xdist workers: their test databases reuse ids.
# Exported so web and worker processes started by tests share the prefix. An xdist worker inherits the
# controller's environment, prefix included: it makes its own (a user cached by one worker was read or
# dropped by the other, whose user has the same id).
_XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "main")
if not os.environ.get("RTA_TEST_CACHE_PREFIX", "").startswith(f"test-{_XDIST_WORKER}-"):
    os.environ["RTA_TEST_CACHE_PREFIX"] = f"test-{_XDIST_WORKER}-{os.getpid()}"
CACHES["default"]["KEY_PREFIX"] = os.environ["RTA_TEST_CACHE_PREFIX"]  # noqa: F405
# Browser tests open live streams faster than closed ones are noticed (at the next keepalive): a larger
# cap and a shorter keepalive keep a stream from being refused because of an earlier test's pages.
LIVE_STREAMS_PER_PROCESS = env_int("RTA_LIVE_STREAMS_PER_PROCESS", 200)  # noqa: F405
LIVE_KEEPALIVE_SECONDS = env_int("RTA_LIVE_KEEPALIVE_SECONDS", 5)  # noqa: F405
