"""A network job's progress as plain data: per task, and the network's estimated
end-to-end time (sum of best time x occurrences) against the vendor library's, over time.

The vendor time of a task is its cuDNN or cuBLAS baseline on the GPU model (the
faster, where both exist); a replay device (`h200-replay`) reads the baselines of the
GPU its recording was made on (`h200`). The vendor's network time is given only when
every task has one; so is ours, once every task has a valid config.
"""
from __future__ import annotations

from django.urls import reverse

from records.models import Baseline, Device, MeasurementRecord

from .models import Job, JobRun
from .progress import job_summary, run_summary
from .worker import REPLAY_SUFFIX

VENDORS = (Baseline.Provider.CUDNN, Baseline.Provider.CUBLAS)
TIMELINE_POINTS = 200


def vendor_costs(workload_ids: list[int], device: Device) -> dict[int, float]:
    """Workload id -> the vendor library's seconds on `device` (or the GPU it replays)."""
    models = [device.model]
    if device.is_replay and device.model.endswith(REPLAY_SUFFIX):
        models.append(device.model[: -len(REPLAY_SUFFIX)])
    found: dict[int, float] = {}
    # The device's own baselines first: they win over the replayed GPU's.
    for model in reversed(models):
        rows = Baseline.objects.filter(workload_id__in=workload_ids, device__model=model, provider__in=VENDORS)
        mine: dict[int, float] = {}
        for workload_id, cost in rows.values_list("workload_id", "cost"):
            mine[workload_id] = min(cost, mine.get(workload_id, cost))
        found.update(mine)
    return found


def estimated_timeline(runs: list[JobRun]) -> list[dict]:
    """The network's estimated time after each stored trial, once every task has a best:
    [{trials, seconds (since the first trial), estimate}], thinned to TIMELINE_POINTS."""
    weights = {run.batch_id: run.task.weight for run in runs if run.batch_id}
    if len(weights) < len(runs):
        return []
    rows = MeasurementRecord.objects.filter(batch_id__in=weights).order_by("id").values_list(
        "batch_id", "mean_cost", "timestamp"
    )
    bests: dict[int, float] = {}
    points, start, trials, stamp = [], None, 0, 0.0
    for trials, (batch_id, cost, stamp) in enumerate(rows, start=1):
        start = stamp if start is None else min(start, stamp)
        if cost is not None and cost < bests.get(batch_id, float("inf")):
            bests[batch_id] = cost
            if len(bests) == len(weights):
                estimate = sum(weights[b] * best for b, best in bests.items())
                points.append({"trials": trials, "seconds": stamp - start, "estimate": estimate})
    if points and points[-1]["trials"] < trials:  # the estimate holds to the latest trial
        points.append({"trials": trials, "seconds": stamp - start, "estimate": points[-1]["estimate"]})
    if len(points) > TIMELINE_POINTS:
        step = len(points) / TIMELINE_POINTS
        points = [points[int(i * step)] for i in range(TIMELINE_POINTS - 1)] + [points[-1]]
    return points


def task_row(run: JobRun, vendor: float | None) -> dict:
    weight = run.task.weight
    best = run.best_cost
    return {
        **run_summary(run),
        "label": run.task.label,
        "weight": weight,
        "task_name": run.task.workload.task_name,
        "workload": run.task.workload_id,
        "shape": run.task.workload.shape_summary,
        "leaderboard_url": reverse("records:leaderboard", args=[run.task.workload_id]),
        "exhausted": run.exhausted,
        "worker": str(run.worker) if run.worker else None,
        "attempts": run.attempts,
        "vendor_cost": vendor,
        "speedup": vendor / best if vendor and best else None,
        "network_share": None,  # filled in by gpu_progress once the total is known
        "weighted_cost": weight * best if best else None,
    }


def gpu_progress(device: Device, runs: list[JobRun]) -> dict:
    """The network job on one GPU model: its tasks, and the network's estimate and the vendor's."""
    vendors = vendor_costs([run.task.workload_id for run in runs], device)
    tasks = [task_row(run, vendors.get(run.task.workload_id)) for run in runs]
    estimate = None
    if all(row["weighted_cost"] for row in tasks):
        estimate = sum(row["weighted_cost"] for row in tasks)
        for row in tasks:
            row["network_share"] = row["weighted_cost"] / estimate
    vendor = None
    if all(row["vendor_cost"] for row in tasks):
        vendor = sum(row["weight"] * row["vendor_cost"] for row in tasks)
    return {
        "gpu": device.model,
        "replay": device.is_replay,
        "trials_done": sum(row["trials_done"] for row in tasks),
        "trials_allotted": sum(row["trials_planned"] for row in tasks),
        "tasks": tasks,
        "estimate": estimate,
        "vendor_estimate": vendor,
        "vendor_missing": [row["label"] for row in tasks if not row["vendor_cost"]],
        "speedup": vendor / estimate if vendor and estimate else None,
        "timeline": estimated_timeline(runs),
    }


def network_progress(job: Job) -> dict:
    runs = list(
        job.runs.with_figures().select_related("worker", "task__workload", "job").order_by("device__model", "task__position")
    )
    by_device: dict[Device, list[JobRun]] = {}
    for run in runs:
        by_device.setdefault(run.device, []).append(run)
    summary = job_summary(job, runs)
    del summary["runs"]
    return {
        **summary,
        "kind": job.kind,
        "network": job.preset,
        "allocation": job.allocation,
        "round_trials": job.round_trials,
        "download_url": reverse("jobs:network_best_log", args=[job.pk]),
        "api_download_url": reverse("api-network-job-best-log", args=[job.pk]),
        "gpus": [gpu_progress(device, device_runs) for device, device_runs in by_device.items()],
    }
