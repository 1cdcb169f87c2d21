"""Floating-point operation counts of known tasks, from a log's `input` args.

One multiply-add counts as two operations, as AutoTVM counts them. Winograd
convolution is counted as the direct convolution it computes, so its GFLOPS
compare with the direct schedules of the same shape.
"""
from __future__ import annotations

from typing import Callable


class FlopCountError(ValueError):
    """Args that do not describe the task they claim to (wrong arity, bad shapes)."""


def tensor_shape(arg, what: str) -> list[int]:
    if not (isinstance(arg, list) and len(arg) == 3 and arg[0] == "TENSOR" and isinstance(arg[1], list)):
        raise FlopCountError(f"{what} is not a [\"TENSOR\", shape, dtype] argument")
    shape = arg[1]
    if not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in shape):
        raise FlopCountError(f"{what} shape {shape} has a non-positive or non-integer size")
    return shape


def as_pair(value, what: str) -> tuple[int, int]:
    if isinstance(value, int) and not isinstance(value, bool):
        return value, value
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return value[0], value[1]
    raise FlopCountError(f"{what} {value!r} is not an integer or a pair")


def as_padding(value) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) from TVM's 1-, 2- or 4-element padding."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value, value, value, value
    if isinstance(value, list) and all(isinstance(v, int) for v in value):
        if len(value) == 2:
            return value[0], value[1], value[0], value[1]
        if len(value) == 4:
            return tuple(value)  # type: ignore[return-value]
    raise FlopCountError(f"padding {value!r} is not an integer, a pair or four integers")


def conv2d_output_size(size: int, kernel: int, stride: int, pad_before: int, pad_after: int, dilation: int = 1) -> int:
    return (size + pad_before + pad_after - (kernel - 1) * dilation - 1) // stride + 1


def _conv2d_nchw(args: list) -> int:
    if len(args) < 5:
        raise FlopCountError("conv2d args are [data, kernel, strides, padding, dilation, out_dtype]")
    n, ci, h, w = _4d(tensor_shape(args[0], "data"), "data")
    co, kci, kh, kw = _4d(tensor_shape(args[1], "kernel"), "kernel")
    if kci != ci:
        raise FlopCountError(f"kernel has {kci} input channels, data has {ci}")
    sh, sw = as_pair(args[2], "strides")
    top, left, bottom, right = as_padding(args[3])
    dh, dw = as_pair(args[4], "dilation")
    oh = conv2d_output_size(h, kh, sh, top, bottom, dh)
    ow = conv2d_output_size(w, kw, sw, left, right, dw)
    if oh <= 0 or ow <= 0:
        raise FlopCountError("the output would be empty")
    return 2 * n * co * oh * ow * ci * kh * kw


def _depthwise_conv2d_nchw(args: list) -> int:
    if len(args) < 5:
        raise FlopCountError("depthwise args are [data, kernel, strides, padding, dilation, out_dtype]")
    n, c, h, w = _4d(tensor_shape(args[0], "data"), "data")
    kc, multiplier, kh, kw = _4d(tensor_shape(args[1], "kernel"), "kernel")
    if kc != c:
        raise FlopCountError(f"kernel has {kc} channels, data has {c}")
    sh, sw = as_pair(args[2], "strides")
    top, left, bottom, right = as_padding(args[3])
    dh, dw = as_pair(args[4], "dilation")
    oh = conv2d_output_size(h, kh, sh, top, bottom, dh)
    ow = conv2d_output_size(w, kw, sw, left, right, dw)
    if oh <= 0 or ow <= 0:
        raise FlopCountError("the output would be empty")
    return 2 * n * c * multiplier * oh * ow * kh * kw


def _conv2d_transpose_nchw(args: list) -> int:
    if len(args) < 3:
        raise FlopCountError("conv2d_transpose args are [data, kernel, strides, padding, out_dtype]")
    n, ci, h, w = _4d(tensor_shape(args[0], "data"), "data")
    kci, co, kh, kw = _4d(tensor_shape(args[1], "kernel"), "kernel")
    if kci != ci:
        raise FlopCountError(f"kernel has {kci} input channels, data has {ci}")
    # Every input element scatters a KH x KW x CO patch; padding only crops the result.
    return 2 * n * ci * h * w * co * kh * kw


def _batch_matmul(args: list) -> int:
    if len(args) < 2:
        raise FlopCountError("batch_matmul args are [x, y, ...]")
    b, m, k = _3d(tensor_shape(args[0], "x"), "x")
    yb, n, yk = _3d(tensor_shape(args[1], "y"), "y")
    if yk != k or yb not in (b, 1):
        raise FlopCountError(f"x {[b, m, k]} and y {[yb, n, yk]} do not multiply (y is [batch, N, K])")
    return 2 * b * m * n * k


def _dense(args: list) -> int:
    if len(args) < 2:
        raise FlopCountError("dense args are [data, weight, ...]")
    data = tensor_shape(args[0], "data")
    weight = tensor_shape(args[1], "weight")
    if len(data) != 2 or len(weight) != 2 or data[1] != weight[1]:
        raise FlopCountError(f"data {data} and weight {weight} are not [M, K] and [N, K]")
    return 2 * data[0] * weight[0] * data[1]


def _conv2d_no_batching(args: list) -> int:
    """The seed tutorial's task: (N, H, W, CO, CI, KH, KW, stride, padding)."""
    if len(args) != 9:
        raise FlopCountError("conv2d_no_batching args are (N, H, W, CO, CI, KH, KW, stride, padding)")
    n, h, w, co, ci, kh, kw = args[:7]
    sh, sw = as_pair(args[7], "stride")
    ph, pw = as_pair(args[8], "padding")
    ints = [n, h, w, co, ci, kh, kw]
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in ints):
        raise FlopCountError("N, H, W, CO, CI, KH, KW must be positive integers")
    oh = conv2d_output_size(h, kh, sh, ph, ph)
    ow = conv2d_output_size(w, kw, sw, pw, pw)
    if oh <= 0 or ow <= 0:
        raise FlopCountError("the output would be empty")
    return 2 * n * co * oh * ow * ci * kh * kw


def _4d(shape: list[int], what: str) -> list[int]:
    if len(shape) != 4:
        raise FlopCountError(f"{what} shape {shape} is not 4-D (NCHW)")
    return shape


def _3d(shape: list[int], what: str) -> list[int]:
    if len(shape) != 3:
        raise FlopCountError(f"{what} shape {shape} is not 3-D")
    return shape


_COUNTERS: dict[str, Callable[[list], int]] = {
    "conv2d_nchw.cuda": _conv2d_nchw,
    "conv2d_nchw_winograd.cuda": _conv2d_nchw,
    "conv2d_nchw": _conv2d_nchw,
    "depthwise_conv2d_nchw.cuda": _depthwise_conv2d_nchw,
    "depthwise_conv2d_nchw": _depthwise_conv2d_nchw,
    "conv2d_transpose_nchw.cuda": _conv2d_transpose_nchw,
    "batch_matmul.cuda": _batch_matmul,
    "dense": _dense,
    "dense_small_batch.cuda": _dense,
    "dense_large_batch.cuda": _dense,
    "dense.cuda": _dense,
    "conv2d_no_batching": _conv2d_no_batching,
}


def register(task_name: str, counter: Callable[[list], int]) -> None:
    """Let a template outside this module count its own task's FLOPs."""
    _COUNTERS[task_name] = counter


def known_tasks() -> list[str]:
    return sorted(_COUNTERS)


def flop_count(task_name: str, args: list) -> int | None:
    """FLOPs of one run, or None for a task we cannot count. Raises FlopCountError
    when a known task's args are malformed."""
    counter = _COUNTERS.get(task_name)
    if counter is None:
        # The operator templates (gemm, broadcast, custom) register their counters when
        # imported; import them here so a count never depends on what was imported before.
        from . import templates  # noqa: F401

        counter = _COUNTERS.get(task_name)
    return None if counter is None else counter(args)
