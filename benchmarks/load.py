"""The web side under load: gunicorn (as `./tw up` runs it) against Django's development
server, in one run, while a replay job runs.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/tunerweb_load_bench REDIS_URL=redis://127.0.0.1:6379/8 \\
        .venv/bin/python -m benchmarks.load [--clients 50] [--seconds 30] [--trials 800] [--think-ms 1000,0] \\
        [--servers gunicorn,development server] [--client browser] [--out docs/benchmarks/load.md]

Re-creates the PostgreSQL database DATABASE_URL names (its name must contain "bench", so a
real database is never dropped), migrates it and imports TVM's TopHub log (`--tophub`, by default
../shared/data/tophub/cuda_v0.08.log, or under TUNERWEB_SHARED_DATA). Then, for each pause and
server in turn (`--servers`: gunicorn with `./tw up`'s sizes, `gunicorn:WxT` for other workers x
threads, the development server): starts it on a free loopback port, a replay worker (the
committed C12 H200 recording, paced so the job spans the load) and an n-trial job through the
API, and sends `--clients` concurrent clients for `--seconds` seconds, each a keep-alive session
that asks in turn for a leaderboard page, the job's page and the job's JSON, pausing
`--think-ms` after each answer (1000 ms, as people and the job page's own 2 s polling do; 0,
clients that never pause). `--client` is a list of: browser (the default), asking as a browser on those pages
does: again with the ETag it was answered (If-None-Match; a 304 is an answer), and the job's
JSON as the page's script reads it, whole as the page opens (timed with the page) and then `?since=` its
last points; `--client
naive` asks for the API's whole JSON every time, nothing conditional. The clients run as
`--client-processes` processes of threads (one GIL would queue the answers it times), their
first requests spread over one pause, after a warm-up request for each page.

It reports requests/s, p50, p99, errors, the database connections the web server held (peak,
and after the load) and whether the job finished with every record; then each request's
answers, 304s, size, p50, p99 and maximum; then the CPU seconds the web server, the replay
worker, PostgreSQL and the load generator spent during the load. Bounded: loopback only, a fixed
client count, a time limit per phase and per request. Writes all of it to `--out` (the machine,
date, commit and command with it) and prints the tables last.
"""
from __future__ import annotations

import argparse
import datetime
import json
import multiprocessing
import os
import platform
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import requests

from benchmarks.load_clients import ENDPOINTS, REQUEST_TIMEOUT, client_process, warm_up
from benchmarks.load_cpu import CpuTally

ROOT = Path(__file__).resolve().parent.parent
RECORDING = ROOT / "tests" / "data" / "c12_h200_recording.log.gz"
# Third-party data, kept beside the checkout (or where TUNERWEB_SHARED_DATA says, as for the tests).
TOPHUB = Path(os.environ.get("TUNERWEB_SHARED_DATA", ROOT.parent / "shared" / "data")) / "tophub" / "cuda_v0.08.log"
WEB_APP_NAME = "tunerweb-load-web"  # application_name of the web server's connections
MAX_CLIENTS = 200
MAX_SECONDS = 120


def quantile(ordered: list[float], q: float) -> float:
    """The q-quantile of sorted seconds, in ms (nan for none)."""
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000 if ordered else float("nan")


@dataclass
class Phase:
    server: str
    think_ms: int
    client: str = "browser"
    latencies: dict[str, list[float]] = field(default_factory=lambda: {name: [] for name in ENDPOINTS})
    not_modified: dict[str, int] = field(default_factory=lambda: {name: 0 for name in ENDPOINTS})
    kilobytes: dict[str, float] = field(default_factory=lambda: {name: 0.0 for name in ENDPOINTS})
    errors: int = 0
    error_kinds: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    peak_connections: int = 0
    connections_after: int = 0
    job_records: int = 0
    job_state: str = ""
    load_average: float = 0.0  # the machine's 1-minute load average when the load ended
    cpu_seconds: dict[str, float] = field(default_factory=dict)  # CpuTally's, during the load

    def add(self, other: dict) -> None:
        """A client process's tally (`client_process`'s answer) added in."""
        for name in ENDPOINTS:
            self.latencies[name] += other["latencies"][name]
            self.not_modified[name] += other["not_modified"][name]
            self.kilobytes[name] += other["kilobytes"][name]
        self.errors += other["errors"]
        for kind, n in other["error_kinds"].items():
            self.error_kinds[kind] = self.error_kinds.get(kind, 0) + n

    def row(self, trials: int) -> dict:
        ordered = sorted(t for name in ENDPOINTS for t in self.latencies[name])
        answered = len(ordered)
        endpoints = {}
        for name in ENDPOINTS:
            mine = sorted(self.latencies[name])
            endpoints[name] = {"requests": len(mine), "p50_ms": quantile(mine, 0.50), "p99_ms": quantile(mine, 0.99),
                               "max_ms": mine[-1] * 1000 if mine else float("nan"), "not_modified": self.not_modified[name],
                               "kb_per_answer": self.kilobytes[name] / len(mine) if mine else 0.0}
        return {
            "server": self.server, "think_ms": self.think_ms, "client": self.client, "requests": answered + self.errors,
            "requests_per_s": (answered + self.errors) / self.seconds if self.seconds else 0.0, "seconds": self.seconds,
            "p50_ms": quantile(ordered, 0.50), "p99_ms": quantile(ordered, 0.99),
            "mean_ms": statistics.fmean(ordered) * 1000 if ordered else float("nan"),
            "errors": self.errors, "error_kinds": self.error_kinds, "endpoints": endpoints,
            "peak_db_connections": self.peak_connections, "db_connections_after": self.connections_after,
            "job": f"{self.job_state}, {self.job_records}/{trials} records",
            "load_average": self.load_average, "cpu_seconds": self.cpu_seconds,
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


def server_kind(text: str) -> tuple[str, tuple[int, int] | None]:
    """`--servers`' entries: "development server", or "gunicorn" (`./tw up`'s workers x threads
    on this machine) or "gunicorn:WxT"; (the server, its sizes; None for the development server)."""
    from tunerweb.up import web_server_sizes

    name, _, sizes = text.strip().partition(":")
    if name == "development server" and not sizes:
        return name, None
    if name != "gunicorn":
        raise SystemExit(f"--servers: {text!r} is neither 'gunicorn[:WxT]' nor 'development server'")
    if not sizes:
        return name, web_server_sizes()
    workers, _, threads = sizes.partition("x")
    if not (workers.isdigit() and threads.isdigit() and 1 <= int(workers) <= 16 and 1 <= int(threads) <= 64):
        raise SystemExit(f"--servers: {text!r}: gunicorn's sizes are WORKERSxTHREADS, e.g. gunicorn:2x8")
    return name, (int(workers), int(threads))


def server_label(kind: str, sizes: tuple[int, int] | None) -> str:
    return f"{kind} {sizes[0]}x{sizes[1]}" if sizes else kind


def start_server(kind: str, sizes: tuple[int, int] | None, env: dict, log: Path) -> tuple[subprocess.Popen, str]:
    from tunerweb.up import free_port, web_server_argv, web_server_env

    port = free_port()
    dev = sizes is None
    server_env = {**web_server_env(dev), **env, "DATABASE_URL": with_app_name(env["DATABASE_URL"], WEB_APP_NAME)}
    proc = subprocess.Popen(web_server_argv("127.0.0.1", port, dev, sizes), cwd=ROOT, env=server_env,
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


def run_phase(kind: str, sizes, think_ms: int, client: str, env: dict, setup: dict, options, log_dir: Path) -> Phase:
    label = server_label(kind, sizes)
    phase = Phase(label, think_ms, client)
    server, url = start_server(kind, sizes, env, log_dir / f"{label.replace(' ', '-')}.log")
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
        # The load is to meet a running job, not a queued one and a worker still starting.
        while time.monotonic() < deadline:
            runs = requests.get(url + f"/api/jobs/{job}/", headers=token, timeout=REQUEST_TIMEOUT).json()["runs"]
            if runs[0]["trials_done"]:
                break
            time.sleep(0.2)
        paths = {"leaderboard": f"/leaderboard/{setup['workload']}/", "job page": f"/jobs/{job}/",
                 "job JSON": f"/jobs/{job}/progress.json", "job API": f"/api/jobs/{job}/"}
        cookies = {"sessionid": setup["session"]}
        warm_up(url, paths, cookies, token)
        # People arrive one by one, not in the same millisecond: the clients' first requests
        # are spread over one pause (all at once when they never pause).
        begin = time.monotonic() + 1.0  # the client processes are started by then
        until = begin + options.seconds
        starts = [begin + i * think_ms / 1000 / options.clients for i in range(options.clients)]
        processes = max(1, min(options.client_processes, options.clients))
        with multiprocessing.get_context("fork").Pool(processes) as pool:
            pending = pool.map_async(client_process, [
                (url, paths, cookies, token, client == "naive", starts[i::processes], until, think_ms / 1000)
                for i in range(processes)])
            cpu = CpuTally(server, worker, env["DATABASE_URL"])
            while not pending.ready():
                phase.peak_connections = max(phase.peak_connections, web_connections(env["DATABASE_URL"]))
                if time.monotonic() < until:
                    cpu.add_live()
                pending.wait(0.25)
            phase.cpu_seconds = cpu.seconds
            for tally in pending.get():
                phase.add(tally)
        phase.seconds = time.monotonic() - begin
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
    head = ("| server | client | pause ms | requests | req/s | p50 ms | p99 ms | errors | peak DB conns "
            "| DB conns 5 s after | job | load average |")
    lines = [head, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|"]
    for r in rows:
        lines.append(f"| {r['server']} | {r['client']} | {r['think_ms']} | {r['requests']} | {r['requests_per_s']:.1f} "
                     f"| {r['p50_ms']:.0f} | {r['p99_ms']:.0f} | {r['errors']} | {r['peak_db_connections']} "
                     f"| {r['db_connections_after']} | {r['job']} | {r['load_average']:.1f} |")
    return "\n".join(lines)


def cpu_table(rows: list[dict]) -> str:
    """CPU seconds each part spent during a phase's load, and as cores (of the phase's seconds)."""
    names = ("web server", "replay worker", "PostgreSQL", "load generator")
    lines = ["| server | client | pause ms | " + " | ".join(f"{name} CPU s (cores)" for name in names) + " |",
             "|---|---|---:|" + "---:|" * len(names)]
    for r in rows:
        seconds = r["seconds"] or 1.0
        cells = " | ".join(f"{r['cpu_seconds'].get(name, 0.0):.1f} ({r['cpu_seconds'].get(name, 0.0) / seconds:.2f})"
                           for name in names)
        lines.append(f"| {r['server']} | {r['client']} | {r['think_ms']} | {cells} |")
    return "\n".join(lines)


def endpoint_table(rows: list[dict]) -> str:
    """Each phase's answers by request: where its p99 comes from."""
    lines = ["| server | client | pause ms | request | answers | 304s | KB an answer | p50 ms | p99 ms | max ms |",
             "|---|---|---:|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        for name, e in r["endpoints"].items():
            lines.append(f"| {r['server']} | {r['client']} | {r['think_ms']} | {name} | {e['requests']} | {e['not_modified']} "
                         f"| {e['kb_per_answer']:.1f} | {e['p50_ms']:.0f} | {e['p99_ms']:.0f} | {e['max_ms']:.0f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--trials", type=int, default=800)
    parser.add_argument("--servers", default="gunicorn,development server",
                        help="a list of: gunicorn (./tw up's workers x threads here), gunicorn:WxT, development server")
    parser.add_argument("--think-ms", default="1000,0",
                        help="each client's pause after an answer, in ms; a list runs each (1000: people and the job "
                             "page's polling; 0: clients that never pause, the server saturated)")
    parser.add_argument("--client", default="browser",
                        help="a list of: browser: conditional GETs and the job JSON polled with ?since=, as the job page does; "
                             "naive: the API's whole job JSON every time, nothing conditional (the earlier client)")
    parser.add_argument("--client-processes", type=int, default=4,
                        help="processes the clients are spread over (threads in each), so no one GIL queues them all")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks" / "load.md")
    parser.add_argument("--tophub", type=Path, default=TOPHUB, help="TVM's TopHub CUDA log, for the leaderboards")
    options = parser.parse_args(argv)
    if not 1 <= options.clients <= MAX_CLIENTS or not 1 <= options.seconds <= MAX_SECONDS:
        raise SystemExit(f"--clients is 1..{MAX_CLIENTS}, --seconds 1..{MAX_SECONDS}")
    if not 1 <= options.client_processes <= 16:
        raise SystemExit("--client-processes is 1..16")
    database_url = os.environ.get("DATABASE_URL", "")
    if not database_url.startswith(("postgres://", "postgresql://")):
        raise SystemExit("set DATABASE_URL to a PostgreSQL database whose name contains 'bench'")
    redis_url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    if urlsplit(redis_url).hostname not in ("127.0.0.1", "localhost"):
        raise SystemExit("the load benchmark runs on loopback only: REDIS_URL must be 127.0.0.1")

    servers = [server_kind(text) for text in options.servers.split(",")]
    clients = [name.strip() for name in options.client.split(",")]
    if not clients or set(clients) - {"browser", "naive"}:
        raise SystemExit("--client is a list of browser and naive")
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
        for client in clients:
            for kind, sizes in servers:
                print(f"{server_label(kind, sizes)}: {options.clients} {client} clients pausing {think_ms} ms, "
                      f"for {options.seconds:.0f} s ...", flush=True)
                rows.append(run_phase(kind, sizes, think_ms, client, env, setup, options, log_dir).row(options.trials))

    from tunerweb.up import web_server_sizes

    workers, threads = web_server_sizes()
    commit = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=7"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    report = "\n".join([
        "# Web server under load: gunicorn against the development server",
        "",
        f"{datetime.date.today()}, commit {commit}, {platform.node()}: {os.cpu_count()} CPU cores, "
        f"Python {platform.python_version()}, PostgreSQL and Redis on 127.0.0.1. Command:",
        "",
        "    DATABASE_URL=postgres://postgres@127.0.0.1:5432/<name>_bench REDIS_URL=redis://127.0.0.1:6379/<db> \\",
        f"        .venv/bin/python -m benchmarks.load --servers '{options.servers}' --clients {options.clients} --seconds {options.seconds:.0f} "
        f"--trials {options.trials} --think-ms {options.think_ms} --client {options.client} "
        f"--client-processes {options.client_processes}",
        "",
        f"{options.clients} concurrent clients for {options.seconds:.0f} s, each a keep-alive session asking in turn for a "
        "leaderboard page (TopHub's C12 workload), the job's page and the job's JSON and pausing (the pause column) "
        f"after each answer, while a replay worker runs a job of {options.trials} trials (the load starts once its "
        "first batch is stored). Browser clients (the client column) ask as a browser on the pages does: each keeps the "
        "ETags it was answered with and asks again with If-None-Match (a 304 counts as an answer), and reads the job's "
        "JSON as the job page's script does, `/jobs/<id>/progress.json` whole as the page opens (a job page's time and KB "
        "are the page's and that JSON's, its 304s the page's), then with `?since=` what was stored after the last "
        "record it has; naive clients ask for the API's whole job JSON (`/api/jobs/<id>/`, every "
        "point) every time, nothing conditional (the benchmark's earlier client). "
        f"They run as {options.client_processes} processes of threads, their first requests spread over one pause, "
        "after each page was asked for twice (a server just started compiles its templates and fills its cache). "
        f"gunicorn's workers x threads are in the server column (`./tw up` runs {workers}x{threads} on this "
        "machine); the development server is `runserver --noreload` (`./tw up --dev-server`). The load generator, "
        "both servers, the worker, PostgreSQL and Redis share the machine's cores; the last column is the machine's "
        "1-minute load average as each phase ended (other work on the machine included).",
        "",
        table(rows),
        "",
        "Errors by kind: " + "; ".join(f"{r['server']}: {r['error_kinds'] or 'none'}" for r in rows),
        "",
        "By request (a phase's answers to each of the three; KB as read, a 304 none):",
        "",
        endpoint_table(rows),
        "",
        "CPU seconds spent while the load ran (from /proc; cores: of the load's seconds; the machine has "
        f"{os.cpu_count()}; the load generator includes this script's sampling):",
        "",
        cpu_table(rows),
        "",
    ])
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(report)
    (log_dir / "load.json").write_text(json.dumps(rows, indent=2))
    print("\n" + table(rows) + "\n\n" + endpoint_table(rows) + "\n\n" + cpu_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
