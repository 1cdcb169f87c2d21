"""Tensor-core GEMM workloads (engine.ops.gemm_tc): C[M, N] = A[M, K] · B[K, N], row-major.

Precision is part of the workload, as TVM writes it: the tensors' dtype names the inputs,
and TF32 is a compute mode of float32 tensors, said by a third argument:

    [["TENSOR", [M, K], "float16"],  ["TENSOR", [K, N], "float16"]]            fp16 inputs
    [["TENSOR", [M, K], "bfloat16"], ["TENSOR", [K, N], "bfloat16"]]           bf16 inputs
    [["TENSOR", [M, K], "float32"],  ["TENSOR", [K, N], "float32"], "tf32"]   fp32 inputs, TF32 products

so records of different precisions never share a workload (nor a leaderboard row), and a
float32 workload here can never be mistaken for the exact fp32 `gemm`. C is float32 (the
accumulator, stored as it is) unless a 16-bit workload names C's dtype as its third argument,
as TVM's dense names its out_dtype, the input's own being the only other choice:

    [["TENSOR", [M, K], "bfloat16"], ["TENSOR", [K, N], "bfloat16"], "bfloat16"]  bf16 inputs and C

(C rounded to nearest even from the fp32 accumulator: half the bytes of C, what an LLM's layers
write). "float32" is never written out, so one computation has one workload. The cuBLAS
baseline writes C in the workload's dtype too.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..base import FLOAT_BYTES, BadArgs
from ..gemm.tiling import gemm_shapes

TEMPLATE_NAME = "gemm_tensorcore"
TF32_MODE = "tf32"
# Input dtype -> precision; per precision the bytes of an element.
PRECISIONS = {"float16": "float16", "bfloat16": "bfloat16", "float32": "tf32"}
ELEMENT_BYTES = {"float16": 2, "bfloat16": 2, "tf32": 4}
COPY_BYTES = 16


def gemm_tc_shapes(args: list) -> tuple[int, int, int, str, str]:
    """(M, N, K, precision, C's dtype) of a workload's args; BadArgs with the accepted forms otherwise."""
    usage = ('gemm_tensorcore args are [["TENSOR", [M, K], dtype], ["TENSOR", [K, N], dtype]] with dtype '
             'float16 or bfloat16 (then C is float32, or the input dtype if a third argument names it), '
             'or float32 tensors followed by "tf32"')
    if not isinstance(args, list) or len(args) not in (2, 3):
        raise BadArgs(usage)
    m, n, k = gemm_shapes(args[:2])  # the fp32 GEMM's reading of A [M, K] and B [K, N]
    dtype, other = args[0][2], args[1][2]
    if dtype != other:
        raise BadArgs(f"A is {dtype!r} and B is {other!r}: both tensors take one precision")
    if dtype not in PRECISIONS:
        raise BadArgs(f"dtype {dtype!r} is not supported (float16, bfloat16, or float32 with \"tf32\")")
    third = args[2] if len(args) == 3 else None
    if dtype == "float32" and third != TF32_MODE:
        raise BadArgs('float32 tensors run on tensor cores only as TF32: add "tf32" as the third argument '
                      '(exact fp32 is the "gemm" task)')
    c_dtype = "float32"
    if dtype != "float32" and third is not None:
        if third != dtype:
            raise BadArgs(f"the third argument of {dtype} tensors is C's dtype, and the only one to name is "
                          f"{dtype!r} (C is float32 without it), not {third!r}")
        c_dtype = dtype
    precision = PRECISIONS[dtype]
    per_copy = COPY_BYTES // ELEMENT_BYTES[precision]
    for what, size in (("K", k), ("N", n)):
        if size % per_copy:
            raise BadArgs(f"{what} = {size} is not a multiple of {per_copy} {precision} elements "
                          "(the kernel's 16-byte copies would straddle a row's end)")
    return m, n, k, precision, c_dtype


@dataclass(frozen=True)
class GemmTcParams:
    m: int
    n: int
    k: int
    precision: str  # float16, bfloat16 or tf32
    c_dtype: str = "float32"  # or the 16-bit input's dtype
    args: list = dataclasses.field(default_factory=list, compare=False, repr=False)

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k

    @property
    def bytes_moved(self) -> int:
        """A and B read once, C written once."""
        c_bytes = FLOAT_BYTES if self.c_dtype == "float32" else ELEMENT_BYTES[self.c_dtype]
        return ELEMENT_BYTES[self.precision] * (self.m * self.k + self.k * self.n) + c_bytes * self.m * self.n
