"""A job's progress as plain data: the job page's JSON endpoint and the API both serve it."""
from __future__ import annotations

import statistics

from django.urls import reverse

from engine import ErrorNo

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


def trial_points(run: JobRun) -> dict:
    """Every stored trial of the run, column by column in trial order: the job plot's data.
    A failed trial has no cost; `error` is its error number (0 for none)."""
    rows = list(run.records().values_list("pk", "config_index", "mean_cost", "gflops", "error_no"))
    columns = ("record", "config_index", "cost", "gflops", "error")
    return {name: [row[i] for row in rows] for i, name in enumerate(columns)}


def run_progress(run: JobRun, trial_rows: int = TRIAL_ROWS) -> dict:
    best = run.best_record
    rival = leaderboard_best_for(run)
    trials = list(run.records().order_by("-id")[:trial_rows])
    summary = run_summary(run)
    confirmations = confirmation_summary(run)
    first_number = summary["trials_done"] - len(trials) + 1
    return {
        **summary,
        "best_record": best.pk if best else None,
        "best_record_url": reverse("records:record_detail", args=[best.pk]) if best else None,
        "best_entity": best.entity if best else None,
        "failures": [{"kind": kind, "count": count} for kind, count in run.failure_counts()],
        "settled": run.settled,
        "convergence": run.convergence(),
        "points": trial_points(run),
        "trials": [
            {
                "number": first_number + len(trials) - 1 - i, "record": r.pk, "config_index": r.config_index,
                "record_url": reverse("records:record_detail", args=[r.pk]),
                "mean_cost": r.mean_cost, "gflops": r.gflops, "error": r.error.label if r.error_no else "",
                "error_msg": r.error_msg,
            }
            for i, r in enumerate(trials)
        ],
        "worker": str(run.worker) if run.worker else None,
        "waiting_for_worker": run.waiting_for_worker(),
        "attempts": run.attempts,
        "started_at": _time(run.started_at),
        "finished_at": _time(run.finished_at),
        "diff_url": (
            reverse("records:diff") + f"?a={best.pk}&b={rival.pk}" if best and rival else None
        ),
        "download_url": reverse("records:download_best") + f"?batch={run.batch_id}" if best else None,
        "knobs_url": reverse("records:knobs", args=[run.job.workload_id]) + f"?batch={run.batch_id}" if best else None,
        "confirmations": confirmations,
        "confirmed_best": confirmed_best(confirmations),
    }


def confirmation_summary(run: JobRun) -> list[dict]:
    """Each confirmed config and baseline of the run: median, min and max of its rounds, warm and cold."""
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
    baselines = run.job.workload.baselines.filter(device=run.device, batch_id=run.confirmation_batch_id)
    for baseline in baselines if run.confirmation_batch_id else []:
        if baseline.provider == "default-config":
            continue
        costs = sorted(baseline.costs)
        rows[baseline.provider] = {
            "role": "vendor", "provider": baseline.provider, "note": baseline.note,
            "warm": {"median": baseline.cost, "min": costs[0], "max": costs[-1], "n": len(costs)} if costs else None,
            "cold": {"median": baseline.cold_cost, "n": len(baseline.cold_costs)} if baseline.cold_costs else None,
        }
    return list(rows.values())


def confirmed_best(confirmations: list[dict]) -> dict | None:
    """The run's best by its confirmed warm median (what the run's best is, where confirmed)."""
    confirmed = [row for row in confirmations if row["role"] != "vendor" and row.get("warm")]
    return min(confirmed, key=lambda row: row["warm"]["median"]) if confirmed else None


def job_summary(job: Job, runs=None) -> dict:
    """A job and its runs' headline figures, for lists; `job_progress` has everything."""
    runs = job.runs.with_figures() if runs is None else runs
    return {
        "id": job.pk,
        "state": job.state,
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


def job_progress(job: Job) -> dict:
    """Everything the job page shows. `settled` turns true once no worker will store another
    trial (a cancelled run's worker still stores the batch it was measuring): the page polls until then."""
    runs = job.runs.with_figures().select_related("worker", "job__workload")
    progress = [run_progress(run) for run in runs]
    return {
        **job_summary(job, runs), "runs": progress,
        "settled": all(run["settled"] for run in progress),
        "error_kinds": {int(e): e.label for e in ErrorNo},
        "record_url_template": reverse("records:record_detail", args=[0]),
        "record_api_template": reverse("api-record", args=[0]),
    }
