"""A few launches of given GEMM tilings and of cuBLAS, one process, no graphs: a target for
Nsight Compute, and each kernel's registers, local memory and event-timed µs on the side
(the µs mean nothing under ncu, which serializes and replays every launch).

    ncu --clock-control none -k regex:'gemm|sgemm|cutlass' --section SpeedOfLight ... \\
        python3 scripts/device/gemm_ncu.py --size 512x49x4608 --tiling 32,64,16,...,16,32 [--launches 3]

Tilings are knob values in the space's order (see gemm_probe.py); a tiling the template
refuses is reported and skipped.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
os.environ.setdefault("CUPY_TF32", "0")

import numpy as np  # noqa: E402

import engine  # noqa: E402
from engine.ops.base import DeviceLimits  # noqa: E402
from engine.workloads import gemm_args  # noqa: E402
from gemm_probe import compiled_launch, valid_tiling_config  # noqa: E402  (this folder's probe: the same tiling syntax)


def event_us(cp, launch, launches: int) -> float:
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    launch()
    start.record()
    for _ in range(launches):
        launch()
    stop.record()
    stop.synchronize()
    return cp.cuda.get_elapsed_time(start, stop) * 1e3 / launches


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", required=True, help="MxNxK")
    parser.add_argument("--tiling", action="append", default=[])
    parser.add_argument("--launches", type=int, default=3)
    options = parser.parse_args()
    import cupy as cp
    import torch

    m, n, k = (int(v) for v in options.size.split("x"))
    task = engine.create_task("gemm", gemm_args(m, n, k), DeviceLimits.for_h200())
    inputs = [cp.asarray(a) for a in task.template.make_inputs(task.params, np.random.default_rng(0))]
    reference = inputs[0].astype(cp.float64) @ inputs[1].astype(cp.float64)
    arch = "sm_{}{}".format(*cp.cuda.Device().compute_capability)
    for text in options.tiling:
        config = valid_tiling_config(task, text)
        if config is None:
            continue
        source = task.template.kernel(task.params, config)
        kernel, launch = compiled_launch(cp, source, inputs, arch)
        us = event_us(cp, launch, options.launches)
        error = float(cp.linalg.norm(inputs[2] - reference) / cp.linalg.norm(reference))
        print(f"{text}: grid {source.grid} block {source.block} shared {source.shared_bytes} B "
              f"registers {kernel.num_regs} local {kernel.local_size_bytes} B: {us:.1f} µs, error {error:.1e}")
    a = torch.as_tensor(inputs[0], device="cuda")
    b = torch.as_tensor(inputs[1], device="cuda")
    torch.backends.cuda.matmul.allow_tf32 = False
    us = event_us(cp, lambda: torch.matmul(a, b), options.launches)
    print(f"cuBLAS (torch.matmul, TF32 off): {us:.1f} µs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
