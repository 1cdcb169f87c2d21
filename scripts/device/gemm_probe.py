"""Hand-written GEMM tilings on G1-G5 against cuBLAS: where the template's space can reach
before any tuning, and which families the tuner should find.

    python scripts/device/gemm_probe.py [--shapes G1,G3] [--size 128x3136x64] [--tiling 64,64,...] [--json out.json]

Prints one line per (workload, tiling): µs, TFLOP/s and the ratio to cuBLAS.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
os.environ.setdefault("CUPY_TF32", "0")

import engine  # noqa: E402
from engine.gpu.apply_best import load_function  # noqa: E402
from engine.gpu.measurer import GpuMeasurer  # noqa: E402
from engine.gpu.nvrtc import compile_to_cubin  # noqa: E402
from engine.gpu.baselines import cublas_gemm  # noqa: E402
from engine.ops.base import DeviceLimits  # noqa: E402
from engine.workloads import PRESETS, gemm_args  # noqa: E402

# Knob values in the space's order: block m n k, warp m n, thread m n, lanes_n, vector a b,
# pipeline, pad, split, unroll[, slice_k, split_reduce, loader] (the last three default to 1,
# workspace, threads).
TILINGS = [
    (128, 128, 8, 32, 64, 4, 4, 8, 1, 4, "cp_async_3", 4, 1, 32),
    (128, 128, 8, 32, 64, 4, 4, 8, 4, 4, "prefetch", 4, 1, 32),
    (128, 128, 16, 32, 64, 4, 4, 8, 1, 4, "cp_async_3", 4, 1, 32),
    (128, 128, 16, 64, 32, 4, 4, 4, 4, 4, "prefetch", 4, 1, 32),
    (128, 128, 8, 32, 64, 8, 8, 8, 4, 4, "prefetch", 4, 1, 32),
    (128, 256, 8, 64, 64, 4, 4, 8, 1, 4, "cp_async_3", 4, 1, 32),
    (128, 256, 8, 64, 64, 4, 4, 8, 4, 4, "prefetch", 4, 1, 32),
    (256, 128, 8, 64, 64, 4, 4, 8, 4, 4, "prefetch", 4, 1, 32),
    (256, 128, 16, 64, 64, 4, 4, 8, 1, 4, "cp_async_4", 4, 1, 32),
    (64, 128, 8, 32, 64, 4, 4, 8, 4, 4, "prefetch", 4, 1, 32),
    (64, 64, 16, 32, 32, 4, 4, 8, 4, 4, "prefetch", 4, 1, 32),
    (64, 64, 16, 32, 32, 4, 4, 8, 1, 4, "cp_async_3", 4, 4, 32),
    (32, 64, 32, 16, 32, 2, 4, 8, 1, 1, "cp_async_3", 4, 8, 32),
    (64, 32, 32, 32, 16, 4, 2, 8, 1, 1, "cp_async_3", 4, 8, 32),
    # around the best 4096^3 tiling of the first probe (128x256x8, warps 64x64, cp.async 3)
    (128, 256, 16, 64, 64, 4, 4, 8, 1, 4, "cp_async_3", 4, 1, 32),
    (128, 256, 8, 64, 64, 4, 4, 8, 1, 4, "cp_async_2", 4, 1, 32),
    (128, 256, 8, 64, 64, 4, 4, 8, 1, 4, "cp_async_4", 4, 1, 32),
    (128, 256, 8, 64, 64, 4, 4, 8, 1, 4, "cp_async_3", 0, 1, 32),
    (128, 256, 8, 32, 128, 4, 4, 8, 1, 4, "cp_async_3", 4, 1, 32),
    (128, 256, 8, 64, 64, 4, 4, 4, 1, 4, "cp_async_3", 4, 1, 32),
    (256, 128, 8, 64, 64, 4, 4, 8, 1, 4, "cp_async_3", 4, 1, 32),
    (256, 128, 8, 128, 32, 4, 4, 4, 1, 4, "cp_async_3", 4, 1, 32),
    (128, 128, 8, 64, 64, 4, 4, 8, 1, 4, "cp_async_3", 4, 1, 32),
    (128, 128, 16, 64, 64, 4, 4, 8, 1, 4, "cp_async_3", 4, 1, 32),
    (128, 128, 8, 32, 64, 4, 4, 8, 1, 4, "cp_async_2", 4, 1, 32),
    (64, 256, 8, 32, 64, 4, 4, 8, 1, 4, "cp_async_3", 4, 1, 32),
    (128, 256, 8, 64, 64, 4, 4, 8, 1, 4, "cp_async_3", 4, 1, 4),
    (128, 256, 8, 64, 64, 4, 4, 8, 2, 4, "prefetch", 4, 1, 32),
]


def parse_tiling(text: str) -> tuple:
    """`128,256,8,...,cp_async_2,4,1,32` -> knob values in the space's order."""
    return tuple(int(v) if v.isdigit() else v for v in text.split(","))


def tiling_config(task, values: dict):
    """The config of knob name -> value (every knob of the space)."""
    return task.config_space.from_entity([[name, "ot", value] for name, value in values.items()])


def valid_tiling_config(task, text: str):
    """The config a tiling text names, or None, having said why, where the template refuses it."""
    config = tiling_config(task, dict(zip(task.config_space.knob_names, parse_tiling(text))))
    reason = task.why_invalid(config)
    if reason:
        print(f"{text}: invalid: {reason}")
        return None
    return config


def compiled_launch(cp, source, inputs, arch: str):
    """`source` compiled for `arch` and loaded: the CuPy function, and a launch of it on `inputs`
    (for the scripts that launch kernels themselves rather than through the measurer)."""
    kernel = load_function(cp, compile_to_cubin(source.code, arch)[0], source, inputs)  # tensor maps, constants

    def launch():
        kernel(source.grid, source.block, tuple(inputs), shared_mem=source.shared_bytes)

    return kernel, launch


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shapes", default="G3,G1,G2,G4,G5")
    parser.add_argument("--json", default=None)
    parser.add_argument("--tiling", action="append", default=[],
                        help="comma-separated knob values in the space's order (repeatable); replaces the list")
    parser.add_argument("--size", action="append", default=[], help="MxNxK: a shape besides the presets (repeatable)")
    options = parser.parse_args()
    rows = []
    with GpuMeasurer(build_workers=os.cpu_count(), run_timeout=20.0) as measurer:
        limits = DeviceLimits.for_device(measurer.device)
        tilings = [parse_tiling(t) for t in options.tiling] or TILINGS
        shapes = [(name, PRESETS[name].args) for name in options.shapes.split(",") if name]
        shapes += [(size, gemm_args(*(int(v) for v in size.split("x")))) for size in options.size]
        for name, args in shapes:
            task = engine.create_task("gemm", args, limits)
            cublas = cublas_gemm(task, settings=measurer.timing)
            cublas_us = cublas.mean_cost * 1e6 if cublas.ok else None
            print(f"{name} {task.params.m}x{task.params.n}x{task.params.k}: cuBLAS {cublas_us and round(cublas_us, 1)} µs "
                  f"({cublas_us and task.flops / cublas_us / 1e6:.1f} TFLOP/s) {cublas.error_msg}", flush=True)
            configs, labels = [], []
            for tiling in tilings:
                values = dict(zip(task.config_space.knob_names, tiling))
                if values["split_k"] not in task.params.split_k_choices:
                    values["split_k"] = 1
                if task.params.k % values["vector_a"]:
                    values["vector_a"] = 1
                if task.params.n % values["vector_b"]:
                    values["vector_b"] = 1
                config = tiling_config(task, values)
                reason = task.why_invalid(config)
                label = "/".join(str(v) for v in tiling)
                if reason:
                    print(f"  {label}: invalid: {reason}")
                    continue
                configs.append(config)
                labels.append(label)
            for label, config, result in zip(labels, configs, measurer.measure(task, configs)):
                us = result.mean_cost * 1e6 if result.ok else None
                row = {"workload": name, "tiling": label, "us": us, "error": result.error_msg,
                       "cublas_us": cublas_us}
                rows.append(row)
                if us:
                    tflops = task.flops / us / 1e6
                    print(f"  {label}: {us:9.1f} µs {tflops:6.1f} TFLOP/s  x{cublas_us / us:.2f} of cuBLAS", flush=True)
                else:
                    print(f"  {label}: failed: {result.error_msg[:300]}", flush=True)
    if options.json:
        with open(options.json, "w") as stream:
            json.dump(rows, stream, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
