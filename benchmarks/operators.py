"""Tune the operator templates on this GPU and hold them against their goals and baselines.

* GEMM G1-G5 (fp32, M x N x K) vs cuBLAS (PyTorch matmul, TF32 off): goal >= 90 % of cuBLAS at
  4096^3 and 8192^3, faster than cuBLAS on the skinny 512x49x4608 and 128x3136x576.
* Depthwise conv2d D1-D9 (MobileNet, batch 1) vs cuDNN (PyTorch grouped conv, TF32 off).
* NCHW broadcast (4 ops x 3 shapes): the best config of each tactic, its bandwidth
  (engine's bytes_moved / time) against the H200's 4.16 TB/s device-to-device copy (goal >= 85 %)
  and against a copy measured here, at its size and at the row's bytes (the launch floor of
  small tensors); tile_broadcast should win on exp, div and rsqrt.
  Section broadcast16: the same in fp16 (half the bytes for the same work per element:
  where the gains of CINN's TileBroadcastTactic were measured).
* A custom kernel (Kernel Tuner's manner): a shared-memory transpose of 8192 x 8192 with
  tunable tile, rows per thread block and padding, against its untuned default and the copy.

Every workload is tuned with `--tuner` (xgb) through engine.tune and the GPU measurer, all
records going to one AutoTVM log (`--log`, resumed on a re-run). Timing is the runner's rule
for tuned configs and baselines alike. Stops starting new workloads after `--budget-s`;
each workload also stops once its share of the budget is spent.

    python benchmarks/operators.py --budget-s 420 --log ops.log --json ops.json \
        --markdown docs/benchmarks/operators-h200.md
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time
from datetime import datetime, timezone

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
os.environ.setdefault("CUPY_TF32", "0")

import engine  # noqa: E402
from conv2d_resnet import git_describe  # noqa: E402  (the sibling benchmark's helper)
from engine.callbacks import StopTuning, log_to_file  # noqa: E402
from engine.logfile import read_history  # noqa: E402
from engine.gpu.measurer import GpuMeasurer  # noqa: E402
from engine.gpu.baselines import BaselineUnavailable, measure_baseline  # noqa: E402
from engine.gpu.baselines import copy_bandwidth  # noqa: E402
from engine.baselines import DEFAULT_CONFIG_BASELINE  # noqa: E402
from engine.ops import DeviceLimits  # noqa: E402
from engine.tune import tune  # noqa: E402
from engine.tuners import get_tuner  # noqa: E402
from engine.workloads import BROADCAST, BROADCAST_FP16, GEMM, MOBILENET_DW, Preset, transpose_spec  # noqa: E402

DESIGN_COPY_BANDWIDTH = 4.16e12  # bytes/s read + written: the H200 copy of 2026-11-30 (README)
TRANSPOSE = Preset("K1", "Custom kernel", "custom", [transpose_spec(8192, 8192)], "transpose 8192×8192 (custom kernel)")
# 1024^3 first: what tuning learns there transfers to the larger squares (engine's xgb transfer).
SECTIONS = {"gemm": [GEMM[2], GEMM[0], GEMM[1], GEMM[3], GEMM[4]], "depthwise": MOBILENET_DW, "broadcast": BROADCAST,
            "broadcast16": BROADCAST_FP16, "custom": [TRANSPOSE]}
BROADCAST_TITLES = {"broadcast": "NCHW broadcast (fp32)", "broadcast16": "NCHW broadcast (fp16)"}
# Share of the budget each section's workloads get, in all.
SHARES = {"gemm": 0.5, "depthwise": 0.3, "broadcast": 0.2, "broadcast16": 0.2, "custom": 0.05}


def deadline_callback(deadline: float):
    def stop_at_deadline(state, configs, results):
        if time.time() > deadline:
            raise StopTuning(f"time share spent after {state.trials} trials")
    return stop_at_deadline


def us(result) -> float | None:
    return result.mean_cost * 1e6 if result is not None and result.ok else None


def vendor(task, measurer) -> tuple[float | None, str]:
    provider = task.template.baseline_provider
    if provider == DEFAULT_CONFIG_BASELINE:
        return None, ""
    try:
        record = measure_baseline(task, provider, measurer)
    except BaselineUnavailable as exc:
        return None, str(exc)
    return us(record), "" if record.ok else record.error_msg


def tune_workload(preset, measurer, options, deadline: float, history: list) -> dict:
    """Tune one workload; `history` (this section's earlier records) warm-starts the tuner and grows."""
    task = engine.create_task(preset.task_name, preset.args, DeviceLimits.for_device(measurer.device))
    trials = min(options.trials, len(task.config_space))
    tuner = get_tuner(options.tuner, task, seed=options.seed)
    tuner.load_history(history)
    start = time.time()
    callbacks = [log_to_file(options.log)] if options.log else []
    result = tune(task, tuner, measurer, trials, history=read_history(options.log) if options.log else (),
                  callbacks=[*callbacks, deadline_callback(deadline)], batch_size=options.batch_size)
    wall = time.time() - start
    history.extend(result.results)
    row = {
        "name": preset.name, "workload": preset.description, "task": task.name, "trials": result.trials + result.resumed,
        "measured_now": len(result.results), "tune_wall_s": wall,
        "configs_per_s": len(result.results) / wall if wall > 0 and result.results else None,
        "failures": sum(1 for r in result.results if not r.ok),
        "tuned_us": result.best.mean_cost * 1e6 if result.best else None,
        "best_entity": result.best.entity if result.best else None,
        "default_us": us(measurer.measure(task, [task.default_config()])[0]),
        "gflop": task.flops / 1e9,
    }
    row["vendor_us"], row["vendor_error"] = vendor(task, measurer)
    if task.name in ("broadcast_nchw", "custom"):
        row["bytes"] = task.template.bytes_moved(task.params)
    if task.name == "broadcast_nchw":
        row.update(tactic_bests(task, result.results))
        # Small tensors sit at the launch floor, where no kernel reaches the large-copy figure:
        # the copy kernel on the same bytes (half read, half written) says where that floor is.
        row["same_bytes_copy_us"] = copy_bandwidth(row["bytes"] // 2, measurer.timing)[0] * 1e6
    return row


def tactic_bests(task, records) -> dict:
    """Best time of each tactic among this run's records, and how much of its valid space was
    measured: a tactic is compared only where its whole space was (a cut-short search is not a loss)."""
    best: dict[str, float] = {}
    measured = collections.Counter()
    for record in records:
        tactic = task.config_space.from_entity(record.entity)["tactic"].val
        measured[tactic] += 1
        if record.ok:
            best[tactic] = min(best.get(tactic, float("inf")), record.mean_cost * 1e6)
    valid = collections.Counter(config["tactic"].val for config in map(task.config_space.get, task.config_space.iter_indexes())
                                if task.why_invalid(config) is None)
    out = {}
    for tactic in ("general", "tile_broadcast"):
        out.update({f"{tactic}_us": best.get(tactic), f"{tactic}_measured": measured[tactic], f"{tactic}_valid": valid[tactic]})
    return out


def fmt(value, spec: str) -> str:
    return format(value, spec) if value is not None else "—"


def broadcast_table(section_rows: list[dict], copy: float | None, title: str) -> list[str]:
    lines = ["", f"## {title}: both tactics, bandwidth vs copy", "",
             f"Bandwidth = bytes moved (x and out, or out alone, plus v) / time. Copy reference: the H200's"
             f" 4.16 TB/s; measured here: {fmt(copy and copy / 1e12, '.2f')} TB/s. \"% of that copy\" is the"
             " time of the float4 copy kernel moving the row's bytes over the tuned time.", "",
             "| workload | general µs | tile_broadcast µs | general / tile_broadcast | winner | best TB/s |"
             " % of 4.16 TB/s | ≥ 85 % | copy of the same bytes µs | % of that copy | default µs | configs/s |",
             "|---|---:|---:|---:|---|---:|---:|---|---:|---:|---:|---:|"]
    for r in section_rows:
        best = min([t for t in (r["general_us"], r["tile_broadcast_us"]) if t], default=None)
        bandwidth = r["bytes"] / (best * 1e-6) if best else None
        share = bandwidth / DESIGN_COPY_BANDWIDTH if bandwidth else None
        copy_us = r.get("same_bytes_copy_us")  # runs before session 4 did not measure it
        winner, ratio = "—", None
        short = [f"{tactic} {r[f'{tactic}_measured']} of {r[f'{tactic}_valid']}" for tactic in ("general", "tile_broadcast")
                 if r[f"{tactic}_measured"] < r[f"{tactic}_valid"]]
        if short:
            winner = "not compared: measured " + ", ".join(short)
        elif r["general_us"] and r["tile_broadcast_us"]:
            ratio = r["general_us"] / r["tile_broadcast_us"]
            winner = "tile_broadcast" if r["tile_broadcast_us"] < r["general_us"] else "general"
        elif r["general_us"]:
            winner = "general (only tactic valid)"
        lines.append(f"| {r['workload']} | {fmt(r['general_us'], '.1f')} | {fmt(r['tile_broadcast_us'], '.1f')} |"
                     f" {fmt(ratio, '.2f')} | {winner} | {fmt(bandwidth and bandwidth / 1e12, '.2f')} | {fmt(share and share * 100, '.0f')} |"
                     f" {'—' if share is None else 'yes' if share >= 0.85 else 'no'} | {fmt(copy_us, '.1f')} |"
                     f" {fmt(copy_us and best and copy_us / best * 100, '.0f')} | {fmt(r['default_us'], '.1f')} |"
                     f" {fmt(r['configs_per_s'], '.1f')} |")
    return lines


def markdown(rows: dict[str, list[dict]], meta: dict) -> str:
    d = meta["device"]
    lines = [
        "# Operator templates on the NVIDIA H200: tuned vs vendor libraries",
        "",
        f"- GPU: {d['name']} ({d['sm_count']} SMs), CUDA driver {d['driver_version']}, runtime {d['cuda_version']};"
        f" target `{meta['target']}`; date {meta['date']}; commit `{meta['commit']}`",
        f"- Tuner {meta['tuner']}, at most {meta['trials']} trials per workload, batch {meta['batch_size']},"
        f" budget {meta['budget_s']} s in all; every config checked against a float64 numpy reference"
        " (relative L2 < 1e-4) and timed as a CUDA graph of `number` launches, mean of repeats",
        f"- Command: `{meta['command']}`",
    ]
    if rows.get("gemm"):
        lines += ["", "## GEMM fp32 (row-major, M×N×K) vs cuBLAS (PyTorch matmul, TF32 off)", "",
                  "| workload | trials | tuned µs | tuned TFLOP/s | cuBLAS TFLOP/s | tuned / cuBLAS | goal | met | default µs | configs/s |",
                  "|---|---:|---:|---:|---:|---:|---|---|---:|---:|"]
        for r in rows["gemm"]:
            tuned = r["gflop"] / r["tuned_us"] * 1e3 if r["tuned_us"] else None
            cublas = r["gflop"] / r["vendor_us"] * 1e3 if r["vendor_us"] else None
            ratio = tuned / cublas if tuned and cublas else None
            goal, needed = (">= 0.90", 0.9) if r["name"] in ("G1", "G2") else ("> 1.00", 1.0 + 1e-9) if r["name"] in ("G4", "G5") else ("—", None)
            met = "—" if needed is None or ratio is None else ("yes" if ratio >= needed else "no")
            lines.append(f"| {r['workload']} | {r['trials']} | {fmt(r['tuned_us'], '.1f')} | {fmt(tuned, '.1f')} |"
                         f" {fmt(cublas, '.1f')} | {fmt(ratio, '.2f')} | {goal} | {met} | {fmt(r['default_us'], '.1f')} |"
                         f" {fmt(r['configs_per_s'], '.1f')} |")
    if rows.get("depthwise"):
        lines += ["", "## Depthwise conv2d (MobileNet, batch 1, K3 p1) vs cuDNN (PyTorch, TF32 off)", "",
                  "| layer | workload | trials | tuned µs | cuDNN µs | speedup vs cuDNN | default µs | configs/s |",
                  "|---|---|---:|---:|---:|---:|---:|---:|"]
        for r in rows["depthwise"]:
            speedup = r["vendor_us"] / r["tuned_us"] if r["tuned_us"] and r["vendor_us"] else None
            lines.append(f"| {r['name']} | {r['workload']} | {r['trials']} | {fmt(r['tuned_us'], '.1f')} |"
                         f" {fmt(r['vendor_us'], '.1f')} | {fmt(speedup, '.2f')}× | {fmt(r['default_us'], '.1f')} |"
                         f" {fmt(r['configs_per_s'], '.1f')} |")
    for section, title in BROADCAST_TITLES.items():
        if rows.get(section):
            lines += broadcast_table(rows[section], meta.get("copy_bandwidth"), title)
    if rows.get("custom"):
        copy = meta.get("copy_bandwidth")
        lines += ["", "## Custom kernel (tunable macros, Kernel Tuner's manner) vs its default and the copy", "",
                  f"Bandwidth = arguments' bytes / time; copy measured here: {fmt(copy and copy / 1e12, '.2f')} TB/s.", "",
                  "| workload | trials | tuned µs | default µs | speedup vs default | TB/s | % of copy | best config | configs/s |",
                  "|---|---:|---:|---:|---:|---:|---:|---|---:|"]
        for r in rows["custom"]:
            bandwidth = r["bytes"] / (r["tuned_us"] * 1e-6) if r["tuned_us"] else None
            speedup = r["default_us"] / r["tuned_us"] if r["tuned_us"] and r["default_us"] else None
            share = bandwidth / copy if bandwidth and copy else None
            best = ", ".join(f"{e[0]}={e[2]}" for e in r["best_entity"] or [])
            lines.append(f"| {r['workload']} | {r['trials']} | {fmt(r['tuned_us'], '.1f')} | {fmt(r['default_us'], '.1f')} |"
                         f" {fmt(speedup, '.2f')}× | {fmt(bandwidth and bandwidth / 1e12, '.2f')} |"
                         f" {fmt(share and share * 100, '.0f')} | {best} | {fmt(r['configs_per_s'], '.1f')} |")
    lines += ["", "## Pipeline speed per template", "", "| template | configs measured | tuning wall s | configs/s |",
              "|---|---:|---:|---:|"]
    for section, section_rows in rows.items():
        measured = sum(r["measured_now"] for r in section_rows)
        wall = sum(r["tune_wall_s"] for r in section_rows)
        lines.append(f"| {section} | {measured} | {wall:.0f} | {fmt(measured / wall if wall else None, '.1f')} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sections", default=",".join(SECTIONS), help="comma-separated: " + ", ".join(SECTIONS))
    parser.add_argument("--only", default="", help="comma-separated preset names (G1,G4,...): tune just these")
    parser.add_argument("--trials", type=int, default=200, help="per workload (a broadcast space holds 120 configs in fp32, 160 in fp16)")
    parser.add_argument("--tuner", default="xgb")
    parser.add_argument("--batch-size", type=int, default=48)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--budget-s", type=float, default=420.0)
    parser.add_argument("--run-timeout", type=float, default=12.0, help="seconds a kernel may run before it is killed")
    parser.add_argument("--log", default="operators.log", help="one AutoTVM log for every workload (resumed)")
    parser.add_argument("--json", default="operators.json")
    parser.add_argument("--markdown", default="docs/benchmarks/operators-h200.md")
    options = parser.parse_args(argv)
    sections = [s for s in options.sections.split(",") if s]
    unknown = sorted(set(sections) - set(SECTIONS))
    if unknown:
        parser.error(f"unknown section(s) {', '.join(unknown)}; known: {', '.join(SECTIONS)}")
    start = time.time()
    rows: dict[str, list[dict]] = {}
    # A slow random config of 8192^3 runs for seconds; give it time rather than a runner restart.
    with GpuMeasurer(build_workers=os.cpu_count(), run_timeout=options.run_timeout) as measurer:
        meta = {
            "device": measurer.device.to_dict(), "target": measurer.device.target,
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "commit": git_describe(),
            "tuner": options.tuner, "trials": options.trials, "batch_size": options.batch_size,
            "budget_s": options.budget_s,
            "command": "python " + " ".join([os.path.relpath(__file__)] + (argv or sys.argv[1:])),
        }
        share_total = sum(SHARES[s] for s in sections)
        section_end = start
        for section in sections:
            presets = [p for p in SECTIONS[section] if not options.only or p.name in options.only.split(",")]
            section_end += options.budget_s * SHARES[section] / share_total
            rows[section], history = [], []
            for i, preset in enumerate(presets):
                now = time.time()
                if now > start + options.budget_s:
                    print(f"budget spent: {preset.name} and later workloads not started", flush=True)
                    break
                deadline = now + max(5.0, (section_end - now) / (len(presets) - i))
                rows[section].append(tune_workload(preset, measurer, options, deadline, history))
                print(json.dumps(rows[section][-1], default=str), flush=True)
            if section in (*BROADCAST_TITLES, "custom") and "copy_bandwidth" not in meta:
                largest = max(r["bytes"] for r in rows[section]) if rows[section] else 2**28
                meta["copy_bandwidth"] = copy_bandwidth(largest // 2, measurer.timing)[1]
            with open(options.json, "w") as stream:
                json.dump({"meta": meta, "rows": rows}, stream, indent=1, default=str)
    os.makedirs(os.path.dirname(os.path.abspath(options.markdown)), exist_ok=True)
    with open(options.markdown, "w") as stream:
        stream.write(markdown(rows, meta))
    print(markdown(rows, meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
