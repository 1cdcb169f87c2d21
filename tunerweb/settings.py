"""tunerweb settings, read from the environment (see README "Configuration")."""
import os
import secrets
import tempfile
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from .env import envbool, envint, envlist, envstr, private_file

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(envstr("TUNERWEB_VAR_DIR", str(BASE_DIR / "var")))

DEBUG = envbool("DEBUG", False)
# Without SECRET_KEY a fresh machine still starts: a key is made once and kept in
# var/secret-key, so every process (web, workers) and every restart shares it.
SECRET_KEY = envstr("SECRET_KEY", "") or private_file(VAR_DIR / "secret-key", lambda: secrets.token_urlsafe(50))
# Tests add Django's `testserver` themselves (setup_test_environment); a server never needs it.
ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", [])

# Behind HTTPS, TUNERWEB_HTTPS=true turns on the redirect, secure cookies and HSTS together
# (each can still be set on its own); `manage.py check --deploy` then passes.
TUNERWEB_HTTPS = envbool("TUNERWEB_HTTPS", False)
SECURE_SSL_REDIRECT = envbool("TUNERWEB_SSL_REDIRECT", TUNERWEB_HTTPS)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = envbool("TUNERWEB_SECURE_COOKIES", TUNERWEB_HTTPS)
SECURE_HSTS_SECONDS = envint("TUNERWEB_HSTS_SECONDS", 365 * 24 * 3600 if TUNERWEB_HTTPS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("TUNERWEB_HSTS_INCLUDE_SUBDOMAINS", TUNERWEB_HTTPS)
# Preloading is a promise to browsers that is slow to take back: only when asked.
SECURE_HSTS_PRELOAD = envbool("TUNERWEB_HSTS_PRELOAD", False)
# The header a TLS-terminating proxy sets, e.g. X-Forwarded-Proto; trust it only behind one.
_proxy_header = envstr("TUNERWEB_PROXY_SSL_HEADER", "")
SECURE_PROXY_SSL_HEADER = ("HTTP_" + _proxy_header.upper().replace("-", "_"), "https") if _proxy_header else None

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_filters",
    "axes",
    "records",
    "jobs",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "tunerweb.errors.ErrorMiddleware",
    "records.uploads.UploadSizeLimitMiddleware",  # before CSRF, which reads the body
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",  # last, as django-axes asks
]

# Login throttling (django-axes): after TUNERWEB_LOGIN_FAILURES wrong passwords for one user
# from one address, that pair is refused for TUNERWEB_LOGIN_COOLOFF_MINUTES, right password or not.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = envint("TUNERWEB_LOGIN_FAILURES", 5)
AXES_COOLOFF_TIME = timedelta(minutes=envint("TUNERWEB_LOGIN_COOLOFF_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False

ROOT_URLCONF = "tunerweb.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]
WSGI_APPLICATION = "tunerweb.wsgi.application"

_default_db = f"sqlite:///{VAR_DIR / 'tunerweb.sqlite3'}"
try:
    # A connection is kept per server thread (gunicorn's workers x threads bound them) and
    # checked before reuse, so a database restart costs one failed check, not an error.
    DATABASES = {"default": dj_database_url.parse(
        envstr("DATABASE_URL", _default_db), conn_max_age=envint("TUNERWEB_DB_CONN_MAX_AGE", 60), conn_health_checks=True,
    )}
except ValueError as exc:
    raise ImproperlyConfigured(f"DATABASE_URL is not a database URL: {exc}") from None
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the web server read while an import or a worker writes; IMMEDIATE takes the
    # write lock when a transaction starts, so a read-then-write transaction waits for it
    # (up to `timeout`) instead of failing with "database is locked" half-way.
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL;", "timeout": 20, "transaction_mode": "IMMEDIATE",
    }
    # Tests run Celery workers as separate processes; they can share a test database
    # only through a file (one per test process, so parallel runs do not collide).
    DATABASES["default"]["TEST"] = {"NAME": str(Path(tempfile.gettempdir()) / f"tunerweb-test-{os.getpid()}.sqlite3")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "records:home"
LOGOUT_REDIRECT_URL = "records:home"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

# Uploaded logs stream from a temporary file; this caps their size.
TUNERWEB_MAX_UPLOAD_BYTES = envint("TUNERWEB_MAX_UPLOAD_BYTES", 200 * 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
# Read-only pages are public unless this is off; anything that changes data needs a login.
TUNERWEB_PUBLIC_READ = envbool("TUNERWEB_PUBLIC_READ", True)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "jobs.tokens.HashedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["records.permissions.ReadPublicWriteAuthenticated"],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PARSER_CLASSES": [
        "tunerweb.parsers.LimitedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "EXCEPTION_HANDLER": "tunerweb.errors.api_exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "tunerweb API",
    "DESCRIPTION": "Tuning records, leaderboards, diffs, compares and speedups as JSON.",
    "VERSION": "0.1.0",
    # Swagger UI from our own static files (the sidecar package), so /api/docs/ works offline.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

REDIS_URL = envstr("REDIS_URL", "redis://127.0.0.1:6379/0")
CELERY_BROKER_URL = REDIS_URL
# Pages keep what is costly to work out (a leaderboard, a run's trials) here, keyed by a
# version of the records it came from; Redis down or slow makes a miss, not an error (tunerweb.cache).
CACHES = {"default": {
    "BACKEND": "tunerweb.cache.FailOpenRedisCache", "LOCATION": envstr("TUNERWEB_CACHE_URL", REDIS_URL),
    "KEY_PREFIX": "tunerweb", "OPTIONS": {"socket_connect_timeout": 0.25, "socket_timeout": 0.25},
}}
# Sessions stay in the database (Django's default), not in the fail-open cache: a logout while Redis
# fails would delete the row but leave the cached session valid for its whole age.
CELERY_RESULT_BACKEND = REDIS_URL
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Job progress lives in the database; Celery's own results are not kept.
CELERY_TASK_IGNORE_RESULT = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# A message a dead worker took comes back after this long; the jobs app also re-sends
# orphaned runs itself (worker start, heartbeat), so this is only the last resort.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": envint("TUNERWEB_VISIBILITY_TIMEOUT", 3600)}

# Workers beat every TUNERWEB_WORKER_HEARTBEAT_SECONDS; silent for
# TUNERWEB_WORKER_STALE_SECONDS, a worker counts as offline and its running job is
# taken over by another worker of that GPU model.
TUNERWEB_WORKER_HEARTBEAT_SECONDS = envint("TUNERWEB_WORKER_HEARTBEAT_SECONDS", 5)
TUNERWEB_WORKER_STALE_SECONDS = envint("TUNERWEB_WORKER_STALE_SECONDS", 30)
# A queued or running job whose GPU model has had no worker online for this long says so.
TUNERWEB_WORKER_WAIT_SECONDS = envint("TUNERWEB_WORKER_WAIT_SECONDS", 60)
# Configs measured per batch: a crash loses at most one batch; a cancel stops within one.
TUNERWEB_JOB_BATCH_SIZE = envint("TUNERWEB_JOB_BATCH_SIZE", 8)
TUNERWEB_JOB_MAX_TRIALS = envint("TUNERWEB_JOB_MAX_TRIALS", 10000)
# A network job's budget goes to its tasks this many trials at a time (Ansor measures 64 a round).
TUNERWEB_NETWORK_ROUND_TRIALS = envint("TUNERWEB_NETWORK_ROUND_TRIALS", 64)
# When a run ends, its top-k distinct configs are re-measured in interleaved rounds (0: not).
TUNERWEB_CONFIRM_TOP_K = envint("TUNERWEB_CONFIRM_TOP_K", 5)
TUNERWEB_CONFIRM_ROUNDS = envint("TUNERWEB_CONFIRM_ROUNDS", 5)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": envstr("LOG_LEVEL", "INFO")},
}
