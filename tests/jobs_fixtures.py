"""Fixtures for the jobs tests: a real Redis database, real Celery worker processes
serving a replay recording, and the test database shared with them.

Import the fixtures a test module needs by name (`from jobs_fixtures import ...`).
Worker processes reach the test database through DATABASE_URL, so tests that use
them are `transaction=True` (their writes are committed, the worker can see them).
"""
from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

import pytest
import redis
from django.db import connection

from engine import create_task
from engine.logfile import write_records
from engine.synthetic import MODEL, synthetic_recording
from engine.workloads import PRESETS
from tunerweb.up import free_port

ROOT = Path(__file__).resolve().parent.parent
RESNET18_LOGS = ROOT / "docs" / "benchmarks" / "conv2d-h200-logs"
# Two test runs on one machine stay apart when each names its own database.
REDIS_TEST_DB = int(os.environ.get("TUNERWEB_TEST_REDIS_DB", "5"))
REPLAY_QUEUE = MODEL + "-replay"
RECORDED_CONFIGS = 300
# Fast beats so a dead worker is noticed within seconds, small batches so a job
# spans many of them.
WORKER_ENV = {
    "TUNERWEB_WORKER_HEARTBEAT_SECONDS": "1",
    "TUNERWEB_WORKER_STALE_SECONDS": "4",
    "TUNERWEB_JOB_BATCH_SIZE": "4",
}


def redis_test_url() -> str:
    """REDIS_URL's server (127.0.0.1:6379 unless set), database REDIS_TEST_DB."""
    parts = urlsplit(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
    return urlunsplit((parts.scheme, parts.netloc, f"/{REDIS_TEST_DB}", "", ""))


@pytest.fixture
def redis_url(settings):
    """A flushed Redis database for this test, used as the Celery broker."""
    url = redis_test_url()
    client = redis.Redis.from_url(url, socket_connect_timeout=2)
    try:
        client.flushdb()
    except redis.ConnectionError as exc:
        pytest.fail(f"the jobs tests need Redis at {url} ({exc}); start one: redis-server --daemonize yes")
    settings.CELERY_BROKER_URL = url
    yield url
    client.flushdb()
    client.close()


class RedisProcess:
    """A redis-server of this test's own on a free port, to take down and bring back."""

    def __init__(self, port: int, data_dir: Path) -> None:
        self.port = port
        self.url = f"redis://127.0.0.1:{port}/0"
        self.data_dir = data_dir
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.data_dir),
             "--save", "", "--appendonly", "no"], stdout=subprocess.DEVNULL,
        )
        client = redis.Redis.from_url(self.url, socket_connect_timeout=1)
        wait_for(lambda: _answers(client), timeout=10, what=f"redis-server on port {self.port}")
        client.close()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


def _answers(client) -> bool:
    try:
        return client.ping()
    except redis.ConnectionError:
        return False


@pytest.fixture
def own_redis(tmp_path):
    """A running redis-server of the test's own (RedisProcess), stopped at the end."""
    server = RedisProcess(free_port(), tmp_path)
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def recording_path(tmp_path_factory) -> Path:
    """A deterministic replay recording of the C12 preset (the seed tutorial's workload)."""
    preset = PRESETS["C12"]
    records = synthetic_recording(create_task(preset.task_name, preset.args), RECORDED_CONFIGS, seed=1)
    path = tmp_path_factory.mktemp("recording") / "c12_synthetic.log.gz"
    with gzip.open(path, "wt", encoding="utf-8") as stream:
        write_records(stream, records)
    return path


# A job the replay recording can answer: the API's body, the form's fields.
C12_JOB = {"template": "conv2d_nchw.cuda", "preset": "C12", "tuner": "random", "n_trial": 20, "gpus": [REPLAY_QUEUE]}


@pytest.fixture
def replay_gpu(recording_path):
    """A replay worker that is online (its row, freshly beating; no process needed here)."""
    from jobs.worker import register, replay_config

    return register(replay_config(recording_path))


def database_url() -> str:
    """The test database as a URL, for processes started by the test."""
    db = connection.settings_dict
    if db["ENGINE"] == "django.db.backends.sqlite3":
        return f"sqlite:///{db['NAME']}"
    auth = quote(db["USER"] or "")
    if db.get("PASSWORD"):
        auth += ":" + quote(db["PASSWORD"])
    host = db["HOST"] or "127.0.0.1"
    port = f":{db['PORT']}" if db.get("PORT") else ""
    return f"postgres://{auth}@{host}{port}/{db['NAME']}"


@pytest.fixture(scope="session")
def resnet18_recording(tmp_path_factory) -> Path:
    """One recording of the twelve ResNet-18 layers: the real H200 logs of the conv2d
    benchmark (docs/benchmarks/conv2d-h200-logs, 1,000 tuning trials a layer) put together."""
    path = tmp_path_factory.mktemp("recording") / "resnet18_h200.log.gz"
    with gzip.open(path, "wb") as out:
        for layer in range(1, 13):
            out.write(gzip.decompress((RESNET18_LOGS / f"c{layer}.log.gz").read_bytes()))
    return path


class WorkerProcess:
    """`manage.py run_worker --replay ...` in its own process group."""

    def __init__(self, recording: Path, redis_url: str, log_path: Path, pace: float, extra_args=(), slot: int = 0) -> None:
        env = {**os.environ, **WORKER_ENV, "DATABASE_URL": database_url(), "REDIS_URL": redis_url,
               "DJANGO_SETTINGS_MODULE": "tunerweb.settings"}
        self.log_path = log_path
        self._log = open(log_path, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "manage.py", "run_worker", "--replay", str(recording), "--pace", str(pace),
             "--slot", str(slot), "--loglevel", "INFO", *extra_args],
            cwd=ROOT, env=env, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True,
        )

    def log_tail(self) -> str:
        return self.log_path.read_text(errors="replace")[-3000:]

    def wait_ready(self, timeout: float = 60) -> None:
        """Until the worker has registered and said it is ready for tasks."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"worker exited with {self.proc.returncode}:\n{self.log_tail()}")
            if b" ready." in self.log_path.read_bytes():
                return
            time.sleep(0.2)
        raise AssertionError(f"worker not ready after {timeout} s:\n{self.log_tail()}")

    def kill(self) -> None:
        """SIGKILL the whole worker (main process and pool child): a machine that died."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        self.quit()
        self.wait_stopped()

    def quit(self) -> None:
        """Ask for Celery's cold shutdown (SIGQUIT) without waiting for it."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGQUIT)

    def wait_stopped(self) -> None:
        """Until the worker has exited after `quit` (SIGKILL after 10 s)."""
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
        self._log.close()


@pytest.fixture
def start_worker(recording_path, redis_url, tmp_path):
    """Start replay workers; all are stopped when the test ends."""
    started: list[WorkerProcess] = []

    def start(pace: float = 0.0, wait: bool = True, recording: Path | None = None, slot: int = 0) -> WorkerProcess:
        worker = WorkerProcess(recording or recording_path, redis_url, tmp_path / f"worker-{len(started)}.log", pace,
                               slot=slot)
        started.append(worker)
        if wait:
            worker.wait_ready()
        return worker

    yield start
    for worker in started:  # every worker shuts down at once, not one after another
        worker.quit()
    for worker in started:
        worker.wait_stopped()
    connection.close()


def wait_for(condition, timeout: float = 60, what: str = "condition", interval: float = 0.2):
    """Poll `condition()` until it returns something true; AssertionError after `timeout` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")
