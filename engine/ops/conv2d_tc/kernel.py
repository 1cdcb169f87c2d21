"""CUDA source for the implicit-GEMM convolution of engine.ops.conv2d_tc, from a ConvTcTiling.

Only the staging of a step (A gathered from the NHWC input, B the KRSC weights' rows) and the
16-bit output are this module's: the mainloop, fragments, products and epilogue are
engine.ops.gemm_tc.kernel's mma.sync kernel. Arguments (data, kernel, out), all in the input
precision (bfloat16 as its 16-bit patterns in uint16 arrays, as gemm_tc passes them).
"""
from __future__ import annotations

import numpy as np

from ..base import KernelSource
from ..gemm_tc.kernel import TOLERANCE, bfloat16_bits, compute_16bit, copy_loop, helpers, mma_sync_kernel, store, widen
from .tiling import ConvTcParams, ConvTcTiling

ENTRY = "conv2d_tc_kernel"

# Two fp32 accumulators rounded to nearest even into one word of 16-bit outputs (lo first).
# Without __CUDA_ARCH__ tests/cuda_on_cpu.py supplies both.
_PACK_HELPERS = r"""
#ifdef __CUDA_ARCH__
__device__ __forceinline__ unsigned pack_float16x2(float lo, float hi) {
    unsigned r;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}
__device__ __forceinline__ unsigned pack_bfloat16x2(float lo, float hi) {
    unsigned r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}
#endif
"""


def _conjunction(*conditions: str | None) -> str:
    return " && ".join(c for c in conditions if c) or "true"


def _gather_a(t: ConvTcTiling) -> str:
    """A's copy `i`: pixel row0 + row, GEMM columns k0 + kc .. + 7 = tap (r, s), channels c .. c + 7.
    A 1x1 unpadded stride-1 layer reads pixel rows as they lie (a plain GEMM's A)."""
    c, ce = t.conv, t.copy_elements
    per_row = t.block_k // ce
    pixel_ok = None if t.m % t.block_m == 0 else f"pixel < {t.m}"
    k_ok = None if t.k % t.block_k == 0 else f"k < {t.k}"
    head = f"""            const int row = i / {per_row}, kc = (i % {per_row}) * {ce};
            const int pixel = row0 + row, k = k0 + kc;"""
    if (c.kh, c.kw, c.stride, c.padding) == (1, 1, (1, 1), (0, 0, 0, 0)):
        return f"""{head}
            const bool pred = {_conjunction(pixel_ok, k_ok)};
            copy16(as + row * {t.a_stride} + kc, pred ? A + (size_t)pixel * {c.ci} + k : A, pred);"""
    tap = ("const int tap_r = 0, tap_s = 0, c = k;" if (c.kh, c.kw) == (1, 1) else
           f"const int rs = k / {c.ci}, c = k % {c.ci}, tap_r = rs / {c.kw}, tap_s = rs % {c.kw};")
    return f"""{head}
            const int n = pixel / {c.oh * c.ow}, pq = pixel % {c.oh * c.ow}, op = pq / {c.ow}, oq = pq % {c.ow};
            {tap}
            const int ih = op * {c.stride[0]} - {c.padding[0]} + tap_r, iw = oq * {c.stride[1]} - {c.padding[1]} + tap_s;
            const bool pred = {_conjunction(pixel_ok, k_ok, f"(unsigned)ih < {c.h}u && (unsigned)iw < {c.w}u")};
            copy16(as + row * {t.a_stride} + kc, pred ? A + ((size_t)(n * {c.h} + ih) * {c.w} + iw) * {c.ci} + c : A, pred);"""


def _load_stage(t: ConvTcTiling) -> str:
    """One step's tiles, global -> shared, as cp.async copies: A gathered, B's [block_n][block_k]."""
    ce = t.copy_elements
    per_row = t.block_k // ce
    b_pred = _conjunction(None if t.n % t.block_n == 0 else f"col0 + nr < {t.n}",
                          None if t.k % t.block_k == 0 else f"k0 + kc < {t.k}")
    b_body = f"""            const int nr = i / {per_row}, kc = (i % {per_row}) * {ce};
            const bool pred = {b_pred};
            copy16(bs + nr * {t.b_stride} + kc, pred ? B + (size_t)(col0 + nr) * {t.k} + k0 + kc : B, pred);"""
    return f"""
__device__ __forceinline__ void load_stage(ELEM* as, ELEM* bs, const ELEM* __restrict__ A,
                                           const ELEM* __restrict__ B, int row0, int col0, int k0, int tid) {{
{copy_loop("A (gathered)", t.block_m * per_row, t.threads, _gather_a(t))}{copy_loop("B", t.block_n * per_row, t.threads, b_body)}}}
"""


def generate(t: ConvTcTiling) -> KernelSource:
    c = t.conv
    head = f"""// conv2d_nhwc_tensorcore {t.precision}: N {c.n} {c.h}x{c.w}x{c.ci} -> {c.oh}x{c.ow}x{c.co}, {c.kh}x{c.kw} stride {list(c.stride)} pad {list(c.padding)};
// implicit GEMM {t.m}x{t.n}x{t.k}, block {t.block_m}x{t.block_n}x{t.block_k}, warp {t.warp_m}x{t.warp_n}, {t.stages} stages, raster {t.raster}
typedef unsigned short ELEM;
{helpers(t.precision)}{_PACK_HELPERS}{_load_stage(t)}"""
    code = mma_sync_kernel(t, ENTRY, head, "ELEM", compute_16bit(t), store(t, "unsigned", f"pack_{t.precision}x2"))
    return KernelSource(name=ENTRY, code=code, grid=t.grid, block=(t.threads, 1, 1), shared_bytes=t.shared_bytes,
                        arg_order=("data", "kernel", "out"), output_index=2, tolerance=TOLERANCE[t.precision])


def _stored(x: np.ndarray, precision: str) -> np.ndarray:
    return x.astype(np.float16) if precision == "float16" else bfloat16_bits(x)


def make_inputs(params: ConvTcParams, rng: np.random.Generator) -> list[np.ndarray]:
    """Data and weights uniform in [-1, 1) in the input precision, the output to be written."""
    data = rng.uniform(-1.0, 1.0, size=params.data_shape).astype(np.float32)
    weights = rng.uniform(-1.0, 1.0, size=params.kernel_shape).astype(np.float32)
    out = np.empty(params.out_shape, dtype=np.float16 if params.precision == "float16" else np.uint16)
    return [_stored(data, params.precision), _stored(weights, params.precision), out]


def reference(params: ConvTcParams, data: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The NHWC output of the inputs as stored, in float64: one product per kernel tap
    (the tap's strided window of the padded input, [N, P, Q, C], times its [C, K] weights)."""
    c = params.conv
    x = widen(data, params.precision).astype(np.float64)
    w = widen(weights, params.precision).astype(np.float64)
    top, left, bottom, right = c.padding
    x = np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)))
    out = np.zeros(params.out_shape)
    sh, sw = c.stride
    for r in range(c.kh):
        for s in range(c.kw):
            window = x[:, r:r + sh * (c.oh - 1) + 1:sh, s:s + sw * (c.ow - 1) + 1:sw, :]
            out += window @ w[:, r, s, :].T
    return out
