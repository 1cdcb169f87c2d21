"""Run a generated CUDA kernel on the CPU, so CI (no GPU) can check what it computes.

The kernel text is compiled by g++ as C++ with a thin shim (a precompiled header): every
CUDA thread of a block is a fiber of one OS thread that runs until it waits at a barrier,
`__syncthreads()` a barrier of the block's fibers, `__shared__` storage is shared by the
block's threads, and blocks (clusters) run one after another (so atomics need no locking).
The fibers' order is fixed: a run is repeatable, a thread runs ahead to its next barrier
(so a missing `__syncthreads` shows), and threads that all wait at barriers the others
never reach raise instead of hanging. `__CUDA_ARCH__` is undefined, so kernels take their
pre-Ampere paths (plain copies instead of `cp.async`); the PTX-only paths are
covered by the NVRTC compile tests and the GPU tests. Small shapes only: every thread of
every block runs here, one at a time. x86-64 only (the fiber switch is its assembly).

Tensor-core kernels (engine.ops.gemm_tc) keep their PTX behind `#ifdef __CUDA_ARCH__`; here
the shim supplies those functions, the warp-wide ones (ldmatrix, mma.sync) lane by lane: each
lane posts its operands in its warp's slots, the warp meets at a barrier, and each lane reads
back what the PTX ISA's fragment layouts say it holds. wgmma's lanes each compute their own
accumulators, reading shared memory where the matrix descriptors say the elements are (the
128-byte swizzle applied), as late as the PTX allows: a thread's wgmmas wait in commit groups
and run when a `wait_group` retires them (copies land at once), so a stage reloaded while a
group in flight still reads it gives a wrong C; mbarriers are counters of arrivals and completed
phases, with the bytes a TMA copy (loader tma) expects: the box lands at once, where the tensor
map's 128-byte swizzle puts it, zeros past the matrix's edges (its `__constant__` tensor map is,
here, a description of the matrix and its box that `run` writes). The products are summed in
float32 (the hardware's order of summation differs, within the kernels' tolerance). tf32's wgmma
(engine.ops.gemm_tc.wgmma_tf32) takes A from registers: at issue each lane posts its fragment and
takes its warp's. Named barriers (`bar.sync` / `bar.arrive`, the consumers' turns) are counted
barriers, and a kernel that leaves one half arrived fails its launch; a round of the scheduler in
which every thread only spun again in an mbarrier wait and nothing arrived anywhere is a deadlock. A kernel's `__cluster_dims__` blocks run together, each with its own
shared memory, `cluster_arrive_wait` a barrier of them all and `load_shared_cluster4` a read of
another's: the split-K sum over a cluster (engine.ops.gemm_tc.kernel) runs here too. The fixed
order keeps a cluster's blocks in step, which hides a protocol that lets one block copy into another's
shared memory before that one read it; `run`'s `lag` holds each cluster's last block back to show it, or
(`lag_from` 1) all of that block's threads but thread 0, to show a thread that acts for its block (a grid
barrier's arrival) before the others are done. `errors_over_launches` (and `error_against_reference` over
several launches) gives each launch new data, keeping the state arrays and the module's memory, so a kernel's
state kept between launches (a workspace, a counter, a flag) cannot hand a later launch the right values.
"""
from __future__ import annotations

import ctypes
import hashlib
import math
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from cuda_on_cpu_shim import DRIVER, SHIM
from engine.ops.base import Im2colTensorMap, KernelSource

MAX_ARGS = 8


_EXTERN_SHARED = re.compile(r"extern __shared__ (?:__align__\(\d+\) )?(float|unsigned char) (\w+)\[\];")


_CLUSTER_DIMS = re.compile(r"__cluster_dims__\((\d+), (\d+), (\d+)\)")


def cluster_dims(source: KernelSource) -> tuple[int, int, int]:
    """The blocks of one thread block cluster the kernel declares (`__cluster_dims__`), else 1 x 1 x 1;
    a kernel whose blocks wait on one another (`co_resident`) runs its whole grid as one."""
    if source.co_resident:
        return source.grid
    found = _CLUSTER_DIMS.search(source.code)
    return tuple(int(d) for d in found.groups()) if found else (1, 1, 1)


def available() -> bool:
    return shutil.which("g++") is not None


_GXX = ["g++", "-std=c++20", "-O1", "-fPIC", "-w"]


# Files are made under a name of this process's, then renamed: test runs sharing a build dir
# never compile, load or precompile against a half-written one.
def _partial(path: Path) -> Path:
    return path.with_name(f"{path.name}.{os.getpid()}")


def _write(path: Path, text: str) -> None:
    _partial(path).write_text(text)
    _partial(path).replace(path)


def _compile(output: Path, arguments: list[str]) -> None:
    result = subprocess.run([*_GXX, *arguments, "-o", str(_partial(output))], capture_output=True, text=True)
    if result.returncode:
        raise RuntimeError(f"g++ rejected the kernel:\n{result.stderr[:4000]}")
    _partial(output).replace(output)


def _shim_header(build_dir: Path) -> str:
    """The shim as a precompiled header (built once a build dir): parsing it and the standard
    headers it includes is most of a kernel's compile."""
    header = build_dir / f"shim-{hashlib.sha256(SHIM.encode()).hexdigest()[:16]}.h"
    precompiled = header.with_name(header.name + ".gch")
    if not precompiled.exists():
        _write(header, SHIM)
        _compile(precompiled, ["-x", "c++-header", str(header)])
    return header.name


def _library(source: KernelSource, arity: int, build_dir: Path) -> ctypes.CDLL:
    kernel = _EXTERN_SHARED.sub(r"\1* \2 = reinterpret_cast<\1*>(dynamic_smem);", source.code)
    params = ", ".join(["void*"] * arity)
    call = ", ".join(f"launch_args[{i}]" for i in range(arity))
    text = (f'#include "{_shim_header(build_dir)}"\n' + kernel
            + DRIVER % {"params": params, "entry": source.name, "call": call})
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    cpp, lib = build_dir / f"{digest}.cpp", build_dir / f"{digest}.so"
    if not lib.exists():
        _write(cpp, text)
        _compile(lib, ["-shared", str(cpp)])
    return ctypes.CDLL(str(lib))


def run(source: KernelSource, arrays: list[np.ndarray], build_dir: Path | None = None, lag: int = 0,
        lag_from: int = 0) -> None:
    """Launch `source` on `arrays` (C-contiguous; written in place) over its grid and block; `lag` > 0: each
    cluster's last block runs one round of the scheduler in lag + 1 (it falls behind the others), its threads
    from `lag_from` on (1: its thread 0 keeps pace, its others fall behind)."""
    if len(arrays) > MAX_ARGS:
        raise ValueError(f"at most {MAX_ARGS} kernel arguments")
    if source.shared_bytes > 256 * 1024:
        raise ValueError(f"{source.shared_bytes} bytes of shared memory are more than the emulator holds")
    build_dir = build_dir or Path(tempfile.gettempdir()) / "tunerweb-cuda-on-cpu"
    build_dir.mkdir(parents=True, exist_ok=True)
    library = _library(source, len(arrays), build_dir)
    for array in arrays:
        if not array.flags.c_contiguous:
            raise ValueError("arrays must be C-contiguous")
    pointers = (ctypes.c_void_p * len(arrays))(*(a.ctypes.data for a in arrays))
    for spec in source.tensor_maps:  # the shim's Emulated*Map, where the GPU's runner encodes a CUtensorMap
        address = arrays[spec.argument].ctypes.data
        if isinstance(spec, Im2colTensorMap):
            fields = (address, *spec.shape, *spec.lower, *spec.upper, *spec.strides, spec.channels, spec.pixels,
                      spec.element_bytes)
        else:
            fields = (address, spec.rows, spec.columns, spec.box_rows, spec.box_columns, spec.element_bytes)
        (ctypes.c_int64 * len(fields)).in_dll(library, spec.symbol)[:] = fields
    cluster = cluster_dims(source)
    if source.co_resident and math.prod(source.grid) > 8:
        raise ValueError(f"the emulator holds at most 8 blocks at once, and {source.name}'s grid {source.grid} "
                         "must be resident at once")
    if any(g % c for g, c in zip(source.grid, cluster)) or cluster[0] * cluster[1] * cluster[2] > 8:
        raise ValueError(f"grid {source.grid} is not made of clusters of {cluster} (at most 8 blocks)")
    status = library.launch(pointers, *map(ctypes.c_uint, (*source.grid, *source.block, *cluster, lag, lag_from)))
    if status == 1:
        raise RuntimeError(f"{source.name} deadlocked: every thread left waits at a barrier the others never reach")
    if status == 3:
        raise RuntimeError(f"{source.name} left a named barrier with arrivals that no thread's bar.sync met")
    if status:
        raise MemoryError(f"no room for the stacks of {source.name}'s threads")


def errors_over_launches(task, source: KernelSource, launches: int, lag: int = 0, lag_from: int = 0) -> list[float]:
    """Run `source` of `task` here `launches` times, each on new data (the template's inputs of seeds 0, 1, ...;
    the output NaN-filled), and return the runner's relative L2 error of each against its own reference (`lag`,
    `lag_from`: run's). The state arrays, those seeds 0 and 1 fill alike (a split's zeroed workspace and
    counters), carry over from launch to launch as the runner's do, and so does the module's own memory: where a
    kernel keeps state between launches, in either, a launch that reads what an earlier one left shows, where
    repeated data would leave it the right values."""
    from engine.gpu.runner import poison, relative_l2_error

    def inputs_of(seed: int) -> list[np.ndarray]:
        return task.template.make_inputs(task.params, np.random.default_rng(seed))

    arrays = inputs_of(0)
    # one launch has no state to tell apart (the contract tests' many single launches): no second draw for it
    state = [np.array_equal(a, b, equal_nan=a.dtype.kind in "fc") for a, b in zip(arrays, inputs_of(1))] \
        if launches > 1 else []
    errors = []
    for seed in range(launches):
        if seed:
            for array, fresh, kept in zip(arrays, inputs_of(seed), state):
                if not kept:
                    np.copyto(array, fresh)
        expected = task.template.reference(task.params, arrays)  # before the kernel can touch its inputs
        poison(arrays[source.output_index])
        run(source, arrays, lag=lag, lag_from=lag_from)
        errors.append(relative_l2_error(arrays[source.output_index], expected))
    return errors


def error_against_reference(task, config, launches: int = 1, lag: int = 0) -> float:
    """Run `config`'s kernel of `task` here `launches` times, each on new inputs (`errors_over_launches`: a
    launch that reads what an earlier one left, a split's counter or a stream-K flag, shows), and return the
    largest of their relative L2 errors against the reference, NaN where any is (`lag`: run's)."""
    return float(np.max(errors_over_launches(task, task.template.kernel(task.params, config), launches, lag=lag)))
