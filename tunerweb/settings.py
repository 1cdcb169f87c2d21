"""tunerweb settings, read from the environment (see README "Configuration")."""
import os
import secrets
import tempfile
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
ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", [])

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
    "records",
    "jobs",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "records.uploads.UploadSizeLimitMiddleware",  # before CSRF, which reads the body
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

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
    DATABASES = {"default": dj_database_url.parse(envstr("DATABASE_URL", _default_db), conn_max_age=60)}
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
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["records.permissions.ReadPublicWriteAuthenticated"],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
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
