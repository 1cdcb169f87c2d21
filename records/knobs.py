"""Which knobs matter: for a workload (on one GPU, or one job run's records), each knob's
values against the time of the configs that took them, and the median time per value.

A knob whose values' medians lie far apart moves the time; one whose medians are close does
not. Knobs are listed by that spread, widest first.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

from django.db.models import QuerySet

from .diffs import knobs_as_tuned
from .templatetags.records_format import knob as knob_text

MAX_RECORDS = 5000  # the fastest this many: enough to see a trend, small enough to draw


@dataclass
class KnobSlice:
    name: str
    values: list[str]  # distinct values as the log writes them, in ascending order
    medians: list[float]  # median time (s) of the configs with each value
    counts: list[int]

    @property
    def spread(self) -> float:
        """Slowest value's median over the fastest's: 1 means the knob does not move the time."""
        return max(self.medians) / min(self.medians) if self.medians else 1.0


@dataclass
class KnobStudy:
    slices: list[KnobSlice]
    costs: list[float]  # seconds, one per record
    positions: dict[str, list[int]]  # knob -> index into its slice's values, one per record
    total: int  # records that matched, before MAX_RECORDS

    def chart(self) -> dict:
        return {
            "times_us": [cost * 1e6 for cost in self.costs],
            "knobs": [
                {"name": s.name, "values": s.values, "medians_us": [m * 1e6 for m in s.medians],
                 "counts": s.counts, "spread": s.spread, "positions": self.positions[s.name]}
                for s in self.slices
            ],
        }


def study_knobs(records: QuerySet, defaults: dict) -> KnobStudy:
    """`records` (error-free ones of one workload) reduced to each knob's slice."""
    total = records.count()
    rows = list(records.order_by("mean_cost", "id")[:MAX_RECORDS])
    tuned = [knobs_as_tuned(row, defaults) for row in rows]
    names = list(dict.fromkeys(name for knobs in tuned for name in knobs))
    slices, positions = [], {}
    for name in names:
        texts = [knob_text(knobs.get(name)) for knobs in tuned]
        raw = {knob_text(knobs.get(name)): knobs.get(name) for knobs in tuned}
        values = sorted(raw, key=lambda text: _sortable(raw[text]))
        index = {text: i for i, text in enumerate(values)}
        by_value: dict[int, list[float]] = {}
        positions[name] = [index[text] for text in texts]
        for position, row in zip(positions[name], rows):
            by_value.setdefault(position, []).append(row.mean_cost)
        slices.append(KnobSlice(
            name=name, values=values,
            medians=[statistics.median(by_value[i]) for i in range(len(values))],
            counts=[len(by_value[i]) for i in range(len(values))],
        ))
    slices.sort(key=lambda s: -s.spread)
    return KnobStudy(slices=slices, costs=[row.mean_cost for row in rows], positions=positions, total=total)


def _sortable(value):
    """Numbers by value, splits by their parts; anything else (or None) after, as text."""
    if isinstance(value, bool) or value is None:
        return (2, [], str(value))
    if isinstance(value, (int, float)):
        return (0, [value], "")
    if isinstance(value, list) and all(isinstance(v, (int, float)) for v in value):
        return (1, value, "")
    return (2, [], knob_text(value))
