"""The benchmark hub's convolution and dedispersion kernels tuned on this GPU through the custom-kernel
template, over the hub's own spaces (its T1 files), so the H200 joins the A100, A4000, MI250X and
W6600 on those kernels' leaderboards.

For each kernel: the specs are built from the hub folder at run time (benchmarks/hub_specs.py);
first the configs the hub's GPUs found best (and the one best across them) are measured, so the
portability matrix has every cell, then random valid configs (random search needs no cost model,
and the device has no xgboost) until `--trials` or the kernel's share of `--budget-s`. The records are
written as the kernel's `kernel_tuner` workload (no source in them), in both forms tunerweb
imports onto the hub's workloads:

    OUT/hub_h200/<kernel>_H200.json   Kernel Tuner cache file (device_name: this GPU's name)
    OUT/hub_h200/<kernel>_H200.log    the same records as an AutoTVM log
    OUT/hub_h200/summary.md           the table printed last; run.log: everything printed

    python benchmarks/hub_kernels_h200.py HUB_DIR --out "$OUT"            # on the GPU (about 5 min)
    python benchmarks/hub_kernels_h200.py HUB_DIR --check                 # no GPU: NVRTC sm_90 compile check

HUB_DIR is the benchmark hub folder (../shared/data/benchmark_hub here; a copy in the repo tree on
the device). Import the results with `manage.py import_records OUT/hub_h200/*_H200.json`.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import engine  # noqa: E402
import hub_specs  # noqa: E402
from engine import kernel_tuner as kt  # noqa: E402
from engine.kernel_tuner.t1_spec import as_kernel_tuner_record  # noqa: E402
from engine.measure import to_record  # noqa: E402
from engine.logfile import ErrorNo, format_record, pick_best  # noqa: E402

GPUS = ("A100", "A4000", "MI250X", "W6600")
DEVICES = {"MI250X": "mi250x"}  # the MI250X caches name no device
DEFAULT_TRIALS = {"convolution_milo": 600, "dedispersion_milo": 400}
# Share of the time budget per kernel: the convolution's configs take seconds each to compile.
SHARES = {"convolution_milo": 0.55, "dedispersion_milo": 0.45}


class Tee:
    def __init__(self, path: Path):
        self.file = path.open("a", encoding="utf-8")

    def __call__(self, *parts) -> None:
        line = " ".join(str(p) for p in parts)
        print(line, flush=True)
        self.file.write(line + "\n")
        self.file.flush()


def hub_bests(hub: Path, kernel: str) -> dict[str, dict]:
    """GPU -> the parameters of its fastest cache entry; "best across all" -> the highest worst case."""
    caches = {gpu: kt.read_file(Path(hub) / "cachefiles" / kernel / f"{gpu}.json.gz", device=DEVICES.get(gpu))
              for gpu in GPUS}
    bests, times = {}, {}
    for gpu, found in caches.items():
        [best] = pick_best(found.records).values()
        bests[gpu] = kt.params_of_entity(best.entity)
        times[gpu] = {r.config_index: r.mean_cost for r in found.records if r.ok}
    everywhere = set.intersection(*(set(t) for t in times.values()))
    own = {gpu: min(t.values()) for gpu, t in times.items()}
    robust = max(sorted(everywhere), key=lambda i: min(own[g] / times[g][i] for g in GPUS))
    entity = next(r.entity for r in caches["A100"].records if r.config_index == robust)
    bests["best across all"] = kt.params_of_entity(entity)
    return bests


def task_configs(task, params_list) -> list:
    """The custom task's configs of these parameter sets, each once, in order."""
    seen, configs = set(), []
    for params in params_list:
        config = task.config_space.from_entity([[name, "ot", value] for name, value in params.items()])
        if config.index not in seen:
            seen.add(config.index)
            configs.append(config)
    return configs


def check(hub: Path, samples: int, say) -> int:
    """Compile every forced config and `samples` random valid ones of each kernel for sm_90 with NVRTC."""
    from engine.gpu.builder import Builder

    failed = 0
    for kernel in hub_specs.KERNELS:
        task = engine.create_task("custom", [hub_specs.hub_spec(hub, kernel)])
        valid = sum(1 for i in range(len(task.config_space)) if task.why_invalid(task.config_space.get(i)) is None)
        configs = task_configs(task, hub_bests(hub, kernel).values())
        configs += task.config_space.sample(np.random.default_rng(0), samples, exclude=configs)
        start = time.perf_counter()
        with Builder("sm_90", cache_dir=None, timeout=120) as builder:
            results = builder.build([task.template.kernel(task.params, c) for c in configs])
        bad = [(c.index, r.message[:300]) for c, r in zip(configs, results) if not r.ok]
        failed += len(bad)
        say(f"{kernel}: {valid} valid configs (the hub's caches hold "
            f"{len(kt.read_file(Path(hub) / 'cachefiles' / kernel / 'A100.json.gz').records)}); "
            f"{len(configs) - len(bad)}/{len(configs)} compile for sm_90 in {time.perf_counter() - start:.1f} s"
            + "".join(f"\n  config {i}: {m}" for i, m in bad))
    return 1 if failed else 0


def tune_kernel(hub: Path, kernel: str, measurer, options, deadline: float, say) -> dict:
    """The hub's best configs first, then random valid configs in batches until `--trials` or the deadline."""
    from engine.ops import DeviceLimits

    spec = hub_specs.hub_spec(hub, kernel)
    task = engine.create_task("custom", [spec], DeviceLimits.for_device(measurer.device))
    target = measurer.device.target
    bests = hub_bests(hub, kernel)
    batch = task_configs(task, bests.values())
    trials = options.trials or DEFAULT_TRIALS[kernel]
    rng = np.random.default_rng(options.seed)
    start = time.perf_counter()
    records, measured = [], set()
    while batch:
        results = measurer.measure(task, batch)
        records += [to_record(task, c, r, target) for c, r in zip(batch, results)]
        measured.update(c.index for c in batch)
        failures = sum(1 for r in records if not r.ok)
        say(f"{kernel}: {len(records)} measured, {failures} failed, {time.perf_counter() - start:.0f} s")
        if len(records) >= trials or time.monotonic() > deadline:
            break
        # Random search needs no cost model (the device has no xgboost); the space is the hub's.
        batch = task.config_space.sample(rng, min(options.batch_size, trials - len(records)), exclude=measured)
    workload = hub_specs.hub_workload(hub, kernel)
    kt_records = write_results(Path(options.out) / "hub_h200", kernel, workload, records,
                               measurer.device.name or "NVIDIA H200")
    by_index = {r.config_index: r for r in kt_records}
    best = min((r for r in kt_records if r.ok), key=lambda r: r.mean_cost, default=None)
    hub_best_ms = {gpu: by_index[workload.index_of(p)] for gpu, p in bests.items()}
    return {"kernel": kernel, "measured": len(kt_records), "seconds": time.perf_counter() - start,
            "failures": collections.Counter(ErrorNo(r.error_no).label for r in kt_records if not r.ok),
            "best": best, "hub_bests": hub_best_ms}


def write_results(out: Path, kernel: str, workload, records, device_name: str) -> list:
    """The custom-kernel records as the kernel's `kernel_tuner` records, written as a Kernel Tuner
    cache (`<kernel>_H200.json`) and an AutoTVM log (`<kernel>_H200.log`); returns those records."""
    kt_records = [as_kernel_tuner_record(workload, r) for r in records]
    (out / f"{kernel}_H200.json").write_text(json.dumps(kt.cache_document(workload, device_name, kt_records)) + "\n")
    with (out / f"{kernel}_H200.log").open("w", encoding="utf-8") as stream:
        stream.writelines(format_record(r) + "\n" for r in kt_records)
    return kt_records


def table(rows: list[dict]) -> str:
    lines = ["| kernel | measured | failures | H200 best (ms) | its config | hub GPUs' bests on the H200 (% of its best) |",
             "|---|---:|---|---:|---|---|"]
    for row in rows:
        best = row["best"]
        cells = []
        for gpu, record in row["hub_bests"].items():
            share = f"{100 * best.mean_cost / record.mean_cost:.0f} %" if best and record.ok else record.error_no.label
            cells.append(f"{gpu} {share}")
        config = ", ".join(f"{k}={v}" for k, v in kt.params_of_entity(best.entity).items()) if best else "—"
        failures = ", ".join(f"{n} {label}" for label, n in row["failures"].items()) or "none"
        lines.append(f"| {row['kernel']} | {row['measured']} in {row['seconds']:.0f} s | {failures} | "
                     f"{best.mean_cost * 1e3:.3f} | {config} | {'; '.join(cells)} |" if best else
                     f"| {row['kernel']} | {row['measured']} | {failures} | — | — | — |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("hub", type=Path, help="the benchmark hub folder (cachefiles/, kernels/)")
    parser.add_argument("--out", default=os.environ.get("OUT", "out"), help="where results go (default $OUT)")
    parser.add_argument("--check", action="store_true", help="no GPU: compile configs for sm_90 with NVRTC")
    parser.add_argument("--samples", type=int, default=4, help="--check: random configs per kernel besides the bests")
    parser.add_argument("--budget-s", type=float, default=240, help="tuning time for both kernels (default 240)")
    parser.add_argument("--trials", type=int, help="configs per kernel (default: 600 convolution, 400 dedispersion)")
    parser.add_argument("--batch-size", type=int, default=48)
    parser.add_argument("--seed", type=int, default=0)
    options = parser.parse_args(argv)
    if not (options.hub / "kernels").is_dir():
        parser.error(f"{options.hub} is not the benchmark hub folder (no kernels/ in it)")
    out = Path(options.out) / "hub_h200"
    out.mkdir(parents=True, exist_ok=True)
    say = Tee(out / "run.log")
    if options.check:
        return check(options.hub, options.samples, say)

    from engine.gpu.measurer import GpuMeasurer

    rows = []
    started = time.monotonic()
    # The convolution's fully unrolled 15 x 15 filter takes seconds to compile: a generous build timeout.
    with GpuMeasurer(build_timeout=90, run_timeout=10) as measurer:
        say(f"device: {measurer.device.name} ({measurer.device.model}), CUDA {measurer.device.cuda_version}")
        for kernel in hub_specs.KERNELS:
            remaining = options.budget_s - (time.monotonic() - started)
            share = remaining if kernel == hub_specs.KERNELS[-1] else options.budget_s * SHARES[kernel]
            rows.append(tune_kernel(options.hub, kernel, measurer, options, time.monotonic() + share, say))
    summary = table(rows)
    (out / "summary.md").write_text(summary + "\n")
    say(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
