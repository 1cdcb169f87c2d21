"""FLOP counts of TVM tasks that have no template here (TopHub logs hold them), from a
log's `input` args; a task with a template counts its own (`Template.flops`).

One multiply-add counts as two operations, as AutoTVM counts them. Winograd
convolution is counted as the direct convolution it computes, so its GFLOPS
compare with the direct schedules of the same shape.
"""
from __future__ import annotations

from typing import Callable

from .ops.args import as_padding, as_pair, conv2d_output_size, tensor_shape
from .ops.base import BadArgs


class FlopCountError(ValueError):
    """Args that do not describe the task they claim to (wrong arity, bad shapes)."""


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


def _4d(shape: list[int], what: str) -> list[int]:
    if len(shape) != 4:
        raise FlopCountError(f"{what} shape {shape} is not 4-D (NCHW)")
    return shape


def _3d(shape: list[int], what: str) -> list[int]:
    if len(shape) != 3:
        raise FlopCountError(f"{what} shape {shape} is not 3-D")
    return shape


_COUNTERS: dict[str, Callable[[list], int]] = {
    "conv2d_nchw_winograd.cuda": _conv2d_nchw,
    "conv2d_nchw": _conv2d_nchw,
    "depthwise_conv2d_nchw": _depthwise_conv2d_nchw,
    "conv2d_transpose_nchw.cuda": _conv2d_transpose_nchw,
    "batch_matmul.cuda": _batch_matmul,
    "dense": _dense,
    "dense_small_batch.cuda": _dense,
    "dense_large_batch.cuda": _dense,
    "dense.cuda": _dense,
}


def known_tasks() -> list[str]:
    return sorted(_COUNTERS)


def flop_count(task_name: str, args: list) -> int | None:
    """FLOPs of one run of a task without a template, or None for a task not counted here.
    Raises FlopCountError when a known task's args are malformed."""
    counter = _COUNTERS.get(task_name)
    if counter is None:
        return None
    try:
        return counter(args)
    except BadArgs as exc:
        raise FlopCountError(str(exc)) from None
