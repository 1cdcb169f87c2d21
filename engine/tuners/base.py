"""The one interface every tuner implements: propose a batch, learn from results.

A tuner walks a task's config space. It proposes only valid configs it has
never proposed or seen measured, learns from each measured batch, and takes
earlier measurements of the same workload (a resumed log) through
`load_history`. Its randomness comes from one numpy Generator seeded at
construction, so a seed makes a whole run reproducible.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, ClassVar, Iterable, Sequence

import numpy as np

from ..logfile import Record
from ..measure import MeasureResult, result_of
from ..space import EntityError

if TYPE_CHECKING:  # pragma: no cover
    from ..space import ConfigEntity
    from ..task import Task


def score_of(task: "Task", result: MeasureResult) -> float:
    """FLOP/s of a result (1/seconds for a kernel with no FLOP count, such as a Kernel Tuner
    kernel's), 0 for a failure: a failure still teaches, as the worst score."""
    if not result.ok:
        return 0.0
    return (task.flops or 1) / result.mean_cost


class Tuner(ABC):
    """Proposes configs of `task` and learns from their measurements."""

    name: ClassVar[str] = ""

    def __init__(self, task: "Task", seed: int | None = None):
        self.task = task
        self.space = task.config_space
        self.rng = np.random.default_rng(seed)
        self.visited: set[int] = set()
        self._exhausted = False

    # -- the interface ------------------------------------------------------------
    def next_batch(self, n: int) -> list["ConfigEntity"]:
        """Up to `n` valid configs never proposed nor measured before; fewer only when the space runs out."""
        if n <= 0 or not self.has_next():
            return []
        batch: dict[int, ConfigEntity] = {}

        def take(candidates: Iterable["ConfigEntity"]) -> None:
            for config in candidates:
                if len(batch) == n:
                    return
                if config.index in self.visited or config.index in batch or not self.space.is_valid(config):
                    continue
                batch[config.index] = config

        take(self._propose(n))
        if len(batch) < n:
            take(self.random_unvisited(n - len(batch), exclude=batch.keys()))
        if not batch:
            self._exhausted = True
        self.visited.update(batch)
        return list(batch.values())

    def update(self, configs: Sequence["ConfigEntity"], results: Sequence[MeasureResult]) -> None:
        """Learn from measured configs (failures included)."""
        if len(configs) != len(results):
            raise ValueError(f"{len(configs)} configs but {len(results)} results")
        self.visited.update(config.index for config in configs)
        self._learn(list(configs), list(results))

    def batch_size(self, allowed: int) -> int:
        """How many configs the next batch should hold, 1..`allowed` (the tuning loop asks before
        each batch); a tuner that learns between batches may want small ones early."""
        return allowed

    def has_next(self) -> bool:
        return not self._exhausted and len(self.visited) < len(self.space)

    def load_history(self, records: Iterable[Record]) -> int:
        """Take earlier measurements of this task's workload on the device being tuned.

        They count as measured (never proposed again) and teach the tuner.
        Records of other workloads are ignored here; model-based tuners use
        them for transfer learning. Returns how many records were taken.
        """
        configs, results = [], []
        for record in records:
            if record.workload_key != self.task.workload_key:
                continue
            config = config_from_entity(self.space, record.entity)
            if config is not None:
                configs.append(config)
                results.append(result_of(record))
        if configs:
            self.update(configs, results)
        return len(configs)

    # -- for subclasses -----------------------------------------------------------
    @abstractmethod
    def _propose(self, n: int) -> Iterable["ConfigEntity"]:
        """Candidates for the next batch, best first; the base class drops visited or invalid ones."""

    def _learn(self, configs: list["ConfigEntity"], results: list[MeasureResult]) -> None:
        """Use measured results; tuners that do not learn keep this no-op."""

    def random_unvisited(self, n: int, exclude: Iterable[int] = ()) -> list["ConfigEntity"]:
        """Up to `n` distinct valid configs, uniformly among those not visited nor in `exclude`."""
        return self.space.sample(self.rng, n, exclude=self.visited.union(exclude))


def config_from_entity(space, entity: list) -> "ConfigEntity | None":
    """The config an entity names in `space`, or None when the space does not hold it."""
    try:
        return space.get(space.index_of(entity))
    except (EntityError, IndexError):
        return None
