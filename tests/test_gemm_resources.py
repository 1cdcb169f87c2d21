"""GEMM configs the template calls valid are ones the GPU launches: compiled for sm_90 (NVRTC,
no GPU needed), ptxas's registers fit the block's threads and its static shared memory plus
the config's dynamic shared memory fits what the runner opts in to.

The H200 refused two such configs with "invalid argument" (docs/benchmarks/operators-h200-logs/
gpu_tests-first-run.txt): split-K kernels declared a static `__shared__` flag beside exactly
48 KB of dynamic shared memory, one word over the limit a kernel has without opting in."""
from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import engine
from engine.gpu.nvrtc import compile_to_cubin
from engine.gpu.runner import DEFAULT_SHARED_LIMIT
from engine.ops import DeviceLimits
from engine.workloads import GEMM, PRESETS, gemm_args

H200 = DeviceLimits.for_h200()
_USAGE = re.compile(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?")


def ptxas_usage(code: str, arch: str = "sm_90") -> tuple[int, int]:
    """(registers per thread, static shared bytes) that ptxas reports for the one kernel in `code`."""
    _cubin, log = compile_to_cubin(code, arch, ("--ptxas-options=-v",))
    found = _USAGE.search(log)
    assert found, log
    return int(found.group(1)), int(found.group(2) or 0)


def shared_limit(dynamic_bytes: int, limits: DeviceLimits) -> int:
    """Static + dynamic shared memory a launch may use: the runner opts in to the device's
    maximum only when the dynamic part alone is over the 48 KB default."""
    return limits.max_shared_memory_optin if dynamic_bytes > DEFAULT_SHARED_LIMIT else DEFAULT_SHARED_LIMIT


def why_refused(source, limits: DeviceLimits = H200) -> str | None:
    registers, static = ptxas_usage(source.code)
    threads = int(np.prod(source.block))
    if registers * threads > limits.regs_per_block:
        return f"{registers} registers x {threads} threads > {limits.regs_per_block}"
    if static + source.shared_bytes > shared_limit(source.shared_bytes, limits):
        return (f"{static} static + {source.shared_bytes} dynamic bytes of shared memory > "
                f"{shared_limit(source.shared_bytes, limits)}")
    return None


# The configs the H200 refused, by task: 48 KB of cp_async_4 stages with split-K (by entity:
# an index changes whenever a knob gains or loses an option).
REFUSED = [["block_m", "ot", 128], ["block_n", "ot", 64], ["block_k", "ot", 16], ["warp_m", "ot", 16],
           ["warp_n", "ot", 16], ["thread_m", "ot", 1], ["thread_n", "ot", 1], ["warp_lanes_n", "ot", 4],
           ["vector_a", "ot", 1], ["vector_b", "ot", 2], ["pipeline", "ot", "cp_async_4"],
           ["smem_pad", "ot", 0], ["split_k", "ot", 8], ["unroll_k", "ot", 4]]
REFUSED_ON_THE_H200 = [(PRESETS["G5"].args, 8), (gemm_args(70, 36, 1000), 8), (gemm_args(256, 256, 256), 4)]


@pytest.mark.parametrize("args, split", REFUSED_ON_THE_H200)
def test_the_configs_the_h200_refused_now_fit_their_launch(args, split):
    task = engine.create_task("gemm", args)
    config = task.config_space.from_entity(REFUSED[:12] + [["split_k", "ot", split], REFUSED[13]])
    source = task.template.kernel(task.params, config)
    assert task.why_invalid(config) is None and source.shared_bytes > DEFAULT_SHARED_LIMIT
    assert why_refused(source) is None


def test_random_valid_gemm_configs_fit_the_registers_and_shared_memory_they_launch_with():
    rng = np.random.default_rng(7)
    picked = []
    for args in [p.args for p in GEMM] + [gemm_args(70, 36, 1000), gemm_args(256, 256, 256)]:
        task = engine.create_task("gemm", args)
        picked += [(task, config) for config in task.config_space.sample(rng, 6)]
    # NVRTC is thread-safe and lets go of the GIL: the kernels compile a few at once.
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        reasons = pool.map(lambda pick: why_refused(pick[0].template.kernel(pick[0].params, pick[1])), picked)
    refused = [(task.args, config.index, reason) for (task, config), reason in zip(picked, reasons) if reason]
    assert refused == []
