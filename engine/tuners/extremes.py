"""Extreme configs: every ordered knob at its smallest or its largest value.

An ordered knob is a list of at least four numbers (threads, a tile size, a block height), so
that its two ends are at most half its values; a split knob's factorisations and knobs of two
or three values are left free. Kernel spaces often keep their fastest configs there (the largest
tile a thread can hold with the smallest block height), where a model fitted on the rest of the
space rates them low: on the Kernel Tuner hub's convolution spaces of the A4000, MI250X and
W6600 the configs within 95 % of the best stand at an end of 70-81 % of these knobs, against 37 %
of all configs, and the 60 extreme configs of those spaces (1.4 %) hold 1 of the 11, 2 of the 9
and 1 of the 4 configs within 95 % (the A100's one is not among them); Kernel Tuner's bounded
optimizers get there by clamping to the bounds. The XGBoost tuner gives them a share of its
slots. A space without an ordered knob (the direct convolutions' splits and unroll switches) has
no extreme configs; on one where every one of a dozen knobs must stand at an end (a GEMM's) they
are few and far apart.
"""
from __future__ import annotations

from numbers import Real
from typing import TYPE_CHECKING, Sequence

import numpy as np

from ..space import ENUMERATE_LIMIT, OtherKnob

if TYPE_CHECKING:  # pragma: no cover
    from ..space import ConfigEntity, ConfigSpace

# A knob of fewer values has ends that are most of it (auto_unroll_max_step's 0 and 1500 of three).
_ORDERED_MIN_VALUES = 4


class ExtremeConfigs:
    """The extreme configs of one space: all of them on a space of at most ENUMERATE_LIMIT
    configs, on a larger one those near given configs."""

    def __init__(self, space: "ConfigSpace"):
        self.space = space
        # (position, the options it may take): an ordered knob's smallest and largest used values.
        self.ends: list[tuple[int, tuple[int, ...]]] = []
        for position, knob in enumerate(space.knobs):
            used = space.used_options(position)
            if isinstance(knob, OtherKnob) and len(used) >= _ORDERED_MIN_VALUES and all(_is_number(knob.options[o]) for o in used):
                ordered = sorted(used, key=lambda o: knob.options[o])
                self.ends.append((position, (ordered[0], ordered[-1])))
        self._all: list[ConfigEntity] | None = None

    def is_extreme(self, config: "ConfigEntity") -> bool:
        digits = config.digits
        return bool(self.ends) and all(digits[p] in ends for p, ends in self.ends)

    def corner(self, config: "ConfigEntity") -> tuple[int, ...]:
        """Which end each ordered knob of `config` stands at (its options there): the corner an
        extreme config is in, whatever its free knobs."""
        return tuple(config.digits[p] for p, _ in self.ends)

    def corners_first(self, ranked: Sequence["ConfigEntity"], measured: Sequence["ConfigEntity"],
                      scores: Sequence[float]) -> list["ConfigEntity"]:
        """`ranked` (unvisited extreme configs, the model's favourite first) in the order to
        measure them: first the favourite of each corner no measured config is in, then the rest
        by the best score measured in their corner (the best corner's first), `ranked`'s order
        breaking ties. A model fitted elsewhere rates the corners alike, and spent its extreme
        slots on the configs of one corner while the fast one waited (conv-W6600's, issue 17)."""
        best: dict[tuple[int, ...], float] = {}
        for config, score in zip(measured, scores):
            if self.is_extreme(config):
                corner = self.corner(config)
                best[corner] = max(best.get(corner, 0.0), score)
        first, corners = [], set()
        for config in ranked:
            corner = self.corner(config)
            if corner not in best and corner not in corners:
                first.append(config)
                corners.add(corner)
        taken = {c.index for c in first}
        rest = sorted((c for c in ranked if c.index not in taken), key=lambda c: -best.get(self.corner(c), -1.0))
        return first + rest

    def unvisited(self, rng: np.random.Generator, visited, near: Sequence["ConfigEntity"]) -> list["ConfigEntity"]:
        """Valid extreme configs not in `visited`: every one on an enumerable space; on a larger
        one, those that `near`'s configs become with their ordered knobs moved to random ends
        (random draws of a full space cost a validity check each, mostly failed)."""
        if not self.ends:
            return []
        if len(self.space) <= ENUMERATE_LIMIT:
            if self._all is None:
                self._all = [c for c in self.space.sample(rng, len(self.space)) if self.is_extreme(c)]
            return [c for c in self._all if c.index not in visited]
        found: dict[int, ConfigEntity] = {}
        for start in near:
            digits = list(start.digits)
            for position, ends in self.ends:
                digits[position] = ends[int(rng.integers(2))]
            config = self.space.get(self.space.index_from_digits(digits))
            if config.index not in visited and config.index not in found and self.space.is_valid(config):
                found[config.index] = config
        return list(found.values())


def _is_number(value) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)
