"""Best configs across GPUs: one workload on every GPU, or two GPUs over every workload."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .diffs import knob_names, knobs_as_tuned
from .leaderboards import workload_bests
from .models import Device, MeasurementRecord, Workload
from .speedups import geomean


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
    bests: list[MeasurementRecord]
    knobs: list[KnobAcross]

    @property
    def devices(self) -> list[Device]:
        return [record.device for record in self.bests]


def compare_workload(workload: Workload) -> WorkloadComparison:
    """Each GPU's best config of `workload`, knob rows aligned across GPUs."""
    bests = workload_bests(workload)
    defaults = workload.knob_defaults()
    tuned = [knobs_as_tuned(best, defaults) for best in bests]
    knobs = [KnobAcross(name, [each.get(name) for each in tuned]) for name in knob_names(*tuned)]
    return WorkloadComparison(workload=workload, bests=bests, knobs=knobs)


@dataclass(frozen=True)
class HeadToHeadRow:
    workload: Workload
    best_a: MeasurementRecord
    best_b: MeasurementRecord

    @property
    def speedup(self) -> float:
        """How many times faster GPU b runs its best than GPU a: time a / time b."""
        return self.best_a.mean_cost / self.best_b.mean_cost


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
    bests = MeasurementRecord.objects.filter(device__in=[device_a, device_b]).best_per_gpu()
    by_workload: dict[int, dict[int, MeasurementRecord]] = {}
    for record in bests:
        by_workload.setdefault(record.workload_id, {})[record.device_id] = record
    rows = [
        HeadToHeadRow(workload=pair[device_a.pk].workload, best_a=pair[device_a.pk], best_b=pair[device_b.pk])
        for pair in by_workload.values()
        if device_a.pk in pair and device_b.pk in pair
    ]
    rows.sort(key=lambda row: (row.workload.task_name, row.workload.pk))
    return DeviceComparison(device_a=device_a, device_b=device_b, rows=rows)
