"""Vendor baselines at their best: the library's fastest algorithm for the shape, said and recorded.

* cuDNN (conv2d, depthwise): PyTorch's benchmark mode with `benchmark_limit = 0`, so
  cudnnFind tries every algorithm cuDNN offers for the convolution (an exhaustive
  search, not the default ten heuristic candidates) and keeps the fastest. Run in a
  fresh process, as the confirmation's stopwatch is.
* cuBLAS (gemm): PyTorch's matmul through each BLAS back end it has (cuBLAS and
  cuBLASLt), each timed by the runner's rule; the faster is kept.

fp32 everywhere with TF32 off, except gemm_tensorcore: cuBLAS on tensor cores in the task's
precision, C in the task's dtype, TF32 allowed for its tf32 rows only (for the one call); and conv2d_nhwc_tensorcore:
cuDNN on its fp16/bf16 channels-last tensors (its NHWC tensor-core algorithms among those searched). The algorithm recorded is what ran: the names of the CUDA
kernels one call launches (read off a CUDA graph of it), with the library and its version.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from .baselines import (VENDOR_BASELINES, BaselineUnavailable, cublas_matmul, cudnn_conv2d, cudnn_depthwise, fp32_torch,
                        tensor_core_c_dtype, tensor_core_conv2d, tensor_core_conv_operands, tensor_core_operands)

if TYPE_CHECKING:  # pragma: no cover
    from engine.task import Task

CUDNN_SEARCH = "exhaustive (PyTorch cudnn.benchmark with benchmark_limit=0: cudnnFind over every algorithm)"
CUBLAS_SEARCH = "best of PyTorch's BLAS back ends (cublas, cublaslt), timed"


@dataclass
class VendorOp:
    """One vendor call on resident inputs, and what was chosen for it."""

    call: Callable[[], object]  # enqueues one call on PyTorch's current stream, returns the output
    details: dict  # library, library_version, search, algorithm


def kernels_launched(torch, call) -> str:
    """The CUDA kernels one call launches, by name: the algorithm that ran.

    Read off a CUDA graph of the call, not PyTorch's profiler: the profiler attaches CUPTI,
    which stays attached after it ends and slows every kernel the process runs later (on
    the H200 about half of the 0.7-1 µs a 2 µs broadcast read slower cold after a vendor
    baseline; the warm 0.19 µs is PyTorch's own, see engine.gpu.confirming:
    docs/gpu-runs/vendor-probe-h200-2026-12-01/)."""
    try:
        from cuda.bindings import driver
    except ImportError as exc:
        return f"unknown (cuda-bindings unavailable: {exc})"
    torch.cuda.synchronize()
    graph = None
    try:
        graph = torch.cuda.CUDAGraph(keep_graph=True)
        with torch.cuda.graph(graph):
            call()
        names = [name for node in _graph_nodes(driver, graph.raw_cuda_graph()) if (name := _kernel_name(driver, node))]
    except Exception as exc:  # an older PyTorch without keep_graph, or a driver without cuFuncGetName
        return f"unknown (kernel names unreadable: {type(exc).__name__}: {exc})"
    finally:
        if graph is not None:
            graph.reset()
    return "; ".join(dict.fromkeys(names)) or "unknown"


def _checked(driver, result):
    error, *values = result
    if error != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"CUDA driver error {error.name}")
    return values[0] if len(values) == 1 else values


def _graph_nodes(driver, raw_graph) -> list:
    graph = driver.CUgraph(raw_graph)
    _, count = _checked(driver, driver.cuGraphGetNodes(graph, 0))
    nodes, count = _checked(driver, driver.cuGraphGetNodes(graph, count))
    return list(nodes)[:count]


def _kernel_name(driver, node) -> str:
    if _checked(driver, driver.cuGraphNodeGetType(node)) != driver.CUgraphNodeType.CU_GRAPH_NODE_TYPE_KERNEL:
        return ""
    params = _checked(driver, driver.cuGraphKernelNodeGetParams(node))
    if int(params.func):
        name = _checked(driver, driver.cuFuncGetName(params.func))
    else:  # a library kernel launched by its CUkernel handle
        name = _checked(driver, driver.cuKernelGetName(params.kern))
    return name.decode(errors="replace") if isinstance(name, bytes) else str(name)


def load_vendor_libraries(device_id: int = 0) -> dict:
    """PyTorch's CUDA runtime, cuBLAS and cuDNN initialised here (a matmul and a convolution of
    a few elements), as timing a vendor baseline leaves them; what was loaded, for the
    measurement's environment. Why: see engine.gpu.confirming."""
    try:
        torch = fp32_torch()
        device = torch.device("cuda", device_id)
        square = torch.ones((64, 64), device=device)
        image, weight = torch.ones((1, 8, 8, 8), device=device), torch.ones((8, 8, 3, 3), device=device)
        (square @ square).sum().item()
        torch.nn.functional.conv2d(image, weight, padding=1).sum().item()
        torch.cuda.synchronize(device)
    except Exception as exc:  # no PyTorch, or one that cannot run here: our kernels are still timed
        return {"vendor_libraries": f"none ({type(exc).__name__}: {exc})"[:300]}
    return {"vendor_libraries": "loaded", "torch": torch.__version__, "cudnn": str(torch.backends.cudnn.version())}


def vendor_op(task: "Task", provider: str, inputs: list, time_call: Callable[[Callable], float]) -> VendorOp:
    """The provider's best call on `inputs` (numpy, the template's), chosen as the module says.
    `time_call(call)` gives seconds per call by the runner's rule (for choosing among back ends)."""
    torch = fp32_torch()  # TF32 off; cuDNN's search over every algorithm
    # The templates whose timed baseline is cuDNN's fp32 convolution (engine.gpu.baselines.VENDOR_BASELINES)
    if provider == "cudnn" and VENDOR_BASELINES.get(task.name) in (cudnn_conv2d, cudnn_depthwise):
        return _cudnn(torch, task, inputs)
    if provider == "cudnn" and task.name == "conv2d_nhwc_tensorcore":
        data, weight = tensor_core_conv_operands(torch, task, inputs)
        return _cudnn_search(torch, lambda: tensor_core_conv2d(torch, task.params.conv, data, weight),
                             {"dtype": task.params.precision, "memory_format": "channels_last"})
    if provider == "cublas" and task.name == "gemm":
        a, b = (torch.from_numpy(x).cuda() for x in inputs[:2])
        return _cublas(torch, a, b, False, time_call)
    if provider == "cublas" and task.name == "gemm_tensorcore":
        return _cublas(torch, *tensor_core_operands(torch, task, inputs), time_call, tensor_core_c_dtype(torch, task))
    raise BaselineUnavailable(f"{task.name} has no {provider} baseline here")


def _cudnn(torch, task: "Task", inputs: list) -> VendorOp:
    import torch.nn.functional as F

    params = task.params
    top, left, bottom, right = params.padding
    if (top, left) != (bottom, right):
        raise BaselineUnavailable(f"padding {params.padding} is not symmetric; torch conv2d takes symmetric padding")
    data = torch.from_numpy(inputs[0]).cuda()
    weight = torch.from_numpy(inputs[1]).cuda()
    groups = params.ci if VENDOR_BASELINES[task.name] is cudnn_depthwise else 1
    if groups > 1:
        weight = weight.reshape(params.co, 1, params.kh, params.kw)

    def call():
        return F.conv2d(data, weight, stride=params.stride, padding=(top, left), groups=groups)

    return _cudnn_search(torch, call)


def _cudnn_search(torch, call, details: dict | None = None) -> VendorOp:
    """A cuDNN call after its algorithm search, and what it chose."""
    for _ in range(3):  # the first call runs the algorithm search
        call()
    torch.cuda.synchronize()
    return VendorOp(call, {"library": "cuDNN", "library_version": str(torch.backends.cudnn.version()),
                           "torch": torch.__version__, "search": CUDNN_SEARCH, **(details or {}),
                           "algorithm": kernels_launched(torch, call)})


def _cublas(torch, a, b, tf32: bool, time_call, c_dtype=None) -> VendorOp:
    def call():
        return cublas_matmul(torch, a, b, tf32, c_dtype)

    timed = {}
    for backend in ("cublas", "cublaslt"):
        try:
            torch.backends.cuda.preferred_blas_library(backend)
        except Exception:  # a build without that back end
            continue
        call()
        torch.cuda.synchronize()
        timed[backend] = time_call(call)
    best = min(timed, key=timed.get)
    torch.backends.cuda.preferred_blas_library(best)  # what the captured graphs then use
    call()
    torch.cuda.synchronize()
    return VendorOp(call, {"library": "cuBLAS", "library_version": f"CUDA {torch.version.cuda}",
                           "torch": torch.__version__, "search": CUBLAS_SEARCH, "blas_backend": best,
                           "dtype": str(a.dtype).removeprefix("torch."), "tf32": tf32,
                           "c_dtype": str(c_dtype or a.dtype).removeprefix("torch."),
                           "backend_times_us": {k: round(v * 1e6, 3) for k, v in timed.items()},
                           "algorithm": kernels_launched(torch, call)})
