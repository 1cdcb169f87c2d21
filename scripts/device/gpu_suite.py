"""Measurements the GPU suite keeps as data (run after `pytest -m gpu` on the device).

1. Baselines: cuDNN and the default config on ResNet-18 C1-C12 -> baselines-h200.log
2. C12 recording: every valid config of a restricted conv2d_nchw.cuda C12 space,
   built around what a 320-trial XGBoost tune found on the H200 (best: tile_f
   [-1,1,4,1], tile_y/x [-1,1,7,1], tile_rc [-1,16], full 3x3 window per step) ->
   c12_h200_recording.log.gz, with configs/s of the measuring pipeline. The restriction:
     tile_f: vthread in {1,2}, threads in {2,4,8,16}, inner in {1,2,4} (outer inferred)
     tile_y, tile_x: all 7 rows/columns on threads, or all 7 in one thread's inner extent
     tile_rc: inner (per shared-memory step) in {4,8,16,32}
     tile_ry: [-1,3] or [-1,1]; tile_rx: [-1,3]
     auto_unroll_max_step in {512,1500}, unroll_explicit in {0,1}
3. TopHub: the best conv2d_nchw.cuda config per GPU model of TVM's TopHub v0.08 log
   for every ResNet-18 C1-C12 workload it holds, re-measured here -> tophub-remeasured-h200.log.
   The log is third-party data the repository keeps no copy of: its path is the first
   argument (default ../shared/data/tophub/cuda_v0.08.log); the step is left out, and says
   so, when it is not there.
"""
from __future__ import annotations

import gzip
import itertools
import json
import os
import sys
import time

sys.path.insert(0, os.getcwd())

import engine  # noqa: E402
from engine.gpu.baselines import measure_baseline  # noqa: E402
from engine.gpu.measurer import GpuMeasurer  # noqa: E402
from engine.measure import to_record  # noqa: E402
from engine.logfile import canonical_args, format_record, pick_best, read_records  # noqa: E402
from engine.workloads import PRESETS  # noqa: E402

OUT = os.environ.get("OUT", "/tmp/out")
RESNET = [f"C{i}" for i in range(1, 13)]


def restricted_c12_entities() -> list[list]:
    tile_f = [[-1, v, t, i] for v in (1, 2) for t in (2, 4, 8, 16) for i in (1, 2, 4)]
    spatial = [[-1, 1, 7, 1], [-1, 1, 1, 7]]
    entities = []
    for f, y, x, rc, ry, unroll, explicit in itertools.product(
        tile_f, spatial, spatial, (4, 8, 16, 32), (3, 1), (512, 1500), (0, 1)
    ):
        entities.append([
            ["tile_f", "sp", f], ["tile_y", "sp", y], ["tile_x", "sp", x], ["tile_rc", "sp", [-1, rc]],
            ["tile_ry", "sp", [-1, ry]], ["tile_rx", "sp", [-1, 3]],
            ["auto_unroll_max_step", "ot", unroll], ["unroll_explicit", "ot", explicit],
        ])
    return entities


def baselines(m: GpuMeasurer, summary: dict) -> None:
    lines, rows = [], {}
    for name in RESNET:
        preset = PRESETS[name]
        task = engine.create_task(preset.task_name, preset.args)
        records = [measure_baseline(task, provider, m) for provider in ("cudnn", "default-config")]
        lines += [format_record(r) for r in records]
        rows[name] = {r.tvm_version: (r.mean_cost * 1e6 if r.ok else f"error {int(r.error_no)}") for r in records}
        print(name, rows[name], flush=True)
    with open(os.path.join(OUT, "baselines-h200.log"), "w") as f:
        f.write("\n".join(lines) + "\n")
    summary["baselines_us"] = rows


def c12_recording(m: GpuMeasurer, summary: dict) -> None:
    task = engine.create_task(PRESETS["C12"].task_name, PRESETS["C12"].args)
    configs = [task.config_space.from_entity(e) for e in restricted_c12_entities()]
    valid = [c for c in configs if task.config_space.is_valid(c)]
    lines, results = [], []
    start = time.time()
    for k in range(0, len(valid), 256):
        batch = valid[k:k + 256]
        batch_results = m.measure(task, batch)
        results += batch_results
        lines += [format_record(to_record(task, c, r, m.device.target)) for c, r in zip(batch, batch_results)]
        print(f"C12 recording {len(results)}/{len(valid)} {len(results) / (time.time() - start):.1f} configs/s", flush=True)
    wall = time.time() - start
    with gzip.open(os.path.join(OUT, "c12_h200_recording.log.gz"), "wt") as f:
        f.write("\n".join(lines) + "\n")
    ok = sorted(r.mean_cost for r in results if r.ok)
    summary["c12_recording"] = {
        "configs": len(valid), "wall_s": wall, "configs_per_s": len(valid) / wall,
        "errors": {str(e): sum(1 for r in results if int(r.error_no) == e) for e in sorted({int(r.error_no) for r in results})},
        "best_us": ok[0] * 1e6 if ok else None, "median_us": ok[len(ok) // 2] * 1e6 if ok else None,
    }
    print(summary["c12_recording"], flush=True)


TOPHUB_LOG = sys.argv[1] if len(sys.argv) > 1 else os.path.join("..", "shared", "data", "tophub", "cuda_v0.08.log")


def tophub(m: GpuMeasurer, summary: dict) -> None:
    if not os.path.exists(TOPHUB_LOG):
        summary["tophub"] = f"left out: no TopHub log at {TOPHUB_LOG}"
        print(summary["tophub"], flush=True)
        return
    with open(TOPHUB_LOG) as f:
        best = pick_best(read_records(f))
    resnet = {canonical_args(PRESETS[n].args): n for n in RESNET}
    lines, rows = [], []
    for (model, task_name, args), record in sorted(best.items(), key=lambda kv: (kv[0][0], resnet.get(kv[0][2], ""))):
        if task_name != "conv2d_nchw.cuda" or args not in resnet:
            continue
        task = engine.create_task(task_name, record.args)
        config = task.config_space.from_entity(record.entity)
        result = m.measure(task, [config])[0]
        lines.append(f"# {resnet[args]}: TopHub best on {model} (index {record.config_index}, "
                     f"{record.mean_cost * 1e6:.1f} us there), re-measured on the H200")
        lines.append(format_record(to_record(task, config, result, m.device.target)))
        rows.append({"layer": resnet[args], "model": model, "index": record.config_index,
                     "there_us": record.mean_cost * 1e6, "h200_us": result.mean_cost * 1e6 if result.ok else None,
                     "error": int(result.error_no)})
        print(rows[-1], flush=True)
    with open(os.path.join(OUT, "tophub-remeasured-h200.log"), "w") as f:
        f.write("\n".join(lines) + "\n")
    summary["tophub"] = rows


def main() -> None:
    summary: dict = {}
    with GpuMeasurer(build_workers=os.cpu_count()) as m:
        summary["device"] = m.device.to_dict()
        for step in (baselines, tophub, c12_recording):
            step(m, summary)
    with open(os.path.join(OUT, "gpu_suite.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print("\nlayer  cudnn_us  default_us")
    for name, row in summary["baselines_us"].items():
        print(f"{name:>5}  {row['baseline:cudnn']}  {row['baseline:default-config']}")
    print("C12 recording:", summary["c12_recording"])


if __name__ == "__main__":
    main()
