"""Model-based tuning in AutoTVM's manner (XGBTuner), started small and searching locally too.

On a space its optimizer scores whole (at most 20,000 configs) the tuner asks the tuning
loop for small batches while it has measured few configs (`first_batch`, 4, growing by an
eighth of what it has measured up to the loop's batch size: 8 at 64 measured, 16 at 128; a
quarter, 16 at 64, refitted half as often and read 10-20 % more median trials on the four convolution
spaces at seeds 0-49, issue 17). It refits an XGBoost
ranking model on all measured configs (failures as the worst score) after every batch,
every `refit_every` measurements (16) once batches are that large: the first model acts
after 4 trials, not after a batch of 16. Of the first batch (before any model), one config is
uniform and `snapped_first` (3) are snapped draws (`snapping`: each knob's option drawn
uniformly, an invalid draw snapped to the nearest valid config, Kernel Tuner's way), which land
on a constraint's edge where uniform configs would not (on dedisp-A4000 14 % of the configs are
within 95 % of the best, and 24 % of snapped draws; docs/benchmarks/tuners.md has what it does to
the trials); the rest of the first batch is uniform, as before. With a transfer plan, or a
resumed log, the first batch is the model's.
After each refit simulated annealing over the space finds the
`plan_size * diversity_filter_ratio` configs the model likes best, of which a diverse
`plan_size` are kept (greedy: predicted rank plus one point per knob value not yet in the
plan). A batch takes, in turn, the plan's next config and one of the model's favourite
one-knob moves from the best configs measured (`local_share`, a quarter of the slots the
extreme configs below leave: local search, which a model that underrates a narrow optimum's
surroundings misses), the best config of each of `basins` basins (configs `basin_distance`
knobs apart) in turn;
each slot is, with probability `epsilon`, a uniform random config instead, so the model
keeps seeing parts of the space it underrates. A share of each batch after the first
(`extreme_share`, an eighth) goes to extreme configs (every ordered knob at its smallest or
largest value, `extremes`), a region fast on many kernel spaces that a model fitted elsewhere
rates low: the model's favourite of each corner (which end each ordered knob is at) not measured
yet, then those of the best measured corner; and the best extreme config measured is one more
incumbent of the local moves. Earlier records of other workloads or GPUs (`transfer_from`) give it a base
model, and then a plan before the first trial.
"""
from __future__ import annotations

from typing import Iterable

import numpy as np

from ..columns import ConfigColumns, valid_mask
from ..logfile import Record
from .base import Tuner, score_of
from .cost_model import XGBoostCostModel
from .extremes import ExtremeConfigs
from .features import FeatureTable
from .sa import SimulatedAnnealingOptimizer
from .snapping import SnappedDraws


# Local moves take at most this many one-knob steps from each incumbent.
_STEPS_PER_INCUMBENT = 64


class XGBTuner(Tuner):
    name = "xgb"

    def __init__(
        self,
        task,
        seed=None,
        plan_size: int = 32,
        refit_every: int = 16,
        diversity_filter_ratio: float = 2.0,
        epsilon: float = 0.05,
        sa_iterations: int = 500,
        sa_chains: int = 128,
        num_boost_round: int = 80,
        nthread: int | None = 1,
        transfer_from: Iterable[Record] = (),
        first_batch: int = 4,
        batch_growth: float = 0.125,
        local_share: float = 0.25,
        basins: int = 4,
        basin_distance: int = 2,
        extreme_share: float = 0.125,
        snapped_first: int = 3,
    ):
        super().__init__(task, seed)
        if (plan_size < 1 or refit_every < 1 or diversity_filter_ratio < 1 or not 0 <= epsilon < 1
                or first_batch < 1 or batch_growth < 0 or not 0 <= local_share <= 1 or basins < 1 or basin_distance < 1
                or not 0 <= extreme_share <= 1 or snapped_first < 0):
            raise ValueError(
                "XGB tuner needs plan_size >= 1, refit_every >= 1, diversity_filter_ratio >= 1, 0 <= epsilon < 1, "
                "first_batch >= 1, batch_growth >= 0, 0 <= local_share <= 1, basins >= 1, basin_distance >= 1, "
                "0 <= extreme_share <= 1, snapped_first >= 0"
            )
        self.plan_size = plan_size
        self.refit_every = refit_every
        self.diversity_filter_ratio = diversity_filter_ratio
        self.epsilon = epsilon
        self.first_batch = first_batch
        self.batch_growth = batch_growth
        self.local_share = local_share
        self.basins = basins
        self.basin_distance = basin_distance
        self.extreme_share = extreme_share
        self.snapped_first = snapped_first
        self.extremes = ExtremeConfigs(self.space)
        self.snapped = SnappedDraws(self.space)
        self._options = [self.space.used_options(p) for p in range(len(self.space.knobs))]
        self.features = FeatureTable(task)
        # One XGBoost thread by default: the model fits tens to thousands of rows and the
        # annealer predicts 128 at a time, work smaller than OpenMP's start and spin-wait; on a
        # busy host (compile workers, other jobs) more threads made planning 20-50x slower
        # (issue 17), and the model and its scores are the same for any thread count.
        self.model = XGBoostCostModel(
            seed=int(self.rng.integers(2**31)), num_boost_round=num_boost_round, nthread=nthread
        )
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

    def batch_size(self, allowed):
        # Small batches while few configs are measured: the model learns after each batch, so
        # the first model acts after `first_batch` trials, not after a whole batch of 16. Only
        # where the optimizer scores the space whole (milliseconds a refit): on a larger space
        # every refit anneals for seconds, and small batches would multiply that planning.
        if len(self.space) > self.optimizer.exhaustive_limit:
            return allowed
        return max(1, min(allowed, max(self.first_batch, int(self.batch_growth * len(self.visited)))))

    @property
    def uses_extremes(self) -> bool:
        """extreme_share=0, or a space without an ordered knob, is the tuner without extreme
        configs, seed for seed: no draw for them, no extreme incumbent."""
        return self.extreme_share > 0 and bool(self.extremes.ends)

    def _propose(self, n):
        # A batch mixes the model's plan with the model's best one-knob moves from the best
        # configs measured (local search, what basin hopping exploits), best of each first;
        # each slot is a uniform random config with probability epsilon, so exploration
        # happens in every batch. After the first batch a share goes to extreme configs.
        if self.snapped_first and not self._measured and not self._plan:
            return self._first_picks(n)
        wanted = self._measured and self.uses_extremes
        extreme = self._extreme_picks(self._share_of(self.extreme_share, n)) if wanted else []
        return self._model_picks(n - len(extreme), {c.index for c in extreme}) + extreme

    def _first_picks(self, n: int) -> list:
        """The first batch, before any model or plan: one uniform config, then `snapped_first`
        snapped draws (nearest valid configs to uniform draws of each knob's option), then the
        model's picks as in any batch (none yet: the base class fills them at random)."""
        first = self.random_unvisited(1)
        taken = {c.index for c in first}
        snapped = self.snapped.draw(self.rng, min(self.snapped_first, n - len(first)), exclude=self.visited | taken)
        taken |= {c.index for c in snapped}
        return first + snapped + self._model_picks(n - len(taken), taken)

    def _share_of(self, share: float, n: int) -> int:
        """`share` of `n` slots, the fraction rounded up or down at random: an eighth of a
        batch of 4 is one slot every other batch, not none or one in every batch."""
        whole, part = divmod(share * n, 1.0)
        return int(whole) + int(self.rng.random() < part)

    def _extreme_picks(self, n: int) -> list:
        """`n` unvisited extreme configs: the model's favourite of each corner not measured yet,
        then the best measured corner's favourites (`ExtremeConfigs.corners_first`; random order
        before any model); on a space too large to enumerate, among the extreme versions of the
        plan's configs."""
        pool = self.extremes.unvisited(self.rng, self.visited, near=self._plan or self._measured) if n else []
        if not pool:
            return []
        if self.model.can_predict:
            order = np.argsort(-self.model.predict(self.features.of(pool)), kind="stable")
        else:
            order = self.rng.permutation(len(pool))
        ranked = [pool[int(k)] for k in order]
        return self.extremes.corners_first(ranked, self._measured, self._scores)[:n]

    def _model_picks(self, n, taken: set[int]):
        local = iter(self._local_moves(round(self.local_share * n)) if self._measured else ())
        proposed, taken = [], set(taken)
        for slot in range(n):
            pick = None
            if self.rng.random() < self.epsilon:
                pick = next(iter(self.random_unvisited(1, exclude=taken)), None)
            elif slot % 2 == 1 or not self._plan:
                pick = next((c for c in local if c.index not in taken), None)
            while pick is None and self._plan:
                candidate = self._plan.pop(0)
                if candidate.index not in taken and candidate.index not in self.visited:
                    pick = candidate
            if pick is None:
                pick = next((c for c in local if c.index not in taken), None)
            if pick is not None:
                proposed.append(pick)
                taken.add(pick.index)
        return proposed  # the base class fills what is missing at random

    def _local_moves(self, n):
        """Up to `n` unvisited valid configs one knob away from the best measured configs of
        distinct basins (`_incumbents`), the model's favourites first (in random order before
        any model). The incumbents take turns, so the neighbours of one basin, the one the
        model likes, cannot fill every local slot while a second basin waits unexplored."""
        per_incumbent: list[list] = []
        seen: set[int] = set()
        for digits in self._incumbents():
            moves = []
            steps = self._one_knob_moves(digits)
            columns = ConfigColumns(self.space, np.array(steps, dtype=np.int64).reshape(len(steps), len(digits)))
            valid = valid_mask(self.space, columns) if steps else []  # in bulk: 64 moves an incumbent
            for row in np.flatnonzero(valid).tolist():
                index = int(columns.indexes[row])
                if index not in self.visited and index not in seen:
                    seen.add(index)
                    moves.append(columns.config(row))
            per_incumbent.append(moves)
        every = [c for moves in per_incumbent for c in moves]
        if not every:
            return []
        if self.model.can_predict:
            scores = self.model.predict(self.features.of(every))
        else:
            scores = self.rng.random(len(every))
        queues, start = [], 0
        for moves in per_incumbent:
            order = np.argsort(-scores[start:start + len(moves)], kind="stable")
            queues.append([moves[int(k)] for k in order])
            start += len(moves)
        picked = []
        while len(picked) < n and any(queues):
            for queue in queues:
                if queue and len(picked) < n:
                    picked.append(queue.pop(0))
        return picked

    def _incumbents(self) -> list[tuple[int, ...]]:
        """The digits of the best measured configs, `basins` of them, each at least
        `basin_distance` knobs from every better one taken: a cluster of near-duplicates of
        one optimum counts once, and the second-best basin gets its own local moves. Then the
        best extreme config measured, which a better basin elsewhere would leave unexplored
        (however near it is to the basins taken)."""
        order = np.argsort(-np.asarray(self._scores), kind="stable")
        chosen: list[tuple[int, ...]] = []
        for i in order:
            digits = self._measured[i].digits
            if all(sum(a != b for a, b in zip(digits, c)) >= self.basin_distance for c in chosen):
                chosen.append(digits)
                if len(chosen) == self.basins:
                    break
        extreme = next((self._measured[i] for i in order if self._scores[i] > 0
                        and self.extremes.is_extreme(self._measured[i])), None) if self.uses_extremes else None
        if extreme is not None and extreme.digits not in chosen:
            chosen.append(extreme.digits)
        return chosen

    def _one_knob_moves(self, digits: tuple[int, ...]) -> list[tuple[int, ...]]:
        """Digits one knob from `digits`; a random `_STEPS_PER_INCUMBENT` of them where knobs
        have hundreds of options (a full space)."""
        steps = [(p, o) for p, options in enumerate(self._options) for o in options if o != digits[p]]
        if len(steps) > _STEPS_PER_INCUMBENT:
            steps = [steps[k] for k in self.rng.choice(len(steps), _STEPS_PER_INCUMBENT, replace=False)]
        return [digits[:p] + (o,) + digits[p + 1:] for p, o in steps]

    def _learn(self, configs, results):
        self._measured += configs
        self._scores += [score_of(self.task, result) for result in results]
        # Refit after every batch up to `refit_every` configs (early batches are small, and a
        # model on 4-60 rows fits in milliseconds), every `refit_every` measurements after; on
        # a space the optimizer anneals (seconds a refit) every `refit_every` whatever the batch.
        anneals = len(self.space) > self.optimizer.exhaustive_limit
        step = self.refit_every if anneals else min(self.refit_every, len(configs))
        if len(self._measured) >= self._fitted_on + step:
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

        candidates = self.optimizer.find_maximums(
            score, int(self.plan_size * self.diversity_filter_ratio), self.visited
        )
        self._plan = diverse_pick(candidates, self.plan_size)


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
