"""SM clock and power while cuBLAS and one of our GEMM tilings run back to back for a few
seconds each: is the gap to cuBLAS issue efficiency, or a lower clock at the power limit?

    python scripts/device/gemm_clocks.py --shape G2 --seconds 4 \
        --tiling 128,256,8,64,64,4,4,8,1,4,cp_async_4,4,1,32

(a tiling lists the gemm template's knob values in the space's order).
Samples NVML (through nvidia-smi, smi_samples.py) every 100 ms in the background; prints, per phase, the
mean SM clock, mean power and the TFLOP/s reached.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
os.environ.setdefault("CUPY_TF32", "0")

import numpy as np  # noqa: E402

import engine  # noqa: E402
from engine.workloads import PRESETS  # noqa: E402
from gemm_probe import compiled_launch, valid_tiling_config  # noqa: E402  (this folder's probe: the same tiling syntax)
from smi_samples import mean_between, sampled  # noqa: E402


def run_for(seconds: float, launch, synchronize) -> tuple[float, float, int]:
    launch()
    synchronize()
    start, count = time.time(), 0
    while time.time() - start < seconds:
        for _ in range(5):
            launch()
        synchronize()
        count += 5
    return start, time.time(), count


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shape", default="G2")
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--tiling", action="append", required=True)
    options = parser.parse_args()
    import cupy as cp
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    arch = "sm_{}{}".format(*cp.cuda.Device().compute_capability)
    preset = PRESETS[options.shape]
    task = engine.create_task(preset.task_name, preset.args)
    inputs = [cp.asarray(x) for x in task.template.make_inputs(task.params, np.random.default_rng(0))]
    a, b = torch.as_tensor(inputs[0], device="cuda"), torch.as_tensor(inputs[1], device="cuda")
    with sampled() as samples:
        phases = [("cuBLAS", *run_for(options.seconds, lambda: torch.matmul(a, b), torch.cuda.synchronize))]
        for tiling in options.tiling:
            config = valid_tiling_config(task, tiling)
            if config is None:
                continue
            _, launch = compiled_launch(cp, task.template.kernel(task.params, config), inputs, arch)
            time.sleep(1.0)
            phases.append((tiling, *run_for(options.seconds, launch, cp.cuda.Device().synchronize)))
    for name, start, end, count in phases:
        clock, power, seen = mean_between(samples, start + 0.5, end)
        tflops = task.flops * count / (end - start) / 1e12
        print(f"{name:45s} {tflops:6.1f} TFLOP/s  SM clock {clock:6.0f} MHz  power {power:5.0f} W  ({seen} samples)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
