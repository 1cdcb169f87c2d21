"""SM clock and power while cuBLAS and one of our GEMM tilings run back to back for a few
seconds each: is the gap to cuBLAS issue efficiency, or a lower clock at the power limit?

    python scripts/device/gemm_clocks.py --shape G2 --seconds 4 \
        --tiling 128,256,8,64,64,4,4,8,1,4,cp_async_4,4,1,32

(a tiling lists the gemm template's knob values in the space's order).
Samples NVML (through nvidia-smi) every 100 ms in the background; prints, per phase, the
mean SM clock, mean power and the TFLOP/s reached.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
os.environ.setdefault("CUPY_TF32", "0")

import numpy as np  # noqa: E402

import engine  # noqa: E402
from engine.workloads import PRESETS  # noqa: E402
from gemm_probe import compiled_launch, valid_tiling_config  # noqa: E402  (this folder's probe: the same tiling syntax)


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
    samples = tempfile.NamedTemporaryFile("w+", suffix=".csv")
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw", "--format=csv,noheader,nounits",
                            "-lms", "100"], stdout=samples, text=True)
    phases = [("cuBLAS", *run_for(options.seconds, lambda: torch.matmul(a, b), torch.cuda.synchronize))]
    for tiling in options.tiling:
        config = valid_tiling_config(task, tiling)
        if config is None:
            continue
        _, launch = compiled_launch(cp, task.template.kernel(task.params, config), inputs, arch)
        time.sleep(1.0)
        phases.append((tiling, *run_for(options.seconds, launch, cp.cuda.Device().synchronize)))
    time.sleep(0.3)
    smi.terminate()
    smi.wait()
    samples.seek(0)
    rows = []
    for line in samples:
        stamp, clock, power = (part.strip() for part in line.split(","))
        seconds = time.mktime(time.strptime(stamp.split(".")[0], "%Y/%m/%d %H:%M:%S")) + float("0." + stamp.split(".")[1])
        rows.append((seconds, float(clock), float(power)))
    for name, start, end, count in phases:
        inside = [(c, p) for t, c, p in rows if start + 0.5 <= t <= end]
        clock = np.mean([c for c, _ in inside]) if inside else float("nan")
        power = np.mean([p for _, p in inside]) if inside else float("nan")
        tflops = task.flops * count / (end - start) / 1e12
        print(f"{name:45s} {tflops:6.1f} TFLOP/s  SM clock {clock:6.0f} MHz  power {power:5.0f} W  ({len(inside)} samples)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
