"""Many configs of one space at once, as numpy columns: the batch path of validity and features.

Simulated annealing asks about 128 neighbours per step, hundreds of steps per plan; one
`ConfigEntity` at a time that is Python attribute lookups by the million (issue 17). A
`ConfigColumns` holds the digits of many configs as an (n, knobs) array and answers
`columns["tile_f"].size` with a tuple of arrays (one per part) and `columns["unroll"].val`
with an array, so a template's per-config code (its tiling arithmetic, its features) runs
unchanged on whole columns: the per-config answer stays the one definition, and the batch
one is the same code on arrays. It is also a sequence of `ConfigEntity` (iterating builds
them), so code that wants configs one by one still works on it.

`valid_mask` checks many configs against a space's rules at once: where every rule's
`invalid_mask` is a function of columns (a template with a batch path, see
`engine.task.TemplateRule`), each is asked once; where any rule has none (a plain callable, or
`invalid_mask` None), the configs are asked config by config, as `ConfigSpace.is_valid` would.
`random_neighbours` draws one-knob moves for many configs at once.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Iterator, Sequence

import numpy as np

from .space import INT64_INDEXES, ConfigEntity, SamplingError, SplitKnob

if TYPE_CHECKING:  # pragma: no cover
    from .space import ConfigSpace

# Bulk draws per chain before a chain falls back to `ConfigSpace.neighbour` (its own 32 random
# tries, then every one-knob move): the same bound the per-config walk uses.
NEIGHBOUR_TRIES = 32
# Draws per pending chain checked together: about half of a valid config's one-knob moves are
# valid on the conv spaces, so one round of 8 moves almost every chain (measured: 1.01 rounds).
_TRIES_PER_ROUND = 8


def as_int(value: Any) -> Any:
    """`int(value)` for one config's knob value, an int64 array for a column of them."""
    return value.astype(np.int64) if isinstance(value, np.ndarray) else int(value)


class SplitColumn:
    """A split knob's parts over many configs: `size[j]` is the array of part j (outer first);
    `log2[j]` its log2, from a table of `math.log2` so features match the per-config ones bit for bit
    (computed when asked: validity reads only sizes)."""

    __slots__ = ("size", "_digit", "_log2_parts", "_log2")

    def __init__(self, size: tuple[np.ndarray, ...], digit: np.ndarray, log2_parts: tuple[np.ndarray, ...]):
        self.size = size
        self._digit, self._log2_parts, self._log2 = digit, log2_parts, None

    @property
    def log2(self) -> tuple[np.ndarray, ...]:
        if self._log2 is None:
            self._log2 = tuple(part.take(self._digit) for part in self._log2_parts)
        return self._log2


class OtherColumn:
    """A plain knob's values over many configs: `val` (an array of the values), `number` (what
    `knob_features` makes of each: `knob_number`, NaN where that raises)."""

    __slots__ = ("val", "number")

    def __init__(self, val: np.ndarray, number: np.ndarray):
        self.val = val
        self.number = number


class _KnobTables:
    """Per knob of a space, its options as arrays, built once per space (they never change)."""

    def __init__(self, space: "ConfigSpace"):
        # A split knob: one 1-D table per part (`take` on a 1-D array is numpy's fastest gather).
        self.split_parts: dict[int, tuple[np.ndarray, ...]] = {}
        self.split_log2_parts: dict[int, tuple[np.ndarray, ...]] = {}
        self.values: dict[int, np.ndarray] = {}
        self.numbers: dict[int, np.ndarray] = {}
        for position, knob in enumerate(space.knobs):
            if isinstance(knob, SplitKnob):
                sizes = np.array(knob.options, dtype=np.int64).reshape(len(knob), -1)
                log2 = np.array([[math.log2(s) for s in option] for option in knob.options]).reshape(len(knob), -1)
                self.split_parts[position] = tuple(np.ascontiguousarray(sizes.T))
                self.split_log2_parts[position] = tuple(np.ascontiguousarray(log2.T))
            else:
                self.values[position] = _value_array(knob.options)
                self.numbers[position] = np.array([_table_number(i, v) for i, v in enumerate(knob.options)])
        self.int64 = space.total < INT64_INDEXES
        strides = [math.prod(space.radixes[:p]) for p in range(len(space.radixes))]
        self.strides = np.array(strides, dtype=np.int64) if self.int64 else None
        self.radixes = np.array(space.radixes, dtype=np.int64)  # each knob's radix is small
        self.movable = np.array([p for p, r in enumerate(space.radixes) if r > 1], dtype=np.int64)


def knob_number(option: int, value: Any) -> float:
    """A plain knob's value as a number, the one rule `knob_features` uses (per config and, through
    the tables here, on columns): a text value (a pipeline, a tactic) is its option's position,
    anything else `float(value)` (TypeError or ValueError where it has none, e.g. a tuple)."""
    return float(option) if isinstance(value, str) else float(value)


def _table_number(option: int, value: Any) -> float:
    """`knob_number`, NaN where it raises. The one place the batch path differs on purpose: the
    tables are built for every knob of a space as soon as columns are made, and validity and
    neighbours (which never read numbers) must work on a space with, say, a tuple-valued knob;
    per config, `knob_features` still raises for such a value. Only the batch path's templates read
    these numbers (`knob_features` on columns), and their plain knobs are all numbers."""
    try:
        return knob_number(option, value)
    except (TypeError, ValueError):
        return math.nan


def _value_array(options: list) -> np.ndarray:
    """Options as an array numpy can compute with: numbers as int64 or float64, anything else as objects."""
    if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in options):
        return np.array(options, dtype=np.int64)
    if all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) for v in options):
        return np.array(options, dtype=np.float64)
    out = np.empty(len(options), dtype=object)
    out[:] = options
    return out


def tables(space: "ConfigSpace") -> _KnobTables:
    """The option tables of a space (cached on it: views of one space share knobs, not the cache)."""
    found = space.__dict__.get("_columns_tables")
    if found is None:
        found = space.__dict__["_columns_tables"] = _KnobTables(space)
    return found


class ConfigColumns:
    """Configs of `space` given by their digits (an (n, knobs) int64 array) and indexes."""

    def __init__(self, space: "ConfigSpace", digits: np.ndarray, indexes: np.ndarray | None = None):
        self.space = space
        self.digits = np.asarray(digits, dtype=np.int64).reshape(-1, len(space.knobs))
        self.indexes = indexes_of(space, self.digits) if indexes is None else indexes
        self._tables = tables(space)
        self._columns: dict[int, SplitColumn | OtherColumn] = {}  # a tiling reads each knob several times

    @classmethod
    def of_configs(cls, space: "ConfigSpace", configs: Sequence[ConfigEntity]) -> "ConfigColumns":
        digits = np.array([c.digits for c in configs], dtype=np.int64).reshape(len(configs), len(space.knobs))
        indexes = np.array([c.index for c in configs], dtype=np.int64 if tables(space).int64 else object)
        return cls(space, digits, indexes)

    @classmethod
    def of_indexes(cls, space: "ConfigSpace", indexes: Sequence[int]) -> "ConfigColumns":
        t = tables(space)
        if t.int64:
            indexes = np.asarray(indexes, dtype=np.int64)
            digits = (indexes[:, None] // t.strides[None, :]) % t.radixes[None, :]
        else:
            indexes = np.array(list(indexes), dtype=object)
            digits = np.array([space._digits_of(int(i)) for i in indexes], dtype=np.int64)
        return cls(space, digits.reshape(len(indexes), len(space.knobs)), indexes)

    def __len__(self) -> int:
        return len(self.digits)

    def __iter__(self) -> Iterator[ConfigEntity]:
        for index, row in zip(self.indexes.tolist(), self.digits.tolist()):
            yield ConfigEntity(self.space, int(index), tuple(row))

    def config(self, row: int) -> ConfigEntity:
        return ConfigEntity(self.space, int(self.indexes[row]), tuple(self.digits[row].tolist()))

    def take(self, rows: np.ndarray) -> "ConfigColumns":
        return ConfigColumns(self.space, self.digits[rows], self.indexes[rows])

    def __getitem__(self, name: str) -> SplitColumn | OtherColumn:
        position = self.space._position.get(name)
        if position is None:
            raise KeyError(f"no knob {name!r}; knobs are {', '.join(self.space.knob_names)}")
        column = self._columns.get(position)
        if column is None:
            column = self._columns[position] = self._column(position)
        return column

    def _column(self, position: int) -> SplitColumn | OtherColumn:
        digit = self.digits[:, position]
        parts = self._tables.split_parts.get(position)
        if parts is not None:
            return SplitColumn(tuple(part.take(digit) for part in parts), digit, self._tables.split_log2_parts[position])
        return OtherColumn(self._tables.values[position].take(digit), self._tables.numbers[position].take(digit))


def indexes_of(space: "ConfigSpace", digits: np.ndarray) -> np.ndarray:
    """The mixed-radix index of every row of digits (int64, or Python ints in a huge space)."""
    t = tables(space)
    if t.int64:
        return digits @ t.strides
    return np.array([space.index_from_digits(row) for row in digits.tolist()], dtype=object)


def valid_mask(space: "ConfigSpace", columns: ConfigColumns) -> np.ndarray:
    """Whether each config is valid in `space`: `space.is_valid`, for many configs at once."""
    ok = np.ones(len(columns), dtype=bool)
    kept = space.kept_indexes()
    if kept is not None:  # a restricted view: only its own indexes (ascending, so a binary search)
        where = np.minimum(np.searchsorted(kept, columns.indexes), len(kept) - 1)
        ok &= kept[where] == columns.indexes if len(kept) else False
    masks = [getattr(rule, "invalid_mask", None) for rule in space.rules]
    if any(mask is None for mask in masks):  # a rule without a batch path: config by config, remembered
        rows = np.flatnonzero(ok)
        for row in rows:
            ok[row] = space.is_valid(columns.config(int(row)))
        return ok
    for mask in masks:
        rows = np.flatnonzero(ok)
        if not len(rows):
            break
        broken = mask(columns if len(rows) == len(columns) else columns.take(rows))
        ok[rows[np.asarray(broken, dtype=bool)]] = False
    return ok


def random_neighbours(space: "ConfigSpace", columns: ConfigColumns, rng: np.random.Generator) -> ConfigColumns:
    """For every config, a valid config one knob away: `space.neighbour` in bulk.

    Every chain draws a knob (among those with more than one option) and another of its
    options, as `ConfigSpace.neighbour` does; the draws are checked in bulk and only the
    chains whose draw is invalid draw again. After NEIGHBOUR_TRIES rounds the few chains
    left ask `space.neighbour` itself (every move, a restricted view's nearest kept config);
    a config with no valid neighbour stays where it is.
    """
    t = tables(space)
    digits = columns.digits.copy()
    indexes = columns.indexes.copy()
    pending = np.arange(len(columns)) if len(t.movable) else np.empty(0, dtype=np.int64)
    # A round draws _TRIES_PER_ROUND moves for every pending chain and keeps each chain's first
    # valid one: the same as drawing them one after another, in a quarter of the bulk checks.
    for _ in range(NEIGHBOUR_TRIES // _TRIES_PER_ROUND):
        if not len(pending):
            break
        chains = np.repeat(pending, _TRIES_PER_ROUND)
        positions = t.movable[rng.integers(len(t.movable), size=len(chains))]
        current = columns.digits[chains, positions]
        options = rng.integers(0, t.radixes[positions] - 1)
        options += options >= current
        trial = columns.digits[chains]
        trial[np.arange(len(chains)), positions] = options
        proposal = ConfigColumns(space, trial)
        good = valid_mask(space, proposal).reshape(len(pending), _TRIES_PER_ROUND)
        found = good.any(axis=1)
        first = np.flatnonzero(found) * _TRIES_PER_ROUND + good.argmax(axis=1)[found]
        digits[pending[found]] = trial[first]
        indexes[pending[found]] = proposal.indexes[first]
        pending = pending[~found]
    stuck = pending if len(t.movable) else np.arange(len(columns))
    for row in stuck.tolist():
        try:
            moved = space.neighbour(columns.config(row), rng)
        except SamplingError:  # no valid neighbour: the chain stays put
            continue
        digits[row] = moved.digits
        indexes[row] = moved.index
    return ConfigColumns(space, digits, indexes)
