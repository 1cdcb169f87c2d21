"""CUDA source for the implicit-GEMM convolution of engine.ops.conv2d_tc, from a ConvTcTiling.

Only the staging of a step (A gathered from the NHWC input, B the KRSC weights' rows) and the
16-bit output are this module's: the mainloop, fragments, products and epilogue are
engine.ops.gemm_tc.kernel's mma.sync kernel, or engine.ops.gemm_tc.wgmma's kernel (its cp_async
loaders, K-major B, 16-bit store). Arguments (data, kernel, out), all in the input
precision (bfloat16 as its 16-bit patterns in uint16 arrays, as gemm_tc passes them).
"""
from __future__ import annotations

import numpy as np

from ..base import Im2colTensorMap, KernelSource, TensorMap
from ..hopper import A_TENSOR_MAP, B_TENSOR_MAP, TENSOR_MAP_DECLARATIONS, TMA_HELPERS
from ..gemm_tc import tma, wgmma
from ..gemm_tc.kernel import (CLUSTER_HELPERS, PACK_HELPERS, STORED_DTYPES, TOLERANCE, cluster_sum, compute_16bit,
                               copy_loop, helpers, mma_sync_kernel, store, stored, widen)
from ..gemm_tc.tiling import SWIZZLE_BYTES
from .tiling import ConvTcParams, ConvTcTiling, im2col_map

ENTRY = "conv2d_tc_kernel"


def _conjunction(*conditions: str | None) -> str:
    return " && ".join(c for c in conditions if c) or "true"


def _tap_per_step(t: ConvTcTiling) -> bool:
    """A step's GEMM columns lie in one kernel tap when block_k divides C (a tap's C columns):
    the tap is then the step's, found once, not once per copy."""
    c = t.conv
    return (c.kh, c.kw) != (1, 1) and c.ci % t.block_k == 0


def _step_tap(t: ConvTcTiling) -> str:
    """load_stage's first lines: the step's tap (r, s) and first channel, where it has one."""
    c = t.conv
    if not _tap_per_step(t):
        return ""
    return f"""    const int step_rs = k0 / {c.ci}, step_c = k0 % {c.ci}, tap_r = step_rs / {c.kw}, tap_s = step_rs % {c.kw};
    const int tap_offset = (tap_r * {c.w} + tap_s) * {c.ci} + step_c;  // the tap's place in the input, from a pixel's
"""


def _gather_a(t: ConvTcTiling, destination: str) -> str:
    """A's copy `i`: pixel row0 + row, GEMM columns k0 + kc .. + 7 = tap (r, s), channels c .. c + 7,
    into shared memory at `destination` (of row and kc). A 1x1 unpadded stride-1 layer reads pixel
    rows as they lie (a plain GEMM's A). The pixel's part of the address is the same at every step
    (the compiler keeps it out of the mainloop); the tap's is the step's (`_step_tap`) where block_k
    divides C, else each copy finds its own."""
    c, ce = t.conv, t.copy_elements
    per_row = t.block_k // ce
    pixel_ok = None if t.m % t.block_m == 0 else f"pixel < {t.m}"
    k_ok = None if t.k % t.block_k == 0 else f"k0 + kc < {t.k}"
    head = f"""            const int row = i / {per_row}, kc = (i % {per_row}) * {ce};
            const int pixel = row0 + row;"""
    if (c.kh, c.kw, c.stride, c.padding) == (1, 1, (1, 1), (0, 0, 0, 0)):
        return f"""{head}
            const bool pred = {_conjunction(pixel_ok, k_ok)};
            copy16({destination}, pred ? A + (size_t)pixel * {c.ci} + k0 + kc : A, pred);"""
    if (c.kh, c.kw) == (1, 1):
        tap = "const int tap_r = 0, tap_s = 0, tap_offset = k0;"
    elif _tap_per_step(t):
        tap = "// tap_r, tap_s, tap_offset: the step's"
    else:
        tap = (f"const int k = k0 + kc, rs = k / {c.ci}, tap_r = rs / {c.kw}, tap_s = rs % {c.kw};\n"
               f"            const int tap_offset = (tap_r * {c.w} + tap_s) * {c.ci} + k % {c.ci} - kc;")
    return f"""{head}
            const int n = pixel / {c.oh * c.ow}, pq = pixel % {c.oh * c.ow};
            const int ih0 = pq / {c.ow} * {c.stride[0]} - {c.padding[0]}, iw0 = pq % {c.ow} * {c.stride[1]} - {c.padding[1]};
            {tap}
            const int ih = ih0 + tap_r, iw = iw0 + tap_s;
            const bool pred = {_conjunction(pixel_ok, k_ok, f"(unsigned)ih < {c.h}u && (unsigned)iw < {c.w}u")};
            copy16({destination}, pred ? A + ((long long)((n * {c.h} + ih0) * {c.w} + iw0) * {c.ci} + tap_offset + kc) : A, pred);"""


def _copy_b(t: ConvTcTiling, destination: str) -> str:
    """B's copy `i`: the KRSC weights' row col0 + nr (an output channel), GEMM columns k0 + kc .. + 7,
    into shared memory at `destination` (of nr and kc)."""
    per_row = t.block_k // t.copy_elements
    pred = _conjunction(None if t.n % t.block_n == 0 else f"col0 + nr < {t.n}",
                        None if t.k % t.block_k == 0 else f"k0 + kc < {t.k}")
    return f"""            const int nr = i / {per_row}, kc = (i % {per_row}) * {t.copy_elements};
            const bool pred = {pred};
            copy16({destination}, pred ? B + (size_t)(col0 + nr) * {t.k} + k0 + kc : B, pred);"""


def _load_stage(t: ConvTcTiling) -> str:
    """One step's tiles, global -> shared, as cp.async copies: A gathered, B's [block_n][block_k]."""
    per_row = t.block_k // t.copy_elements
    return f"""
__device__ __forceinline__ void load_stage(ELEM* as, ELEM* bs, const ELEM* __restrict__ A,
                                           const ELEM* __restrict__ B, int row0, int col0, int k0, int tid) {{
{_step_tap(t)}{copy_loop("A (gathered)", t.block_m * per_row, t.threads, _gather_a(t, f"as + row * {t.a_stride} + kc"))}{copy_loop("B", t.block_n * per_row, t.threads, _copy_b(t, f"bs + nr * {t.b_stride} + kc"))}}}
"""


def _swizzled(row: str, kc: str) -> str:
    """The byte offset in a stage of 16-bit element `kc` (a multiple of 8) of 128-byte row `row`:
    its 16-byte chunk permuted within the row's 1024-byte atom, as wgmma's 128B swizzle reads it."""
    return f"{row} * {SWIZZLE_BYTES} + ((({kc} / 8) ^ ({row} & 7)) << 4)"


def _load_stage_wgmma(t: ConvTcTiling) -> str:
    """wgmma: the same copies by the loading threads (t.loaders), into the swizzled rows of the
    stage at shared address `stage`: A's block_m rows, then B's block_n (one per output channel)."""
    per_row = t.block_k // t.copy_elements
    a = _gather_a(t, f"stage + {_swizzled('row', 'kc')}")
    b = _copy_b(t, f"stage + {t.block_m * SWIZZLE_BYTES} + {_swizzled('nr', 'kc')}")
    return f"""
__device__ __forceinline__ void load_stage(unsigned stage, const ELEM* __restrict__ A, const ELEM* __restrict__ B,
                                           int row0, int col0, int k0, int tid) {{
{_step_tap(t)}{copy_loop("A (gathered)", t.block_m * per_row, t.loaders, a)}{copy_loop("B", t.block_n * per_row, t.loaders, b)}}}
"""


def _shared_store(t: ConvTcTiling) -> str:
    """Epilogue "shared": the accumulators rounded into a 16-bit tile in shared memory (the
    stages' memory, free once every copy has landed and every warp is past its last product),
    then copied out in 16-byte pieces of rows: a warp writes whole rows of the output."""
    pack = f"pack_{t.precision}x2"
    pieces = t.block_n // t.copy_elements
    edges = [c for c in (None if t.m % t.block_m == 0 else f"row0 + row < {t.m}",
                         None if t.n % t.block_n == 0 else f"col0 + col < {t.n}") if c]
    body = f"""            const int row = i / {pieces}, col = (i % {pieces}) * {t.copy_elements};
            {f"if ({' && '.join(edges)}) " if edges else ""}*reinterpret_cast<uint4*>(C + (size_t)(row0 + row) * {t.n} + col0 + col) =
                *reinterpret_cast<const uint4*>(tile + row * {t.tile_stride} + col);"""
    return f"""
    copy16_wait<0>();
    __syncthreads();  // every warp is done with the stages: their memory holds the output tile now
    ELEM* tile = reinterpret_cast<ELEM*>(smem);
#pragma unroll
    for (int mi = 0; mi < {t.frags_m}; ++mi)
#pragma unroll
        for (int ni = 0; ni < {t.frags_n}; ++ni) {{
            const int row = wm * {t.warp_m} + mi * 16 + g, col = wn * {t.warp_n} + ni * 8 + 2 * q;
            *reinterpret_cast<unsigned*>(tile + row * {t.tile_stride} + col) = {pack}(acc[mi][ni][0], acc[mi][ni][1]);
            *reinterpret_cast<unsigned*>(tile + (row + 8) * {t.tile_stride} + col) = {pack}(acc[mi][ni][2], acc[mi][ni][3]);
        }}
    __syncthreads();
{copy_loop("the output tile", t.block_m * pieces, t.threads, body)}"""


def _epilogue(t: ConvTcTiling) -> str:
    if t.split_k > 1:
        return cluster_sum(t)
    if t.epilogue == "shared":
        return _shared_store(t)
    return store(t)


# Behind __CUDA_ARCH__ like TMA_HELPERS: tests/cuda_on_cpu.py supplies it on the CPU.
IM2COL_HELPERS = r"""
#ifdef __CUDA_ARCH__
// loader tma: one im2col copy of the map at `map` into shared memory at `dst`, its bytes counted on
// `bar`: the map's pixels from filter corner (w, h) of image n on, channels from c, each read at its
// corner plus the tap's offsets (s, r).
__device__ __forceinline__ void tma_load_im2col(unsigned dst, const void* map, int c, int w, int h, int n,
                                                unsigned short s, unsigned short r, unsigned bar) {
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4, %5}], [%6], {%7, %8};\n"
                 :: "r"(dst), "l"(map), "r"(c), "r"(w), "r"(h), "r"(n), "r"(bar), "h"(s), "h"(r) : "memory");
}
#endif
"""
# cluster_shares a: the same copy into every block of the cluster's `mask`, each counting it on its barrier at `bar`.
IM2COL_MULTICAST_HELPERS = r"""
#ifdef __CUDA_ARCH__
__device__ __forceinline__ void tma_load_im2col_multicast(unsigned dst, const void* map, int c, int w, int h, int n,
                                                          unsigned short s, unsigned short r, unsigned bar,
                                                          unsigned short mask) {
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%2, %3, %4, %5}], [%6], {%7, %8}, %9;\n"
                 :: "r"(dst), "l"(map), "r"(c), "r"(w), "r"(h), "r"(n), "r"(bar), "h"(s), "h"(r), "h"(mask)
                 : "memory");
}
#endif
"""


def _tile_corner(t: ConvTcTiling) -> str:
    """The producer's lines at a tile's start: its first output pixel's image and filter corner (sharing
    A, those of this block's share of the pixels)."""
    c = t.conv
    first = f"(row0 + rank * {t.a_box_rows})" if t.shares_a else "row0"
    return f"""
                const int image = {first} / {c.oh * c.ow}, pq = {first} % {c.oh * c.ow};
                const int corner_h = pq / {c.ow} * {c.stride[0]} - {c.padding[0]}, corner_w = pq % {c.ow} * {c.stride[1]} - {c.padding[1]};"""


def _im2col_copies(t: ConvTcTiling, k_step: str) -> str:
    """K step `k_step`'s copies: A by im2col at the step's tap and 64 channels, then this block's
    rows of B's tile (with clusters, its share, multicast into every block of the cluster; sharing A,
    this block's share of the pixels multicast, and all of B's rows its own)."""
    c = t.conv
    share = t.block_n // t.b_sharers
    b_shared = t.b_sharers > 1
    b_address = f"stage + {t.block_m * SWIZZLE_BYTES}" + (f" + rank * {share * SWIZZLE_BYTES}" if b_shared else "")
    b_box = f"&{B_TENSOR_MAP}, k0, col0{f' + rank * {share}' if b_shared else ''}, bar"
    tap = f"&{A_TENSOR_MAP}, k0 % {c.ci}, corner_w, corner_h, image, tap % {c.kw}, tap / {c.kw}, bar"
    load_a = (f"tma_load_im2col_multicast(stage + rank * {t.a_box_rows * SWIZZLE_BYTES}, {tap}, {tma.a_share_mask(t)})"
              if t.shares_a else f"tma_load_im2col(stage, {tap})")
    return f"""                    const int k0 = {k_step} * {t.block_k}, tap = k0 / {c.ci};
                    {load_a};
                    {tma.load_b(t, b_address, b_box)};"""


def _tensor_maps(t: ConvTcTiling) -> tuple[Im2colTensorMap | TensorMap, ...]:
    """A's im2col map; B's, the KRSC weights as a K x RSC matrix, boxes of a block's share of rows (sharing A, all)."""
    row = SWIZZLE_BYTES // t.element_bytes
    return (im2col_map(t, A_TENSOR_MAP),
            TensorMap(B_TENSOR_MAP, 1, t.n, t.k, t.block_n // t.b_sharers, row, t.element_bytes))


def generate(t: ConvTcTiling) -> KernelSource:
    c = t.conv
    layer = (f"conv2d_nhwc_tensorcore {t.precision}: N {c.n} {c.h}x{c.w}x{c.ci} -> {c.oh}x{c.ow}x{c.co}, "
             f"{c.kh}x{c.kw} stride {list(c.stride)} pad {list(c.padding)}")
    title = f"{layer}; implicit GEMM {t.m}x{t.n}x{t.k} wgmma"
    if t.wgmma and t.tma:
        copies = TMA_HELPERS + IM2COL_HELPERS + (IM2COL_MULTICAST_HELPERS if t.shares_a else "")
        code = wgmma.kernel_code(t, ENTRY, title, copies + TENSOR_MAP_DECLARATIONS,
                                 tma.StageCopies(_im2col_copies, _tile_corner(t)))
    elif t.wgmma:
        code = wgmma.kernel_code(t, ENTRY, title, _load_stage_wgmma(t))
    else:
        head = f"""// {layer};
// implicit GEMM {t.m}x{t.n}x{t.k}, block {t.block_m}x{t.block_n}x{t.block_k}, warp {t.warp_m}x{t.warp_n}, {t.stages} stages, raster {t.raster},
// epilogue {t.epilogue}{f", split_k {t.split_k}" if t.split_k > 1 else ""}
typedef unsigned short ELEM;
{helpers(t.precision)}{PACK_HELPERS}{CLUSTER_HELPERS if t.split_k > 1 else ""}{_load_stage(t)}"""
        code = mma_sync_kernel(t, ENTRY, head, "ELEM", compute_16bit(t), _epilogue(t))
    return KernelSource(name=ENTRY, code=code, grid=t.grid, block=(t.threads, 1, 1), shared_bytes=t.shared_bytes,
                        arg_order=("data", "kernel", "out"), output_index=2, tolerance=TOLERANCE[t.precision],
                        tensor_maps=_tensor_maps(t) if t.wgmma and t.tma else (), co_resident=bool(t.stream_k))


def make_inputs(params: ConvTcParams, rng: np.random.Generator) -> list[np.ndarray]:
    """Data and weights uniform in [-1, 1) in the input precision, the output to be written."""
    data = rng.uniform(-1.0, 1.0, size=params.data_shape).astype(np.float32)
    weights = rng.uniform(-1.0, 1.0, size=params.kernel_shape).astype(np.float32)
    out = np.empty(params.out_shape, dtype=STORED_DTYPES[params.precision])
    return [stored(data, params.precision), stored(weights, params.precision), out]


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
