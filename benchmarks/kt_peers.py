"""Kernel Tuner 1.5's strategies replayed on a benchmark space (simulation mode, no GPU).

Kernel Tuner re-reads its cache on every call, re-evaluates configs it has seen (answered
from the cache, not counted by its budget) and reports restricted configs as invalid; the
trial count here is the position of a config among the distinct recorded configs it
evaluated, in order, which is what a GPU would have measured. A run stops once it has
evaluated a config within the target (its budget is spent there), as ours do: what it
would do afterwards changes no position, and bayes_opt's later refits cost minutes.
"""
from __future__ import annotations

import io
import random
import warnings
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np

# Strategies of Kernel Tuner 1.5 that optimise one objective and need nothing beyond its
# own requirements (skopt, pyatf and pymoo's nsga2/nsga3 need extra packages or two
# objectives; brute_force walks the space in order).
STRATEGIES = ("random_sample", "genetic_algorithm", "bayes_opt", "basinhopping", "firefly_algorithm", "pso",
              "simulated_annealing", "diff_evo", "dual_annealing", "greedy_ils", "greedy_mls", "mls",
              "ordered_greedy_mls", "minimize")
# bayes_opt's default ("multi-ultrafast") predicts once every five evaluations to save
# wall time; in simulation that time is free, so it refits at every evaluation ("ei").
STRATEGY_OPTIONS = {"bayes_opt": {"method": "ei"}}


_target_ms: float | None = None
_evaluated: list[tuple[tuple, object]] = []  # (config values, time) of every answer, in order


def _stop_at_target() -> None:
    """Wrap the simulation runner once: it notes every answer, and a batch holding a config
    within the target spends the budget."""
    from kernel_tuner.runners.simulation import SimulationRunner

    if getattr(SimulationRunner.run, "stops_at_target", False):
        return
    original = SimulationRunner.run

    def run(self, parameter_space, tuning_options):
        parameter_space = list(parameter_space)
        results = original(self, parameter_space, tuning_options)
        for config, result in zip(parameter_space, results):
            if result is not None:
                _evaluated.append((tuple(config), result.get("time")))
        if _target_ms is not None and any(isinstance(t, (int, float)) and t <= _target_ms for _, t in _evaluated):
            tuning_options.budget.max_fevals = tuning_options.budget.num_fevals
        return results

    run.stops_at_target = True
    SimulationRunner.run = run


def trials_to_reach(space, cache_file: Path, strategy: str, seed: int, target_cost: float, budget: int) -> int | None:
    """Distinct recorded configs the strategy evaluated until one costs at most `target_cost`
    (the position of that one), or None when it did not get there within `budget`."""
    global _target_ms
    import kernel_tuner
    from kernel_tuner.util import StopCriterionReached

    _stop_at_target()
    _target_ms = target_cost * 1e3
    _evaluated.clear()
    allowed = set(space.kt_cache)
    keys = list(space.kt_params)

    def recorded(params):  # Kernel Tuner calls a function restriction with a dict of values
        return ",".join(str(params[k]) for k in keys) in allowed

    random.seed(seed)
    np.random.seed(seed)
    options = {"max_fevals": budget, **STRATEGY_OPTIONS.get(strategy, {})}
    with warnings.catch_warnings(), redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        try:
            kernel_tuner.tune_kernel(
                "kernel", "__global__ void kernel() {}", [1], [], space.kt_params, restrictions=recorded,
                cache=str(cache_file), simulation_mode=True, strategy=strategy, strategy_options=options,
                verbose=False, quiet=True,
            )
        except StopCriterionReached:
            pass  # a strategy whose first evaluation, outside its own handler, reached the target
    seen: set[str] = set()
    for config, time_ms in _evaluated:
        key = ",".join(str(v) for v in config)
        if key not in allowed or key in seen:
            continue
        seen.add(key)
        if len(seen) > budget:
            return None
        if isinstance(time_ms, (int, float)) and time_ms <= _target_ms:
            return len(seen)
    return None
