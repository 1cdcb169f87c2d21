"""Readers of a log's `args` that several operators share: tensors, pairs, padding, and the
output size of a convolution window. Each raises BadArgs with a one-line reason."""
from __future__ import annotations

from .base import BadArgs


def tensor_shape(arg, what: str) -> list[int]:
    if not (isinstance(arg, list) and len(arg) == 3 and arg[0] == "TENSOR" and isinstance(arg[1], list)):
        raise BadArgs(f"{what} is not a [\"TENSOR\", shape, dtype] argument")
    shape = arg[1]
    if not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in shape):
        raise BadArgs(f"{what} shape {shape} has a non-positive or non-integer size")
    return shape


def as_pair(value, what: str) -> tuple[int, int]:
    if isinstance(value, int) and not isinstance(value, bool):
        return value, value
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return value[0], value[1]
    raise BadArgs(f"{what} {value!r} is not an integer or a pair")


def as_padding(value) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) from TVM's 1-, 2- or 4-element padding."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value, value, value, value
    if isinstance(value, list) and all(isinstance(v, int) for v in value):
        if len(value) == 2:
            return value[0], value[1], value[0], value[1]
        if len(value) == 4:
            return tuple(value)  # type: ignore[return-value]
    raise BadArgs(f"padding {value!r} is not an integer, a pair or four integers")


def conv2d_output_size(size: int, kernel: int, stride: int, pad_before: int, pad_after: int, dilation: int = 1) -> int:
    return (size + pad_before + pad_after - (kernel - 1) * dilation - 1) // stride + 1
