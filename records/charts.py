"""What the speedup, compare-GPUs and roofline charts draw: plain data for `json_script`,
built from the same tables the pages show (static/charts.js draws them with uPlot)."""
from __future__ import annotations

from functools import lru_cache

from django.urls import reverse

from engine import PRESETS, canonical_args

from .compare import DeviceComparison, WorkloadComparison
from .roofline import Roofline
from .speedups import SpeedupTable


@lru_cache(maxsize=1)
def _preset_names() -> dict[tuple[str, str], str]:
    return {(p.task_name, canonical_args(p.args)): name for name, p in PRESETS.items()}


def short_label(workload) -> str:
    """A bar's label: the benchmark preset's name (C12, D3, G1) where the workload is one."""
    return _preset_names().get((workload.task_name, workload.args_json)) or f"#{workload.pk}"


def _workload_facts(workload) -> dict:
    return {"label": short_label(workload), "task": workload.task_name, "shape": workload.shape_summary,
            "url": reverse("records:leaderboard", args=[workload.pk])}


def _speedup_bars(y_label: str, geomean: float | None, rows, detail) -> dict:
    """A bar per row's workload at its speedup, its whisker the speedup's interval (a single
    measurement on each side has none to speak of: low = high); `detail(row)` is the
    tooltip's line of times."""
    return {
        "y_label": y_label, "geomean": geomean,
        "bars": [{**_workload_facts(row.workload), "value": row.speedup, "low": row.warm.low, "high": row.warm.high,
                  "detail": detail(row)} for row in rows],
    }


def speedups_chart(table: SpeedupTable) -> dict:
    vendor = table.provider_label
    return _speedup_bars(f"speedup over {vendor}", table.geomean, table.rows, lambda row: (
        f"{vendor} {row.baseline.cost * 1e6:.2f} µs, tuned {row.best.median_cost * 1e6:.2f} µs"))


def devices_chart(comparison: DeviceComparison) -> dict:
    a, b = comparison.device_a.model, comparison.device_b.model
    return _speedup_bars(f"speedup of {b} over {a}", comparison.geomean, comparison.rows, lambda row: (
        f"{a} {row.best_a.median_cost * 1e6:.2f} µs, {b} {row.best_b.median_cost * 1e6:.2f} µs"))


def workload_chart(comparison: WorkloadComparison) -> dict:
    """One workload's best on each GPU: a bar of GFLOPS per GPU (the table has the times)."""
    facts = _workload_facts(comparison.workload)
    return {
        "y_label": "best GFLOPS", "unit": " GFLOPS", "geomean": None,
        "bars": [
            {**facts, "label": str(best.device), "value": best.gflops,
             # the fastest and slowest measurements of the best config, as GFLOPS
             "low": comparison.workload.gflops(best.max_cost), "high": comparison.workload.gflops(best.min_cost),
             "detail": f"{best.median_cost * 1e6:.2f} µs, record #{best.pk}"}
            for best in comparison.bests if best.gflops is not None
        ],
    }


def roofline_chart(plot: Roofline) -> dict:
    return {
        "device": str(plot.device),
        "peak_gflops": plot.peak.gflops if plot.peak else None,
        "bandwidth": plot.peak.bandwidth if plot.peak else None,
        "points": [
            {**_workload_facts(point.record.workload), "intensity": point.intensity, "gflops": point.gflops,
             "record_url": reverse("records:record_detail", args=[point.record.pk])}
            for point in plot.points
        ],
    }
