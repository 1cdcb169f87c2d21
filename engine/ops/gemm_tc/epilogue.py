"""The wgmma kernels' epilogues (engine.ops.gemm_tc.wgmma, wgmma_tf32), from a GemmTcTiling: the
accumulators into C (float32 pairs, a 16-bit C's packed pairs transposed among a quad's lanes, or the
transposed accumulators of tf32 and swap_ab), or split K's partial tile into shared memory and the
cluster's sum (engine.ops.gemm_tc.kernel's sum_partials). The body after the mainloop: the names it
uses (tid, consumer, row0, col0, acc, smem, ring, C) are the kernel's."""
from __future__ import annotations

from ..base import WARPGROUP
from .kernel import sum_partials
from .tiling import WGMMA_M, GemmTcTiling


def tail_guards(t: GemmTcTiling, row_step: int, col_step: int) -> tuple[str, str, str, str]:
    """The epilogue's edge tests (empty where no tile reaches past the edge): row, row + row_step,
    col, col + col_step against M and N."""
    tile_rows, tile_cols = t.tile_grid  # no tile (nor a cluster's spare one) past M, or past N: no tests
    rows = ("", "") if tile_rows * t.block_m == t.m else (f"if (row < {t.m}) ", f"if (row + {row_step} < {t.m}) ")
    cols = ("", "") if tile_cols * t.block_n == t.n else (f"if (col < {t.n}) ", f"if (col + {col_step} < {t.n}) ")
    return (*rows, *cols)


# A 16-bit C's store: each lane's packed pairs of four 8-column groups, transposed among the
# lanes of its quad, so each lane stores one group's 8 columns as 16 bytes and a warp writes 64
# contiguous bytes of each of 8 rows (4-byte pairs would leave every 32-byte sector half-written
# by one instruction: 0.90 of cuBLAS against 0.97 with a float32 C on the H200 at 4096^3).
# The shuffles are the PTX shfl.sync butterfly; tests/cuda_on_cpu.py supplies shfl_xor without __CUDA_ARCH__.
QUAD_TRANSPOSE = r"""
#ifdef __CUDA_ARCH__
__device__ __forceinline__ unsigned shfl_xor(unsigned v, int lanes) {
    unsigned r;
    asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;\n" : "=r"(r) : "r"(v), "r"(lanes));
    return r;
}
#endif
// Lane q of each quad ends holding word q of the quad's four lanes, in lane order (a 4x4 transpose:
// the off-diagonal 2x2 blocks swapped across lanes q ^ 2, then each block's corners across q ^ 1).
__device__ __forceinline__ void quad_transpose(unsigned (&w)[4], int q) {
    const bool high = q & 2, odd = q & 1;
    unsigned r0 = shfl_xor(high ? w[0] : w[2], 2), r1 = shfl_xor(high ? w[1] : w[3], 2);
    if (high) { w[0] = r0; w[1] = r1; } else { w[2] = r0; w[3] = r1; }
    r0 = shfl_xor(odd ? w[0] : w[1], 1);
    r1 = shfl_xor(odd ? w[2] : w[3], 1);
    if (odd) { w[0] = r0; w[2] = r1; } else { w[1] = r0; w[3] = r1; }
}
"""


def _store_16bit(t: GemmTcTiling) -> str:
    """A 16-bit C: groups 4jj .. 4jj + 3 of 8 columns packed (QUAD_TRANSPOSE), lane q storing group 4jj + q."""
    row_ok, row8_ok, col_ok, _ = tail_guards(t, 8, 0)
    pack = f"pack_{t.c_dtype}x2"
    return f"""
    const int lane = tid & 31, warp = (tid >> 5) & 3, g = lane >> 2, q = lane & 3;
#pragma unroll
    for (int mt = 0; mt < {t.m_tiles}; ++mt)
#pragma unroll
        for (int jj = 0; jj < {t.block_n // 32}; ++jj) {{
            const int row = row0 + consumer * {t.consumer_row_offset} + mt * {WGMMA_M} + warp * 16 + g;
            const int col = col0 + (4 * jj + q) * 8;
            unsigned top[4], bottom[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) {{
                top[i] = {pack}(acc[mt][16 * jj + 4 * i], acc[mt][16 * jj + 4 * i + 1]);
                bottom[i] = {pack}(acc[mt][16 * jj + 4 * i + 2], acc[mt][16 * jj + 4 * i + 3]);
            }}
            quad_transpose(top, q);
            quad_transpose(bottom, q);
            {col_ok}{{
                {row_ok}*reinterpret_cast<uint4*>(C + (size_t)row * {t.n} + col) = make_uint4(top[0], top[1], top[2], top[3]);
                {row8_ok}*reinterpret_cast<uint4*>(C + (size_t)(row + 8) * {t.n} + col) = make_uint4(bottom[0], bottom[1], bottom[2], bottom[3]);
            }}
        }}"""


def store(t: GemmTcTiling) -> str:
    """Accumulator 4j, 4j + 1 of an m64 tile: row 16 warp + g, columns 8j + 2q, 2q + 1; 4j + 2, 4j + 3 row + 8."""
    if t.swap_ab:
        return store_transposed(t)
    if t.c_16bit:
        return _store_16bit(t)
    row_ok, row8_ok, col_ok, _ = tail_guards(t, 8, 0)
    return f"""
    const int lane = tid & 31, warp = (tid >> 5) & 3, g = lane >> 2, q = lane & 3;
#pragma unroll
    for (int mt = 0; mt < {t.m_tiles}; ++mt)
#pragma unroll
        for (int j = 0; j < {t.block_n // 8}; ++j) {{
            const int row = row0 + consumer * {t.consumer_row_offset} + mt * {WGMMA_M} + warp * 16 + g;
            const int col = col0 + j * 8 + 2 * q;
            {col_ok}{{
                {row_ok}*reinterpret_cast<float2*>(C + (size_t)row * {t.n} + col) = make_float2(acc[mt][4 * j], acc[mt][4 * j + 1]);
                {row8_ok}*reinterpret_cast<float2*>(C + (size_t)(row + 8) * {t.n} + col) = make_float2(acc[mt][4 * j + 2], acc[mt][4 * j + 3]);
            }}
        }}"""


def _transposed_place(t: GemmTcTiling) -> str:
    """The transposed accumulators' places (engine.ops.gemm_tc.wgmma_tf32 says whose): accumulator 4j + i of
    64-column tile nt is the tile's row 8j + 2q + i % 2, column `col` (+ 8 for i >= 2)."""
    return f"consumer * {t.consumer_cols} + nt * {WGMMA_M} + warp * 16 + g"


def store_transposed(t: GemmTcTiling) -> str:
    """C from transposed accumulators (tf32's, swap_ab's): each warp's store eight consecutive floats of
    four rows; a 16-bit C's neighbouring columns (lanes g and g ^ 1) meet in one lane by a shuffle, so
    each store is a word of two."""
    row_ok, row1_ok, col_ok, col8_ok = tail_guards(t, 1, 8)
    if t.c_16bit:
        return f"""
    const int lane = tid & 31, warp = (tid >> 5) & 3, g = lane >> 2, q = lane & 3;
    const bool odd = g & 1;  // this lane stores row + 1 of its column and the one before, an even one row
#pragma unroll
    for (int nt = 0; nt < {t.n_tiles}; ++nt)
#pragma unroll
        for (int j = 0; j < {t.block_m // 8}; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h) {{  // columns g and g + 8 of the warp's 16
                const unsigned mine = pack_{t.c_dtype}x2(acc[nt][4 * j + 2 * h], acc[nt][4 * j + 2 * h + 1]);
                const unsigned other = shfl_xor(mine, 4);  // column g ^ 1's rows row and row + 1
                const int row = row0 + j * 8 + 2 * q + odd;
                const int col = col0 + ({_transposed_place(t)} + 8 * h) / 2 * 2;
                {row_ok}{col_ok}*reinterpret_cast<unsigned*>(C + (size_t)row * {t.n} + col) =
                    odd ? (other >> 16) | (mine & 0xFFFF0000u) : (mine & 0xFFFFu) | (other << 16);
            }}"""
    return f"""
    const int lane = tid & 31, warp = (tid >> 5) & 3, g = lane >> 2, q = lane & 3;
#pragma unroll
    for (int nt = 0; nt < {t.n_tiles}; ++nt)
#pragma unroll
        for (int j = 0; j < {t.block_m // 8}; ++j) {{
            const int row = row0 + j * 8 + 2 * q;
            const int col = col0 + {_transposed_place(t)};
            {row_ok}{{
                {col_ok}C[(size_t)row * {t.n} + col] = acc[nt][4 * j];
                {col8_ok}C[(size_t)row * {t.n} + col + 8] = acc[nt][4 * j + 2];
            }}
            {row1_ok}{{
                {col_ok}C[(size_t)(row + 1) * {t.n} + col] = acc[nt][4 * j + 1];
                {col8_ok}C[(size_t)(row + 1) * {t.n} + col + 8] = acc[nt][4 * j + 3];
            }}
        }}"""


def split_sum(t: GemmTcTiling) -> str:
    """split_k > 1: each consumer leaves its rows of the partial tile in shared memory (swap_ab: its
    columns, from the transposed accumulators), then the split-K sum of the mma_sync kernel
    (engine.ops.gemm_tc.kernel) by the consumers' threads.
    tma: past the ring and its barriers (the other consumer may still be reading the ring);
    cp_async: in the ring, once every consumer's products retired and every copy landed (the
    block's barrier, which a producer meets), where the tiling's rules leave room."""
    if t.tma:
        place = f"""
    float* partial = reinterpret_cast<float*>(smem + {t.wgmma_partial_offset});"""
    else:
        place = """
    __syncthreads();  // the ring is free: every product retired, every copy landed
    float* partial = reinterpret_cast<float*>(smem + (ring - shared_address(smem)));"""
    if t.swap_ab:
        writes = f"""
#pragma unroll
    for (int nt = 0; nt < {t.n_tiles}; ++nt)
#pragma unroll
        for (int j = 0; j < {t.block_m // 8}; ++j) {{
            const int row = j * 8 + 2 * q, col = {_transposed_place(t)};
#pragma unroll
            for (int i = 0; i < 4; ++i) partial[(row + i % 2) * {t.block_n} + col + (i / 2) * 8] = acc[nt][4 * j + i];
        }}"""
    else:
        writes = f"""
#pragma unroll
    for (int mt = 0; mt < {t.m_tiles}; ++mt)
#pragma unroll
        for (int j = 0; j < {t.block_n // 8}; ++j) {{
            const int row = consumer * {t.consumer_row_offset} + mt * {WGMMA_M} + warp * 16 + g;
            const int col = j * 8 + 2 * q;
            *reinterpret_cast<float2*>(partial + row * {t.block_n} + col) = make_float2(acc[mt][4 * j], acc[mt][4 * j + 1]);
            *reinterpret_cast<float2*>(partial + (row + 8) * {t.block_n} + col) = make_float2(acc[mt][4 * j + 2], acc[mt][4 * j + 3]);
        }}"""
    return f"""
    const int lane = tid & 31, warp = (tid >> 5) & 3, g = lane >> 2, q = lane & 3;{place}{writes}
{sum_partials(t, threads=t.consumers * WARPGROUP, thread=f"(tid - {WARPGROUP})" if t.producer else "tid")}"""
