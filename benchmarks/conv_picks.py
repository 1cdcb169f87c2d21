"""Issue 18 step 2's tables: each convolution's schedule picked in one measuring process, its figures
quoted from the others.

    python benchmarks/conv_picks.py --pick PICK.json RUN.json... [--markdown OUT.md]

The runs are `verify_bests.py --json` files, each a fresh process that timed the logs' bests against
cuDNN (5 interleaved rounds, warm and cold). A layer is a workload's args, whichever template tuned it:
ResNet-18's C4 (the direct schedule, `conv2d_nchw.cuda`) and IG-C4 (the implicit GEMM) are one layer.
PICK chooses each layer's schedule among its templates, the one whose worse ratio to cuDNN (warm or cold)
is higher, and the figures are the other runs' timings of that schedule, so the process that chose is not
the one quoted. A workload's config is the latest run's (a workload tuned again has a new best); a
batched layer has one schedule. cuDNN's side of a layer is the fastest process's (warm median, over every
run given, the picking one too): its exhaustive search does not pick the same algorithm in every process
(C11 at batch 1: 8.5 µs in one, 13.8 µs in the next), and the goal is its best. Goals (issue 18): every
batch-1 layer faster than cuDNN beyond its interval, their geometric mean ≥ 1.6× warm and cold; batched
layers ≥ 1.1×.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

BATCH_ONE_GEOMEAN, BATCHED_GOAL = 1.6, 1.1


def load(path: Path) -> dict:
    run = json.loads(path.read_text())
    run["label"] = f"{run['meta']['commit']} {path.stem.removeprefix('confirm-')}"
    return run


# A layer's presets by schedule: C2 (the direct one), IG-C2, WG-C2 and WN-C2 are one layer.
SCHEDULES = {"IG-": "implicit GEMM", "WG-": "Winograd", "WN-": "Winograd unfused"}


def layer_of(workload: str) -> str:
    """C4 and IG-C4 are one layer, and IG-56-64-64-k3-b16 and WG-56-64-64-k3-b16."""
    return next((workload.removeprefix(prefix) for prefix in SCHEDULES if workload.startswith(prefix)), workload)


def schedule_of(workload: str) -> str:
    return next((name for prefix, name in SCHEDULES.items() if workload.startswith(prefix)), "direct")


def fastest_vendor(runs: list[dict]) -> dict[str, dict]:
    """Layer -> the vendor side (warm and cold spreads) of the process whose warm median was lowest."""
    fastest: dict[str, dict] = {}
    for run in runs:
        for row in run["rows"]:
            vendor, layer = row.get("vendor") or {}, layer_of(row["workload"])
            if vendor.get("warm") and vendor.get("cold") and (
                    layer not in fastest or vendor["warm"]["median"] < fastest[layer]["warm"]["median"]):
                fastest[layer] = vendor
    return fastest


def is_batched(layer: str) -> bool:
    """A batched preset's layer ends in -b<batch>; ResNet-18's batch-1 layers are C1 ... C12."""
    return layer.rsplit("-b", 1)[-1].isdigit()


def ratios(row: dict, vendor: dict) -> dict | None:
    """vendor / ours, warm and cold: the medians' and the interval from the rounds' extremes."""
    ours = row.get("ours") or {}
    out = {}
    for side in ("warm", "cold"):
        mine, theirs = ours.get(side), vendor.get(side)
        if not mine or not theirs:
            return None
        out[side] = (theirs["median"] / mine["median"], theirs["min"] / mine["max"], theirs["max"] / mine["min"])
        out[f"ours_{side}"], out[f"vendor_{side}"] = mine["median"], theirs["median"]
    return out


def worse(row: dict) -> float:
    found = ratios(row, row.get("vendor") or {})
    return min(found["warm"][0], found["cold"][0]) if found else 0.0


def picks(pick_run: dict, runs: list[dict]) -> dict[str, tuple[str, int]]:
    """Layer -> (workload, config index): the workload PICK chooses among the layer's templates (a layer
    PICK lacks: its one workload), with its latest config."""
    latest: dict[str, int] = {}
    chosen: dict[str, str] = {}
    for run in runs:  # later runs' configs replace earlier ones
        for row in run["rows"]:
            latest[row["workload"]] = row["config_index"]
            chosen[layer_of(row["workload"])] = row["workload"]
    by_layer: dict[str, list[dict]] = {}
    for row in pick_run["rows"]:
        by_layer.setdefault(layer_of(row["workload"]), []).append(row)
    for layer, rows in by_layer.items():
        chosen[layer] = max(rows, key=worse)["workload"]
    return {layer: (workload, latest[workload]) for layer, workload in chosen.items() if workload in latest}


def quoted(runs: list[dict], workload: str, config_index: int, vendor: dict) -> list[tuple[str, dict]]:
    return [(run["label"], found) for run in runs for row in run["rows"]
            if row["workload"] == workload and row["config_index"] == config_index and (found := ratios(row, vendor))]


def interval(r: tuple[float, float, float]) -> str:
    return f"{r[0]:.2f}× [{r[1]:.2f}–{r[2]:.2f}]"


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def tables(pick_run: dict, runs: list[dict]) -> str:
    chosen = picks(pick_run, runs)
    vendor = fastest_vendor([*runs, pick_run])
    lines = ["| layer | schedule (config) | run | ours warm / cold µs | cuDNN warm / cold µs | cuDNN / ours warm "
             "| cuDNN / ours cold | goal |", "|---|---|---|---:|---:|---:|---:|---|"]
    per_run: dict[str, dict[str, tuple[float, float]]] = {}
    for layer, (workload, index) in chosen.items():
        batched = is_batched(layer)
        template = schedule_of(workload)
        for label, r in quoted(runs, workload, index, vendor[layer]):
            low = min(r["warm"][1], r["cold"][1])
            goal = (f"{'holds' if min(r['warm'][0], r['cold'][0]) >= BATCHED_GOAL else 'no'} (≥ {BATCHED_GOAL}×)"
                    if batched else f"{'holds' if low > 1.0 else 'no'} (> 1 beyond the interval)")
            lines.append(f"| {layer} | {template} ({index}) | {label} | {r['ours_warm'] * 1e6:.2f} / "
                         f"{r['ours_cold'] * 1e6:.2f} | {r['vendor_warm'] * 1e6:.2f} / {r['vendor_cold'] * 1e6:.2f} "
                         f"| {interval(r['warm'])} | {interval(r['cold'])} | {goal} |")
            if not batched:
                per_run.setdefault(label, {})[layer] = (r["warm"][0], r["cold"][0])
    layers = [layer for layer in chosen if not is_batched(layer)]
    summary = []
    for label, found in per_run.items():
        if len(found) < len(layers):
            summary.append(f"- {label}: {len(found)} of {len(layers)} batch-1 layers timed (no geometric mean)")
            continue
        warm, cold = (geomean([found[layer][i] for layer in layers]) for i in (0, 1))
        holds = "holds" if min(warm, cold) >= BATCH_ONE_GEOMEAN else "does not hold"
        summary.append(f"- {label}: geometric mean over the {len(layers)} batch-1 layers {warm:.2f}× warm, "
                       f"{cold:.2f}× cold (≥ {BATCH_ONE_GEOMEAN}× {holds})")
    return "\n".join(lines + [""] + summary) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="verify_bests JSONs, oldest first")
    parser.add_argument("--pick", type=Path, required=True, help="the run that picks each layer's schedule (not quoted)")
    parser.add_argument("--markdown", type=Path)
    options = parser.parse_args(argv)
    text = tables(load(options.pick), [load(path) for path in options.runs])
    if options.markdown:
        options.markdown.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
