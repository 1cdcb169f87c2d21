"""Vendor and untuned baselines, timed by the runner's rule and written as log records.

A baseline record is an ordinary version 0.2 line with an empty config entity
and `tvm_version` = `baseline:<provider>`; the records app imports those as
baselines (`cudnn`, `cublas`, `default-config`).

* the template's vendor library (`Template.baseline_provider`): cudnn for the
  direct and depthwise convolutions (PyTorch's conv2d, grouped for depthwise),
  cublas for gemm (PyTorch's matmul), fp32 with TF32 off, checked against the
  same numpy reference at the runner's tolerance (which a TF32 product, about
  1e-3, would fail); cublas on tensor cores for gemm_tensorcore, in its precision, C in the
  workload's dtype (fp32 C from 16-bit inputs by `torch.mm`'s out_dtype), at that
  precision's tolerance (TF32 allowed for its tf32 rows only); cudnn on tensor cores for
  conv2d_nhwc_tensorcore (PyTorch's conv2d on fp16/bf16 channels-last tensors), all timed as a CUDA graph of `number` calls replayed `repeat`
  times (`runner.time_launches`). `VENDOR_BASELINES` is the one table of which
  function measures which template's.
* default-config: the template's untuned default config through the GPU
  measurer, so exactly as tuned configs are measured; every template has one
  (broadcast_nchw and custom kernels have only this, plus `copy_bandwidth`, the
  float4 copy that bounds a streaming kernel).

All run in the calling process (they create a CUDA context there: call them from a
process that does not fork compile workers afterwards, as the GPU measurer's parent).
"""
from __future__ import annotations

import dataclasses
import os
import time
from typing import TYPE_CHECKING, Callable

import numpy as np

from engine.measure import MeasureResult
from engine.logfile import ErrorNo, Record
from engine.baselines import DEFAULT_CONFIG_BASELINE, MEASURED_PROVIDERS, baseline_version

from .runner import TimingSettings, cupy_graph, relative_l2_error, time_launches

os.environ.setdefault("CUPY_TF32", "0")

if TYPE_CHECKING:  # pragma: no cover
    from engine.task import Task

    from .measurer import GpuMeasurer

PROVIDERS = MEASURED_PROVIDERS


class BaselineUnavailable(RuntimeError):
    """The provider cannot run here (PyTorch missing, a shape it does not take)."""


def time_torch_op(op, reference: np.ndarray, what: str, settings: TimingSettings | None = None) -> MeasureResult:
    """Check a PyTorch callable's output against `reference`, then time it by the runner's
    rule, as a CUDA graph of `number` calls replayed `repeat` times (cuBLAS and cuDNN both
    allow graph capture through PyTorch, so library launch overhead is not counted)."""
    import cupy as cp
    import torch

    settings = settings or TimingSettings()
    start = time.perf_counter()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        for _ in range(3):  # cudnn.benchmark picks its algorithm on the first calls
            out = op()
    stream.synchronize()
    got = out.double().cpu().numpy().reshape(reference.shape)
    error = relative_l2_error(got, reference)
    if not error < settings.tolerance:
        return MeasureResult.failure(ErrorNo.WRONG_ANSWER, f"{what}'s relative L2 error {error:.3g}",
                                     time.perf_counter() - start)

    def launch():
        with torch.cuda.stream(stream):
            op()

    costs = time_launches(cp, cp.cuda.ExternalStream(stream.cuda_stream), launch,
                          lambda number: torch_graph(stream, op, number), settings)
    return MeasureResult(ErrorNo.NO_ERROR, costs, all_cost=time.perf_counter() - start)


def torch_graph(stream, op, number: int):
    """`number` calls of `op` captured in one CUDA graph on PyTorch `stream`; returns its replay."""
    import torch

    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        for _ in range(number):
            op()

    def replay():
        with torch.cuda.stream(stream):
            graph.replay()
    return replay


def fp32_torch():
    """PyTorch with TF32 off everywhere and cuDNN's autotuner on, searching every algorithm;
    BaselineUnavailable without it."""
    try:
        import cupy  # noqa: F401  (the timing rule runs on CuPy events)
        import torch
    except ImportError as exc:
        raise BaselineUnavailable(f"vendor baselines need PyTorch and CuPy: {exc}") from None
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.benchmark_limit = 0  # cudnnFind over every algorithm, not the top ten heuristics
    return torch


def cudnn_conv2d(task: "Task", seed: int = 0, settings: TimingSettings | None = None, groups: int = 1) -> MeasureResult:
    """PyTorch/cuDNN's fp32 convolution of a conv2d (or, with groups, depthwise) task."""
    torch = fp32_torch()
    import torch.nn.functional as F

    params = task.params
    top, left, bottom, right = params.padding
    if (top, left) != (bottom, right):
        raise BaselineUnavailable(f"padding {params.padding} is not symmetric; torch conv2d takes symmetric padding")
    inputs = task.template.make_inputs(params, np.random.default_rng(seed))
    reference = task.template.reference(params, inputs)
    data = torch.from_numpy(inputs[0]).cuda()
    weight = torch.from_numpy(inputs[1]).cuda()
    if groups > 1:
        weight = weight.reshape(params.co, 1, params.kh, params.kw)  # [C*mult, 1, KH, KW]
    return time_torch_op(
        lambda: F.conv2d(data, weight, stride=params.stride, padding=(top, left), groups=groups),
        reference, "cuDNN", settings,
    )


def cublas_gemm(task: "Task", seed: int = 0, settings: TimingSettings | None = None) -> MeasureResult:
    """cuBLAS SGEMM through PyTorch's matmul (TF32 off), checked and timed as a CUDA graph;
    CuPy's own cuBLAS calls cannot be captured in a graph."""
    torch = fp32_torch()
    inputs = task.template.make_inputs(task.params, np.random.default_rng(seed))
    reference = task.template.reference(task.params, inputs)
    a, b = (torch.from_numpy(x).cuda() for x in inputs[:2])
    return time_torch_op(lambda: torch.matmul(a, b), reference, "cuBLAS", settings)


def tensor_core_operands(torch, task: "Task", inputs: list) -> tuple[object, object, bool]:
    """A and B of a gemm_tensorcore task as PyTorch tensors of its precision (bf16 from its bit
    patterns), and whether the product may use TF32 (only a tf32 task's)."""
    precision = task.params.precision
    a, b = inputs[:2]
    if precision == "bfloat16":
        return (torch.from_numpy(a.view(np.int16)).cuda().view(torch.bfloat16),
                torch.from_numpy(b.view(np.int16)).cuda().view(torch.bfloat16), False)
    return torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda(), precision == "tf32"


def tensor_core_c_dtype(torch, task: "Task"):
    """What cuBLAS must write C as to do the task's computation: float32 from 16-bit inputs
    (torch.mm's out_dtype; its default would round C to the inputs' precision), else None
    (C as the inputs are: a 16-bit C, or tf32's float32)."""
    params = task.params
    if params.precision != "tf32" and params.c_dtype == "float32":
        return torch.float32
    return None


def cublas_matmul(torch, a, b, tf32: bool = False, c_dtype=None):
    """A·B by PyTorch (cuBLAS), TF32 allowed for this call only (fp32 rows keep it off), C as
    `c_dtype` says (None: the inputs' dtype)."""
    torch.backends.cuda.matmul.allow_tf32 = tf32
    try:
        return torch.matmul(a, b) if c_dtype is None else torch.mm(a, b, out_dtype=c_dtype)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = False


def cublas_tensor_core_gemm(task: "Task", seed: int = 0, settings: TimingSettings | None = None) -> MeasureResult:
    """cuBLAS on tensor cores in the task's precision (fp16, bf16; TF32 allowed for a tf32 task
    only) and C dtype, through PyTorch, checked at the precision's tolerance and timed as a CUDA graph."""
    torch = fp32_torch()
    inputs = task.template.make_inputs(task.params, np.random.default_rng(seed))
    reference = task.template.reference(task.params, inputs)
    a, b, tf32 = tensor_core_operands(torch, task, inputs)
    settings = dataclasses.replace(settings or TimingSettings(), tolerance=task.template.tolerance(task.params))
    c_dtype = tensor_core_c_dtype(torch, task)
    return time_torch_op(lambda: cublas_matmul(torch, a, b, tf32, c_dtype), reference, "cuBLAS", settings)


def tensor_core_conv_operands(torch, task: "Task", inputs: list) -> tuple[object, object]:
    """Data (NHWC) and weights (KRSC) of a conv2d_nhwc_tensorcore task as PyTorch NCHW tensors in
    channels-last memory (the arrays as they lie, permuted views), in its precision (bf16 from its
    bit patterns): what cuDNN's NHWC tensor-core algorithms take."""
    def tensor(x: np.ndarray):
        if task.params.precision == "bfloat16":
            return torch.from_numpy(x.view(np.int16)).cuda().view(torch.bfloat16).permute(0, 3, 1, 2)
        return torch.from_numpy(x).cuda().permute(0, 3, 1, 2)

    return tensor(inputs[0]), tensor(inputs[1])


def tensor_core_conv2d(torch, params, data, weight):
    """cuDNN's convolution of channels-last operands, its output as an NHWC view (no copy)."""
    top, left, bottom, right = params.padding
    if (top, left) != (bottom, right):
        raise BaselineUnavailable(f"padding {params.padding} is not symmetric; torch conv2d takes symmetric padding")
    return torch.nn.functional.conv2d(data, weight, stride=params.stride, padding=(top, left)).permute(0, 2, 3, 1)


def cudnn_tensor_core_conv2d(task: "Task", seed: int = 0, settings: TimingSettings | None = None) -> MeasureResult:
    """cuDNN on tensor cores in the task's precision (fp16, bf16; channels-last), checked at the
    precision's tolerance and timed as a CUDA graph."""
    torch = fp32_torch()
    inputs = task.template.make_inputs(task.params, np.random.default_rng(seed))
    reference = task.template.reference(task.params, inputs)
    data, weight = tensor_core_conv_operands(torch, task, inputs)
    settings = dataclasses.replace(settings or TimingSettings(), tolerance=task.template.tolerance(task.params))
    return time_torch_op(lambda: tensor_core_conv2d(torch, task.params.conv, data, weight), reference, "cuDNN", settings)


def cudnn_depthwise(task: "Task", seed: int = 0, settings: TimingSettings | None = None) -> MeasureResult:
    """PyTorch/cuDNN's grouped (depthwise) conv2d, fp32, TF32 off, checked and timed."""
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


def copy_bandwidth(nbytes: int, settings: TimingSettings | None = None) -> tuple[float, float]:
    """(seconds per copy, bytes per second read + written) of a device-to-device copy of
    `nbytes` by a float4 copy kernel filling every SM."""
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


def default_config(task: "Task", measurer: "GpuMeasurer") -> tuple[int, MeasureResult]:
    config = task.default_config()
    return config.index, measurer.measure(task, [config])[0]


def baseline_record(task: "Task", provider: str, result: MeasureResult, target: str, config_index: int = 0) -> Record:
    if provider not in PROVIDERS:
        raise ValueError(f"unknown baseline provider {provider!r}; known: {', '.join(PROVIDERS)}")
    return Record(
        target=target,
        task_name=task.name,
        args=task.args,
        config_index=config_index,
        entity=[],
        costs=result.costs if result.ok else (),
        error_no=result.error_no,
        all_cost=result.all_cost,
        timestamp=result.timestamp,
        tvm_version=baseline_version(provider),
        error_msg=result.error_msg,
    )


# Task name -> the function measuring its template's vendor baseline (`baseline_provider`).
VendorBaseline = Callable[..., MeasureResult]  # (task, seed, settings) -> result
VENDOR_BASELINES: dict[str, VendorBaseline] = {
    "conv2d_nchw.cuda": cudnn_conv2d,
    "conv2d_nchw_implicit_gemm": cudnn_conv2d,
    "conv2d_nchw_winograd_fused": cudnn_conv2d,
    "conv2d_nchw_winograd_nonfused": cudnn_conv2d,
    "conv2d_no_batching": cudnn_conv2d,
    "depthwise_conv2d_nchw.cuda": cudnn_depthwise,
    "gemm": cublas_gemm,
    "gemm_tensorcore": cublas_tensor_core_gemm,
    "conv2d_nhwc_tensorcore": cudnn_tensor_core_conv2d,
}


def default_providers(task: "Task") -> list[str]:
    """The template's vendor baseline (when it has one), then its untuned default config."""
    return list(dict.fromkeys([task.template.baseline_provider, DEFAULT_CONFIG_BASELINE]))


def vendor_baseline(task: "Task", provider: str) -> VendorBaseline | None:
    """The function measuring `provider`'s baseline of `task`; None for default-config (the GPU
    measurer runs that). BaselineUnavailable when `provider` is not this template's library."""
    if provider == DEFAULT_CONFIG_BASELINE:
        return None
    own = task.template.baseline_provider
    if provider != own or task.name not in VENDOR_BASELINES:
        offered = own if own != DEFAULT_CONFIG_BASELINE else "none"
        raise BaselineUnavailable(f"{task.name} has no {provider} baseline (its vendor baseline: {offered})")
    return VENDOR_BASELINES[task.name]


def measure_baseline(task: "Task", provider: str, measurer: "GpuMeasurer", seed: int = 0) -> Record:
    """One provider's baseline record for `task` on the measurer's GPU."""
    target = measurer.device.target
    measure_vendor = vendor_baseline(task, provider)
    if measure_vendor is not None:
        return baseline_record(task, provider, measure_vendor(task, seed, measurer.timing), target)
    index, result = default_config(task, measurer)
    return baseline_record(task, provider, result, target, config_index=index)
