"""Compare tuners on a replayed recording: trials needed to reach 95 % of its best config.

For each tuner and each of `--seeds` seeds, tune against the recording (a
ReplayMeasurer, the task's space restricted to the recorded configs) until a
config within `--share` of the recording's fastest is measured, and report
the median number of trials (and the quartiles, and how many runs got there
within the budget; a run that never gets there counts as budget + 1).

    .venv/bin/python benchmarks/tuners.py                       # synthetic recording
    .venv/bin/python benchmarks/tuners.py --recording c12.log   # a real one (one task, one GPU)

Without `--recording` it runs on a synthetic recording: `--configs` (default
3000) distinct valid configs of the C12 conv2d_nchw.cuda space (ResNet-18's
7x7 512->512 K3 layer), sampled with seed 0 and timed by engine.synthetic's
analytic model (see that module's docstring: warp and SM fill, latency hiding,
per-thread reuse, register pressure, unrolling, bank conflicts, 3 % log-normal
noise, 1 % run-time failures). The goal, for real recordings: XGBoost reaches
95 % in at most a third of the trials random search needs.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import engine  # noqa: E402
from engine.callbacks import StopTuning  # noqa: E402
from engine.replay import (  # noqa: E402
    RecordingError,
    ReplayMeasurer,
    load_recording,
    recording_task,
    restrict_to_recording,
)
from engine.synthetic import synthetic_recording  # noqa: E402
from engine.tuners import TUNERS, get_tuner  # noqa: E402
from engine.workloads import get_preset  # noqa: E402


def synthetic_c12(configs: int):
    preset = get_preset("C12")
    task = engine.create_task(preset.task_name, preset.args)
    records = synthetic_recording(task, configs, seed=0)
    return restrict_to_recording(task, records), records


def trials_to_reach(task, measurer, tuner_name, seed, target_cost, budget, batch_size) -> int:
    def stop_at_target(state, configs, results):
        if state.best is not None and state.best.mean_cost <= target_cost:
            raise StopTuning("target reached")

    tuner = get_tuner(tuner_name, task, seed=seed)
    result = engine.tune(task, tuner, measurer, budget, callbacks=[stop_at_target], batch_size=batch_size)
    reached = result.best is not None and result.best.mean_cost <= target_cost
    return result.trials if reached else budget + 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recording", help="a log of one task on one GPU model (default: synthetic C12)")
    parser.add_argument("--configs", type=int, default=3000, help="configs in the synthetic recording")
    parser.add_argument("--tuners", nargs="+", default=["random", "grid", "ga", "xgb"], choices=sorted(TUNERS))
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--share", type=float, default=0.95, help="fraction of the best performance to reach")
    parser.add_argument("--batch-size", type=int, default=16)
    options = parser.parse_args(argv)

    if options.recording:
        try:
            measurer = ReplayMeasurer(load_recording(options.recording))
            task = recording_task(measurer.records)
        except (OSError, RecordingError) as exc:
            parser.error(f"--recording: {exc}")
        source = options.recording
    else:
        task, records = synthetic_c12(options.configs)
        measurer = ReplayMeasurer(records)
        source = f"synthetic C12 conv2d_nchw.cuda, {options.configs} configs (engine.synthetic, seed 0)"
    ok_costs = [r.mean_cost for r in measurer.records if r.ok and r.workload_key == task.workload_key]
    if not ok_costs:
        parser.error(f"{source} holds no error-free record of {task.name}: there is no best config to reach")
    best = min(ok_costs)
    target = best / options.share
    within = sum(cost <= target for cost in ok_costs)
    budget = len(task.config_space)

    print(f"recording: {source}; {len(task.config_space)} configs, {len(ok_costs)} ran, "
          f"best {task.flops / best / 1e9:.1f} GFLOPS; {within} within {options.share:.0%} of it")
    print(f"seeds 0..{options.seeds - 1}, batch {options.batch_size}, budget {budget} trials\n")
    print("| tuner | median trials to 95 % | quartiles | reached | vs random | seconds |")
    print("|---|---:|---:|---:|---:|---:|")
    medians = {}
    for name in options.tuners:
        started = time.perf_counter()
        trials = [trials_to_reach(task, measurer, name, seed, target, budget, options.batch_size)
                  for seed in range(options.seeds)]
        elapsed = time.perf_counter() - started
        medians[name] = float(np.median(trials))
        q1, q3 = np.percentile(trials, [25, 75])
        reached = sum(t <= budget for t in trials)
        versus = f"{medians[name] / medians['random']:.2f}" if "random" in medians else "-"
        print(f"| {name} | {medians[name]:.1f} | {q1:.0f}–{q3:.0f} | {reached}/{options.seeds} | {versus} "
              f"| {elapsed:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
