"""A few launches of given GEMM tilings and of cuBLAS, one process, no graphs: a target for
Nsight Compute, and each kernel's registers, local memory and event-timed µs on the side
(the µs mean nothing under ncu, which serializes and replays every launch).

    ncu --clock-control none -k regex:'gemm|sgemm|cutlass' --section SpeedOfLight ... \\
        python3 scripts/device/gemm_ncu.py --size 512x49x4608 --tiling 32,64,16,...,16,32 [--launches 3]
    ... gemm_ncu.py --size 4096x4096x4096 --precision bfloat16 --tiling 128,256,64,16,16,1,4,8,wgmma,2,1,1,tma,2

Tilings are knob values in the space's order (see gemm_probe.py); a tiling the template
refuses is reported and skipped. `--precision` (float16, bfloat16, tf32) profiles the
tensor-core GEMM (gemm_tensorcore) instead, against cuBLAS in that precision writing the same C
(`--c16`: a 16-bit precision's C in that precision, else float32).
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
os.environ.setdefault("CUPY_TF32", "0")

import numpy as np  # noqa: E402

import engine  # noqa: E402
from engine.gpu.baselines import cublas_matmul, tensor_core_c_dtype, tensor_core_operands  # noqa: E402
from engine.gpu.runner import relative_l2_error  # noqa: E402
from engine.ops.base import DeviceLimits  # noqa: E402
from engine.workloads import gemm_args, gemm_tc_args  # noqa: E402
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
    parser.add_argument("--precision", default=None, help="float16, bfloat16 or tf32: the tensor-core GEMM")
    parser.add_argument("--c16", action="store_true", help="a 16-bit precision's C in that precision")
    options = parser.parse_args()
    import cupy as cp
    import torch

    m, n, k = (int(v) for v in options.size.split("x"))
    if options.precision:
        c_dtype = options.precision if options.c16 else "float32"
        task = engine.create_task("gemm_tensorcore", gemm_tc_args(m, n, k, options.precision, c_dtype),
                                  DeviceLimits.for_h200())
    else:
        task = engine.create_task("gemm", gemm_args(m, n, k), DeviceLimits.for_h200())
    host = task.template.make_inputs(task.params, np.random.default_rng(0))
    inputs = [cp.asarray(a) for a in host]
    reference = cp.asarray(task.template.reference(task.params, host))
    arch = "sm_{}{}".format(*cp.cuda.Device().compute_capability)
    for text in options.tiling:
        config = valid_tiling_config(task, text)
        if config is None:
            continue
        source = task.template.kernel(task.params, config)
        kernel, launch = compiled_launch(cp, source, inputs, arch)
        us = event_us(cp, launch, options.launches)
        error = relative_l2_error(inputs[2], reference)
        print(f"{text}: grid {source.grid} block {source.block} shared {source.shared_bytes} B "
              f"registers {kernel.num_regs} local {kernel.local_size_bytes} B: {us:.1f} µs, error {error:.1e}")
    if options.precision:
        a, b, tf32 = tensor_core_operands(torch, task, host)
        c_dtype = tensor_core_c_dtype(torch, task)
    else:
        (a, b), tf32, c_dtype = (torch.as_tensor(x, device="cuda") for x in inputs[:2]), False, None
    us = event_us(cp, lambda: cublas_matmul(torch, a, b, tf32, c_dtype), options.launches)
    print(f"cuBLAS ({options.precision or 'float32'}, C {c_dtype or a.dtype}, TF32 {'on' if tf32 else 'off'}): "
          f"{us:.1f} µs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
