"""Best configs across GPUs: one workload on every GPU, or two GPUs over every workload."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .code_status import CodeHashes
from .diffs import knob_names, knobs_as_tuned
from .models import Device, Workload
from .speedups import device_bests, geomean, rounds_of
from .standings import Ratio, Standing, workload_bests


@dataclass(frozen=True)
class KnobAcross:
    name: str
    values: list[Any]  # one per best, None where that config has no such knob

    @property
    def differs(self) -> bool:
        return any(value != self.values[0] for value in self.values[1:])


@dataclass
class WorkloadComparison:
    workload: Workload
    bests: list[Standing]
    knobs: list[KnobAcross]

    @property
    def devices(self) -> list[Device]:
        return [record.device for record in self.bests]


def compare_workload(workload: Workload) -> WorkloadComparison:
    """Each GPU's best config of `workload`, knob rows aligned across GPUs."""
    bests = workload_bests(workload)
    defaults = workload.knob_defaults()
    tuned = [knobs_as_tuned(best.record, defaults) for best in bests]
    knobs = [KnobAcross(name, [each.get(name) for each in tuned]) for name in knob_names(*tuned)]
    return WorkloadComparison(workload=workload, bests=bests, knobs=knobs)


@dataclass(frozen=True)
class HeadToHeadRow:
    workload: Workload
    best_a: Standing
    best_b: Standing

    @property
    def warm(self) -> Ratio:
        return Ratio.of(self.best_a.spread, self.best_b.spread)

    @property
    def cold(self) -> Ratio | None:
        return Ratio.of(self.best_a.cold, self.best_b.cold)

    @property
    def speedup(self) -> float:
        """How many times faster GPU b runs its best than GPU a: median time a / median time b."""
        return self.warm.value

    @property
    def rounds(self) -> int | None:
        return rounds_of(self.best_a.rounds, self.best_b.rounds)


@dataclass
class DeviceComparison:
    device_a: Device
    device_b: Device
    rows: list[HeadToHeadRow]

    @property
    def geomean(self) -> float | None:
        return geomean(row.speedup for row in self.rows)


def compare_devices(device_a: Device, device_b: Device) -> DeviceComparison:
    """Every workload both GPUs have a best for, with b's speedup over a."""
    hashes = CodeHashes()
    bests_a, bests_b = device_bests(device_a, hashes), device_bests(device_b, hashes)
    rows = [
        HeadToHeadRow(workload=best_a.workload, best_a=best_a, best_b=bests_b[workload_id])
        for workload_id, best_a in bests_a.items()
        if workload_id in bests_b
    ]
    rows.sort(key=lambda row: (row.workload.task_name, row.workload.pk))
    return DeviceComparison(device_a=device_a, device_b=device_b, rows=rows)


@dataclass
class RecordsComparison:
    """Any records side by side, knob by knob, each timed against the first (MLflow's compare)."""

    records: list[MeasurementRecord]
    knobs: list[KnobAcross]

    @property
    def same_workload(self) -> bool:
        return len({record.workload_id for record in self.records}) == 1

    def ratios(self) -> list[float | None]:
        """Each record's time over the first's (below 1: faster than the first); None where
        either failed or the workloads differ (their times do not measure the same work)."""
        first = self.records[0].mean_cost
        return [
            record.mean_cost / first
            if first and record.mean_cost is not None and record.workload_id == self.records[0].workload_id else None
            for record in self.records
        ]

    @property
    def columns(self) -> list[tuple[MeasurementRecord, float | None]]:
        return list(zip(self.records, self.ratios()))

    @property
    def differing_count(self) -> int:
        return sum(knob.differs for knob in self.knobs)

    def shown_knobs(self, only_differences: bool) -> list[KnobAcross]:
        return [knob for knob in self.knobs if knob.differs] if only_differences else self.knobs


def compare_records(records: list[MeasurementRecord]) -> RecordsComparison:
    """`records` in the order given, their knobs aligned (normalised as a diff compares them)."""
    defaults: dict[int, dict] = {}
    tuned = []
    for record in records:
        if record.workload_id not in defaults:
            defaults[record.workload_id] = record.workload.knob_defaults()
        tuned.append(knobs_as_tuned(record, defaults[record.workload_id]))
    knobs = [KnobAcross(name, [each.get(name) for each in tuned]) for name in knob_names(*tuned)]
    return RecordsComparison(records=records, knobs=knobs)
