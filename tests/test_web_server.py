"""The web server `./tw up` runs: gunicorn with static files through whitenoise, and database
connections bounded by its workers x threads however many clients come."""
import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import requests
from django.db import connection

from jobs_fixtures import database_url
from live_server import LiveServer
from tunerweb.up import ROOT, free_port, web_server_argv, web_server_sizes

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
APP_NAME = "tunerweb-test-web"


def test_tw_up_serves_with_gunicorn_and_whitenoise_and_prints_the_url_and_login(tmp_path, redis_url):
    port = free_port()
    env = {**os.environ, "DATABASE_URL": database_url(), "REDIS_URL": redis_url, "TUNERWEB_VAR_DIR": str(tmp_path)}
    log = tmp_path / "up.log"
    up = subprocess.Popen([sys.executable, "-m", "tunerweb.up", "--port", str(port)], cwd=ROOT, env=env,
                          stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while "tunerweb is up at" not in log.read_text() and time.monotonic() < deadline:
            assert up.poll() is None, log.read_text()
            time.sleep(0.5)
        said = log.read_text()
        assert f"tunerweb is up at http://127.0.0.1:{port}/ (gunicorn)" in said
        assert re.search(r"log in as admin / \S+", said)

        page = requests.get(f"http://127.0.0.1:{port}/", timeout=30)
        css = requests.get(f"http://127.0.0.1:{port}/static/tunerweb.css", timeout=30)
        assert page.status_code == 200 and "gunicorn" in page.headers.get("Server", "")
        assert css.status_code == 200 and css.headers["Content-Type"].startswith("text/css")
        assert "max-age" in css.headers.get("Cache-Control", "")  # whitenoise's headers
    finally:
        os.killpg(up.pid, signal.SIGINT)
        try:
            assert up.wait(timeout=60) == 0, log.read_text()[-3000:]
        finally:
            # Once (CI, 2026-12-04) a gunicorn master outlived `tw up` and held the test database open,
            # so the next run could not create it: nothing of the group may outlive the test.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(up.pid, signal.SIGKILL)


def test_the_development_server_only_behind_its_flag():
    assert "gunicorn" in web_server_argv("127.0.0.1", 8000)
    assert web_server_argv("127.0.0.1", 8000, dev_server=True)[2:4] == ["runserver", "--noreload"]


def test_gunicorn_s_workers_follow_the_cpu_count_and_the_environment_overrides_them(monkeypatch):
    monkeypatch.delenv("TUNERWEB_WEB_WORKERS", raising=False)
    monkeypatch.delenv("TUNERWEB_WEB_THREADS", raising=False)
    assert [web_server_sizes(cpus) for cpus in (1, 2, 4, 64)] == [(2, 8), (2, 8), (4, 8), (8, 8)]
    monkeypatch.setenv("TUNERWEB_WEB_WORKERS", "3")
    monkeypatch.setenv("TUNERWEB_WEB_THREADS", "5")
    assert web_server_sizes(2) == (3, 5)
    argv = web_server_argv("127.0.0.1", 8000)
    assert argv[argv.index("--workers") + 1] == "3" and argv[argv.index("--threads") + 1] == "5"


def connections_held(server: LiveServer) -> int:
    """Database connections the server's processes hold now."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", [APP_NAME])
            return cursor.fetchone()[0]
    database = os.path.realpath(connection.settings_dict["NAME"])
    held = 0
    for pid in server.pids():
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                held += os.readlink(fd) == database
            except OSError:
                pass
    return held


def test_many_clients_never_make_the_server_hold_more_than_workers_times_threads_connections(tmp_path):
    url = database_url()
    if connection.vendor == "postgresql":
        url += f"?application_name={APP_NAME}"
    workers, threads = 2, 2
    server = LiveServer(tmp_path / "web.log", {"DATABASE_URL": url}, sizes=(workers, threads))
    peak, stop, answers = [0], threading.Event(), []

    def watch():
        while not stop.is_set():
            peak[0] = max(peak[0], connections_held(server))
            time.sleep(0.05)

    def client():
        # An assert in a thread fails nothing: each answer (or error) is kept for the test to check.
        with requests.Session() as session:
            for path in ["/", "/api/workloads/", "/api/tasks/", "/devices/"] * 4:
                try:
                    answers.append(session.get(server.url + path, timeout=60).status_code)
                except requests.RequestException as exc:
                    answers.append(repr(exc))

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        for _round in range(2):
            clients = [threading.Thread(target=client) for _ in range(24)]
            for each in clients:
                each.start()
            for each in clients:
                each.join()
        held_after = connections_held(server)
    finally:
        stop.set()
        watcher.join()
        server.stop()

    assert answers == [200] * (2 * 24 * 16), sorted(set(map(str, answers)))
    assert 1 <= peak[0] <= workers * threads, peak[0]
    assert 1 <= held_after <= workers * threads  # kept open for reuse, not one per request
