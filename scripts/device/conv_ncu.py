"""The tensor-core conv's confirmed bests, a few more tilings, and cuDNN's own pick on the same
layers, in one process: a target for Nsight Compute. Every compile and cuDNN's exhaustive search
happen first; only one launch of each kernel sits between cudaProfilerStart and cudaProfilerStop.

    ncu --profile-from-start off --clock-control none --set full --export $OUT/conv \\
        python3 scripts/device/conv_ncu.py --json <a tensor_core_conv.json> --layers "7² 512,14² 1024"

Without ncu it prints each kernel's registers, shared memory and µs (ours: the median of `--rounds`
event-timed runs of `--launches` back-to-back launches; cuDNN: its baseline's CUDA-graph timing,
as engine.gpu.baselines times it; warm: a probe's ranking, not a confirmed figure). `--config`
adds a tiling (knob values in the space's order, benchmarks/tensor_core_conv.py's KNOBS) to every
chosen layer; one the template refuses there is reported and skipped.

`--search-targets` prints, for the layers of `--json`'s confirmed rows that `--layers` picks, the
layer and the kernel the confirmation recorded as cuDNN's (regex-escaped: ncu's `-k regex:`), a
tab between. `--profile-search` profiles cuDNN's algorithm search instead (its first call,
cudnnFind, which launches every algorithm): with ncu's `-k regex:<such a kernel> -c 1` that is the
profile of cuDNN's best algorithm, which a process under ncu need not pick itself (its search is
timed under the profiler's interception: one 2026-12-03 run picked sm80 kernels 1.4-1.8x slower).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(HERE, "..", "..", "benchmarks"))
os.environ.setdefault("CUPY_TF32", "0")

import numpy as np  # noqa: E402

import engine  # noqa: E402
from engine.space import EntityError  # noqa: E402
from engine.gpu.baselines import (cudnn_tensor_core_conv2d, fp32_torch, tensor_core_conv2d,  # noqa: E402
                                  tensor_core_conv_operands)
from engine.gpu.runner import relative_l2_error  # noqa: E402
from engine.ops.conv2d_tc.tiling import cluster_blocks  # noqa: E402
from engine.workloads import CONV_TC  # noqa: E402
from gemm_ncu import event_us  # noqa: E402  (this folder's GEMM profiling target)
from gemm_probe import compiled_launch, tiling_config, valid_tiling_config  # noqa: E402  (this folder's probe)
from tensor_core_conv import TEMPLATE  # noqa: E402


def confirmed_rows(path: str | None) -> list[dict]:
    """The confirm rows of a benchmark run's JSON (none without one)."""
    if not path:
        return []
    with open(path) as f:
        return json.load(f).get("confirm", [])


def picked(description: str, selectors: str) -> bool:
    """Whether a layer is one of `--layers`' comma-separated parts of descriptions (all without)."""
    wanted = [s.strip() for s in selectors.split(",") if s.strip()]
    return not wanted or any(s in description for s in wanted)


def chosen_layers(selectors: str, precision: str) -> list:
    return [p for p in CONV_TC if p.args[0][2] == precision and picked(p.description, selectors)]


def search_targets(rows: list[dict], selectors: str, precision: str) -> list[tuple[str, str]]:
    """(layer, the first kernel cuDNN ran in its confirmation, regex-escaped) per picked row."""
    targets = []
    for row in rows:
        kernel = row["cudnn"]["details"].get("algorithm", "").split(",")[0].strip()
        if row["workload"].endswith(" " + precision) and kernel and picked(row["workload"], selectors):
            targets.append((row["workload"], re.escape(kernel)))
    return targets


@contextlib.contextmanager
def profiled(torch):
    """What runs inside, and nothing else, between cudaProfilerStart and cudaProfilerStop."""
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    yield
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


def candidates_of(task, best: dict | None, texts: list[str]) -> list:
    """(label, config) to time: the confirmed best where it is valid here, then each `--config`."""
    candidates = []
    if best is not None:
        config = tiling_config(task, best)
        reason = task.why_invalid(config)
        if reason:
            print(f"  confirmed best: invalid here: {reason}")
        else:
            candidates.append(("confirmed best", config))
    return candidates + [(text, config) for text in texts if (config := listed_config(task, text)) is not None]


def listed_config(task, text: str):
    """The config a `--config` text names, or None, having said why not (a value off its knob too)."""
    try:
        return valid_tiling_config(task, text)
    except EntityError as exc:
        print(f"  {text}: {exc}")
        return None


def timed_us(cp, launch, launches: int, rounds: int) -> tuple[float, float]:
    """Median and spread (max - min) of `rounds` event-timed means of `launches` launches."""
    samples = [event_us(cp, launch, launches) for _ in range(rounds)]
    return statistics.median(samples), max(samples) - min(samples)


def short(config) -> str:
    v = config.values()
    rows = v["block_m"] + v["block_m_extra"]
    text = f"{v['mainloop']} {rows}x{v['block_n']}x{v['block_k']} stages {v['stages']}"
    if v["mainloop"] == "wgmma":
        text += f" consumers {v['consumers']} producer {v['producer']} ring {v['ring']} {v['loader']}"
        text += " transposed" if v["swap_ab"] else ""
        blocks = cluster_blocks(v)
        text += f" cluster {blocks} sharing {v['cluster_shares']}" if blocks > 1 else ""
        text += " persistent" if v["persistent"] else ""
    else:
        text += f" warp {v['warp_m']}x{v['warp_n']} {v['epilogue']}"
    return text + (f" split K {v['split_k']}" if v["split_k"] > 1 else "") + f" raster {v['raster']}"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", default=None, help="a tensor_core_conv.json whose confirmed bests to profile")
    parser.add_argument("--layers", default="", help="comma-separated parts of layer descriptions (default: all)")
    parser.add_argument("--precision", default="float16")
    parser.add_argument("--config", action="append", default=[], help="knob values in KNOBS order (repeatable)")
    parser.add_argument("--launches", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile-search", action="store_true", help="profile cuDNN's first call (its search) only")
    parser.add_argument("--search-targets", action="store_true", help="print the layers and kernels to profile so")
    options = parser.parse_args()
    rows = confirmed_rows(options.json)
    if options.search_targets:
        for layer, kernel in search_targets(rows, options.layers, options.precision):
            print(layer, kernel, sep="\t")
        return 0
    import cupy as cp

    torch = fp32_torch()
    bests = {row["workload"]: row["config"] for row in rows}
    arch = "sm_{}{}".format(*cp.cuda.Device().compute_capability)
    launches = []  # (label, launch) in the order the profiler will see them
    for preset in chosen_layers(options.layers, options.precision):
        task = engine.create_task(TEMPLATE, preset.args)
        host = task.template.make_inputs(task.params, np.random.default_rng(0))
        print(f"{preset.description} ({preset.name}):")
        data, weight = tensor_core_conv_operands(torch, task, host)

        def cudnn(data=data, weight=weight, params=task.params):
            tensor_core_conv2d(torch, params.conv, data, weight)

        if options.profile_search:
            with profiled(torch):
                cudnn()
            print("  cuDNN's search profiled", flush=True)
            continue
        inputs = [cp.asarray(a) for a in host]
        reference = cp.asarray(task.template.reference(task.params, host))
        flops = task.flops
        for label, config in candidates_of(task, bests.get(preset.description), options.config):
            source = task.template.kernel(task.params, config)
            kernel, launch = compiled_launch(cp, source, inputs, arch)
            us, spread = timed_us(cp, launch, options.launches, options.rounds)
            error = relative_l2_error(inputs[source.output_index], reference)
            print(f"  ours {short(config)} [{label}]: grid {source.grid} block {source.block} shared "
                  f"{source.shared_bytes} B registers {kernel.num_regs} local {kernel.local_size_bytes} B: "
                  f"{us:.2f} µs ±{spread:.2f} ({flops / us / 1e6:.0f} TFLOP/s), error {error:.1e}", flush=True)
            launches.append((f"{preset.name} ours {short(config)}", launch))
        # Timed as a CUDA graph: eager calls would time PyTorch's launch overhead (10-30 µs a call).
        result = cudnn_tensor_core_conv2d(task)
        us = statistics.median(result.costs) * 1e6 if result.ok else float("nan")
        spread = (max(result.costs) - min(result.costs)) * 1e6 if result.ok else float("nan")
        print(f"  cuDNN (exhaustive search, channels-last): {us:.2f} µs ±{spread:.2f} "
              f"({flops / us / 1e6:.0f} TFLOP/s) {result.error_msg}", flush=True)
        launches.append((f"{preset.name} cuDNN", cudnn))
    print("profiled launches, in order:")
    with profiled(torch):
        for label, launch in launches:
            print(f"  {label}", flush=True)
            launch()
            torch.cuda.synchronize()  # one kernel at a time: the device, CuPy's streams and PyTorch's
    return 0


if __name__ == "__main__":
    sys.exit(main())
