"""Two configs side by side, knob by knob, with their times."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .models import MeasurementRecord


def knob_names(*knob_sets: dict[str, Any]) -> list[str]:
    """Every knob any of `knob_sets` has, in definition order (the first one's order first)."""
    names: dict[str, None] = {}
    for knobs in knob_sets:
        for name in knobs:
            names.setdefault(name)
    return list(names)


@dataclass(frozen=True)
class KnobRow:
    name: str
    a: Any  # None when record a has no such knob
    b: Any

    @property
    def differs(self) -> bool:
        return self.a != self.b


@dataclass
class ConfigDiff:
    a: MeasurementRecord
    b: MeasurementRecord
    rows: list[KnobRow]

    @property
    def same_workload(self) -> bool:
        return self.a.workload_id == self.b.workload_id

    @property
    def same_device(self) -> bool:
        return self.a.device_id == self.b.device_id

    @property
    def differing_rows(self) -> list[KnobRow]:
        return [row for row in self.rows if row.differs]

    @property
    def ratio(self) -> float | None:
        """Time of b over time of a: below 1 means b is faster. None when either failed, or
        when they are of different workloads (their times do not measure the same work)."""
        if self.a.mean_cost is None or self.b.mean_cost is None or not self.same_workload:
            return None
        return self.b.mean_cost / self.a.mean_cost

    @property
    def faster(self) -> str | None:
        """'a', 'b' or 'same'; None when either failed."""
        if self.ratio is None:
            return None
        if self.ratio < 1:
            return "b"
        if self.ratio > 1:
            return "a"
        return "same"

    @property
    def speedup(self) -> float | None:
        """How many times faster the faster one is (1 when equal)."""
        if self.ratio is None:
            return None
        return max(self.ratio, 1 / self.ratio)

    def shown_rows(self, only_differences: bool) -> list[KnobRow]:
        return self.differing_rows if only_differences else self.rows


def normalised_value(kind: str, value: Any) -> Any:
    """A knob value as it compares: a split's outer part is implied by the others, and
    older logs (TopHub) write it out (`[1, 8, 8, 1]`) where newer ones write -1."""
    if kind == "sp" and isinstance(value, list) and value:
        return [-1, *value[1:]]
    return value


def knobs_as_tuned(record: MeasurementRecord, defaults: dict[str, Any]) -> dict[str, Any]:
    """The record's knobs in comparable form, plus the default of each knob its template gained
    after it was logged (`Workload.knob_defaults`: a GEMM logged before `slice_k` ran with one slice)."""
    knobs = {name: normalised_value(kind, value) for name, kind, value in record.entity}
    return {**knobs, **{k: v for k, v in defaults.items() if k not in knobs}}


def config_diff(a: MeasurementRecord, b: MeasurementRecord) -> ConfigDiff:
    knobs_a = knobs_as_tuned(a, a.workload.knob_defaults())
    knobs_b = knobs_as_tuned(b, b.workload.knob_defaults())
    rows = [KnobRow(name, knobs_a.get(name), knobs_b.get(name)) for name in knob_names(knobs_a, knobs_b)]
    return ConfigDiff(a=a, b=b, rows=rows)
