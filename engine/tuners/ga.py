"""Genetic search in AutoTVM's manner: elites, fitness-proportional parents,
one-point crossover over the knobs, and per-knob mutation.

A config's genes are its knob option indexes (`config.digits`). Fitness is
FLOP/s (failures score 0). A generation is bred from the best `pop_size`
configs measured so far, so a generation can start before every config of the
last one has come back (the tuning loop measures in batches). A mutation
draws the knob's new option among those the space's configs use, and in a
restricted view an invalid child becomes the nearest kept config, so children
stay inside it; children that are still invalid or already measured are
dropped and bred again.
"""
from __future__ import annotations

from .base import Tuner, score_of


class GATuner(Tuner):
    name = "ga"

    def __init__(self, task, seed=None, pop_size: int = 100, elite_num: int = 3, mutation_prob: float = 0.1):
        super().__init__(task, seed)
        if pop_size < 2 or not 0 <= elite_num < pop_size or not 0.0 <= mutation_prob <= 1.0:
            raise ValueError("GA tuner needs pop_size >= 2, 0 <= elite_num < pop_size, 0 <= mutation_prob <= 1")
        self.pop_size = min(pop_size, len(self.space))
        self.elite_num = elite_num
        self.mutation_prob = mutation_prob
        self.scores: dict[int, float] = {}
        self._genes: dict[int, tuple[int, ...]] = {}
        self._pending = []
        # Mutations draw from the options the view uses: a space restricted to a recording
        # keeps 24 of tile_f's 220, and a draw from all 220 would make most children invalid.
        self._options = [self.space.used_options(p) for p in range(len(self.space.knobs))]

    def _learn(self, configs, results):
        for config, result in zip(configs, results):
            self.scores[config.index] = score_of(self.task, result)
            self._genes[config.index] = config.digits

    def _propose(self, n):
        proposed = []
        while len(proposed) < n:
            if not self._pending:
                self._pending = self._breed() if self.scores else self.random_unvisited(self.pop_size)
                if not self._pending:
                    break
            config = self._pending.pop(0)
            if config.index not in self.visited:
                proposed.append(config)
        return proposed

    def _breed(self):
        ranked = sorted(self.scores, key=self.scores.get, reverse=True)[: self.pop_size]
        parents = [self._genes[i] for i in ranked]
        fitness = [self.scores[i] for i in ranked]
        total = sum(fitness)
        weights = [f / total for f in fitness] if total > 0 else None
        radixes = self.space.radixes

        children, seen = [], set(self.visited)
        # Elites are already measured; they live on as parents, not as new trials.
        wanted = self.pop_size - self.elite_num
        for _ in range(wanted * 20):
            if len(children) == wanted:
                break
            a, b = self.rng.choice(len(parents), size=2, p=weights)
            point = int(self.rng.integers(len(radixes)))
            genes = list(parents[a][:point] + parents[b][point:])
            for knob, options in enumerate(self._options):
                if self.rng.random() < self.mutation_prob:
                    genes[knob] = options[int(self.rng.integers(len(options)))]
            child = self.space.get(self.space.index_from_digits(genes))
            if not self.space.is_valid(child):
                # In a restricted view (a recording) recombined knobs mostly leave it: the
                # child becomes the kept config nearest to it. A full space drops it.
                child = self.space.nearest_kept(genes, self.rng, exclude=seen)
            if child is None or child.index in seen or not self.space.is_valid(child):
                continue
            seen.add(child.index)
            children.append(child)
        return children
