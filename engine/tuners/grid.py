"""Grid search: every valid config in index order."""
from __future__ import annotations

from .base import Tuner


class GridSearchTuner(Tuner):
    name = "grid"

    def __init__(self, task, seed=None):
        super().__init__(task, seed)
        self._indices = self.space.iter_indexes()

    def _propose(self, n):
        proposed = []
        for index in self._indices:
            if index in self.visited:
                continue
            config = self.space.get(index)
            if not self.space.is_valid(config):
                self.visited.add(index)
                continue
            proposed.append(config)
            if len(proposed) == n:
                break
        return proposed
