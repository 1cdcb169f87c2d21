"""The web side under load: gunicorn (as `./tw up` runs it) against Django's development
server, in one run, while a replay job runs.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/tunerweb_load_bench REDIS_URL=redis://127.0.0.1:6379/8 \\
        .venv/bin/python -m benchmarks.load [--clients 50] [--seconds 30] [--trials 800] [--out docs/benchmarks/load.md]

Re-creates the PostgreSQL database DATABASE_URL names (its name must contain "bench", so a
real database is never dropped), migrates it and imports TVM's TopHub log (`--tophub`, by default
../shared/data/tophub/cuda_v0.08.log). Then, for each
server in turn: starts it on a free loopback port, a replay worker (the committed C12 H200
recording, paced so the job spans the load) and an n-trial job through the API, and sends
`--clients` concurrent clients for `--seconds` seconds, each a keep-alive session that asks in
turn for a leaderboard page, the job's page and the job's JSON, pausing `--think-ms` after each
answer (1000 ms, as people and the job page's own 2 s polling do; 0, clients that never pause). It reports requests/s, p50,
p99, errors, the database connections the web server held (peak, and after the load) and
whether the job finished with every record. Bounded: loopback only, a fixed client count, a
time limit per phase and per request. Writes the table to `--out` and prints it last.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import requests

ROOT = Path(__file__).resolve().parent.parent
RECORDING = ROOT / "tests" / "data" / "c12_h200_recording.log.gz"
TOPHUB = ROOT.parent / "shared" / "data" / "tophub" / "cuda_v0.08.log"  # third-party data, kept beside the checkout
WEB_APP_NAME = "tunerweb-load-web"  # application_name of the web server's connections
REQUEST_TIMEOUT = 10.0
MAX_CLIENTS = 200
MAX_SECONDS = 120


@dataclass
class Phase:
    server: str
    think_ms: int
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    error_kinds: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    peak_connections: int = 0
    connections_after: int = 0
    job_records: int = 0
    job_state: str = ""
    load_average: float = 0.0  # the machine's 1-minute load average when the load ended

    def row(self, trials: int) -> dict:
        ordered = sorted(self.latencies)
        quantile = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000 if ordered else float("nan")  # noqa: E731
        return {
            "server": self.server, "think_ms": self.think_ms, "requests": len(ordered) + self.errors,
            "requests_per_s": (len(ordered) + self.errors) / self.seconds if self.seconds else 0.0,
            "p50_ms": quantile(0.50), "p99_ms": quantile(0.99),
            "mean_ms": statistics.fmean(ordered) * 1000 if ordered else float("nan"),
            "errors": self.errors, "error_kinds": self.error_kinds,
            "peak_db_connections": self.peak_connections, "db_connections_after": self.connections_after,
            "job": f"{self.job_state}, {self.job_records}/{trials} records",
            "load_average": self.load_average,
        }


def django_env(database_url: str, redis_url: str, var_dir: Path) -> dict[str, str]:
    return {**os.environ, "DATABASE_URL": database_url, "REDIS_URL": redis_url, "TUNERWEB_VAR_DIR": str(var_dir),
            "DJANGO_SETTINGS_MODULE": "tunerweb.settings", "LOG_LEVEL": "WARNING"}


def with_app_name(database_url: str, name: str) -> str:
    parts = urlsplit(database_url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, f"application_name={name}", ""))


def recreate_database(database_url: str) -> None:
    parts = urlsplit(database_url)
    name = parts.path.lstrip("/")
    if "bench" not in name:
        raise SystemExit(f"refusing to drop {name!r}: the benchmark database's name must contain 'bench'")
    admin = urlunsplit((parts.scheme, parts.netloc, "/postgres", "", ""))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def manage(env: dict, *args: str) -> str:
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return done.stdout


SETUP = """
import json
from django.contrib.auth import get_user_model
from django.test import Client
from jobs.tokens import issue_token
from records.models import Workload
user = get_user_model().objects.create_user("loadtest", password="load-test-password-1")
client = Client()
client.force_login(user)
workload = Workload.objects.filter(task_name="conv2d_nchw_winograd.cuda").order_by("-id").first() or Workload.objects.first()
print(json.dumps({"token": issue_token(user), "session": client.cookies["sessionid"].value, "workload": workload.pk}))
"""


def start_server(kind: str, env: dict, log: Path) -> tuple[subprocess.Popen, str]:
    from tunerweb.up import free_port, web_server_argv, web_server_env

    port = free_port()
    dev = kind == "development server"
    server_env = {**web_server_env(dev), **env, "DATABASE_URL": with_app_name(env["DATABASE_URL"], WEB_APP_NAME)}
    proc = subprocess.Popen(web_server_argv("127.0.0.1", port, dev), cwd=ROOT, env=server_env,
                            stdout=log.open("ab"), stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            requests.get(url + "/api/tasks/", timeout=2)
            return proc, url
        except (requests.ConnectionError, requests.Timeout):
            time.sleep(0.2)
    stop(proc)
    raise SystemExit(f"{kind} did not start; see {log}")


def stop(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def web_connections(database_url: str) -> int:
    with psycopg.connect(database_url, autocommit=True) as conn:
        return conn.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", [WEB_APP_NAME]).fetchone()[0]


def client_loop(url: str, paths: list[str], cookies: dict, headers: dict, until: float, think: float,
                phase: Phase, lock) -> None:
    session = requests.Session()
    session.cookies.update(cookies)
    turn = 0
    while time.monotonic() < until:
        if turn and think:
            time.sleep(think)
        path = paths[turn % len(paths)]
        turn += 1
        started = time.monotonic()
        try:
            response = session.get(url + path, headers=headers, timeout=REQUEST_TIMEOUT)
            response.content  # noqa: B018 - the whole body, as a browser reads it
            kind = None if response.status_code == 200 else f"HTTP {response.status_code} {path}"
        except requests.RequestException as exc:
            kind = type(exc).__name__
        took = time.monotonic() - started
        with lock:
            if kind is None:
                phase.latencies.append(took)
            else:
                phase.errors += 1
                phase.error_kinds[kind] = phase.error_kinds.get(kind, 0) + 1


def run_phase(kind: str, think_ms: int, env: dict, setup: dict, options, log_dir: Path) -> Phase:
    phase = Phase(kind, think_ms)
    server, url = start_server(kind, env, log_dir / f"{kind.replace(' ', '-')}.log")
    pace = options.seconds * 1.2 / options.trials  # the job outlasts the load a little
    worker = subprocess.Popen(
        [sys.executable, "manage.py", "run_worker", "--replay", str(RECORDING), "--pace", f"{pace:.4f}"],
        cwd=ROOT, env={**env, "TUNERWEB_JOB_BATCH_SIZE": "8"}, stdout=(log_dir / "worker.log").open("ab"),
        stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        token = {"Authorization": f"Token {setup['token']}"}
        job = None
        deadline = time.monotonic() + 60
        while job is None and time.monotonic() < deadline:  # until the worker is online
            answer = requests.post(url + "/api/jobs/", json={
                "template": "conv2d_nchw.cuda", "preset": "C12", "tuner": "random", "n_trial": options.trials,
                "gpus": ["h200-replay"], "seed": 1}, headers=token, timeout=REQUEST_TIMEOUT)
            job = answer.json()["id"] if answer.status_code == 201 else None
            time.sleep(0 if job else 0.5)
        if job is None:
            raise SystemExit(f"could not submit the job: {answer.status_code} {answer.text[:300]}")
        paths = [f"/leaderboard/{setup['workload']}/", f"/jobs/{job}/", f"/api/jobs/{job}/"]
        cookies = {"sessionid": setup["session"]}
        lock = threading.Lock()
        until = time.monotonic() + options.seconds
        clients = [threading.Thread(target=client_loop, args=(url, paths, cookies, token, until, think_ms / 1000, phase, lock),
                                    daemon=True) for _ in range(options.clients)]
        started = time.monotonic()
        for client in clients:
            client.start()
        while any(client.is_alive() for client in clients):
            phase.peak_connections = max(phase.peak_connections, web_connections(env["DATABASE_URL"]))
            time.sleep(0.25)
        phase.seconds = time.monotonic() - started
        phase.load_average = os.getloadavg()[0]
        deadline = time.monotonic() + options.seconds * 3 + 60
        while time.monotonic() < deadline:
            body = requests.get(url + f"/api/jobs/{job}/", headers=token, timeout=REQUEST_TIMEOUT).json()
            if body["state"] not in ("queued", "running"):
                break
            time.sleep(1)
        phase.job_state, phase.job_records = body["state"], body["runs"][0]["trials_done"]
        time.sleep(5)
        phase.connections_after = web_connections(env["DATABASE_URL"])
    finally:
        stop(worker, signal.SIGQUIT)
        stop(server)
    return phase


def table(rows: list[dict]) -> str:
    head = ("| server | pause ms | requests | req/s | p50 ms | p99 ms | errors | peak DB conns | DB conns 5 s after "
            "| job | load average |")
    lines = [head, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|"]
    for r in rows:
        lines.append(f"| {r['server']} | {r['think_ms']} | {r['requests']} | {r['requests_per_s']:.1f} | {r['p50_ms']:.0f} | {r['p99_ms']:.0f} "
                     f"| {r['errors']} | {r['peak_db_connections']} | {r['db_connections_after']} | {r['job']} "
                     f"| {r['load_average']:.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--trials", type=int, default=800)
    parser.add_argument("--servers", default="gunicorn,development server")
    parser.add_argument("--think-ms", default="1000,0",
                        help="each client's pause after an answer, in ms; a list runs each (1000: people and the job "
                             "page's polling; 0: clients that never pause, the server saturated)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks" / "load.md")
    parser.add_argument("--tophub", type=Path, default=TOPHUB, help="TVM's TopHub CUDA log, for the leaderboards")
    options = parser.parse_args(argv)
    if not 1 <= options.clients <= MAX_CLIENTS or not 1 <= options.seconds <= MAX_SECONDS:
        raise SystemExit(f"--clients is 1..{MAX_CLIENTS}, --seconds 1..{MAX_SECONDS}")
    database_url = os.environ.get("DATABASE_URL", "")
    if not database_url.startswith(("postgres://", "postgresql://")):
        raise SystemExit("set DATABASE_URL to a PostgreSQL database whose name contains 'bench'")
    redis_url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    if urlsplit(redis_url).hostname not in ("127.0.0.1", "localhost"):
        raise SystemExit("the load benchmark runs on loopback only: REDIS_URL must be 127.0.0.1")

    recreate_database(database_url)
    log_dir = Path(os.environ.get("OUT", ROOT / "var" / "load-bench"))
    log_dir.mkdir(parents=True, exist_ok=True)
    env = django_env(database_url, redis_url, log_dir / "var")
    manage(env, "migrate", "--noinput", "-v", "0")
    manage(env, "collectstatic", "--noinput", "-v", "0")
    manage(env, "import_records", str(options.tophub))
    setup = json.loads(manage(env, "shell", "--no-imports", "-c", SETUP).strip().splitlines()[-1])

    rows = []
    for think_ms in [int(t) for t in options.think_ms.split(",")]:
        for kind in [k.strip() for k in options.servers.split(",")]:
            print(f"{kind}: {options.clients} clients pausing {think_ms} ms, for {options.seconds:.0f} s ...", flush=True)
            rows.append(run_phase(kind, think_ms, env, setup, options, log_dir).row(options.trials))

    from tunerweb.up import web_server_sizes

    workers, threads = web_server_sizes()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    report = "\n".join([
        "# Web server under load: gunicorn against the development server",
        "",
        f"{datetime.date.today()}, commit {commit}, {platform.node()}: {os.cpu_count()} CPU cores, "
        f"Python {platform.python_version()}, PostgreSQL and Redis on 127.0.0.1. Command:",
        "",
        "    DATABASE_URL=postgres://postgres@127.0.0.1:5432/<name>_bench REDIS_URL=redis://127.0.0.1:6379/<db> \\",
        f"        .venv/bin/python -m benchmarks.load --clients {options.clients} --seconds {options.seconds:.0f} "
        f"--trials {options.trials} --think-ms {options.think_ms}",
        "",
        f"{options.clients} concurrent clients for {options.seconds:.0f} s, each a keep-alive session asking in turn for a "
        "leaderboard page (TopHub's C12 workload), the job's page and the job's JSON and pausing (the pause column) "
        "after each answer, while a replay worker runs an "
        f"{options.trials}-trial job. gunicorn ran {workers} workers x {threads} threads (`./tw up`'s sizes on this "
        "machine); the development server is `runserver --noreload` (`./tw up --dev-server`). The load generator, "
        "both servers, the worker, PostgreSQL and Redis share the machine's cores; the last column is the machine's "
        "1-minute load average as each phase ended (other work on the machine included).",
        "",
        table(rows),
        "",
        "Errors by kind: " + "; ".join(f"{r['server']}: {r['error_kinds'] or 'none'}" for r in rows),
        "",
    ])
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(report)
    (log_dir / "load.json").write_text(json.dumps(rows, indent=2))
    print("\n" + table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
