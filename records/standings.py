"""One row per config: every measurement of one config on one GPU with one code hash.

A row's figures (median, min, max, n) rest on its confirmations (one value per
interleaved round, warm) where it has any, else on its tuning measurements (each
record's mean cost). A GPU's best is the lowest median among its confirmed configs
where it has any, else among all its configs; a config whose [min, max] interval
overlaps the best's is a statistical tie. Configs whose code changed since they were
measured are left out of bests unless asked for (`show_changed`).

Tuning rows are aggregated in the database, one query per workload (count, min, max per
group); medians are computed only for the groups a page shows, and a GPU's best stops looking
once a group's fastest measurement is slower than the best median found: no later
group's median can be lower. (A GPU whose MAX_EXAMINED fastest groups are all of changed
code shows no best until changed code is asked for.)
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import reduce
from operator import or_
from typing import Iterable

from django.db import connection
from django.db.models import Count, Max, Min, Q

from engine import Spread

from .code_status import CodeHashes, CodeStatus
from .models import Device, MeasurementRecord, Workload
from .visibility import PUBLIC

Kind, Cache = MeasurementRecord.Kind, MeasurementRecord.Cache
GROUP_FIELDS = ("device_id", "config_index", "code_hash")
CHUNK = 16
FIRST_PAGE = 50
MAX_CHUNK = 512
# A GPU whose fastest groups are all of changed code has no best among the first this many.
MAX_EXAMINED = 4096


@dataclass
class Standing:
    """One config on one GPU with one code hash, summarised."""

    workload: Workload
    device: Device
    config_index: int
    code_hash: str | None
    record: MeasurementRecord  # its fastest warm record: knobs, links and diffs use it
    spread: Spread
    confirmed: bool
    rounds: int | None
    cold: Spread | None
    code_status: str
    tie_with_best: bool = False
    ties: int = 0  # other configs on this GPU tying with this one (for a GPU's best)
    is_best: bool = False  # in a ranked table: this is its GPU's best
    best_pk: int | None = None  # in a ranked table: the record id of its GPU's best, for a diff

    @property
    def key(self) -> tuple:
        return (self.device.pk, self.config_index, self.code_hash)

    @property
    def median_cost(self) -> float:
        return self.spread.median

    @property
    def min_cost(self) -> float:
        return self.spread.min

    @property
    def max_cost(self) -> float:
        return self.spread.max

    @property
    def n_measurements(self) -> int:
        return self.spread.n

    @property
    def gflops(self) -> float | None:
        return self.workload.gflops(self.median_cost)

    @property
    def pk(self) -> int:
        return self.record.pk

    @property
    def knobs(self) -> dict:
        return self.record.knobs

    @property
    def code_changed(self) -> bool:
        return self.code_status == CodeStatus.CHANGED

    def overlaps(self, other: "Standing") -> bool:
        return self.spread.overlaps(other.spread)


def _order(standing: Standing) -> tuple:
    """The best rule's order: lower median first; a tie keeps the earlier measurement."""
    return (standing.median_cost, standing.record.timestamp, standing.record.pk)


def standing_of(workload: Workload, device: Device, rows: list[MeasurementRecord], hashes: CodeHashes) -> Standing:
    """The summary of one group's records (warm and cold, tuning and confirmation)."""
    warm = [r for r in rows if r.cache == Cache.WARM]
    confirmations = [r for r in warm if r.kind == Kind.CONFIRMATION]
    cold = [c for r in rows if r.cache == Cache.COLD and r.kind == Kind.CONFIRMATION for c in r.costs]
    values = [c for r in confirmations for c in r.costs] or [r.mean_cost for r in warm]
    fastest = min(warm, key=lambda r: (r.mean_cost, r.timestamp, r.pk))
    return Standing(
        workload=workload, device=device, config_index=fastest.config_index, code_hash=fastest.code_hash,
        record=fastest, spread=Spread.of(values), confirmed=bool(confirmations),
        rounds=sum(r.rounds or len(r.costs) for r in confirmations) or None, cold=Spread.of(cold),
        code_status=hashes.status(workload, device, fastest.entity, fastest.code_hash),
    )


class GroupRows:
    """The records of groups, fetched a batch of groups a query and kept for the page:
    warm rows through the (workload, device, config) index, cold ones through the
    confirmations' index; a group's exact key is matched here, not in SQL."""

    def __init__(self, workload: Workload, viewer=PUBLIC) -> None:
        self.workload = workload
        self.viewer = viewer  # whose records (records.visibility)
        self._rows: dict[tuple, list[MeasurementRecord]] = {}

    def of(self, keys: Iterable[tuple]) -> dict[tuple, list[MeasurementRecord]]:
        keys = list(keys)
        missing = [key for key in keys if key not in self._rows]
        if missing:
            self._fetch(missing)
        return {key: self._rows[key] for key in keys if self._rows[key]}

    def _fetch(self, keys: list[tuple]) -> None:
        wanted = set(keys)
        by_device: dict[int, set[int]] = {}
        for device_id, config_index, _ in keys:
            by_device.setdefault(device_id, set()).add(config_index)
        narrow = reduce(or_, (Q(device_id=d, config_index__in=indexes) for d, indexes in by_device.items()))
        mine = MeasurementRecord.objects.visible_to(self.viewer).filter(workload=self.workload).valid()
        rows = list(mine.filter(narrow, cache=Cache.WARM))
        rows += mine.filter(narrow, kind=Kind.CONFIRMATION, cache=Cache.COLD)
        for key in keys:
            self._rows[key] = []
        for row in rows:
            key = (row.device_id, row.config_index, row.code_hash)
            if key in wanted:
                self._rows[key].append(row)


@dataclass(frozen=True)
class Group:
    """One (GPU, config, code hash) group of warm error-free records: its count and extremes."""

    device_id: int
    config_index: int
    code_hash: str | None
    n: int
    low: float
    high: float

    @property
    def key(self) -> tuple:
        return (self.device_id, self.config_index, self.code_hash)


def workload_groups(workload: Workload, viewer=PUBLIC) -> list[Group]:
    """Every group of the workload (of the records `viewer` may read), fastest first, in one
    aggregate query (a page's bests and its ranked table both read this list)."""
    query = (
        MeasurementRecord.objects.visible_to(viewer).filter(workload=workload, cache=Cache.WARM).valid()
        .order_by().values_list(*GROUP_FIELDS).annotate(n=Count("*"), low=Min("mean_cost"), high=Max("mean_cost"))
        .order_by("low", "device_id", "config_index")
    )
    # Plain columns: the cursor's tuples, without the ORM's per-row conversion (tens of
    # thousands of groups on a big workload).
    sql, params = query.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [Group(*row) for row in cursor.fetchall()]


def standings_of(workload: Workload, groups: Iterable[Group], hashes: CodeHashes,
                 devices: dict[int, Device] | None = None, rows: GroupRows | None = None) -> list[Standing]:
    """The standings of `groups`, in their order (their rows read at most once)."""
    keys = [g.key for g in groups]
    devices = devices or {d.pk: d for d in Device.objects.all()}
    found = (rows or GroupRows(workload)).of(keys)
    return [standing_of(workload, devices[key[0]], found[key], hashes) for key in keys if key in found]


def confirmed_keys(workload: Workload, viewer=PUBLIC) -> dict[int, list[tuple]]:
    """Device id -> the group keys of its confirmations of `workload` (an indexed query)."""
    found: dict[int, list[tuple]] = {}
    keys = MeasurementRecord.objects.visible_to(viewer).filter(workload=workload, kind=Kind.CONFIRMATION).valid()
    for key in keys.order_by().values_list(*GROUP_FIELDS).distinct():
        found.setdefault(key[0], []).append(key)
    return found


def device_best(workload: Workload, device: Device, hashes: CodeHashes, show_changed: bool = False,
                groups: list[Group] | None = None, confirmed: dict[int, list[tuple]] | None = None,
                rows: GroupRows | None = None, viewer=PUBLIC) -> Standing | None:
    """The GPU's best config of `workload`: lowest confirmed median where it has
    confirmations, else lowest median of tuning measurements; with its tie count.
    `groups`, `confirmed` and `rows` (the workload's, when the caller has them) spare queries."""
    confirmed = confirmed_keys(workload, viewer) if confirmed is None else confirmed
    rows = rows or GroupRows(workload, viewer)
    if confirmed.get(device.pk):
        keys = confirmed[device.pk]
        found = rows.of(keys)
        standings = [standing_of(workload, device, found[key], hashes) for key in keys if key in found]
        eligible = [s for s in standings if show_changed or not s.code_changed]
        if eligible:
            best = min(eligible, key=_order)
            best.ties = sum(1 for s in eligible if s is not best and s.overlaps(best))
            return best
    groups = workload_groups(workload, viewer) if groups is None else groups
    mine = [g for g in groups if g.device_id == device.pk]
    return _best_of_tuning(workload, device, mine, hashes, show_changed, rows)


def _best_of_tuning(workload: Workload, device: Device, groups: list[Group], hashes: CodeHashes,
                    show_changed: bool, rows: GroupRows) -> Standing | None:
    """The lowest median among `groups` (the device's, fastest first), read a chunk at a time."""
    best: Standing | None = None
    start, size = 0, CHUNK
    while start < min(len(groups), MAX_EXAMINED):
        chunk = groups[start:start + size]
        if best is not None and chunk[0].low > best.median_cost:
            break
        start, size = start + size, min(size * 4, MAX_CHUNK)  # past the first few, changed code is likely
        for standing in standings_of(workload, chunk, hashes, {device.pk: device}, rows):
            if best is not None and standing.min_cost > best.median_cost:
                break
            if standing.code_changed and not show_changed:
                continue
            if best is None or _order(standing) < _order(best):
                best = standing
    if best is not None:
        best.ties = sum(1 for g in groups if g.key != best.key and g.low <= best.max_cost and g.high >= best.min_cost)
    return best


@dataclass
class Leaderboard:
    workload: Workload
    bests: list[Standing]
    groups: list[Group]  # every group, fastest first: the ranked table's rows
    rows: GroupRows
    show_changed: bool = False

    @property
    def best_by_device(self) -> dict[int, Standing]:
        return {best.device.pk: best for best in self.bests}

    @property
    def devices(self) -> list[Device]:
        return [best.device for best in self.bests]

    def ranked(self, device: Device | None = None) -> list[Group]:
        return self.groups if device is None else [g for g in self.groups if g.device_id == device.pk]


def workload_bests(workload: Workload, show_changed: bool = False, hashes: CodeHashes | None = None,
                   groups: list[Group] | None = None, rows: GroupRows | None = None, viewer=PUBLIC) -> list[Standing]:
    """Each GPU's best of `workload` (among what `viewer` may read), fastest first; each marked
    when it ties with the first."""
    hashes = hashes or CodeHashes()
    groups = workload_groups(workload, viewer) if groups is None else groups
    rows = rows or GroupRows(workload, viewer)
    confirmed = confirmed_keys(workload, viewer)
    first: dict[int, list[tuple]] = {}
    for group in groups:  # every GPU's first chunk, read in one go
        keys = first.setdefault(group.device_id, [])
        if len(keys) < CHUNK:
            keys.append(group.key)
    # ... with the ranked table's first page (what a leaderboard page shows below the bests).
    page = [group.key for group in groups[:FIRST_PAGE]]
    rows.of([key for keys in [*first.values(), *confirmed.values(), page] for key in keys])
    bests = [device_best(workload, device, hashes, show_changed, groups, confirmed, rows, viewer)
             for device in Device.objects.filter(pk__in=list(first))]
    bests = sorted((b for b in bests if b is not None), key=_order)
    for other in bests[1:]:
        other.tie_with_best = other.overlaps(bests[0])
    return bests


def same_shape_bests(workload: Workload, viewer=PUBLIC) -> list[tuple[Workload, list[Standing]]]:
    """The other tasks of these args (the implicit GEMM and Winograd beside the direct conv; TopHub's Winograd), each
    with its GPUs' bests that `viewer` may read, fastest first: which schedule wins the shape."""
    return [(other, workload_bests(other, viewer=viewer)) for other in workload.same_shape()]


def leaderboard(workload: Workload, show_changed: bool = False, viewer=PUBLIC) -> Leaderboard:
    groups, rows = workload_groups(workload, viewer), GroupRows(workload, viewer)
    bests = workload_bests(workload, show_changed, groups=groups, rows=rows, viewer=viewer)
    return Leaderboard(workload=workload, bests=bests, groups=groups, rows=rows, show_changed=show_changed)


def ranked_standings(board: Leaderboard, groups: Iterable[Group], hashes: CodeHashes | None = None,
                     chunk: int = 500) -> Iterable[Standing]:
    """The standings of `groups` (a page of the board's, or all of them for CSV), each
    marked when it ties with its GPU's best; read `chunk` groups a query."""
    hashes = hashes or CodeHashes()
    devices = {d.pk: d for d in Device.objects.all()}
    bests = board.best_by_device
    batch: list[Group] = []
    for group in groups:
        batch.append(group)
        if len(batch) == chunk:
            yield from mark_ties(standings_of(board.workload, batch, hashes, devices, board.rows), bests)
            batch = []
    if batch:
        yield from mark_ties(standings_of(board.workload, batch, hashes, devices, board.rows), bests)


def mark_ties(standings: list[Standing], bests: dict[int, Standing]) -> list[Standing]:
    """Mark each standing that overlaps its GPU's best (the best itself is not a tie)."""
    for standing in standings:
        best = bests.get(standing.device.pk)
        if best is None:
            continue
        standing.is_best = standing.key == best.key
        standing.best_pk = best.pk
        standing.tie_with_best = not standing.is_best and standing.overlaps(best)
    return standings


@dataclass(frozen=True)
class Ratio:
    """A ratio of two spreads: median over median, and the widest interval the rounds allow."""

    value: float
    low: float
    high: float

    @classmethod
    def of(cls, numerator: Spread | None, denominator: Spread | None) -> "Ratio | None":
        if numerator is None or denominator is None or min(numerator.min, denominator.min) <= 0:
            return None
        return cls(numerator.median / denominator.median, numerator.min / denominator.max,
                   numerator.max / denominator.min)
