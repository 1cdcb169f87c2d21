"""Run a generated CUDA kernel on the CPU, so CI (no GPU) can check what it computes.

The kernel text is compiled by g++ as C++ with a thin shim: every CUDA thread of
a block is an OS thread, `__syncthreads()` is a `std::barrier`, `__shared__`
storage is shared by the block's threads, and blocks run one after another (so
atomics need no locking). `__CUDA_ARCH__` is undefined, so kernels take their
pre-Ampere paths (plain copies instead of `cp.async`); the PTX-only paths are
covered by the NVRTC compile tests and the GPU tests. Small shapes only: a
block of 1024 threads is 1024 OS threads.
"""
from __future__ import annotations

import ctypes
import hashlib
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from engine.ops.base import KernelSource

MAX_ARGS = 8

_SHIM = r"""
#include <math.h>
#include <algorithm>
#include <barrier>
#include <cstddef>
#include <cstring>
#include <thread>
#include <vector>
struct dim3_t { unsigned x, y, z; };
static thread_local dim3_t threadIdx;
static dim3_t blockIdx, gridDim, blockDim;
static std::barrier<>* block_barrier;
inline void __syncthreads() { block_barrier->arrive_and_wait(); }
inline void __threadfence() {}
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(n) alignas(n)
struct alignas(8) float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };
inline float2 make_float2(float x, float y) { return {x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
template <class T> inline T __ldg(const T* p) { return *p; }
template <class T> inline T __ldcg(const T* p) { return *p; }
inline int atomicAdd(int* p, int v) { int old = *p; *p += v; return old; }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
// fp16 storage (engine.ops.broadcast.kernel): the PTX cvt conversions, rounding to nearest even.
inline float half_to_float(unsigned short h) { _Float16 f; memcpy(&f, &h, 2); return (float)f; }
inline unsigned short float_to_half(float x) { _Float16 f = (_Float16)x; unsigned short h; memcpy(&h, &f, 2); return h; }
using std::min;
using std::max;
alignas(16) static unsigned char dynamic_smem[256 * 1024];
"""

_DRIVER = r"""
typedef void (*kernel_t)(%(params)s);
extern "C" void launch(void** args, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz) {
    gridDim = {gx, gy, gz};
    blockDim = {bx, by, bz};
    kernel_t kernel = (kernel_t)&%(entry)s;
    for (unsigned z = 0; z < gz; ++z) for (unsigned y = 0; y < gy; ++y) for (unsigned x = 0; x < gx; ++x) {
        blockIdx = {x, y, z};
        std::barrier<> barrier(bx * by * bz);
        block_barrier = &barrier;
        std::vector<std::thread> threads;
        for (unsigned tz = 0; tz < bz; ++tz) for (unsigned ty = 0; ty < by; ++ty) for (unsigned tx = 0; tx < bx; ++tx)
            threads.emplace_back([=] { threadIdx = {tx, ty, tz}; kernel(%(call)s); });
        for (auto& t : threads) t.join();
    }
}
"""

_EXTERN_SHARED = re.compile(r"extern __shared__ (?:__align__\(\d+\) )?float (\w+)\[\];")


def available() -> bool:
    return shutil.which("g++") is not None


def _library(source: KernelSource, arity: int, build_dir: Path) -> ctypes.CDLL:
    kernel = _EXTERN_SHARED.sub(r"float* \1 = reinterpret_cast<float*>(dynamic_smem);", source.code)
    params = ", ".join(["void*"] * arity)
    call = ", ".join(f"args[{i}]" for i in range(arity))
    text = _SHIM + kernel + _DRIVER % {"params": params, "entry": source.name, "call": call}
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    cpp, lib = build_dir / f"{digest}.cpp", build_dir / f"{digest}.so"
    if not lib.exists():
        cpp.write_text(text)
        result = subprocess.run(
            ["g++", "-std=c++20", "-O1", "-shared", "-fPIC", "-pthread", "-w", "-o", str(lib), str(cpp)],
            capture_output=True, text=True,
        )
        if result.returncode:
            raise RuntimeError(f"g++ rejected the kernel:\n{result.stderr[:4000]}")
    return ctypes.CDLL(str(lib))


def run(source: KernelSource, arrays: list[np.ndarray], build_dir: Path | None = None) -> None:
    """Launch `source` on `arrays` (C-contiguous; written in place) over its grid and block."""
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
    library.launch(pointers, *map(ctypes.c_uint, (*source.grid, *source.block)))


def error_against_reference(task, config, launches: int = 1) -> float:
    """Run `config`'s kernel of `task` here `launches` times (the output NaN-filled before each)
    on the template's inputs, and return the runner's relative L2 error against its reference."""
    from engine.gpu.runner import relative_l2_error

    inputs = task.template.make_inputs(task.params, np.random.default_rng(0))
    expected = task.template.reference(task.params, inputs)
    source = task.template.kernel(task.params, config)
    for _ in range(launches):
        inputs[source.output_index].fill(np.nan)
        run(source, inputs)
    return relative_l2_error(inputs[source.output_index], expected)
