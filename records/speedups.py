"""Tuned time against a baseline (cuDNN, cuBLAS, the untuned default config) on one GPU."""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Iterable

from .models import Baseline, Device, MeasurementRecord, Workload


def geomean(values: Iterable[float]) -> float | None:
    """Geometric mean, or None for no values: the one summary of a column of speedups."""
    values = list(values)
    return statistics.geometric_mean(values) if values else None


@dataclass(frozen=True)
class SpeedupRow:
    workload: Workload
    baseline: Baseline
    best: MeasurementRecord

    @property
    def speedup(self) -> float:
        """Baseline time over tuned time: above 1 means tuning won."""
        return self.baseline.cost / self.best.mean_cost


@dataclass
class SpeedupTable:
    device: Device
    provider: str
    rows: list[SpeedupRow] = field(default_factory=list)
    without_baseline: list[MeasurementRecord] = field(default_factory=list)
    without_tuned: list[Baseline] = field(default_factory=list)

    @property
    def provider_label(self) -> str:
        return Baseline.Provider(self.provider).label

    @property
    def geomean(self) -> float | None:
        return geomean(row.speedup for row in self.rows)


def speedup_table(device: Device, provider: str) -> SpeedupTable:
    bests = {r.workload_id: r for r in MeasurementRecord.objects.filter(device=device).best_per_gpu()}
    baselines = {
        b.workload_id: b
        for b in Baseline.objects.filter(device=device, provider=provider).select_related("workload", "device")
    }
    table = SpeedupTable(device=device, provider=provider)
    for workload_id, best in sorted(bests.items(), key=lambda item: (item[1].workload.task_name, item[0])):
        if workload_id in baselines:
            table.rows.append(SpeedupRow(workload=best.workload, baseline=baselines[workload_id], best=best))
        else:
            table.without_baseline.append(best)
    table.without_tuned = sorted(
        (b for workload_id, b in baselines.items() if workload_id not in bests),
        key=lambda b: (b.workload.task_name, b.workload_id),
    )
    return table
