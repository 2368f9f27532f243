"""RTA Studio settings, read from environment variables (see config/env.py).

Embedded defaults for a laptop: SQLite and in-process tasks when DATABASE_URL and
REDIS_URL are unset; the real PostgreSQL and Redis when they are set.
"""

from __future__ import annotations

from pathlib import Path

from django.utils.csp import CSP

from config.env import (
    DEVELOPMENT_SECRET_KEY,
    TRUSTED_FORWARDED_PROTO_META,
    database_from_url,
    env_bool,
    env_int,
    env_list,
    env_networks,
    env_str,
    refuse_weak_secret_key,
)
from config.memory import memory_limit_mb

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = env_bool("DEBUG", default=False)
SECRET_KEY = env_str("SECRET_KEY", "")
# The key signs sessions and encrypts stored API keys: production refuses to start with a
# missing, well-known or guessable one; a laptop (DEBUG on) falls back to a development key.
if not DEBUG:
    refuse_weak_secret_key(SECRET_KEY)
elif not SECRET_KEY:
    SECRET_KEY = DEVELOPMENT_SECRET_KEY
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "accounts",
    "projects",
    "interviews",
    "conduct",
    "probes",
    "coding",
    "themes",
    "reports",
]

MIDDLEWARE = [
    # First: the health check answers before the HTTPS redirect and the Host check (the compose
    # healthcheck asks over plain http on 127.0.0.1), and the client's address and scheme are
    # known before anything uses them.
    "projects.middleware.HealthCheckMiddleware",
    "projects.middleware.TrustedProxyMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "projects.middleware.DatabaseUnavailableMiddleware",
    # After DatabaseUnavailableMiddleware: a cancelled statement is an OperationalError it must not see first.
    "projects.middleware.StatementTimeoutMiddleware",
    "projects.middleware.MemoryLimitMiddleware",
    "projects.middleware.DatabaseRefusedMiddleware",
    "projects.middleware.MalformedParameterMiddleware",
    "projects.middleware.FormOnlyAddressMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.csp",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASE_URL = env_str("DATABASE_URL", "")
DATABASES = {
    "default": database_from_url(DATABASE_URL or "sqlite:///db.sqlite3", base_dir=BASE_DIR),
}
# Parallel test runs (several engineers, CI) each get their own test database.
DATABASES["default"]["TEST"] = {"NAME": env_str("TEST_DATABASE_NAME", "test_rta")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env_str("REDIS_URL", "")
if REDIS_URL:
    # Resilient: while Redis is down the cache misses instead of failing requests; short
    # timeouts keep an outage from stalling every page.
    CACHES = {"default": {
        "BACKEND": "projects.cache.ResilientRedisCache", "LOCATION": REDIS_URL,
        "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 1.0},
    }}
    # The session and the user are read on every request; with Redis they come from there
    # (projects/auth_cache.py). Without it a per-process cache could not be invalidated, so
    # both stay in the database.
    SESSION_ENGINE = "projects.auth_cache"
    AUTHENTICATION_BACKENDS = ["projects.auth_cache.CachedModelBackend"]
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# Live updates (projects/live.py): Redis streams with REDIS_URL, else one process's memory. Each open page
# holds one web thread for at most LIVE_STREAM_SECONDS, then reconnects and resumes where it was; at most
# LIVE_STREAMS_PER_PROCESS streams per process (keep it below gunicorn's --threads so pages still load).
LIVE_STREAM_SECONDS = env_int("RTA_LIVE_STREAM_SECONDS", 60)
LIVE_KEEPALIVE_SECONDS = env_int("RTA_LIVE_KEEPALIVE_SECONDS", 15)
LIVE_STREAMS_PER_PROCESS = env_int("RTA_LIVE_STREAMS_PER_PROCESS", 24)

# Celery: the real broker when REDIS_URL is set, otherwise tasks run in-process.
CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = None
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", default=not REDIS_URL)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Memory ceiling per web and worker process (config/memory.py), in MB; 0 turns it off. A worker child
# that has grown to three quarters of it is replaced after its task, before the next one starts.
RTA_MEMORY_LIMIT_MB = memory_limit_mb()
CELERY_WORKER_MAX_MEMORY_PER_CHILD = RTA_MEMORY_LIMIT_MB * 1024 * 3 // 4 or None  # in KB
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A task whose worker died (acks_late) is redelivered after this many seconds; longer than
# the longest task (imports and exports stream, minutes at most), shorter than Redis' 1 h default.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 15 * 60)}
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_QUEUE", "") or (
    "rta-" + env_str("TEST_DATABASE_NAME", "main")
)
# The job rows are the outbox (projects/jobs.py): a job still waiting this long after its last send
# is sent again by the sweeper, which Celery beat (compose's `beat` service) runs this often.
RTA_JOB_RESEND_AFTER_SECONDS = env_int("RTA_JOB_RESEND_AFTER_SECONDS", 60)
RTA_JOB_SWEEP_SECONDS = env_int("RTA_JOB_SWEEP_SECONDS", 30)
CELERY_BEAT_SCHEDULE = {
    "resend-waiting-jobs": {
        "task": "projects.tasks.resend_waiting_jobs_task",
        "schedule": float(RTA_JOB_SWEEP_SECONDS),
        # Sweeps stuck behind a busy worker do not pile up; a minute leaves a slow machine time to run each.
        "options": {"expires": 60.0},
    },
    # Job files (uploads, exports) live in PostgreSQL (projects/blobs.py); expired ones are removed hourly.
    "delete-expired-blobs": {
        "task": "projects.tasks.delete_expired_blobs_task",
        "schedule": 3600.0,
        "options": {"expires": 600.0},
    },
}
# How long a job's stored files are kept: an upload waiting for its choices, a finished export to download.
RTA_JOB_FILES_KEEP_DAYS = env_int("RTA_JOB_FILES_KEEP_DAYS", 7)

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    # Not a rule: its password_changed() revokes the user's API tokens on every password change.
    {"NAME": "accounts.authentication.RevokeApiTokensOnPasswordChange"},
]
LOGIN_URL = "login"
# Login lockout (projects/ratelimit.py): this many failures per username and address, then a pause.
RTA_LOGIN_MAX_FAILURES = env_int("RTA_LOGIN_MAX_FAILURES", 5)
RTA_LOGIN_LOCKOUT_SECONDS = env_int("RTA_LOGIN_LOCKOUT_SECONDS", 15 * 60)
# Failures from one address over all usernames before that address is paused (password spraying).
RTA_LOGIN_MAX_FAILURES_PER_ADDRESS = env_int("RTA_LOGIN_MAX_FAILURES_PER_ADDRESS", 50)
# The Django admin (staff only) is served on a laptop, and in production only when asked for;
# its login goes through the same lockout as the app's.
RTA_ADMIN_ENABLED = env_bool("RTA_ADMIN_ENABLED", default=DEBUG)
LOGIN_REDIRECT_URL = "projects:list"
LOGOUT_REDIRECT_URL = "login"

# Invitation emails (projects/services.py). Development prints them to the console; production
# sends through SMTP (when that fails, the owner still sees the link to pass on).
_MAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend" if DEBUG
                        else "django.core.mail.backends.smtp.EmailBackend")
MAILERS = {"default": {"BACKEND": _MAIL_BACKEND, "OPTIONS": {
    "host": env_str("EMAIL_HOST", "localhost"),
    "port": env_int("EMAIL_PORT", 25),
    "username": env_str("EMAIL_HOST_USER", ""),
    "password": env_str("EMAIL_HOST_PASSWORD", ""),
    "use_tls": env_bool("EMAIL_USE_TLS", default=False),
    "timeout": env_int("EMAIL_TIMEOUT", 10),
} if _MAIL_BACKEND.endswith("smtp.EmailBackend") else {}}}
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "RTA Studio <noreply@localhost>")
# Unknown invitation links opened per client address and hour before the accept page refuses (429).
RTA_INVITATION_MAX_MISSES = env_int("RTA_INVITATION_MAX_MISSES", 20)

LANGUAGE_CODE = "en-gb"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
MEDIA_ROOT = Path(env_str("MEDIA_ROOT", str(BASE_DIR / "media")))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if not DEBUG and env_bool("RTA_MANIFEST_STATIC", default=False)
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}

# Uploads: transcripts and QDA projects can be large, but not unbounded.
RTA_MAX_UPLOAD_BYTES = env_int("RTA_MAX_UPLOAD_BYTES", 200 * 1024 * 1024)
RTA_MAX_UNCOMPRESSED_BYTES = env_int("RTA_MAX_UNCOMPRESSED_BYTES", 1024 * 1024 * 1024)
# XML elements and attributes a .qdpx's project file may hold. Projects are read by the worker, under its
# memory ceiling (config/memory.py, 2 GB): our own export of a project 50× the peer corpus (1,000 interviews,
# 198,500 codings) holds 1.15 million and took 560 MB to read; 3 million of the costliest shapes measured
# (users, selections, notes) took at most 940 MB. Codebooks, read in the web request, keep refiqda's 1 million.
RTA_QDPX_MAX_NODES = env_int("RTA_QDPX_MAX_NODES", 3_000_000)
# Transcript uploads that unpack to at most this are previewed in the web request; larger ones by the worker.
# Reading costs up to ~1 KB of memory and ~50 µs per line ("A: x" lines are 5 bytes): 256 KB stays a few
# seconds and a few tens of MB, under the proxy's timeout whatever the file holds.
RTA_IMPORT_INLINE_PREVIEW_BYTES = env_int("RTA_IMPORT_INLINE_PREVIEW_BYTES", 256 * 1024)
# Excerpt-table exports with more rows than this are written by the Celery worker (progress bar, download link).
RTA_EXPORT_INLINE_MAX_ROWS = env_int("RTA_EXPORT_INLINE_MAX_ROWS", 5000)
# Whole-project exports (.qdpx, backup) of projects with more segments than this are written by the worker.
RTA_EXPORT_INLINE_MAX_SEGMENTS = env_int("RTA_EXPORT_INLINE_MAX_SEGMENTS", 20_000)
# Longest a single SQL statement may run for a web request (PostgreSQL statement_timeout, set per
# request by projects.middleware.StatementTimeoutMiddleware; 0 turns it off). The Celery worker runs
# no middleware: exports and imports take the time they need.
RTA_WEB_STATEMENT_TIMEOUT_MS = env_int("RTA_WEB_STATEMENT_TIMEOUT_MS", 20_000)
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024

# Content-Security-Policy: no inline script anywhere; style attributes allowed for
# code colours only (style-src-attr), stylesheets from our own origin.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "style-src-attr": [CSP.UNSAFE_INLINE],
    "img-src": [CSP.SELF, "data:", "blob:"],
    "connect-src": [CSP.SELF],
    "font-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.SELF],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}

# Production hardening, on whenever DEBUG is off (the test client uses http, so
# tests turn SECURE_SSL_REDIRECT off through RTA_SSL_REDIRECT=false).
SECURE_SSL_REDIRECT = env_bool("RTA_SSL_REDIRECT", default=not DEBUG)
# Addresses or networks (CIDR) of the reverse proxies in front of gunicorn. Only requests
# from them have X-Forwarded-For / X-Forwarded-Proto honoured (projects.middleware.TrustedProxyMiddleware);
# from anyone else those headers are dropped, so no client can pick its own address or scheme.
TRUSTED_PROXIES = env_networks("TRUSTED_PROXIES")
# Not HTTP_X_FORWARDED_PROTO, which every client can send: a META key no HTTP header can
# produce (headers arrive as HTTP_*), set by TrustedProxyMiddleware from a trusted proxy's header.
SECURE_PROXY_SSL_HEADER = (TRUSTED_FORWARDED_PROTO_META, "https")
SESSION_COOKIE_SECURE = env_bool("RTA_SECURE_COOKIES", default=not DEBUG)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_HSTS_SECONDS = env_int("RTA_HSTS_SECONDS", 0 if DEBUG else 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = True
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True

REST_FRAMEWORK = {
    # Token first: its WWW-Authenticate header makes DRF answer anonymous requests with
    # 401 (SessionAuthentication has none, which would turn them into 403). Tokens are
    # accounts.ApiToken: hashed, expiring, made and revoked on /accounts/tokens/.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "accounts.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    "EXCEPTION_HANDLER": "projects.api_exceptions.api_exception_handler",
    # JSON bodies get the same depth, number-size and size limits as every other JSON input.
    "DEFAULT_PARSER_CLASSES": [
        "projects.api_parsers.SafeJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_METADATA_CLASS": "projects.api_parsers.ActionAwareMetadata",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "RTA Studio API",
    "DESCRIPTION": "Reflexive thematic analysis of interviews with LLM chatbots.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI from our own origin (drf-spectacular-sidecar): CSP forbids CDNs.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Several models have a "status"; name each choice set after its model.
    "ENUM_NAME_OVERRIDES": {
        "InterviewStatusEnum": "interviews.models.Interview.Status",
        "ImportJobStatusEnum": "interviews.models.ImportJob.Status",
        "TurnStatusEnum": "interviews.models.Turn.Status",
        "InterviewOriginEnum": "interviews.models.Interview.Origin",
        "CodingOriginEnum": "coding.models.Coding.Origin",
        "ThemeStatusEnum": "themes.models.Theme.Status",
        "DecisionKindEnum": "themes.models.Decision.Kind",
        "MemoKindEnum": "themes.models.Memo.Kind",
        "CodeKindEnum": "coding.models.Code.Kind",
    },
}

OPENAI_API_KEY = env_str("OPENAI_API_KEY", "")
OPENAI_BASE_URL = env_str("OPENAI_BASE_URL", "")
# Model endpoints on loopback or private addresses (a laptop's Ollama, a lab's vLLM): allowed on a
# laptop (DEBUG), refused in production unless the deployment allows them. Link-local addresses
# (cloud metadata) are always refused; OPENAI_BASE_URL's own host and port are trusted (conduct/egress.py).
ENDPOINTS_ALLOW_PRIVATE_NETWORKS = env_bool("ENDPOINTS_ALLOW_PRIVATE_NETWORKS", default=DEBUG)
# The most a model endpoint's answer may send: a streamed answer's events (a 128k-token answer is ~30 MB of
# them), a whole JSON answer. Reading stops there, so no endpoint can fill a worker's memory.
MODEL_STREAM_MAX_BYTES = env_int("MODEL_STREAM_MAX_BYTES", 64 * 1024 * 1024)
MODEL_JSON_MAX_BYTES = env_int("MODEL_JSON_MAX_BYTES", 8 * 1024 * 1024)
# Probe runs (probes/running.py): attempts per request (retries on 429/5xx/timeouts with backoff from
# PROBES_BACKOFF_BASE seconds), and how long a claimed answer may stay silent before a resume asks it again.
PROBES_MAX_ATTEMPTS = env_int("PROBES_MAX_ATTEMPTS", 4)
PROBES_BACKOFF_BASE = float(env_str("PROBES_BACKOFF_BASE", "1.0"))
PROBES_LEASE_SECONDS = env_int("PROBES_LEASE_SECONDS", 15 * 60)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "WARNING")},
}
WHITENOISE_USE_FINDERS = DEBUG
