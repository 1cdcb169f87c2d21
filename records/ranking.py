"""A leaderboard's two tables in any column's order: `?sort=` for its ranked configs,
`?best_sort=` for its bests per GPU (records.sorting applies both).

The ranked table is paginated, so it is sorted over every group before paginating. GPU,
index, fastest measurement and count are in the aggregate query's groups already; a sort by
median (and so by GFLOPS or % of peak) reads every group's median, and only then.
"""
from __future__ import annotations

import statistics
from collections import defaultdict
from functools import cache

from .models import Device, MeasurementRecord
from .roofline import Peak, percent_of_peak
from .standings import GROUP_FIELDS, Group, Leaderboard, Standing
from .visibility import PUBLIC

Kind, Cache = MeasurementRecord.Kind, MeasurementRecord.Cache


def group_medians(workload, viewer=PUBLIC) -> dict[tuple, float]:
    """Each group's median as its standing has it: of its warm confirmation rounds where it has
    any, else of its tuning measurements' means (in two queries)."""
    mine = (MeasurementRecord.objects.visible_to(viewer).filter(workload=workload, cache=Cache.WARM)
            .valid().order_by())
    rounds: dict[tuple, list[float]] = defaultdict(list)
    for *key, costs in mine.filter(kind=Kind.CONFIRMATION).values_list(*GROUP_FIELDS, "costs"):
        rounds[tuple(key)].extend(costs)
    means: dict[tuple, list[float]] = defaultdict(list)
    for *key, mean_cost in mine.exclude(kind=Kind.CONFIRMATION).values_list(*GROUP_FIELDS, "mean_cost"):
        means[tuple(key)].append(mean_cost)
    return {key: statistics.median(rounds.get(key) or values) for key, values in {**means, **rounds}.items()}


class _GroupFigures:
    """What a ranked row shows, for a group not yet summarised: the row's GFLOPS and % of peak."""

    def __init__(self, workload, device: Device, median: float | None) -> None:
        self.workload, self.device = workload, device
        self.gflops = workload.gflops(median) if median else None


def ranked_columns(board: Leaderboard, peaks: dict[int, Peak | None], viewer=PUBLIC) -> dict:
    """The ranked table's columns as functions of a `Group`."""
    devices = {device.pk: device for device in Device.objects.all()}
    medians = cache(lambda: group_medians(board.workload, viewer))

    def figures(group: Group) -> _GroupFigures:
        return _GroupFigures(board.workload, devices[group.device_id], medians().get(group.key))

    return {
        "gpu": lambda group: devices[group.device_id].model,
        "index": lambda group: group.config_index,
        "median": lambda group: medians().get(group.key),
        "range": lambda group: group.low,
        "n": lambda group: group.n,
        "gflops": lambda group: figures(group).gflops,
        "peak": lambda group: percent_of_peak(figures(group), peaks.get(group.device_id)),
    }


def best_columns(peaks: dict[int, Peak | None]) -> dict:
    """The bests table's columns as functions of a `Standing`."""
    return {
        "gpu": lambda best: best.device.model,
        "median": lambda best: best.median_cost,
        "range": lambda best: best.min_cost,
        "n": lambda best: best.n_measurements,
        "cold": lambda best: best.cold.median if best.cold else None,
        "gflops": lambda best: best.gflops,
        "bandwidth": lambda best: (best.workload.bytes_moved or 0) / best.median_cost or None,
        "peak": lambda best: percent_of_peak(best, peaks.get(best.device.pk)),
        "index": lambda best: best.config_index,
        "code": lambda best: best.code_status,
    }


def with_peak_share(standings, peaks: dict[int, Peak | None]) -> list[Standing]:
    """Attach `percent_of_peak` to each standing, for the leaderboard's "% of peak" column."""
    standings = list(standings)
    for standing in standings:
        standing.percent_of_peak = percent_of_peak(standing, peaks.get(standing.device.pk))
    return standings
