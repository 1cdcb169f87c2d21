"""Simulated annealing over a config space to find the configs a model scores best.

AutoTVM's SimulatedAnnealingOptimizer: `parallel_size` chains walk the space
one neighbour at a time (a neighbour changes one knob and stays valid), accept
a worse step with probability exp(delta / temperature) as the temperature cools
linearly, and the best `num` configs seen that are not excluded are kept. The
chains persist between calls, so later searches start where earlier ones ended.

A view no larger than `exhaustive_limit` configs (a space restricted to a
replayed recording, a small workload) is scored whole instead: that is exact,
and cheaper than the walks, which in a sparse restricted view mostly fall back
to searching for the nearest allowed config.
"""
from __future__ import annotations

import heapq
from typing import TYPE_CHECKING, Callable, Container, Sequence

import numpy as np

from ..columns import ConfigColumns, random_neighbours
from ..space import ENUMERATE_LIMIT

if TYPE_CHECKING:  # pragma: no cover
    from ..space import ConfigEntity

ScoreFn = Callable[[ConfigColumns], np.ndarray]


class SimulatedAnnealingOptimizer:
    def __init__(
        self,
        space,
        rng: np.random.Generator,
        n_iter: int = 500,
        temperature: tuple[float, float] = (1.0, 0.0),
        parallel_size: int = 128,
        early_stop: int = 50,
        exhaustive_limit: int = ENUMERATE_LIMIT,
    ):
        self.space = space
        self.rng = rng
        self.n_iter = n_iter
        self.temperature = temperature
        self.parallel_size = parallel_size
        self.early_stop = early_stop
        self.exhaustive_limit = exhaustive_limit
        self._points: list[ConfigEntity] | None = None

    def find_maximums(self, score: ScoreFn, num: int, exclude: Container[int]) -> list["ConfigEntity"]:
        """Up to `num` distinct configs not in `exclude`, best predicted first.

        `score` gets a `ConfigColumns` (a sequence of configs that also offers its knobs as
        numpy columns): every step hands it all chains' neighbours at once."""
        if len(self.space) <= self.exhaustive_limit:
            return self._score_all(score, num, exclude)
        points = self._points
        if points is None:
            sampled = self.space.sample(self.rng, min(self.parallel_size, len(self.space)))
            if not sampled:
                return []
            points = ConfigColumns.of_configs(self.space, sampled)
        scores = np.asarray(score(points), dtype=np.float64)
        best = _TopK(num, exclude)
        best.offer(points, scores)

        start, end = self.temperature
        temp, cool = start, (start - end) / (self.n_iter + 1)
        last_change = 0
        for step in range(1, self.n_iter + 1):
            if step - last_change > self.early_stop:
                break
            # Every chain's neighbour in one go: drawn together, checked for validity in bulk,
            # only the chains whose draw was invalid drawing again (engine.columns).
            candidates = random_neighbours(self.space, points, self.rng)
            new_scores = np.asarray(score(candidates), dtype=np.float64)
            if best.offer(candidates, new_scores):
                last_change = step
            with np.errstate(over="ignore", divide="ignore"):
                accept_prob = np.exp((new_scores - scores) / max(temp, 1e-9))
            accept = self.rng.random(len(points)) < accept_prob
            points = ConfigColumns(self.space, np.where(accept[:, None], candidates.digits, points.digits),
                                   np.where(accept, candidates.indexes, points.indexes))
            scores = np.where(accept, new_scores, scores)
            temp -= cool
        self._points = points
        return best.ranked()

    def _score_all(self, score: ScoreFn, num: int, exclude: Container[int]) -> list["ConfigEntity"]:
        configs = self.space.sample(self.rng, len(self.space), exclude=exclude)
        if not configs:
            return []
        columns = ConfigColumns.of_indexes(self.space, [c.index for c in configs])
        best = _TopK(num, ())
        best.offer(columns, np.asarray(score(columns), dtype=np.float64))
        return best.ranked()


# Offers a top-k walks between two looks at its threshold (a step offers 128; scoring a view
# whole offers up to 20,000 at once).
_CHUNK = 256


class _TopK:
    """The `k` best distinct configs offered so far, skipping excluded indexes."""

    def __init__(self, k: int, exclude: Container[int]):
        self.k = k
        self.exclude = exclude
        self.heap: list[tuple[float, int]] = []
        self.configs: dict[int, ConfigEntity] = {}

    def offer(self, configs: ConfigColumns, scores: np.ndarray) -> bool:
        """Take what beats the k-th best so far, in the order offered; True when the kept set
        changed. A full heap's k-th best only rises, so a score not above it at the start of a
        chunk of offers can never get in: numpy drops those, and Python walks the rest."""
        changed = False
        indexes = configs.indexes
        for start in range(0, len(scores), _CHUNK):
            stop = min(len(scores), start + _CHUNK)
            if len(self.heap) < self.k:
                rows = range(start, stop)
            else:
                rows = (start + np.flatnonzero(scores[start:stop] > self.heap[0][0])).tolist()
            for row in rows:
                value, index = scores[row], int(indexes[row])
                if index in self.configs or index in self.exclude:
                    continue
                if len(self.heap) < self.k:
                    heapq.heappush(self.heap, (float(value), index))
                elif value > self.heap[0][0]:
                    _, dropped = heapq.heapreplace(self.heap, (float(value), index))
                    del self.configs[dropped]
                else:
                    continue
                self.configs[index] = configs.config(row)
                changed = True
        return changed

    def ranked(self) -> list["ConfigEntity"]:
        return [self.configs[index] for _, index in sorted(self.heap, reverse=True)]
