"""RTA Studio settings, read from environment variables (see config/env.py).

Embedded defaults for a laptop: SQLite and in-process tasks when DATABASE_URL and
REDIS_URL are unset; the real PostgreSQL and Redis when they are set.
"""

from __future__ import annotations

from pathlib import Path

from django.utils.csp import CSP

from config.env import database_from_url, env_bool, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = env_bool("DEBUG", default=False)
SECRET_KEY = env_str("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG and env_bool("RTA_REQUIRE_SECRET_KEY", default=False):
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured("SECRET_KEY (or SECRET_KEY_FILE) must be set in production")
    SECRET_KEY = "django-insecure-dev-key-only-for-local-use-set-SECRET_KEY-in-production"
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
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "projects",
    "interviews",
    "conduct",
    "coding",
    "themes",
    "reports",
]

MIDDLEWARE = [
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
    "projects.middleware.MalformedParameterMiddleware",
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

# Celery: the real broker when REDIS_URL is set, otherwise tasks run in-process.
CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = None
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", default=not REDIS_URL)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A task whose worker died (acks_late) is redelivered after this many seconds; longer than
# the longest task (imports and exports stream, minutes at most), shorter than Redis' 1 h default.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 15 * 60)}
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_QUEUE", "") or (
    "rta-" + env_str("TEST_DATABASE_NAME", "main")
)

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
# Login lockout (projects/ratelimit.py): this many failures per username and address, then a pause.
RTA_LOGIN_MAX_FAILURES = env_int("RTA_LOGIN_MAX_FAILURES", 5)
RTA_LOGIN_LOCKOUT_SECONDS = env_int("RTA_LOGIN_LOCKOUT_SECONDS", 15 * 60)
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
# Excerpt-table exports with more rows than this are written by the Celery worker (progress bar, download link).
RTA_EXPORT_INLINE_MAX_ROWS = env_int("RTA_EXPORT_INLINE_MAX_ROWS", 5000)
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
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
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
    # 401 (SessionAuthentication has none, which would turn them into 403).
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    "EXCEPTION_HANDLER": "projects.api_exceptions.api_exception_handler",
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

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "WARNING")},
}
WHITENOISE_USE_FINDERS = DEBUG
