"""Tuned time against a baseline (cuDNN, cuBLAS, the untuned default config) on one GPU.

The tuned side is the GPU's best (`records.standings`: its confirmed median where it has
confirmations); the baseline's rounds are those of its confirmation where it has one.
Each speedup comes with its interval (the slowest against the fastest rounds and back),
warm and cold, and the number of interleaved rounds it rests on.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Iterable

from engine import Spread

from .code_status import CodeHashes
from .models import Baseline, Device, MeasurementRecord, Workload
from .standings import Ratio, Standing, device_best


def geomean(values: Iterable[float]) -> float | None:
    """Geometric mean, or None for no values: the one summary of a column of speedups."""
    values = list(values)
    return statistics.geometric_mean(values) if values else None


def baseline_spread(baseline: Baseline) -> Spread:
    """The baseline's warm rounds, or its one time where it was not confirmed."""
    return Spread.of(baseline.costs) or Spread(baseline.cost, baseline.cost, baseline.cost, 1)


def rounds_of(*counts: int | None) -> int | None:
    """Rounds a comparison rests on: the fewer of both sides', None unless both were confirmed."""
    return None if any(c is None for c in counts) else min(counts)


@dataclass(frozen=True)
class SpeedupRow:
    workload: Workload
    baseline: Baseline
    best: Standing

    @property
    def warm(self) -> Ratio:
        return Ratio.of(baseline_spread(self.baseline), self.best.spread)

    @property
    def cold(self) -> Ratio | None:
        return Ratio.of(Spread.of(self.baseline.cold_costs), self.best.cold)

    @property
    def speedup(self) -> float:
        """Baseline time over tuned time (medians): above 1 means tuning won."""
        return self.warm.value

    @property
    def rounds(self) -> int | None:
        return rounds_of(self.baseline.rounds, self.best.rounds)


@dataclass
class SpeedupTable:
    device: Device
    provider: str
    rows: list[SpeedupRow] = field(default_factory=list)
    without_baseline: list[Standing] = field(default_factory=list)
    without_tuned: list[Baseline] = field(default_factory=list)

    @property
    def provider_label(self) -> str:
        return Baseline.Provider(self.provider).label

    @property
    def geomean(self) -> float | None:
        return geomean(row.speedup for row in self.rows)

    @property
    def cold_geomean(self) -> float | None:
        colds = [row.cold for row in self.rows]
        return geomean(c.value for c in colds) if colds and all(colds) else None


def device_bests(device: Device, hashes: CodeHashes | None = None) -> dict[int, Standing]:
    """Workload id -> the GPU's best of it, for every workload it has records of."""
    hashes = hashes or CodeHashes()
    ids = MeasurementRecord.objects.filter(device=device).valid().order_by().values("workload_id").distinct()
    bests = {}
    for workload in Workload.objects.filter(pk__in=ids):
        best = device_best(workload, device, hashes)
        if best is not None:
            bests[workload.pk] = best
    return bests


def speedup_table(device: Device, provider: str) -> SpeedupTable:
    bests = device_bests(device)
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
