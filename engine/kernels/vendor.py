"""Vendor baselines of the operator templates, timed by the runner's rule (engine.gpu.runner).

Each template names its provider in `baseline_provider`:

* gemm -> "cublas": PyTorch's matmul (cuBLAS SGEMM) with TF32 off, checked against the
  float64 reference at the runner's tolerance (1e-4 relative L2), which a TF32 product
  (about 1e-3) would fail.
* depthwise_conv2d_nchw.cuda -> "cudnn": PyTorch's grouped conv2d (groups = C),
  fp32 with TF32 off and cudnn.benchmark on.
* broadcast_nchw -> "default-config" (the general tactic's default, measured as any
  config) plus `copy_bandwidth`, the device-to-device copy (a float4 kernel) that bounds it.

All run in the calling process (they create a CUDA context there: call them from a
process that does not fork compile workers afterwards, as the GPU measurer's parent).
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

import numpy as np

os.environ.setdefault("CUPY_TF32", "0")

if TYPE_CHECKING:  # pragma: no cover
    from engine.gpu.runner import TimingSettings
    from engine.task import Task

from engine.measure import MeasureResult


def cublas_gemm(task: "Task", seed: int = 0, settings: "TimingSettings | None" = None) -> MeasureResult:
    """cuBLAS SGEMM through PyTorch's matmul (TF32 off), checked and timed as a CUDA graph;
    CuPy's own cuBLAS calls cannot be captured in a graph."""
    from engine.gpu.baselines import fp32_torch, time_torch_op

    torch = fp32_torch()
    inputs = task.template.make_inputs(task.params, np.random.default_rng(seed))
    reference = task.template.reference(task.params, inputs)
    a, b = (torch.from_numpy(x).cuda() for x in inputs[:2])
    return time_torch_op(lambda: torch.matmul(a, b), reference, "cuBLAS", settings)


def cudnn_depthwise(task: "Task", seed: int = 0, settings: "TimingSettings | None" = None) -> MeasureResult:
    """PyTorch/cuDNN's grouped (depthwise) conv2d, fp32, TF32 off, checked and timed."""
    from engine.gpu.baselines import cudnn_conv2d

    return cudnn_conv2d(task, seed, settings, groups=task.params.ci)


# A grid-stride float4 copy: the streaming kernel that bounds every elementwise template.
# (A memcpy node in a CUDA graph may go to a copy engine, which is slower than the SMs.)
_COPY_KERNEL = r"""
extern "C" __global__ void copy_float4(const float4* __restrict__ src, float4* __restrict__ dst, long long n) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        dst[i] = src[i];
}
"""
COPY_THREADS = 256
COPY_BLOCKS_PER_SM = 8


def copy_bandwidth(nbytes: int, settings: "TimingSettings | None" = None) -> tuple[float, float]:
    """(seconds per copy, bytes per second read + written) of a device-to-device copy of
    `nbytes` by a float4 copy kernel filling every SM."""
    from engine.gpu.runner import TimingSettings, cupy_graph, time_launches

    import cupy as cp

    settings = settings or TimingSettings()
    stream = cp.cuda.Stream(non_blocking=True)
    vectors = nbytes // 16
    with stream:
        src = cp.ones(vectors * 4, dtype=cp.float32)
        dst = cp.empty_like(src)
    kernel = cp.RawKernel(_COPY_KERNEL, "copy_float4")
    blocks = cp.cuda.Device().attributes["MultiProcessorCount"] * COPY_BLOCKS_PER_SM

    def launch():
        kernel((blocks,), (COPY_THREADS,), (src, dst, cp.int64(vectors)), stream=stream)

    with stream:
        costs = time_launches(cp, stream, launch, lambda number: cupy_graph(stream, launch, number), settings)
        if not bool(cp.array_equal(src, dst)):
            raise RuntimeError("the copy kernel did not copy")
    seconds = float(np.mean(costs))
    return seconds, 2 * src.nbytes / seconds
