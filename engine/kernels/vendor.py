"""Vendor baselines of the operator templates, timed by the runner's rule (engine.gpu.runner).

Each template names its provider in `baseline_provider`:

* gemm -> "cublas": CuPy's matmul (cuBLAS SGEMM) with TF32 off. CuPy uses TF32 only
  when the environment says CUPY_TF32=1; this module sets CUPY_TF32=0 before CuPy is
  imported, and the result is checked against the float64 reference at the runner's
  tolerance (1e-4 relative L2), which a TF32 product (about 1e-3) would fail.
* depthwise_conv2d_nchw.cuda -> "cudnn": PyTorch's grouped conv2d (groups = C),
  fp32 with TF32 off and cudnn.benchmark on.
* broadcast_nchw -> "default-config" (the general tactic's default, measured as any
  config) plus `copy_bandwidth`, the device-to-device copy that bounds it.

All run in the calling process (they create a CUDA context there: call them from a
process that does not fork compile workers afterwards, as the GPU measurer's parent).
"""
from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

import numpy as np

os.environ.setdefault("CUPY_TF32", "0")

if TYPE_CHECKING:  # pragma: no cover
    from engine.gpu.runner import TimingSettings
    from engine.task import Task

from engine.measure import MeasureResult
from engine.records import ErrorNo


class BaselineUnavailable(RuntimeError):
    """The provider cannot run here (CuPy or PyTorch missing, TF32 forced on, a shape it does not take)."""


def _relative_error(got: np.ndarray, reference: np.ndarray) -> float:
    return float(np.linalg.norm((got - reference).ravel()) / (np.linalg.norm(reference.ravel()) or 1.0))


def _checked_timing(cp, stream, launch, output, reference, settings, start, what) -> MeasureResult:
    from engine.gpu.runner import cupy_graph, time_launches

    with stream:
        launch()
    stream.synchronize()
    error = _relative_error(cp.asnumpy(output).astype(np.float64), reference)
    if not error < settings.tolerance:
        return MeasureResult.failure(ErrorNo.WRONG_ANSWER, f"{what}'s relative L2 error {error:.3g}",
                                     time.perf_counter() - start)
    with stream:
        costs = time_launches(cp, stream, launch, lambda number: cupy_graph(stream, launch, number), settings)
    return MeasureResult(ErrorNo.NO_ERROR, costs, all_cost=time.perf_counter() - start)


def cublas_gemm(task: "Task", seed: int = 0, settings: "TimingSettings | None" = None) -> MeasureResult:
    """cuBLAS SGEMM (through CuPy, TF32 off) on the task's inputs, checked and timed."""
    from engine.gpu.runner import TimingSettings

    if os.environ.get("CUPY_TF32", "0") != "0":
        raise BaselineUnavailable("CUPY_TF32 is set to use TF32; the fp32 baseline needs it unset or 0")
    try:
        import cupy as cp
    except ImportError as exc:
        raise BaselineUnavailable(f"the cublas baseline needs CuPy: {exc}") from None
    settings = settings or TimingSettings()
    inputs = task.template.make_inputs(task.params, np.random.default_rng(seed))
    reference = task.template.reference(task.params, inputs)
    start = time.perf_counter()
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        a, b = cp.asarray(inputs[0]), cp.asarray(inputs[1])
        c = cp.empty((task.params.m, task.params.n), dtype=cp.float32)
    return _checked_timing(cp, stream, lambda: cp.matmul(a, b, out=c), c, reference, settings, start, "cuBLAS")


def cudnn_depthwise(task: "Task", seed: int = 0, settings: "TimingSettings | None" = None) -> MeasureResult:
    """PyTorch/cuDNN's grouped (depthwise) conv2d, fp32, TF32 off, checked and timed."""
    from engine.gpu.runner import TimingSettings, time_launches

    try:
        import cupy as cp
        import torch
        import torch.nn.functional as F
    except ImportError as exc:
        raise BaselineUnavailable(f"the cudnn baseline needs PyTorch and CuPy: {exc}") from None
    settings = settings or TimingSettings()
    p = task.params
    top, left, bottom, right = p.padding
    if (top, left) != (bottom, right):
        raise BaselineUnavailable(f"padding {p.padding} is not symmetric; torch conv2d takes symmetric padding")
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    inputs = task.template.make_inputs(p, np.random.default_rng(seed))
    reference = task.template.reference(p, inputs)
    start = time.perf_counter()
    data = torch.from_numpy(inputs[0]).cuda()
    weight = torch.from_numpy(inputs[1].reshape(p.co, 1, p.kh, p.kw)).cuda()  # [C*mult, 1, KH, KW]
    stream = torch.cuda.Stream()

    def conv():
        return F.conv2d(data, weight, stride=p.stride, padding=(top, left), groups=p.ci)

    with torch.cuda.stream(stream):
        for _ in range(3):  # cudnn.benchmark picks its algorithm on the first calls
            out = conv()
    stream.synchronize()
    error = _relative_error(out.double().cpu().numpy(), reference)
    if not error < settings.tolerance:
        return MeasureResult.failure(ErrorNo.WRONG_ANSWER, f"cuDNN's relative L2 error {error:.3g}",
                                     time.perf_counter() - start)

    def launch():
        with torch.cuda.stream(stream):
            conv()

    def make_replay(number: int):
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            for _ in range(number):
                conv()

        def replay():
            with torch.cuda.stream(stream):
                graph.replay()
        return replay

    costs = time_launches(cp, cp.cuda.ExternalStream(stream.cuda_stream), launch, make_replay, settings)
    return MeasureResult(ErrorNo.NO_ERROR, costs, all_cost=time.perf_counter() - start)


def copy_bandwidth(nbytes: int, settings: "TimingSettings | None" = None) -> tuple[float, float]:
    """(seconds per copy, bytes per second read + written) of a device-to-device copy of `nbytes`."""
    from engine.gpu.runner import TimingSettings, cupy_graph, time_launches

    import cupy as cp

    settings = settings or TimingSettings()
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        src = cp.ones(nbytes // 4, dtype=cp.float32)
        dst = cp.empty_like(src)

    def launch():
        dst.data.copy_from_device_async(src.data, src.nbytes, stream)

    with stream:
        costs = time_launches(cp, stream, launch, lambda number: cupy_graph(stream, launch, number), settings)
    seconds = float(np.mean(costs))
    return seconds, 2 * src.nbytes / seconds
