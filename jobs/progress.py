"""A job's progress as plain data: the job page's JSON endpoint and the API both serve it."""
from __future__ import annotations

import re
import statistics
from bisect import bisect_right
from collections import Counter

from django.urls import reverse

from engine import ErrorNo
from records.versions import viewer_key, workload_generation, workload_records_version
from tunerweb.cache import cached

from .models import Job, JobRun

TRIAL_ROWS = 50


def _time(value):
    return value.isoformat() if value else None


def leaderboard_best_for(run: JobRun):
    """The record to diff the run's best against: the leaderboard's best of the
    workload on that GPU, or, when that is the run's own, the best on any other GPU."""
    best = run.best_record
    if best is None:
        return None
    readable = run.workload.records.visible_to(run.job.owner)  # who may see the job sees what its owner may
    board = readable.filter(device=run.device).best()
    if board is not None and board.pk != best.pk:
        return board
    return readable.exclude(device=run.device).best()


def _rival_pk(run: JobRun) -> int | None:
    """`leaderboard_best_for`'s id, worked out once per state of the workload's records outside
    the run's own batch, and of the run's best: a running job stores a batch every second or so,
    and none of its records but its best can be the rival (one that beat the best would be it)."""
    others = workload_records_version(run.workload.pk, excluding_batch=run.batch_id)
    key = f"rival:{run.workload.pk}:{others}:{run.batch_id}:{run.device_id}:{run.best_record_id}:{viewer_key(run.job.owner)}"
    return cached(key, lambda: getattr(leaderboard_best_for(run), "pk", None))


def run_summary(run: JobRun) -> dict:
    """A run's state and headline figures: what a list of jobs shows. Read from runs
    fetched `with_figures()`, it makes no query of its own."""
    return {
        "id": run.pk,
        "gpu": run.device.model,
        "replay": run.device.is_replay,
        "state": run.state,
        "message": run.message,
        "trials_done": run.trials_done,
        "trials_planned": run.trials_planned,
        "best_cost": run.best_cost,
        "best_gflops": run.best_gflops,
    }


POINT_COLUMNS = ("record", "config_index", "cost", "gflops", "error")


def stored_trials(run: JobRun, trial_rows: int = TRIAL_ROWS) -> dict:
    """What the job page shows of the run's stored trials: every trial as a point of the plot
    (column by column in trial order; a failed trial has no cost, `error` is its error number,
    0 for none), the best GFLOPS after each, failures by kind and the latest `trial_rows`.
    One query, once per state of the run's records (fetched `with_figures()`): a running
    job's page is asked for far more often than a batch is stored."""
    if not run.trials_done:
        return _stored_trials_of(run, trial_rows)
    key = (f"run-trials:{run.pk}:{run.batch_id}:{run.trials_done}:{run.last_record_id}:"
           f"{workload_generation(run.workload.pk)}:{trial_rows}")
    return cached(key, lambda: _stored_trials_of(run, trial_rows))


def _stored_trials_of(run: JobRun, trial_rows: int) -> dict:
    rows = list(run.records().values_list("pk", "config_index", "mean_cost", "gflops", "error_no", "error_msg"))
    convergence, best = [], None
    for number, row in enumerate(rows, start=1):
        if row[3] is not None and (best is None or row[3] > best):
            best = row[3]
        convergence.append((number, best))
    failures = Counter(row[4] for row in rows if row[4] != ErrorNo.NO_ERROR)
    record_url = reverse("records:record_detail", args=[0]).removesuffix("0/")
    latest = rows[::-1][:trial_rows]
    return {
        "points": {name: [row[i] for row in rows] for i, name in enumerate(POINT_COLUMNS)},
        "convergence": convergence,
        "failures": [{"kind": ErrorNo(error).label, "count": n}
                     for error, n in sorted(failures.items(), key=lambda item: (-item[1], item[0]))],
        "trials": [
            {"number": len(rows) - i, "record": pk, "config_index": config_index, "record_url": f"{record_url}{pk}/",
             "mean_cost": cost, "gflops": gflops, "error": ErrorNo(error).label if error else "", "error_msg": message}
            for i, (pk, config_index, cost, gflops, error, message) in enumerate(latest)
        ],
    }


MAX_SINCE_RUNS = 1000
_SINCE_PART = re.compile(r"(\d{1,18}):(\d{1,18})", re.ASCII)


def parse_since(text: str) -> dict[int, int]:
    """`?since=<run id>:<record id>[,...]`, the last record the page has of each run; a
    ValueError says what is wrong. (Per run: record ids grow in each run's trial order,
    but two runs' batches may commit in either order.)"""
    since: dict[int, int] = {}
    for part in filter(None, text.split(",")[:MAX_SINCE_RUNS + 1]):
        found = _SINCE_PART.fullmatch(part)
        if found is None:
            raise ValueError(f"since: {part[:40]!r} is not <run id>:<record id>")
        since[int(found[1])] = int(found[2])
    if len(since) > MAX_SINCE_RUNS:
        raise ValueError(f"since: at most {MAX_SINCE_RUNS} runs")
    return since


def _after(run: dict, since: int | None) -> dict:
    """A run's progress with only the points (and convergence) and latest trials of records stored
    after record `since`: what a page that has the rest adds to it."""
    if since is None:
        return run
    start = bisect_right(run["points"]["record"], since)  # a run's record ids grow in trial order
    return {**run, "points_after": since, "convergence": run["convergence"][start:],
            "points": {name: column[start:] for name, column in run["points"].items()},
            "trials": [trial for trial in run["trials"] if trial["record"] > since]}


def progress_since(progress: dict, since: dict[int, int]) -> dict:
    """`job_progress`'s answer less what a page has: `since` maps a run's id to the last record id it has of it."""
    return {**progress, "runs": [_after(run, since.get(run["id"])) for run in progress["runs"]]}


def run_progress(run: JobRun, trial_rows: int = TRIAL_ROWS) -> dict:
    best = run.best_record
    rival = _rival_pk(run) if best else None
    summary = run_summary(run)
    confirmations = settled_confirmations(run)
    return {
        **summary,
        "best_record": best.pk if best else None,
        "best_record_url": reverse("records:record_detail", args=[best.pk]) if best else None,
        "best_entity": best.entity if best else None,
        "settled": run.settled,
        **stored_trials(run, trial_rows),
        "worker": str(run.worker) if run.worker else None,
        "waiting_for_worker": run.waiting_for_worker(),
        "attempts": run.attempts,
        "started_at": _time(run.started_at),
        "finished_at": _time(run.finished_at),
        "diff_url": (
            reverse("records:diff") + f"?a={best.pk}&b={rival}" if best and rival else None
        ),
        "download_url": reverse("records:download_best") + f"?batch={run.batch_id}" if best else None,
        "knobs_url": reverse("records:knobs", args=[run.job.workload_id]) + f"?batch={run.batch_id}" if best else None,
        "confirmations": confirmations,
        "confirmed_best": confirmed_best(confirmations),
    }


def settled_confirmations(run: JobRun) -> list[dict]:
    """`confirmation_summary`, its configs' rows read once when the run has settled (its worker
    confirms before the run ends, and nothing adds to them after); the vendor rows each time,
    as a faster process's confirmation may replace a baseline later."""
    if not (run.settled and run.confirmation_batch_id):
        return confirmation_summary(run)
    configs = cached(f"run-confirmations:{run.pk}:{run.confirmation_batch_id}", lambda: confirmed_configs(run))
    return configs + confirmed_vendors(run)


def confirmation_summary(run: JobRun) -> list[dict]:
    """Each confirmed config and baseline of the run: median, min and max of its rounds, warm and cold."""
    return confirmed_configs(run) + confirmed_vendors(run)


def confirmed_configs(run: JobRun) -> list[dict]:
    rows: dict[str, dict] = {}
    for record in run.confirmations():
        role = record.environment.get("role", "tuned")
        key = f"{role}:{record.config_index}"
        row = rows.setdefault(key, {"role": role, "config_index": record.config_index, "record": record.pk,
                                    "code_hash": record.code_hash, "error": record.error_msg})
        if record.ok:
            costs = sorted(record.costs)
            row[record.cache] = {"median": statistics.median(costs), "min": costs[0], "max": costs[-1],
                                 "n": len(costs)}
    return list(rows.values())


def confirmed_vendors(run: JobRun) -> list[dict]:
    """The GPU's confirmed vendor baselines, this run's or a faster process's before it (a stored
    baseline keeps the fastest confirmation of its library build: records.confirmations)."""
    if not run.confirmation_batch_id:
        return []
    rows = []
    for baseline in run.job.workload.baselines.filter(device=run.device, rounds__isnull=False):
        if baseline.provider == "default-config":
            continue
        costs = sorted(baseline.costs)
        rows.append({
            "role": "vendor", "provider": baseline.provider, "note": baseline.note,
            "warm": {"median": baseline.cost, "min": costs[0], "max": costs[-1], "n": len(costs)} if costs else None,
            "cold": {"median": baseline.cold_cost, "n": len(baseline.cold_costs)} if baseline.cold_costs else None,
        })
    return rows


def confirmed_best(confirmations: list[dict]) -> dict | None:
    """The run's best by its confirmed warm median (what the run's best is, where confirmed)."""
    confirmed = [row for row in confirmations if row["role"] != "vendor" and row.get("warm")]
    return min(confirmed, key=lambda row: row["warm"]["median"]) if confirmed else None


def job_summary(job: Job, runs=None) -> dict:
    """A job and its runs' headline figures, for lists; `job_progress` has everything."""
    runs = job.runs.with_figures() if runs is None else runs
    return {
        "id": job.pk,
        "state": Job.state_of(runs),
        "owner": job.owner.username,
        "task_name": job.workload.task_name if job.workload_id else None,
        "args": job.workload.args if job.workload_id else None,
        "workload": job.workload_id,
        "kind": job.kind,
        "source": job.source_label,
        "top_k": job.top_k,
        "rounds": job.rounds,
        "preset": job.preset,
        "tuner": job.tuner,
        "n_trial": job.n_trial,
        "early_stopping": job.early_stopping,
        "private": job.private,
        "created_at": _time(job.created_at),
        "url": job.get_absolute_url(),
        "runs": [run_summary(run) for run in runs],
    }


def progress_runs(job: Job) -> list[JobRun]:
    """The job's runs as `job_progress` reads them, in one query."""
    # Fetched through `job.runs`, each run's `job` is `job` itself (with the workload and owner
    # the caller selected): joining them again would only make the query slower to build.
    return list(job.runs.with_figures().select_related("worker"))


def job_progress(job: Job, runs: list[JobRun] | None = None) -> dict:
    """Everything the job page's script shows. `settled` turns true once no worker will store another
    trial (a cancelled run's worker still stores the batch it was measuring): the page polls until then.
    `runs`, `progress_runs(job)` where the caller has them; `progress_since` leaves out what a page has."""
    runs = progress_runs(job) if runs is None else runs
    progress = [run_progress(run) for run in runs]
    return {
        **job_summary(job, runs), "runs": progress,
        "settled": all(run["settled"] for run in progress),
        "trial_rows": TRIAL_ROWS,  # how many of the latest trials a page keeps, adding a poll's to them
        "error_kinds": {int(e): e.label for e in ErrorNo},
        "record_url_template": reverse("records:record_detail", args=[0]),
        "record_api_template": reverse("api-record", args=[0]),
    }


def job_page(job: Job, order=lambda rows: rows) -> dict:
    """What the job page itself shows (its script reads the rest from `job_progress`): the job's
    state and each run's GPU, what it waits for and its confirmations, in `order`."""
    runs = list(job.runs.select_related("device"))
    return {"state": Job.state_of(runs), "runs": [
        {"gpu": run.device.model, "waiting_for_worker": run.waiting_for_worker(),
         "confirmations": order(settled_confirmations(run))} for run in runs
    ]}
