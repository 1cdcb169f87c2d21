"""Measured configs per second with the default tuner, on every ResNet-18 layer and comparable
layers of other networks (goal: at least 25 on the H200 with its 16 cores).

Each layer is tuned with `engine.tune` (the next batch proposed while the current one is
measured) and the GPU measurer for `--seconds` of wall time; a layer's rate is its
measured configs over that wall time, compile and timing included. Planning time (the
tuner's `next_batch` and `update`) is noted too: overlapped, it costs throughput only
where it is longer than measuring a batch. Logs every record under --out.

    python3 scripts/device/configs_per_second.py --out $OUT      # 17 layers x 16 s, about 5 minutes
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import engine  # noqa: E402
from engine.callbacks import StopTuning, log_to_file  # noqa: E402
from engine.ops.base import DeviceLimits  # noqa: E402
from engine.tune import tune  # noqa: E402
from engine.tuners import DEFAULT_TUNER, get_tuner  # noqa: E402
from engine.workloads import PRESETS, conv2d_args  # noqa: E402

# Beside ResNet-18's C1-C12: ResNet-50's 1x1 layers, a VGG-16 3x3 layer, a batch-16 layer and
# a MobileNet depthwise layer, the kinds the 6.7-18.7 configs/s run of issue 17 measured.
def _batch(args: list, n: int) -> list:
    data = ["TENSOR", [n, *args[0][1][1:]], args[0][2]]
    return [data, *args[1:]]


OTHERS = {
    "R50-1x1-56-64-256": ("conv2d_nchw.cuda", conv2d_args(56, 64, 256, 1, 1, 0)),
    "R50-1x1-14-1024-256": ("conv2d_nchw.cuda", conv2d_args(14, 1024, 256, 1, 1, 0)),
    "VGG16-3x3-28-512-512": ("conv2d_nchw.cuda", conv2d_args(28, 512, 512, 3, 1, 1)),
    "C9-batch16": ("conv2d_nchw.cuda", _batch(PRESETS["C9"].args, 16)),
    "MobileNet-D5": (PRESETS["D5"].task_name, PRESETS["D5"].args),
}


def layers() -> dict[str, tuple[str, list]]:
    return {**{f"C{i}": (PRESETS[f"C{i}"].task_name, PRESETS[f"C{i}"].args) for i in range(1, 13)}, **OTHERS}


def timed(tuner):
    """Wrap a tuner's next_batch and update to add up the wall time they take."""
    spent = {"planning_s": 0.0}
    for method in ("next_batch", "update"):
        original = getattr(tuner, method)

        def wrapper(*args, _original=original, **kwargs):
            started = time.perf_counter()
            try:
                return _original(*args, **kwargs)
            finally:
                spent["planning_s"] += time.perf_counter() - started

        setattr(tuner, method, wrapper)
    return spent


def tune_for(name: str, task_name: str, args: list, measurer, options) -> dict:
    task = engine.create_task(task_name, args, DeviceLimits.for_device(measurer.device))
    tuner = get_tuner(options.tuner, task, seed=0)
    spent = timed(tuner)
    deadline = time.perf_counter() + options.seconds

    def stop_at_deadline(state, configs, results):
        if time.perf_counter() >= deadline:
            raise StopTuning("time is up")

    log = Path(options.out) / f"{name}.log"
    started = time.perf_counter()
    result = tune(task, tuner, measurer, options.max_trials, callbacks=[log_to_file(str(log)), stop_at_deadline],
                  batch_size=options.batch_size)
    wall = time.perf_counter() - started
    measured = len(result.results)
    return {"layer": name, "configs": len(task.config_space), "measured": measured, "wall_s": round(wall, 2),
            "configs_per_s": round(measured / wall, 2) if wall else None,
            "planning_ms_per_config": round(spent["planning_s"] * 1e3 / measured, 2) if measured else None,
            "failures": sum(not r.ok for r in result.results),
            "best_gflops": round(task.flops / result.best.mean_cost / 1e9, 1) if result.best else None}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=os.environ.get("OUT", "configs-per-second"))
    parser.add_argument("--tuner", default=DEFAULT_TUNER)
    parser.add_argument("--seconds", type=float, default=16.0, help="wall seconds of tuning per layer")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-trials", type=int, default=5000)
    parser.add_argument("--layers", nargs="+", help="layer names (default: all)")
    options = parser.parse_args(argv)
    Path(options.out).mkdir(parents=True, exist_ok=True)
    from engine.gpu.measurer import GpuMeasurer  # CuPy: only on the GPU box

    chosen = layers()
    if options.layers:
        chosen = {name: chosen[name] for name in options.layers}
    rows = []
    with GpuMeasurer(build_workers=os.cpu_count()) as measurer:
        for name, (task_name, args) in chosen.items():
            rows.append(tune_for(name, task_name, args, measurer, options))
            print(json.dumps(rows[-1]), flush=True)
    (Path(options.out) / "configs_per_second.json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
    rates = [r["configs_per_s"] for r in rows if r["configs_per_s"]]
    table = ["| layer | configs in space | measured | wall s | configs/s | planning ms/config | failures | best GFLOPS |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    table += [f"| {r['layer']} | {r['configs']:,} | {r['measured']} | {r['wall_s']} | {r['configs_per_s']} | "
              f"{r['planning_ms_per_config']} | {r['failures']} | {r['best_gflops']} |" for r in rows]
    table.append(f"\n{options.tuner}, batch {options.batch_size}, {options.seconds:g} s a layer: configs/s "
                 f"min {min(rates):.1f}, median {statistics.median(rates):.1f}; goal >= 25 on every layer: "
                 f"{'met' if min(rates) >= 25 else 'not met'}")
    (Path(options.out) / "configs_per_second.md").write_text("\n".join(table) + "\n", encoding="utf-8")
    print("\n".join(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
