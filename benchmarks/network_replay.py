"""Wall time of one network job on 1, 2, 4 ... replay workers of one GPU model.

Each worker is a real Celery process (`manage.py run_worker --replay`) answering from the
twelve ResNet-18 layers' real H200 logs (docs/benchmarks/conv2d-h200-logs), taking `--pace`
seconds per config as a GPU takes to measure one. The same ResNet-18 network job (random
tuner, seed 1, the same budget and rounds) runs once per worker count; the speed-up is
the one-worker wall time over the N-worker one. Without a GPU this measures the job
system's share of the scale-out (claims, rounds, records, the per-round task set-up), not
the GPUs'; scripts/device/network_job.sh is the run on real GPUs.

    python benchmarks/network_replay.py --workers 1,2,4 --markdown docs/benchmarks/network-replay.md

Needs Redis (REDIS_URL's server; `--redis-db` picks the database, flushed first). The
database is DATABASE_URL's, else a fresh SQLite file in a temporary directory.
"""
from __future__ import annotations

import argparse
import gzip
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "docs" / "benchmarks" / "conv2d-h200-logs"
QUEUE = "h200-replay"
WORKER_ENV = {"TUNERWEB_WORKER_HEARTBEAT_SECONDS": "1", "TUNERWEB_WORKER_STALE_SECONDS": "6"}


def combined_recording(directory: Path) -> Path:
    path = directory / "resnet18_h200.log.gz"
    with gzip.open(path, "wb") as out:
        for layer in range(1, 13):
            out.write(gzip.decompress((LOGS / f"c{layer}.log.gz").read_bytes()))
    return path


def start_workers(count: int, recording: Path, pace: float, batch: int, log_dir: Path) -> list[subprocess.Popen]:
    env = {**os.environ, **WORKER_ENV, "TUNERWEB_JOB_BATCH_SIZE": str(batch)}
    procs = []
    for slot in range(count):
        log = open(log_dir / f"worker-{count}-{slot}.log", "wb")
        procs.append(subprocess.Popen(
            [sys.executable, "manage.py", "run_worker", "--replay", str(recording), "--pace", str(pace),
             "--slot", str(slot), "--loglevel", "WARNING"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        ))
    return procs


def stop_workers(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGQUIT)
    for proc in procs:
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def wait_until(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise SystemExit(f"timed out after {timeout} s waiting for {what}")


def run_once(count: int, args, recording: Path, log_dir: Path, user) -> dict:
    from django.db import close_old_connections

    from jobs.models import Job, JobRun, State, Worker
    from jobs.network import check_network_request, submit_network_job

    procs = start_workers(count, recording, args.pace, args.batch, log_dir)
    try:
        wait_until(lambda: Worker.objects.online().filter(queue=QUEUE).count() == count, 120, f"{count} workers online")
        request = check_network_request(network="resnet18", tuner="random", n_trial=args.budget,
                                        round_trials=args.round, gpus=[QUEUE], seed=1)
        start = time.monotonic()
        job = submit_network_job(user, request).job

        def finished():
            close_old_connections()
            return Job.objects.get(pk=job.pk).state not in (State.QUEUED, State.RUNNING)

        wait_until(finished, 1800, "the network job to finish")
        wall = time.monotonic() - start
        runs = JobRun.objects.filter(job=job).with_figures()
        return {
            "workers": count, "wall_s": wall, "state": Job.objects.get(pk=job.pk).state,
            "trials": sum(run.trials_done for run in runs), "rounds": sum(-(-run.trials_done // args.round) for run in runs),
            "workers_used": len({run.worker_id for run in runs}),
        }
    finally:
        stop_workers(procs)


def markdown(rows: list[dict], args) -> str:
    lines = [
        "# One network job on several replay workers",
        "",
        f"`python benchmarks/network_replay.py --workers {args.workers} --budget {args.budget} --round {args.round} "
        f"--pace {args.pace} --batch {args.batch}` on {platform.node()} ({os.cpu_count()} CPU cores), "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
        "",
        f"ResNet-18 C1–C12 as one network job: random tuner (seed 1), {args.budget} trials in rounds of {args.round}, "
        f"gradient allocation; each replay worker answers from the layers' real H200 logs taking {args.pace} s per "
        "config. Speed-up: the one-worker wall time over this one (the ideal is the worker count).",
        "",
        "| workers | wall s | speed-up | trials | rounds | workers that ran rounds | state |",
        "|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        speedup = rows[0]["wall_s"] / row["wall_s"]
        lines.append(f"| {row['workers']} | {row['wall_s']:.1f} | {speedup:.2f}× | {row['trials']} | {row['rounds']} "
                     f"| {row['workers_used']} | {row['state']} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,2,4", help="worker counts to run, comma-separated")
    parser.add_argument("--budget", type=int, default=512)
    parser.add_argument("--round", type=int, default=32)
    parser.add_argument("--pace", type=float, default=0.05, help="seconds per replayed config")
    parser.add_argument("--batch", type=int, default=8, help="configs per measured batch")
    parser.add_argument("--redis-db", type=int, default=13)
    parser.add_argument("--markdown", help="write the table here too")
    args = parser.parse_args(argv)

    tmp = Path(tempfile.mkdtemp(prefix="network-replay-"))
    redis = urlsplit(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
    os.environ["REDIS_URL"] = urlunsplit((redis.scheme, redis.netloc, f"/{args.redis_db}", "", ""))
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{tmp / 'db.sqlite3'}")
    os.environ["DJANGO_SETTINGS_MODULE"] = "tunerweb.settings"
    os.environ["TUNERWEB_VAR_DIR"] = str(tmp)
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, check=True)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    import redis as redis_client
    from django.contrib.auth import get_user_model

    redis_client.Redis.from_url(os.environ["REDIS_URL"]).flushdb()
    user, _ = get_user_model().objects.get_or_create(username="benchmark")
    recording = combined_recording(tmp)
    rows = []
    for count in (int(n) for n in args.workers.split(",")):
        rows.append(run_once(count, args, recording, tmp, user))
        print(rows[-1], flush=True)
    table = markdown(rows, args)
    print(table)
    if args.markdown:
        Path(args.markdown).write_text(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
