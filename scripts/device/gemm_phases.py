"""Where a split-K GEMM's time goes: each tiling timed whole, without the split-K fix-up
(partials written, no block sums them), and as its main loop alone (accumulators kept
alive, nothing stored); warm (inputs in L2) and cold (L2 flushed by a 256 MB fill before
every launch, its own time subtracted). The cut kernels compute wrong results on purpose:
this is a timing probe, not a check.

    python3 scripts/device/gemm_phases.py --size 512x49x4608 --tiling 64,64,16,...,16,32,4 [...]

Timed like every measurement here: a CUDA graph of back-to-back launches (engine.gpu.runner).
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
os.environ.setdefault("CUPY_TF32", "0")

import numpy as np  # noqa: E402

import engine  # noqa: E402
from engine.gpu.baselines import cublas_gemm  # noqa: E402
from engine.gpu.runner import TimingSettings, cupy_graph, time_launches  # noqa: E402
from engine.ops.base import DeviceLimits  # noqa: E402
from engine.ops.gemm.tiling import gemm_tiling  # noqa: E402
from engine.workloads import gemm_args  # noqa: E402
from gemm_probe import compiled_launch, valid_tiling_config  # noqa: E402

SETTINGS = TimingSettings(min_repeat_ms=4.0, repeat=7)
# Sums every accumulator so the compiler keeps the main loop, then leaves.
KEEP_ALIVE = """
    {{ float keep = 0.0f;
#pragma unroll
      for (int e = 0; e < {count}; ++e) keep += (&acc[0][0][0][0])[e];
      if (keep == 1.2345e30f) C[tid] = keep; }}
}}
"""


def variants(code: str, accumulators: int) -> dict[str, str]:
    out = {"whole": code}
    if "if (!*last_split) return;" in code:
        out["no fix-up"] = code.replace("if (!*last_split) return;", "return;")
    epilogue = code.find("__syncthreads();  // every slice")  # sliced-K: the exchange starts the epilogue
    if epilogue > 0:
        line = code.rfind("\n", 0, code.rfind("\n", 0, epilogue)) + 1
        out["main loop only"] = code[:line] + KEEP_ALIVE.format(count=accumulators)
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", required=True, help="MxNxK")
    parser.add_argument("--tiling", action="append", default=[])
    options = parser.parse_args()
    import cupy as cp

    m, n, k = (int(v) for v in options.size.split("x"))
    task = engine.create_task("gemm", gemm_args(m, n, k), DeviceLimits.for_h200())
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        inputs = [cp.asarray(a) for a in task.template.make_inputs(task.params, np.random.default_rng(0))]
        junk = cp.zeros(256 * 2**20 // 4, dtype=cp.float32)
    arch = "sm_{}{}".format(*cp.cuda.Device().compute_capability)

    def graph_us(launch) -> float:
        def on_stream():
            with stream:
                launch()
        costs = time_launches(cp, stream, on_stream, lambda number: cupy_graph(stream, on_stream, number), SETTINGS)
        return float(np.median(costs)) * 1e6

    def flush():
        junk.fill(1.0)

    flush_us = graph_us(flush)
    for text in options.tiling:
        config = valid_tiling_config(task, text)
        if config is None:
            continue
        source = task.template.kernel(task.params, config)
        for name, code in variants(source.code, gemm_tiling(task.params, config).accumulators).items():
            kernel, launch = compiled_launch(cp, dataclasses.replace(source, code=code), inputs, arch)
            warm = graph_us(launch)
            cold = graph_us(lambda: (flush(), launch())) - flush_us
            print(f"{text} {name:15s} warm {warm:6.1f} µs  cold {cold:6.1f} µs  registers {kernel.num_regs}", flush=True)
    cublas = cublas_gemm(task, settings=SETTINGS)
    print(f"cuBLAS (engine.gpu.baselines.cublas_gemm) warm {cublas.mean_cost * 1e6:6.1f} µs {cublas.error_msg}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
