"""Snapped draws: Kernel Tuner's snapping of a sample to valid configs, without its hypercube.

Each knob's option is drawn uniformly among the options the space uses; a draw that is no valid
config (or one already taken) is snapped to the valid config nearest to it in option positions
(the sum over knobs of how many positions apart their options are), ties broken at random. Kernel
Tuner's diff_evo snaps its Latin-hypercube start this way, and that is why it starts well where
a constraint cuts the space: an invalid draw lands on the constraint's edge, and on kernel spaces
the edge is often fast (a block of as many threads as the device allows). On the hub's
dedispersion spaces, where half the draws break the thread limit, snapped draws are within 95 %
of the best at 60.0 % on the A100 and 24.0 % on the A4000 (20,000 draws each), against 41.7 %
and 14.2 % of their configs (where the fast configs are not on an edge, at about the configs'
share: the convolution spaces 0.0-0.2 % against 0.0-0.3 %). The XGBoost tuner takes a few for
its first batch, the one drawn before any model, which decides the spaces where a config within
95 % is a few trials away (issue 17).

A space of at most ENUMERATE_LIMIT configs is snapped exactly against the option positions of all
its valid configs (found once per space with `engine.columns.valid_mask`). A larger one (a full
template space) is searched outwards from the draw, every config at distance 1, 2, ... checked in
bulk by `valid_mask`; where that grows past `_SEARCH_LIMIT` configs before any is valid, the draw
falls back to a uniform valid config. On C12's full space (844,800 configs) a draw costs about
2 ms and 1 in 40 falls back; on a tensor-core GEMM's decode space (199 million configs of 18
knobs, its rule checked config by config, 1 in 700 valid) every draw falls back, after about
2,000 checks (60-220 ms). An enumerable space costs under 1 ms a draw at 11,130 configs.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

import numpy as np

from ..columns import ConfigColumns, valid_mask
from ..space import ENUMERATE_LIMIT, ConfigEntity, SamplingError

if TYPE_CHECKING:  # pragma: no cover
    from ..space import ConfigSpace

# Configs a search outwards from a draw may check (each distance's shell in one bulk check) before
# it gives up on a nearest valid config and takes a uniform one.
_SEARCH_LIMIT = 10_000
_FAR = np.iinfo(np.int64).max


class SnappedDraws:
    """Draws of one space's configs, each invalid draw snapped to its nearest valid config."""

    def __init__(self, space: "ConfigSpace"):
        self.space = space
        self.options = [np.array(space.used_options(p), dtype=np.int64) for p in range(len(space.knobs))]
        self.sizes = np.array([len(o) for o in self.options], dtype=np.int64)

    # -- the interface --------------------------------------------------------------------
    def draw(self, rng: np.random.Generator, n: int, exclude: Iterable[int] = ()) -> list[ConfigEntity]:
        """Up to `n` distinct valid configs, none in `exclude`: each knob's option position drawn
        uniformly, the draw snapped to the nearest valid config not yet taken. Fewer only when the
        space runs out."""
        taken = set(int(i) for i in exclude)
        out = []
        for _ in range(n):
            config = self.snap(rng.integers(0, self.sizes), rng, taken)
            if config is None:
                break
            taken.add(config.index)
            out.append(config)
        return out

    def snap(self, positions, rng: np.random.Generator, exclude: Iterable[int] = ()) -> ConfigEntity | None:
        """The valid config not in `exclude` nearest to `positions` (one option position per knob,
        among the options the space uses), ties at random: the config itself when it is valid and
        not excluded. None when no valid config is left."""
        positions = np.asarray(positions, dtype=np.int64)
        excluded = exclude if isinstance(exclude, (set, frozenset)) else set(exclude)
        if len(self.space) <= ENUMERATE_LIMIT:
            return self._nearest_of_all(positions, rng, excluded)
        return self._nearest_outwards(positions, rng, excluded)

    # -- an enumerable space: against every valid config ---------------------------------------
    def _nearest_of_all(self, positions, rng, excluded) -> ConfigEntity | None:
        indexes, table = valid_positions(self.space)
        distance = np.abs(table - positions).sum(axis=1)
        if excluded:
            taken = np.fromiter(excluded, dtype=np.int64, count=len(excluded))
            distance[np.isin(indexes, taken)] = _FAR
        if not len(distance) or distance.min() == _FAR:
            return None
        ties = np.flatnonzero(distance == distance.min())
        return self.space.get(int(indexes[ties[int(rng.integers(len(ties)))]]))

    # -- a larger space: shells of growing distance ------------------------------------------
    def _nearest_outwards(self, positions, rng, excluded) -> ConfigEntity | None:
        low, high = -positions, self.sizes - 1 - positions
        checked = 0
        for distance in range(int(self.sizes.sum() - len(self.sizes)) + 1):
            offsets = _shell(distance, low, high, _SEARCH_LIMIT - checked)
            if offsets is None:
                break
            checked += len(offsets)
            if not len(offsets):
                continue
            at = positions + offsets
            digits = np.stack([self.options[p][at[:, p]] for p in range(len(self.options))], axis=1)
            columns = ConfigColumns(self.space, digits)
            ok = valid_mask(self.space, columns)
            if excluded:
                ok &= np.array([int(i) not in excluded for i in columns.indexes.tolist()], dtype=bool)
            rows = np.flatnonzero(ok)
            if len(rows):
                return columns.config(int(rows[int(rng.integers(len(rows)))]))
        try:
            found = self.space.sample(rng, 1, exclude=excluded)
        except SamplingError:
            return None
        return found[0] if found else None


def valid_positions(space: "ConfigSpace") -> tuple[np.ndarray, np.ndarray]:
    """(indexes, option positions) of every valid config of an enumerable space, found once per
    space with `valid_mask` (cached on it, as engine.columns caches its tables)."""
    found = space.__dict__.get("_snapping_positions")
    if found is None:
        columns = ConfigColumns.of_indexes(space, np.fromiter(space.iter_indexes(), dtype=np.int64))
        keep = valid_mask(space, columns)
        digits = columns.digits[keep]
        table = np.empty_like(digits)
        for p in range(len(space.knobs)):
            table[:, p] = np.searchsorted(np.array(space.used_options(p), dtype=np.int64), digits[:, p])
        found = space.__dict__["_snapping_positions"] = (columns.indexes[keep].astype(np.int64), table)
    return found


def _shell(distance: int, low: np.ndarray, high: np.ndarray, limit: int) -> np.ndarray | None:
    """Every offset vector o with low <= o <= high (per knob) and sum |o| == distance, as rows;
    None when building them takes more than `limit` rows."""
    rows = np.zeros((1, 0), dtype=np.int64)
    spent = np.zeros(1, dtype=np.int64)
    for lo, hi in zip(low.tolist(), high.tolist()):
        steps = np.arange(max(lo, -distance), min(hi, distance) + 1, dtype=np.int64)
        total = spent[:, None] + np.abs(steps)[None, :]
        row, step = np.nonzero(total <= distance)
        if len(row) > limit:
            return None
        rows = np.concatenate([rows[row], steps[step, None]], axis=1)
        spent = total[row, step]
    return rows[spent == distance]
