"""Random search: uniform draws among the valid configs not measured yet."""
from __future__ import annotations

from .base import Tuner


class RandomTuner(Tuner):
    name = "random"

    def _propose(self, n):
        return self.random_unvisited(n)
