"""The sortable columns of each table, by the name `?sort=` uses: the whitelist `records.sorting`
checks a URL against. Querysets get database expressions; tables built in Python get functions."""
from __future__ import annotations

from .roofline import percent_of_peak_expression


def record_columns(peaks) -> dict:
    """The records table (the records page); `peaks` by device id."""
    return {
        "task": "workload__task_name", "gpu": "device__model", "index": "config_index",
        "time": "mean_cost", "gflops": "gflops",
        "peak": percent_of_peak_expression(peaks), "status": "error_no", "measured": "timestamp",
    }


DEVICE_COLUMNS = {
    "model": "model", "name": "name", "cc": "compute_capability", "sms": "sm_count", "memory": "memory_bytes",
    "records": "record_count", "workloads": "workload_count",
}

BATCH_COLUMNS = {
    "id": "id", "file": "file_name", "kind": "kind", "source": "source", "by": "created_by__username",
    "when": "created_at", "lines": "lines", "imported": "imported", "duplicates": "duplicates",
    "legacy": "legacy_skipped", "malformed": "malformed",
}

WORKLOAD_COLUMNS = {
    "task": "task_name", "shape": "args_json", "records": "record_count", "valid": "valid_count",
    "gpus": "gpu_count", "gflops": "best_gflops", "on": "best_gpu",
}

ROOFLINE_COLUMNS = {  # the roofline page's table: `roofline.RooflinePoint`s
    "task": lambda point: point.record.workload.task_name, "shape": lambda point: point.record.workload.args_json,
    "intensity": lambda point: point.intensity, "gflops": lambda point: point.gflops,
    "peak": lambda point: point.percent_of_peak,
}

TASK_COLUMNS = {  # the home page's tasks table: rows of `leaderboards.task_summaries`
    "task": lambda row: row["task_name"], "workloads": lambda row: row["workload_count"],
    "records": lambda row: row["record_count"], "gpus": lambda row: row["device_count"],
}

# A speedup table's columns after its times: the warm interval sorts by its low end.
_RATIO_COLUMNS = {
    "speedup": lambda row: row.speedup,
    "interval": lambda row: row.warm.low,
    "cold": lambda row: row.cold.value if row.cold else None,
    "cold_interval": lambda row: row.cold.low if row.cold else None,
    "rounds": lambda row: row.rounds,
}

SPEEDUP_COLUMNS = {
    "task": lambda row: row.workload.task_name,
    "shape": lambda row: row.workload.args_json,
    "baseline": lambda row: row.baseline.cost,
    "tuned": lambda row: row.best.median_cost,
    **_RATIO_COLUMNS,
}

HEAD_TO_HEAD_COLUMNS = {
    "task": lambda row: row.workload.task_name,
    "shape": lambda row: row.workload.args_json,
    "a": lambda row: row.best_a.median_cost,
    "b": lambda row: row.best_b.median_cost,
    **_RATIO_COLUMNS,
}


def _median_of(side: str):
    return lambda row: (row.get(side) or {}).get("median")


# Tables built in Python: functions of a row.
ENVIRONMENT_GROUP_COLUMNS = {
    "value": lambda group: group["value"] or "", "n": lambda group: group["n"],
    "fastest": lambda group: group["fastest"], "slowest": lambda group: group["slowest"],
}

IMPORT_PROBLEM_COLUMNS = {
    # A line number (AutoTVM files) sorts before an entry's key (Kernel Tuner caches), never against it.
    "where": lambda problem: (0, problem["line"], "") if "line" in problem else (1, 0, str(problem.get("entry", ""))),
    "reason": lambda problem: problem["reason"],
}

CONFIRMATION_COLUMNS = {
    "what": lambda row: row.get("provider") or f"{row['role']} {row.get('config_index')}",
    "warm": _median_of("warm"), "range": lambda row: (row.get("warm") or {}).get("min"),
    "cold": _median_of("cold"), "rounds": lambda row: (row.get("warm") or {}).get("n"),
}
