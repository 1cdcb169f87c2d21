"""CUDA source for the tensor-core GEMM of engine.ops.gemm_tc, from a GemmTcTiling.

Every size is a literal in the source, so NVRTC unrolls the fragment loops completely. The
arguments are (A, B, C): A and B in the input precision (bfloat16 travels as its 16-bit
pattern in a uint16 array: numpy has no bfloat16; the kernel only moves the bits and the
tensor core reads them), C float32 or, where the workload says so, in the input precision
(the accumulators rounded in pairs by `pack_<precision>x2`). The source needs no CUDA header
(NVRTC's include path is not assumed): the copies, fragment loads and products are inline PTX.
"""
from __future__ import annotations

import numpy as np

from ..base import KernelSource
from ..hopper import LOAD_SHARED_CLUSTER4
from .tiling import GemmTcTiling
from .workload import GemmTcParams

ENTRY = "gemm_tc_kernel"
# Below this many multiply-adds the reference is float64 throughout; above it, float32 BLAS
# of the exactly widened inputs (about 1e-6 relative: far inside every tensor-core tolerance).
FLOAT64_REFERENCE_LIMIT = 2**33
# Largest relative L2 error each precision's C may have against the float64 reference (the
# README's "Tensor-core GEMM precision" says why): fp16 and bf16 products are exact in fp32 and
# only the fp32 accumulation errs (about sqrt(K) 2^-24), held to 2^-11 x 4 and 2^-8 x 4, so a
# kernel or baseline that rounded C to its input precision still passes; tf32 rounds both
# inputs to 10-bit mantissas (unit roundoff 2^-11 each), held to 2^-11 x 8.
TOLERANCE = {"float16": 4 * 2**-11, "bfloat16": 4 * 2**-8, "tf32": 8 * 2**-11}

_MMA = {
    "float16": "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
    "bfloat16": "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
    "tf32": "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
}

# sm_80 and newer: 16-byte cp.async copies (zero-filled when `pred` is false), ldmatrix, the
# TF32 rounding and the mma; older GPUs get a clear compile error instead of a wrong kernel.
# Without __CUDA_ARCH__ (tests/cuda_on_cpu.py's host build) that emulator supplies these
# functions, the warp-wide ones lane by lane, so CI checks the fragment layouts on the CPU.
_HELPERS = r"""
#ifdef __CUDA_ARCH__
#if __CUDA_ARCH__ < 800
#error "gemm_tensorcore needs sm_80 or newer (mma.sync, ldmatrix, cp.async)"
#endif
__device__ __forceinline__ unsigned shared_address(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void copy16(void* dst, const void* src, bool pred) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 :: "r"(shared_address(dst)), "l"(src), "r"(pred ? 16 : 0));
}
__device__ __forceinline__ void copy16_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int PENDING>
__device__ __forceinline__ void copy16_wait() {
    asm volatile("cp.async.wait_group %0;\n" :: "n"(PENDING) : "memory");
}
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(shared_address(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(shared_address(p)));
}
__device__ __forceinline__ unsigned to_tf32(float x) {
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
    return r;
}
__device__ __forceinline__ void MMA(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    asm("MMA_INSTRUCTION {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#endif
"""


# split_k > 1: a tile's splits are one thread block cluster (sm_90 and newer; the template
# refuses them elsewhere), whose blocks read each other's shared memory: the cluster barrier
# (release/acquire by default) and a float4 read of a shared address in block `rank`. Without
# __CUDA_ARCH__ tests/cuda_on_cpu.py runs a cluster's blocks together and supplies both.
CLUSTER_HELPERS = r"""
#ifdef __CUDA_ARCH__
#if __CUDA_ARCH__ < 900
#error "gemm_tensorcore's split_k needs thread block clusters (sm_90 or newer)"
#endif
__device__ __forceinline__ void cluster_arrive_wait() {
    asm volatile("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;\n" ::: "memory");
}
""" + LOAD_SHARED_CLUSTER4 + r"""#endif
"""


# Two fp32 accumulators rounded to nearest even into one word of 16-bit outputs (lo first).
# Without __CUDA_ARCH__ tests/cuda_on_cpu.py supplies both.
PACK_HELPERS = r"""
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


def helpers(precision: str) -> str:
    """The PTX helpers of one precision (its mma named mma_<precision>)."""
    return _HELPERS.replace("MMA_INSTRUCTION", _MMA[precision]).replace("MMA(", f"mma_{precision}(")


def copy_loop(what: str, chunks: int, threads: int, body: str) -> str:
    rounds = -(-chunks // threads)
    guard = "" if chunks % threads == 0 else f"if (i < {chunks}) "
    return f"""    // {what}: {chunks} 16-byte copies over {threads} threads
#pragma unroll
    for (int r = 0; r < {rounds}; ++r) {{
        const int i = r * {threads} + tid;
        {guard}{{
{body}
        }}
    }}
"""


def _load_stage(t: GemmTcTiling) -> str:
    """One step's A and B tiles, global -> shared, as cp.async copies (zero past an edge)."""
    ce = t.copy_elements
    a_per_row, b_per_row = t.block_k // ce, t.block_n // ce
    a_pred = " && ".join(c for c in (None if t.m % t.block_m == 0 else f"row0 + row < {t.m}",
                                     None if t.k % t.block_k == 0 else f"k0 + kc < {t.k}") if c) or "true"
    b_pred = " && ".join(c for c in (None if t.k % t.block_k == 0 else f"k0 + kr < {t.k}",
                                     None if t.n % t.block_n == 0 else f"col0 + nc < {t.n}") if c) or "true"
    a_body = f"""            const int row = i / {a_per_row}, kc = (i % {a_per_row}) * {ce};
            const bool pred = {a_pred};
            copy16(as + row * {t.a_stride} + kc, pred ? A + (size_t)(row0 + row) * {t.k} + k0 + kc : A, pred);"""
    b_body = f"""            const int kr = i / {b_per_row}, nc = (i % {b_per_row}) * {ce};
            const bool pred = {b_pred};
            copy16(bs + kr * {t.b_stride} + nc, pred ? B + (size_t)(k0 + kr) * {t.n} + col0 + nc : B, pred);"""
    return f"""
__device__ __forceinline__ void load_stage(ELEM* as, ELEM* bs, const ELEM* __restrict__ A,
                                           const ELEM* __restrict__ B, int row0, int col0, int k0, int tid) {{
{copy_loop("A", t.block_m * a_per_row, t.threads, a_body)}{copy_loop("B", t.block_k * b_per_row, t.threads, b_body)}}}
"""


def compute_16bit(t: GemmTcTiling) -> str:
    """One warp's share of a step: ldmatrix fragments (B's transposed), m16n8k16 products.
    Lane l addresses row l % 16, column block l / 16 of a 16x16 piece: ldmatrix.x4 then holds
    A's m16k16 fragment, or (.trans) B's k16n8 fragments of two neighbouring n8 columns.
    A K-major B (`t.b_k_major`: staged [n][k], a convolution's KRSC weights) is read as A is,
    without .trans: its four 8x8 matrices are then n 0-7 and 8-15 of k 0-7, then of k 8-15."""
    if t.b_k_major:
        b_fragments = f"""            ldmatrix_x4(r, bs + (wn * {t.warp_n} + nj * 16 + (lane & 15)) * {t.b_stride} + kcol + (lane >> 4) * 8);
            b[2 * nj][0] = r[0]; b[2 * nj][1] = r[2]; b[2 * nj + 1][0] = r[1]; b[2 * nj + 1][1] = r[3];"""
    else:
        b_fragments = f"""            ldmatrix_x4_trans(r, bs + (kcol + (lane & 15)) * {t.b_stride} + wn * {t.warp_n} + nj * 16 + (lane >> 4) * 8);
            b[2 * nj][0] = r[0]; b[2 * nj][1] = r[1]; b[2 * nj + 1][0] = r[2]; b[2 * nj + 1][1] = r[3];"""
    return f"""
#pragma unroll
    for (int kk = 0; kk < {t.slice_k}; kk += 16) {{
        const int kcol = wk * {t.slice_k} + kk;
        unsigned a[{t.frags_m}][4], b[{t.frags_n}][2];
#pragma unroll
        for (int mi = 0; mi < {t.frags_m}; ++mi)
            ldmatrix_x4(a[mi], as + (wm * {t.warp_m} + mi * 16 + (lane & 15)) * {t.a_stride} + kcol + (lane >> 4) * 8);
#pragma unroll
        for (int nj = 0; nj < {t.frags_n // 2}; ++nj) {{
            unsigned r[4];
{b_fragments}
        }}
#pragma unroll
        for (int mi = 0; mi < {t.frags_m}; ++mi)
#pragma unroll
            for (int ni = 0; ni < {t.frags_n}; ++ni) mma_{t.precision}(acc[mi][ni], a[mi], b[ni]);
    }}"""


def _compute_tf32(t: GemmTcTiling) -> str:
    """m16n8k8 TF32 fragments read as words (lane = 4 g + q: A rows g and g + 8, k q and
    q + 4; B k rows q and q + 4, column g), rounded to nearest TF32."""
    return f"""
#pragma unroll
    for (int kk = 0; kk < {t.slice_k}; kk += 8) {{
        const int kcol = wk * {t.slice_k} + kk;
        unsigned a[{t.frags_m}][4], b[{t.frags_n}][2];
#pragma unroll
        for (int mi = 0; mi < {t.frags_m}; ++mi) {{
            const float* p = as + (wm * {t.warp_m} + mi * 16 + g) * {t.a_stride} + kcol + q;
            a[mi][0] = to_tf32(p[0]);
            a[mi][1] = to_tf32(p[8 * {t.a_stride}]);
            a[mi][2] = to_tf32(p[4]);
            a[mi][3] = to_tf32(p[8 * {t.a_stride} + 4]);
        }}
#pragma unroll
        for (int ni = 0; ni < {t.frags_n}; ++ni) {{
            const float* p = bs + (kcol + q) * {t.b_stride} + wn * {t.warp_n} + ni * 8 + g;
            b[ni][0] = to_tf32(p[0]);
            b[ni][1] = to_tf32(p[4 * {t.b_stride}]);
        }}
#pragma unroll
        for (int mi = 0; mi < {t.frags_m}; ++mi)
#pragma unroll
            for (int ni = 0; ni < {t.frags_n}; ++ni) mma_{t.precision}(acc[mi][ni], a[mi], b[ni]);
    }}"""


def tile_of_block(t: GemmTcTiling, index: str | None = None) -> str:
    """The block's output tile: `raster` rows of tiles are walked column by column (grouped
    order); with clusters (wgmma), rows of clusters, a cluster's blocks on neighbouring tile rows
    (sharing A: columns of clusters, its blocks on neighbouring tile columns).
    `index` is the tile's (cluster's) number where a block walks several (wgmma persistent)."""
    block = index or ("blockIdx.x" if t.cluster == 1 else f"(blockIdx.x / {t.cluster})")
    tile_m = "cluster_m" if t.b_sharers > 1 else "tile_m"
    tile_n = "cluster_n" if t.shares_a else "tile_n"
    if t.raster == 1:
        order = f"    const int {tile_m} = {block} / {t.cluster_cols}, {tile_n} = {block} % {t.cluster_cols};"
    else:
        group = t.raster * t.cluster_cols
        order = f"""    const int group = {block} / {group}, in_group = {block} % {group};
    const int first_m = group * {t.raster};
    const int rows = min({t.cluster_rows} - first_m, {t.raster});
    const int {tile_m} = first_m + in_group % rows, {tile_n} = in_group / rows;"""
    if t.cluster == 1:
        return order
    if t.shares_a:
        return order + f"\n    const int rank = blockIdx.x % {t.cluster}, tile_n = cluster_n * {t.cluster} + rank;"
    return order + f"\n    const int rank = blockIdx.x % {t.cluster}, tile_m = cluster_m * {t.cluster} + rank;"


def _sum_warp_groups(t: GemmTcTiling) -> str:
    """Warp groups 1.. leave their accumulators in shared memory; group 0 adds them in order."""
    if t.warps_k == 1:
        return ""
    per_group = t.warps_m * t.warps_n * t.accumulators * 32
    return f"""
    copy16_wait<0>();
    __syncthreads();  // every warp is done with the stages: their memory holds the exchange now
    float* exchange = reinterpret_cast<float*>(smem);
    float* flat = &acc[0][0][0];
    if (wk > 0) {{
#pragma unroll
        for (int i = 0; i < {t.accumulators}; ++i)
            exchange[(wk - 1) * {per_group} + (wmn * {t.accumulators} + i) * 32 + lane] = flat[i];
    }}
    __syncthreads();
    if (wk > 0) return;
#pragma unroll 1
    for (int group = 1; group < {t.warps_k}; ++group)
#pragma unroll
        for (int i = 0; i < {t.accumulators}; ++i)
            flat[i] += exchange[(group - 1) * {per_group} + (wmn * {t.accumulators} + i) * 32 + lane];
"""


def k_range(t: GemmTcTiling) -> str:
    """split_k > 1: this block's share of the steps, blockIdx.z its rank (the first
    `k_tiles % split_k` splits one step more than the others); split_k 1 runs all of them."""
    if t.split_k == 1:
        return ""
    base, more = divmod(t.k_tiles, t.split_k)
    if more == 0:
        return f"    const int k_first = blockIdx.z * {base}, k_count = {base};\n"
    return (f"    const int k_first = blockIdx.z * {base} + min((int)blockIdx.z, {more}), "
            f"k_count = {base} + ((int)blockIdx.z < {more} ? 1 : 0);\n")


def steps(t: GemmTcTiling) -> tuple[str, str]:
    """The block's step count and its first step's K offset, as source: all K's steps (split_k 1
    keeps the count a literal, the source as it was before split_k came), or k_range's share."""
    if t.split_k == 1:
        return str(t.k_tiles), ""
    return "k_count", f"k_first * {t.block_k} + "


FLOAT4_STORE = "*reinterpret_cast<float4*>(C + (size_t)row * {n} + col) = sum;"


def store_of_four(c_dtype: str) -> str:
    """The split-K sum's store of four outputs, the float4 `sum` at C's `row`, `col` (`{n}`: C's
    row length) for a C of `c_dtype`: as it is, or rounded to four 16-bit outputs in one 8-byte
    store (C's rows and the column are multiples of 4)."""
    if c_dtype == "float32":
        return FLOAT4_STORE
    pack = f"pack_{c_dtype}x2"
    return ("*reinterpret_cast<uint2*>(C + (size_t)row * {n} + col) = "
            f"make_uint2({pack}(sum.x, sum.y), {pack}(sum.z, sum.w));")


def cluster_sum(t: GemmTcTiling) -> str:
    """split_k > 1: every warp group leaves its partial tile in its block's shared memory; after
    the cluster barrier each split sums its share of the tile over the cluster's blocks (split,
    then warp group order: the same sum on every run) and writes it to C once, four outputs at a time."""
    return f"""
    copy16_wait<0>();
    __syncthreads();  // every warp is done with the stages: their memory holds the partial tiles now
    float* partial = reinterpret_cast<float*>(smem);
#pragma unroll
    for (int mi = 0; mi < {t.frags_m}; ++mi)
#pragma unroll
        for (int ni = 0; ni < {t.frags_n}; ++ni) {{
            const int row = wk * {t.block_m} + wm * {t.warp_m} + mi * 16 + g;
            const int col = wn * {t.warp_n} + ni * 8 + 2 * q;
            *reinterpret_cast<float2*>(partial + row * {t.block_n} + col) = make_float2(acc[mi][ni][0], acc[mi][ni][1]);
            *reinterpret_cast<float2*>(partial + (row + 8) * {t.block_n} + col) = make_float2(acc[mi][ni][2], acc[mi][ni][3]);
        }}
{sum_partials(t)}"""


def sum_partials(t: GemmTcTiling, threads: int | None = None, thread: str = "tid") -> str:
    """cluster_sum's second half, once the block's `float* partial` holds its warp groups' partial
    tiles (`t.warps_k` of block_m x block_n floats, row-major): the cluster barrier, then this
    split's share summed over the cluster into C, by `threads` threads (all the block's unless
    said) numbered by `thread`; the wgmma mainloop's consumers run it too."""
    threads = threads or t.threads
    tile = t.block_m * t.block_n
    share = tile // t.split_k // 4  # float4s of the tile each split sums
    rounds = -(-share // threads)
    guard = "" if share % threads == 0 else f"if (i < {share}) "
    tile_rows, tile_cols = t.tile_grid  # a cluster's spare tile past M or N stores nothing
    edges = [c for c in (None if tile_rows * t.block_m == t.m else f"row < {t.m}",
                         None if tile_cols * t.block_n == t.n else f"col < {t.n}") if c]
    store_if = f"if ({' && '.join(edges)}) " if edges else ""
    split = "s" if t.cluster == 1 else f"rank + {t.cluster} * s"  # split s's block of this tile, in the cluster
    return f"""    cluster_arrive_wait();  // every split's partial tiles are in its shared memory
    const unsigned partial_address = shared_address(partial);
#pragma unroll
    for (int r = 0; r < {rounds}; ++r) {{
        const int i = r * {threads} + {thread};
        {guard}{{
            const int e = (blockIdx.z * {share} + i) * 4;  // this split's share of the tile
            float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
            for (int s = 0; s < {t.split_k}; ++s)
#pragma unroll
                for (int w = 0; w < {t.warps_k}; ++w) {{
                    const float4 part = load_shared_cluster4(partial_address + (w * {tile} + e) * 4, {split});
                    sum.x += part.x; sum.y += part.y; sum.z += part.z; sum.w += part.w;
                }}
            const int row = row0 + e / {t.block_n}, col = col0 + e % {t.block_n};
            {store_if}{store_of_four(t.c_dtype).format(n=t.n)}
        }}
    }}
    cluster_arrive_wait();  // no block leaves while another still reads its shared memory"""


def store(t: GemmTcTiling) -> str:
    """Accumulator c0, c1 sit at row g, columns 2q, 2q + 1 of an m16n8 piece; c2, c3 at row g + 8:
    each pair stored as one float2, or as one word of two rounded halves (a 16-bit C)."""
    pair_type, pack = ("unsigned", f"pack_{t.c_dtype}x2") if t.c_16bit else ("float2", "make_float2")
    col_ok = "" if t.n % t.block_n == 0 else f"if (col < {t.n}) "
    row_ok = "" if t.m % t.block_m == 0 else f"if (row < {t.m}) "
    row8_ok = "" if t.m % t.block_m == 0 else f"if (row + 8 < {t.m}) "
    return f"""
#pragma unroll
    for (int mi = 0; mi < {t.frags_m}; ++mi)
#pragma unroll
        for (int ni = 0; ni < {t.frags_n}; ++ni) {{
            const int row = row0 + wm * {t.warp_m} + mi * 16 + g;
            const int col = col0 + wn * {t.warp_n} + ni * 8 + 2 * q;
            {col_ok}{{
                {row_ok}*reinterpret_cast<{pair_type}*>(C + (size_t)row * {t.n} + col) = {pack}(acc[mi][ni][0], acc[mi][ni][1]);
                {row8_ok}*reinterpret_cast<{pair_type}*>(C + (size_t)(row + 8) * {t.n} + col) = {pack}(acc[mi][ni][2], acc[mi][ni][3]);
            }}
        }}"""


def generate(t: GemmTcTiling) -> KernelSource:
    element = "float" if t.precision == "tf32" else "unsigned short"
    compute = _compute_tf32(t) if t.precision == "tf32" else compute_16bit(t)
    head = f"""// gemm_tensorcore {t.precision}{f" (C {t.c_dtype})" if t.c_16bit else ""}: {t.m}x{t.n}x{t.k}, block {t.block_m}x{t.block_n}x{t.block_k},
// warp {t.warp_m}x{t.warp_n}, warps_k {t.warps_k}, {t.stages} stages, raster {t.raster}{f", split_k {t.split_k}" if t.split_k > 1 else ""}
typedef {element} ELEM;
{helpers(t.precision)}{PACK_HELPERS if t.c_16bit else ""}{CLUSTER_HELPERS if t.split_k > 1 else ""}{_load_stage(t)}"""
    epilogue = cluster_sum(t) if t.split_k > 1 else _sum_warp_groups(t) + store(t)
    return tiled_source(t, mma_sync_kernel(t, ENTRY, head, t.c_type, compute, epilogue))


def mma_sync_kernel(t: GemmTcTiling, entry: str, head: str, output_type: str, compute: str, epilogue: str) -> str:
    """The multistage mainloop's kernel, (A, B, C) -> C: `head` (typedef ELEM, the helpers and a
    `load_stage(as, bs, A, B, row0, col0, k0, tid)` staging one step), the ring of stages,
    `compute` (one warp's share of a step) and `epilogue` (the accumulators to C)."""
    count, first = steps(t)
    return f"""{head}
extern "C" __global__ void __launch_bounds__({t.threads}){f" __cluster_dims__(1, 1, {t.split_k})" if t.split_k > 1 else ""}
{entry}(const ELEM* __restrict__ A, const ELEM* __restrict__ B, {output_type}* __restrict__ C) {{
    extern __shared__ __align__(128) unsigned char smem[];
    ELEM* stages = reinterpret_cast<ELEM*>(smem);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, q = lane & 3;
    const int wk = warp / {t.warps_m * t.warps_n}, wmn = warp % {t.warps_m * t.warps_n};
    const int wm = wmn / {t.warps_n}, wn = wmn % {t.warps_n};
{tile_of_block(t)}
    const int row0 = tile_m * {t.block_m}, col0 = tile_n * {t.block_n};
{k_range(t)}    float acc[{t.frags_m}][{t.frags_n}][4];
#pragma unroll
    for (int mi = 0; mi < {t.frags_m}; ++mi)
#pragma unroll
        for (int ni = 0; ni < {t.frags_n}; ++ni)
#pragma unroll
            for (int r = 0; r < 4; ++r) acc[mi][ni][r] = 0.0f;

    // The ring: stages - 1 steps in flight before the first product.
#pragma unroll
    for (int s = 0; s < {t.stages - 1}; ++s) {{
        if (s < {count}) load_stage(stages + s * {t.stage_elements}, stages + s * {t.stage_elements} + {t.block_m * t.a_stride},
                                        A, B, row0, col0, {first}s * {t.block_k}, tid);
        copy16_commit();
    }}
#pragma unroll 1
    for (int kt = 0; kt < {count}; ++kt) {{
        copy16_wait<{t.stages - 2}>();
        __syncthreads();  // step kt has landed for every thread, and step kt - 1's buffer is free
        const int next = kt + {t.stages - 1};
        if (next < {count}) {{
            ELEM* ns = stages + (next % {t.stages}) * {t.stage_elements};
            load_stage(ns, ns + {t.block_m * t.a_stride}, A, B, row0, col0, {first}next * {t.block_k}, tid);
        }}
        copy16_commit();
        const ELEM* as = stages + (kt % {t.stages}) * {t.stage_elements};
        const ELEM* bs = as + {t.block_m * t.a_stride};
{compute}
    }}
{epilogue}
}}
"""


def bfloat16_bits(x: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bit patterns (uint16), rounded to nearest even."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    rounded = bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))
    return (rounded >> np.uint32(16)).astype(np.uint16)


def widen(x: np.ndarray, precision: str) -> np.ndarray:
    """The exact float32 values of an input array as the kernel holds it."""
    if precision == "bfloat16":
        return (x.astype(np.uint32) << np.uint32(16)).view(np.float32)
    return x.astype(np.float32)


# The numpy dtype an array of each precision travels in (bfloat16 as its bit patterns; tf32's are float32).
STORED_DTYPES = {"float32": np.float32, "tf32": np.float32, "float16": np.float16, "bfloat16": np.uint16}


def stored(x: np.ndarray, precision: str) -> np.ndarray:
    """float32 values as an array of `precision` holds them (rounded to nearest even)."""
    if precision == "float16":
        return x.astype(np.float16)
    return bfloat16_bits(x) if precision == "bfloat16" else x


def make_inputs(params: GemmTcParams, rng: np.random.Generator) -> list[np.ndarray]:
    """A and B uniform in [-1, 1) in the input precision (bf16 as bit patterns), C to be written
    (float32, or the 16-bit dtype the workload names)."""
    a = rng.uniform(-1.0, 1.0, size=(params.m, params.k)).astype(np.float32)
    b = rng.uniform(-1.0, 1.0, size=(params.k, params.n)).astype(np.float32)
    c = np.empty((params.m, params.n), dtype=STORED_DTYPES[params.c_dtype])
    return [stored(a, params.precision), stored(b, params.precision), c]


def reference(params: GemmTcParams, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C of the inputs exactly as stored (not as TF32 rounds them: that rounding is the error
    the tolerance allows), in float64, or float32 BLAS on large shapes."""
    wa, wb = widen(a, params.precision), widen(b, params.precision)
    if params.m * params.n * params.k <= FLOAT64_REFERENCE_LIMIT:
        return wa.astype(np.float64) @ wb.astype(np.float64)
    return (wa @ wb).astype(np.float64)


def tiled_source(t: GemmTcTiling, code: str) -> KernelSource:
    """The launch of either mainloop's kernel: one block per tile (times split_k), A, B, C."""
    return KernelSource(
        name=ENTRY,
        code=code,
        grid=t.grid,
        block=(t.threads, 1, 1),
        shared_bytes=t.shared_bytes,
        arg_order=("a", "b", "c"),
        output_index=2,
        tolerance=TOLERANCE[t.precision],
        co_resident=bool(t.stream_k),
    )
