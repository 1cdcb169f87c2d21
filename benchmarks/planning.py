"""What planning costs: wall milliseconds a tuner spends per proposed config on full spaces.

The tuner runs against engine.synthetic's analytic cost (every config of the full space
answers, no GPU), batch 16, for `--trials` configs; the time inside `next_batch` and
`update` (fitting, annealing, features, validity) is planning. On the GPU that time is
hidden when it is shorter than measuring a batch (engine.tune proposes the next batch
while the current one is measured); the goal is at most 5 ms per config.

    .venv/bin/python benchmarks/planning.py                      # xgb on C12, C1 and D1
    .venv/bin/python benchmarks/planning.py --tuners xgb tpe --workloads C12
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import engine  # noqa: E402
from engine.synthetic import synthetic_result  # noqa: E402
from engine.tuners import DEFAULT_TUNER, get_tuner  # noqa: E402
from engine.workloads import get_preset  # noqa: E402


def planning_ms_per_config(preset: str, tuner_name: str, trials: int, batch: int, seed: int) -> tuple[float, int]:
    spec = get_preset(preset)
    task = engine.create_task(spec.task_name, spec.args)
    tuner = get_tuner(tuner_name, task, seed=seed)
    planning = 0.0
    done = 0
    while done < trials:
        started = time.perf_counter()
        configs = tuner.next_batch(tuner.batch_size(batch))  # as engine.tune asks
        planning += time.perf_counter() - started
        results = [synthetic_result(task, config) for config in configs]
        started = time.perf_counter()
        tuner.update(configs, results)
        planning += time.perf_counter() - started
        done += len(configs)
    return planning * 1e3 / done, len(task.config_space)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tuners", nargs="+", default=[DEFAULT_TUNER])
    parser.add_argument("--workloads", nargs="+", default=["C12", "C1", "D1"])
    parser.add_argument("--trials", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=16)
    options = parser.parse_args(argv)
    print("| tuner | workload | configs in its space | trials | planning ms per config |")
    print("|---|---|---:|---:|---:|")
    for tuner in options.tuners:
        for preset in options.workloads:
            ms, size = planning_ms_per_config(preset, tuner, options.trials, options.batch_size, seed=0)
            print(f"| {tuner} | {preset} | {size:,} | {options.trials} | {ms:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
