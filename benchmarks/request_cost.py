"""What one request of the load benchmark's mix costs, single-threaded, in process.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/tunerweb_cost_bench REDIS_URL=redis://127.0.0.1:6379/8 \\
        .venv/bin/python -m benchmarks.request_cost [--repeat 40] [--trials 800] [--profile leaderboard]

Sets the database up as `benchmarks.load` does (re-created: its name must contain "bench";
migrated; TVM's TopHub log imported), then runs an `--trials`-trial replay job of C12 to the
end in this process (the committed H200 recording, unpaced, its top 5 confirmed). Then asks
Django's test client, `--repeat` times each, for the three pages of the load mix: the
leaderboard of TopHub's C12 workload, the job's page and the job's JSON (`/api/jobs/<id>/`,
with an API token, as the benchmark does) and the job page's own poll (`/jobs/<id>/progress/`),
and prints the median and mean wall time, the CPU time and the database queries of each.
Then what a browser's opening the job page costs the server, all it asks (`VIEWS`).
Middleware, authentication and rendering are in; sockets and the WSGI server are not.
`--profile NAME` prints the cProfile of that request's loop instead (cumulative, top 40).
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import sys
import time
from pathlib import Path

from benchmarks.load import RECORDING, TOPHUB, recreate_database

PATHS = ("leaderboard", "job page", "job JSON (API)", "job poll", "job poll since", "leaderboard 304")
# What a browser asks to open the job page, request after request: its CPU is the measure of issue
# 14's load goal. The page holds its whole progress (before 2026-12-01's i14d, its script read
# progress.json after it: "job page", "job poll"). A poll of the open page is "job poll since".
VIEWS = {"job page view": ("job page",)}


def set_up(trials: int, reuse: bool, tophub=TOPHUB) -> dict:
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.urls import reverse

    from jobs.claims import claim
    from jobs.running import run_claimed
    from jobs.submission import check_request, submit_job
    from jobs.tokens import issue_token
    from jobs.worker import register, replay_config
    from records.models import Workload

    from jobs.models import Job

    if reuse:
        user = get_user_model().objects.get(username="costtest")
        job = Job.objects.get(owner=user)
    else:
        call_command("migrate", "--noinput", verbosity=0)
        call_command("import_records", str(tophub), verbosity=0)
        user = get_user_model().objects.create_user("costtest", password="cost-test-password-1")
        config = replay_config(RECORDING)
        worker = register(config)
        request = check_request(template="conv2d_nchw.cuda", preset="C12", tuner="random", n_trial=trials,
                                gpus=[config.queue], seed=1)
        job = submit_job(user, request).job
        run = job.runs.get()
        run_claimed(run.pk, claim(run.pk, worker), config)
    # The workload benchmarks.load shows.
    workload = Workload.objects.filter(task_name="conv2d_nchw_winograd.cuda").order_by("-id").first()
    return {"user": user, "token": issue_token(user), "paths": {
        "leaderboard": reverse("records:leaderboard", args=[workload.pk]),
        "job page": reverse("jobs:detail", args=[job.pk]),
        "job JSON (API)": f"/api/jobs/{job.pk}/",
        "job poll": reverse("jobs:progress", args=[job.pk]),
        # What the page asks once it has every point: nothing new since the run's last record.
        "job poll since": reverse("jobs:progress", args=[job.pk]) + "?since=" + ",".join(
            f"{run.pk}:{run.records().order_by('-pk').values_list('pk', flat=True).first()}" for run in job.runs.all()),
        "leaderboard 304": reverse("records:leaderboard", args=[workload.pk]),
    }}


def measure(client, paths: tuple[str, ...], headers: dict, repeat: int, conditional: bool = False) -> dict:
    """`paths` asked one after the other, `repeat` times; `conditional`: asked with the ETag of the
    first answer, as a browser asks again (a 304)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    ask = lambda: [client.get(path, headers=headers) for path in paths]  # noqa: E731
    for _ in range(3):  # warm: templates compiled, connection open
        first = ask()
        assert all(response.status_code == 200 for response in first), paths
    if conditional:
        headers = {**headers, "If-None-Match": first[0]["ETag"]}
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        ask()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    with CaptureQueriesContext(connection) as queries:
        responses = ask()
    return {"median_ms": statistics.median(walls) * 1000, "mean_ms": statistics.fmean(walls) * 1000,
            "cpu_ms": statistics.median(cpus) * 1000, "queries": len(queries),
            "kb": sum(len(response.content) for response in responses) / 1024}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=40)
    parser.add_argument("--trials", type=int, default=800)
    parser.add_argument("--profile", choices=[*PATHS, *VIEWS], default=None)
    parser.add_argument("--tophub", type=Path, default=TOPHUB, help="TVM's TopHub CUDA log, for the leaderboards")
    parser.add_argument("--reuse", action="store_true", help="the database as an earlier run left it (no set-up)")
    options = parser.parse_args(argv)
    if not os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://")):
        raise SystemExit("set DATABASE_URL to a PostgreSQL database whose name contains 'bench'")
    if not options.reuse:
        recreate_database(os.environ["DATABASE_URL"])
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tunerweb.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    django.setup()
    from django.conf import settings
    from django.test import Client

    settings.ALLOWED_HOSTS.append("testserver")  # the test client's host (not setup_test_environment: it slows rendering)
    setup = set_up(options.trials, options.reuse, options.tophub)
    client = Client()
    client.force_login(setup["user"])
    headers = {"Authorization": f"Token {setup['token']}"}
    rows = {name: (setup["paths"][name],) for name in PATHS}
    rows.update({view: tuple(setup["paths"][name] for name in names) for view, names in VIEWS.items()})
    if options.profile:
        profiler = cProfile.Profile()
        profiler.runcall(measure, client, rows[options.profile], headers, options.repeat, options.profile.endswith("304"))
        pstats.Stats(profiler).sort_stats(os.environ.get("SORT", "cumulative")).print_stats(40)
        return 0
    print("| request | median ms | mean ms | CPU ms | queries | KB |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, paths in rows.items():
        row = measure(client, paths, headers, options.repeat, name.endswith("304"))
        print(f"| {name} | {row['median_ms']:.1f} | {row['mean_ms']:.1f} | {row['cpu_ms']:.1f} | {row['queries']} "
              f"| {row['kb']:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
