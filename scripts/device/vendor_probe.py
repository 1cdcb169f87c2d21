"""Does what else a measuring process has run move a 2 µs kernel's warm time? A probe for the device.

    python3 scripts/device/vendor_probe.py [--only B-exp-c,...] [--json OUT.json]

In session 6's committed confirmations (docs/benchmarks/confirmed-h200-2026-12-01-s6/) the six
~2 µs broadcasts of the small shape (`B-*-c`) read a constant 0.2 µs a launch faster in a
process that measured only broadcasts than in one that had run cuDNN and cuBLAS (and all
our other kernels) before them. In one measuring process this times those broadcasts' tuned
configs (warm and cold, five interleaved rounds) at the start, then again after each step
that the full run had taken before them: our conv2d and GEMM kernels loaded and timed (no
vendor), a GEMM's cuBLAS through PyTorch (PyTorch and cuBLAS loaded), a convolution's cuDNN.
Then the same in a second fresh process, vendor steps first. Prints a line per step:
the median warm and cold µs of each broadcast.

At 910456d every broadcast read 0.19 µs slower warm and 0.7-1 µs cold after the first vendor
step, in both orders; naming the vendor's kernels from a CUDA graph instead of PyTorch's
profiler (CUPTI, 565fe43) took about half the cold step away and none of the warm one. Since
then the measuring process loads PyTorch, cuBLAS and cuDNN before it times anything
(`fair_vendor.load_vendor_libraries`): "start" should read as "after cuDNN" does.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path[:0] = [ROOT, os.path.join(ROOT, "benchmarks")]

import engine  # noqa: E402
from verify_bests import bests_of, committed_logs  # noqa: E402
from engine.confirm import Role, contenders_for  # noqa: E402

LOGS = committed_logs()
# The six that moved, and B-exp-c, which did not (it was timed in the process that had loaded PyTorch).
SMALL_BROADCASTS = "B-div-c,B-div-c-f16,B-rsqrt-c,B-rsqrt-c-f16,B-mul_rsqrt-c,B-mul_rsqrt-c-f16,B-exp-c"
OURS = [f"C{i}" for i in range(1, 13)] + ["G1", "G2"]
ROUNDS = 5


def contenders_of(bests: dict, name: str, roles: set):
    logged = bests[name]
    task = engine.create_task(logged[0].task_name, logged[0].args)
    every = contenders_for(task, [(r.config_index, r.entity) for r in logged])
    return task, [c for c in every if c.role in roles]


def run_step(stopwatch, bests: dict, names: list[str], roles: set) -> None:
    """Prepare and time each workload's chosen contenders once (warm and cold): what a
    confirmation of them leaves behind in the process."""
    for name in names:
        if name not in bests:
            continue
        task, contenders = contenders_of(bests, name, roles)
        ready = stopwatch.prepare(task, contenders)
        for i, state in enumerate(ready):
            if isinstance(state, dict):
                stopwatch.time(i, cold=False)
                stopwatch.time(i, cold=True)


def time_broadcasts(stopwatch, bests: dict, names: list[str]) -> dict:
    """name -> (median warm µs, median cold µs) of the tuned config over ROUNDS rounds."""
    out = {}
    for name in names:
        task, contenders = contenders_of(bests, name, {Role.TUNED})
        ready = stopwatch.prepare(task, contenders[:1])
        if not isinstance(ready[0], dict):
            out[name] = None
            continue
        warm = [stopwatch.time(0, cold=False) * 1e6 for _ in range(ROUNDS)]
        cold = [stopwatch.time(0, cold=True) * 1e6 for _ in range(ROUNDS)]
        out[name] = (statistics.median(warm), statistics.median(cold))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=SMALL_BROADCASTS)
    parser.add_argument("--json", default="")
    options = parser.parse_args()
    from engine.gpu.confirming import FreshProcessStopwatch

    names = options.only.split(",")
    orders = {
        "ours first": [("ours", OURS, {Role.TUNED, Role.DEFAULT}), ("cuBLAS", ["G1"], {Role.VENDOR}),
                       ("cuDNN", ["C1", "C4"], {Role.VENDOR})],
        "vendor first": [("cuDNN", ["C1", "C4"], {Role.VENDOR}), ("cuBLAS", ["G1"], {Role.VENDOR}),
                         ("ours", OURS, {Role.TUNED, Role.DEFAULT})],
    }
    results = []
    for order, steps in orders.items():
        stopwatch = FreshProcessStopwatch(0)
        try:
            model = stopwatch.target.split("-model=")[1]
            bests = dict(bests_of(LOGS, model, 1))
            seen = [("start", time_broadcasts(stopwatch, bests, names))]
            for label, workloads, roles in steps:
                run_step(stopwatch, bests, workloads, roles)
                seen.append((f"after {label}", time_broadcasts(stopwatch, bests, names)))
            environment = stopwatch.environment()
        finally:
            stopwatch.close()
        for label, times in seen:
            cells = " ".join(f"{n}:{t[0]:.3f}/{t[1]:.3f}" if t else f"{n}:-" for n, t in times.items())
            print(f"{order:12s} {label:14s} warm/cold us {cells}", flush=True)
        results.append({"order": order, "steps": seen, "environment": environment})
    if options.json:
        with open(options.json, "w") as stream:
            json.dump(results, stream, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
