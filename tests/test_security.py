"""Security settings: login throttling, HTTPS settings from the environment (a deploy check
that passes), and no `testserver` among the hosts a real server accepts."""
import os
import secrets
import subprocess
import sys

import pytest
from django.urls import reverse

from jobs_fixtures import database_url
from tunerweb.up import ROOT

pytestmark = pytest.mark.django_db


def login(client, password):
    return client.post(reverse("login"), {"username": "alice", "password": password})


def test_thirty_wrong_passwords_lock_the_login_and_then_the_right_one_is_refused(client, alice, settings):
    answers = [login(client, f"guess-{n}").status_code for n in range(30)]

    assert answers[: settings.AXES_FAILURE_LIMIT - 1] == [200] * (settings.AXES_FAILURE_LIMIT - 1)  # the form again
    assert set(answers[settings.AXES_FAILURE_LIMIT:]) == {429}
    right = login(client, "alice-password-1")
    assert right.status_code == 429 and "_auth_user_id" not in client.session


def test_a_few_wrong_passwords_then_the_right_one_logs_in(client, alice, settings):
    for n in range(settings.AXES_FAILURE_LIMIT - 1):
        login(client, f"guess-{n}")

    assert login(client, "alice-password-1").status_code == 302
    assert client.session["_auth_user_id"] == str(alice.pk)


def manage(*args, env=None):
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TUNERWEB_") and k not in ("ALLOWED_HOSTS", "DEBUG")}
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, capture_output=True, text=True,
                          env={**clean, "DATABASE_URL": database_url(), **(env or {})}, timeout=120)


HTTPS_ENV = {
    "TUNERWEB_HTTPS": "true", "TUNERWEB_HSTS_PRELOAD": "true", "TUNERWEB_PROXY_SSL_HEADER": "X-Forwarded-Proto",
    "SECRET_KEY": secrets.token_urlsafe(50), "ALLOWED_HOSTS": "tunerweb.example.org", "DEBUG": "false",
}


def test_check_deploy_passes_with_the_https_settings_from_the_environment():
    done = manage("check", "--deploy", "--fail-level", "WARNING", env=HTTPS_ENV)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout


def test_check_deploy_names_what_is_missing_without_them():
    done = manage("check", "--deploy", "--fail-level", "WARNING", env={"SECRET_KEY": HTTPS_ENV["SECRET_KEY"]})

    assert done.returncode != 0
    for warning in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert warning in done.stderr


def test_the_settings_read_the_proxy_header_and_hsts_from_the_environment():
    probe = ("from django.conf import settings as s; "
             "print(s.SECURE_PROXY_SSL_HEADER, s.SECURE_HSTS_SECONDS, s.SESSION_COOKIE_SECURE, s.SECURE_SSL_REDIRECT)")
    done = manage("shell", "--no-imports", "-c", probe, env={**HTTPS_ENV, "TUNERWEB_HSTS_SECONDS": "600"})

    assert done.stdout.split() == ["('HTTP_X_FORWARDED_PROTO',", "'https')", "600", "True", "True"], done.stderr


def test_a_server_s_default_hosts_have_no_testserver():
    done = manage("shell", "--no-imports", "-c", "from django.conf import settings; print(settings.ALLOWED_HOSTS)")

    assert done.returncode == 0, done.stderr
    assert "testserver" not in done.stdout and "127.0.0.1" in done.stdout
