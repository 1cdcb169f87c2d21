"""Tune conv2d layers (fp32; ResNet-18's C1-C12 at batch 1 by default) on this GPU and compare with cuDNN.

For each layer: the XGBoost tuner through `engine.tune` and the GPU measurer
for at most `--trials` configs (resuming from the layer's log in --log-dir),
then cuDNN (fp32, TF32 off, cudnn.benchmark) and the template's default config,
all timed by the runner's rule (CUDA graph of `number` launches, `repeat` times).
Writes a JSON summary and a Markdown table; stops starting new layers once
`--budget-s` seconds have passed (run it again with the same --log-dir to go on).
`--layers` names presets of any conv template: C1-C12 are the direct schedule's (conv2d_nchw.cuda),
IG-C1 ... and the batched IG-... the implicit GEMM's, WG-... the fused Winograd conv's, WN-... the unfused one's
(engine.workloads). `--vary KNOB` first measures
the log's fastest configs at that knob's other options (benchmarks/variants.py), so a tuning run that
resumes logs from before a knob existed learns what it does.

    python benchmarks/conv2d_resnet.py --trials 1000 --log-dir bench_logs \
        --json bench.json --markdown conv2d.md
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import datetime, timezone

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import engine  # noqa: E402
from engine.gpu.baselines import cudnn_conv2d  # noqa: E402
from engine.gpu.measurer import GpuMeasurer  # noqa: E402
from engine.ops.base import DeviceLimits  # noqa: E402
from engine.callbacks import append_to_log, log_to_file  # noqa: E402
from engine.logfile import read_history  # noqa: E402
from engine.tune import tune  # noqa: E402
from engine.tuners import get_tuner  # noqa: E402
from engine.workloads import PRESETS  # noqa: E402
from provenance import git_describe  # noqa: E402,F401  (operators.py takes it from here too)
import variants  # noqa: E402

LAYERS = [f"C{i}" for i in range(1, 13)]


def tune_layer(name: str, measurer: GpuMeasurer, options: argparse.Namespace) -> dict:
    preset = PRESETS[name]
    task = engine.create_task(preset.task_name, preset.args, DeviceLimits.for_device(measurer.device))
    log = os.path.join(options.log_dir, f"{name.lower()}.log")
    extra = {"plan_size": options.batch_size, "sa_iterations": options.sa_iterations} if options.tuner == "xgb" else {}
    tuner = get_tuner(options.tuner, task, seed=options.seed, **extra)
    start = time.time()
    history = read_history(log)
    seeded = variants.seeds(task, history, options.vary, dict(options.set_varied), options.vary_top) if options.vary else []
    seeded_results = measurer.measure(task, seeded) if seeded else []
    if seeded:
        append_to_log(log, task, measurer.device.target, seeded, seeded_results)
        history = read_history(log)
    result = tune(task, tuner, measurer, options.trials, history=history, callbacks=[log_to_file(log)],
                  batch_size=options.batch_size)
    wall = time.time() - start
    measured = len(result.results) + len(seeded)
    default = measurer.measure(task, [task.default_config()])[0]
    cudnn = cudnn_conv2d(task, settings=measurer.timing)
    best = result.best
    row = {
        "layer": name, "template": task.name, "workload": preset.description, "gflop": task.flops / 1e9,
        "trials": result.trials + result.resumed, "seeded": len(seeded),
        "measured_now": measured, "tune_wall_s": wall,
        "configs_per_s": measured / wall if wall > 0 and measured else None,
        "failures": sum(1 for r in [*seeded_results, *result.results] if not r.ok),
        "tuned_us": best.mean_cost * 1e6 if best else None,
        "tuned_config": best.config_index if best else None,
        "cudnn_us": cudnn.mean_cost * 1e6 if cudnn.ok else None,
        "default_us": default.mean_cost * 1e6 if default.ok else None,
    }
    if row["tuned_us"] and row["cudnn_us"]:
        row["speedup_vs_cudnn"] = row["cudnn_us"] / row["tuned_us"]
    if row["tuned_us"] and row["default_us"]:
        row["speedup_vs_default"] = row["default_us"] / row["tuned_us"]
    return row


def markdown(rows: list[dict], meta: dict) -> str:
    templates = ", ".join(sorted({f"`{r.get('template') or PRESETS[r['layer']].task_name}`" for r in rows}))
    lines = [
        f"# conv2d on the {meta['device']['name']}: tuned vs cuDNN",
        "",
        f"- GPU: {meta['device']['name']} ({meta['device']['sm_count']} SMs, driver CUDA {meta['device']['driver_version']},"
        f" runtime {meta['device']['cuda_version']}), target `{meta['target']}`",
        f"- Date: {meta['date']}; commit: `{meta['commit']}`",
        f"- Tuner: {meta['tuner']} (plan size = batch {meta['batch_size']}, {meta['sa_iterations']} annealing steps),"
        f" at most {meta['trials']} trials per layer;"
        f" templates {templates}",
        f"- Timing (all columns): CUDA graph of `number` launches, `number` grown until one measurement"
        f" takes {meta['timing']['min_repeat_ms']} ms, {meta['timing']['repeat']} repeats, mean of repeats;"
        f" every measured config checked against a float64 numpy reference (relative L2 < 1e-4)",
        "- cuDNN: PyTorch F.conv2d, fp32 with TF32 off, cudnn.benchmark on",
        f"- Command: `{meta['command']}`",
        "",
        "| layer | workload | trials | tuned µs | cuDNN µs | speedup vs cuDNN | default µs | tuned GFLOPS | configs/s |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        def f(value, fmt):
            return format(value, fmt) if value is not None else "—"
        gflops = r["gflop"] * 1e6 / r["tuned_us"] if r.get("tuned_us") else None
        lines.append(
            f"| {r['layer']} | {r['workload']} | {r['trials']} | {f(r['tuned_us'], '.1f')} | {f(r['cudnn_us'], '.1f')} |"
            f" {f(r.get('speedup_vs_cudnn'), '.2f')}× | {f(r['default_us'], '.1f')} | {f(gflops, '.0f')} |"
            f" {f(r['configs_per_s'], '.1f')} |"
        )
    speedups = [r["speedup_vs_cudnn"] for r in rows if r.get("speedup_vs_cudnn")]
    if speedups:
        geo = 1.0
        for s in speedups:
            geo *= s
        geo **= 1 / len(speedups)
        lines += ["", f"Geometric mean speedup over cuDNN: {geo:.2f}× ({len(speedups)} layers)."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", default=",".join(LAYERS))
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--tuner", default="xgb")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sa-iterations", type=int, default=500, help="xgb tuner: simulated-annealing steps per plan")
    parser.add_argument("--log-dir", default="bench_logs")
    parser.add_argument("--json", default="conv2d_resnet.json", help="summary; rows of earlier runs are kept")
    parser.add_argument("--markdown", default="conv2d_resnet.md")
    parser.add_argument("--budget-s", type=float, default=None, help="start no new layer after this many seconds")
    parser.add_argument("--vary", metavar="KNOB", help="first measure the log's fastest configs at this knob's other "
                        "options (benchmarks/variants.py), then tune")
    parser.add_argument("--set-varied", action="append", default=[], type=variants.knob_value, metavar="KNOB=VALUE",
                        help="with --vary: another knob's value in those variants (one the varied knob makes moot)")
    parser.add_argument("--vary-top", type=int, default=3, help="with --vary: this many fastest distinct configs")
    options = parser.parse_args(argv)
    unknown = [name for name in options.layers.split(",") if name not in PRESETS]
    if unknown:
        parser.error(f"--layers: no preset named {', '.join(unknown)}")
    os.makedirs(options.log_dir, exist_ok=True)
    start = time.time()
    rows: dict[str, dict] = {}
    if os.path.exists(options.json):
        with open(options.json) as stream:
            rows = {r["layer"]: r for r in json.load(stream)["rows"]}
    layers = [*rows, *(name for name in options.layers.split(",") if name not in rows)]
    with GpuMeasurer(build_workers=os.cpu_count()) as measurer:
        meta = {
            "device": measurer.device.to_dict(), "target": measurer.device.target,
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "commit": git_describe(),
            "tuner": options.tuner, "trials": options.trials, "batch_size": options.batch_size,
            "sa_iterations": options.sa_iterations,
            "timing": {"min_repeat_ms": measurer.timing.min_repeat_ms, "repeat": measurer.timing.repeat},
            "command": "python " + " ".join([os.path.relpath(__file__)] + (argv or sys.argv[1:])),
        }
        for name in options.layers.split(","):
            if options.budget_s is not None and time.time() - start > options.budget_s:
                print(f"budget spent: {name} and later layers not started", flush=True)
                break
            rows[name] = tune_layer(name, measurer, options)
            print(json.dumps(rows[name]), flush=True)
            ordered = [rows[n] for n in layers if n in rows]
            with open(options.json, "w") as stream:
                json.dump({"meta": meta, "rows": ordered}, stream, indent=1)
            with open(options.markdown, "w") as stream:
                stream.write(markdown(ordered, meta))
    print(markdown([rows[n] for n in layers if n in rows], meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
