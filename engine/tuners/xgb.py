"""Model-based tuning in AutoTVM's manner (XGBTuner).

Every `refit_every` new measurements (32; the first model after 32 random
ones) the tuner refits an XGBoost ranking model on all measured configs
(failures as the worst score), runs simulated annealing over the space to
find the `plan_size * diversity_filter_ratio` configs the model likes best,
keeps a diverse `plan_size` of them (greedy:
predicted rank plus one point per knob value not yet in the plan), and measures
that plan, best first. The last `epsilon` share of each plan is spent on
uniform random configs, so the model keeps seeing parts of the space it
underrates. Before the first fit the tuner samples at random, unless earlier
records of other workloads or GPUs (`transfer_from`) gave it a base model.
"""
from __future__ import annotations

from typing import Iterable

import numpy as np

from ..logfile import Record
from .base import Tuner, score_of
from .cost_model import XGBoostCostModel
from .features import FeatureTable
from .sa import SimulatedAnnealingOptimizer


class XGBTuner(Tuner):
    name = "xgb"

    def __init__(
        self,
        task,
        seed=None,
        plan_size: int = 64,
        refit_every: int = 32,
        diversity_filter_ratio: float = 2.0,
        epsilon: float = 0.05,
        sa_iterations: int = 500,
        sa_chains: int = 128,
        num_boost_round: int = 80,
        transfer_from: Iterable[Record] = (),
    ):
        super().__init__(task, seed)
        if plan_size < 1 or refit_every < 1 or diversity_filter_ratio < 1 or not 0 <= epsilon < 1:
            raise ValueError(
                "XGB tuner needs plan_size >= 1, refit_every >= 1, diversity_filter_ratio >= 1, 0 <= epsilon < 1"
            )
        self.plan_size = plan_size
        self.refit_every = refit_every
        self.diversity_filter_ratio = diversity_filter_ratio
        self.epsilon = epsilon
        self.features = FeatureTable(task)
        self.model = XGBoostCostModel(seed=int(self.rng.integers(2**31)), num_boost_round=num_boost_round)
        self.optimizer = SimulatedAnnealingOptimizer(
            self.space, self.rng, n_iter=sa_iterations, parallel_size=sa_chains
        )
        self._measured = []
        self._scores: list[float] = []
        self._fitted_on = 0  # measurements the model last saw
        self._plan = []
        transfer = list(transfer_from)
        if transfer:
            self.transfer(transfer)

    def _propose(self, n):
        proposed = []
        while self._plan and len(proposed) < n:
            proposed.append(self._plan.pop(0))
        return proposed  # the base class fills the rest at random

    def _learn(self, configs, results):
        self._measured += configs
        self._scores += [score_of(self.task, result) for result in results]
        # Refitting every half plan (AutoTVM refits every whole plan, 64) lets the first
        # model act after 32 random trials and later ones correct a plan half-way.
        if len(self._measured) >= self._fitted_on + self.refit_every:
            if self.model.fit(self.features.of(self._measured), np.array(self._scores)):
                self._fitted_on = len(self._measured)
                self._make_plan()

    def load_history(self, records: Iterable[Record]) -> int:
        """Measurements of this workload teach the model; those of other workloads feed transfer learning."""
        records = list(records)
        others = [r for r in records if r.workload_key != self.task.workload_key]
        if others:
            self.transfer(others)
        return super().load_history(records)

    def transfer(self, records: list[Record]) -> bool:
        """Warm-start from earlier records of other workloads or GPUs; False when they teach nothing."""
        x, scores, groups = self.features.of_records(records)
        base = self.model.spawn()
        if len(x) == 0 or not base.fit(x, scores, groups):
            return False
        self.model.use_base(base)
        if not self._plan:
            self._make_plan()
        return True

    def _make_plan(self) -> None:
        def score(configs):
            return self.model.predict(self.features.of(configs))

        n_random = int(round(self.epsilon * self.plan_size))
        n_model = self.plan_size - n_random
        candidates = self.optimizer.find_maximums(
            score, int(n_model * self.diversity_filter_ratio), self.visited
        )
        self._plan = diverse_pick(candidates, n_model)


def diverse_pick(candidates: list, n: int) -> list:
    """Greedily pick `n` of `candidates` (best first) for rank plus knob-value novelty.

    Each pick maximises (1 - its rank share) + the number of knobs whose value
    no earlier pick has: AutoTVM's submodular diversity filter, with the
    model's order breaking ties.
    """
    if len(candidates) <= n:
        return list(candidates)
    values = [list(_hashable(c.values()).items()) for c in candidates]
    rank_bonus = 1.0 - np.arange(len(candidates)) / len(candidates)
    seen: list[set] = [set() for _ in values[0]]
    remaining = list(range(len(candidates)))
    picked = []
    for _ in range(n):
        gains = [rank_bonus[i] + sum(v not in s for (_, v), s in zip(values[i], seen)) for i in remaining]
        best = remaining.pop(int(np.argmax(gains)))
        picked.append(candidates[best])
        for (_, v), s in zip(values[best], seen):
            s.add(v)
    return picked


def _hashable(values: dict) -> dict:
    return {name: tuple(v) if isinstance(v, list) else v for name, v in values.items()}
