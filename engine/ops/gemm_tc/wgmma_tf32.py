"""CUDA source of the tensor-core GEMM's wgmma mainloop for TF32 (sm_90a), from a GemmTcTiling.

wgmma reads TF32 operands from shared memory K-major only, and this workload's B is
row-major (N-major). So the kernel computes C's transpose, C^T = B^T A^T, one tile at a time:

* The instruction's A operand (m64 x k8, from registers) is B^T: each consumer warpgroup
  owns `block_n / consumers` of the tile's columns, 64 a time (`n_tiles` instructions), and
  reads its fragments of B's staged tile with plain shared-memory loads, rounded to TF32
  (`cvt.rna`, as the mma_sync kernel rounds both operands).
* The instruction's B operand (k8 x N, N = block_m up to 256, from shared memory) is A's
  staged tile, K-major as it is: one 128-byte swizzled row of 32 floats per row of A, the
  same layout and descriptors as the 16-bit kernels' A (engine.ops.gemm_tc.wgmma). The
  tensor core reads it as TF32 (the low 13 bits of each float ignored).
* Loads are the TMA schedule's (engine.ops.gemm_tc.tma: producer, clusters multicasting B,
  persistent blocks); B's panels are 32 columns (128 bytes) wide.
* A stage's fragments are loaded, its instructions issued and waited for, before the next
  stage's are loaded: ptxas serialises wgmmas whose register operands are written while an
  earlier group is in flight, so no group stays in flight across stages (`wgmma_pending` 0);
  the other consumer's instructions and the TMA ring (`stages`) keep the tensor core fed.
  `turns` 1 orders the two consumers: each issues a stage's instructions once the other issued
  its last, so one's are queued while the other waits for its own (CUTLASS's ping-pong, by stage).
* The accumulators are C^T's: thread (warp w, lane 4g + q) holds column 16w + g (+8) of its
  64-column tile, rows 8j + 2q and 8j + 2q + 1; the epilogue stores them transposed, each
  warp's store eight consecutive floats of four rows.
"""
from __future__ import annotations

import dataclasses

from ..base import ARCH_SPECIFIC_MARK, KernelSource
from ..hopper import L2_HINTED_COPIES, TENSOR_MAP_DECLARATIONS, TMA_HELPERS
from . import tma, wgmma
from .epilogue import store_transposed
from .kernel import tiled_source
from .tiling import SWIZZLE_ATOM_BYTES, SWIZZLE_BYTES, TF32_FRAGMENT_WORDS, WGMMA_M, GemmTcTiling

# Floats of one 128-byte swizzled row: a stage's K, and the width of one of B's panels.
ROW = SWIZZLE_BYTES // 4

_HELPERS = r"""
#ifdef __CUDA_ARCH__
__device__ __forceinline__ unsigned load_shared_word(unsigned address) {
    unsigned word;
    asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(word) : "r"(address) : "memory");
    return word;
}
__device__ __forceinline__ unsigned round_tf32(unsigned bits) {
    unsigned r;
    asm volatile("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(__uint_as_float(bits)));
    return r;
}
#endif
"""


# turns: a consumer issues a stage once the other issued its last, then gives the turn before it
# waits, so the other's products queue behind its own and run while it waits.
_TURN_TAKE = "    turn_wait(consumer == 0 ? 2 : 1);  // the other consumer issued its stage\n"
_TURN_GIVE = "    turn_arrive(consumer == 0 ? 1 : 2);  // the other consumer's turn\n"


def _mma(t: GemmTcTiling) -> str:
    """One m64nNk8 instruction, N = block_m: A (B^T's fragment) from four registers, B (A's tile) K-major."""
    n, count = t.block_m, t.block_m // 2
    registers = ", ".join(f"%{i}" for i in range(count))
    outputs = ", ".join(f'"+f"(d[{i}])' for i in range(count))
    return f"""
#ifdef __CUDA_ARCH__
__device__ __forceinline__ void wgmma_tf32_m64n{n}(float (&d)[{count}], const unsigned* a, unsigned long long b) {{
    asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{count + 5}, 0;\\n"
                 "wgmma.mma_async.sync.aligned.m64n{n}k8.f32.tf32.tf32 "
                 "{{{registers}}}, {{%{count}, %{count + 1}, %{count + 2}, %{count + 3}}}, %{count + 4}, p, 1, 1;\\n}}\\n"
                 : {outputs}
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1));
}}
#endif
"""


def _compute(t: GemmTcTiling) -> str:
    """One stage: this consumer's B^T fragments into registers, then per k8 slice an A descriptor
    (32 bytes into each 128-byte row) and one instruction per 64-column tile, waited for."""
    nt, words = t.n_tiles, TF32_FRAGMENT_WORDS
    tiles, per_tile = t.accumulator_tiles
    panel_bytes = t.block_k * SWIZZLE_BYTES
    return f"""
__device__ __forceinline__ void compute_stage(float (&acc)[{tiles}][{per_tile}], unsigned stage, int consumer) {{
    const int lane = threadIdx.x & 31, warp = (threadIdx.x >> 5) & 3, g = lane >> 2, q = lane & 3;
    const unsigned b_base = stage + {t.block_m * SWIZZLE_BYTES};
    unsigned frag[{nt}][{words}];
#pragma unroll
    for (int nt = 0; nt < {nt}; ++nt)
#pragma unroll
        for (int half = 0; half < 2; ++half) {{  // columns g and g + 8 of the warp's 16
            const int col = consumer * {t.consumer_cols} + nt * {WGMMA_M} + warp * 16 + half * 8 + g;
            const unsigned panel = b_base + (col / {ROW}) * {panel_bytes};
            const int chunk = (col % {ROW}) / 4, within = (col % 4) * 4;
#pragma unroll
            for (int kk = 0; kk < {t.block_k // 8}; ++kk)
#pragma unroll
                for (int upper = 0; upper < 2; ++upper) {{  // k = q and q + 4 of the slice
                    const int k = kk * 8 + upper * 4 + q;
                    frag[nt][4 * kk + 2 * upper + half] =
                        round_tf32(load_shared_word(panel + k * {SWIZZLE_BYTES} + ((chunk ^ (k & 7)) << 4) + within));
                }}
        }}
{wgmma.hold_all(t, "nt")}
{_TURN_TAKE if t.turns else ""}    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < {t.block_k // 8}; ++kk) {{
        const unsigned long long b = descriptor(stage + kk * 32, {wgmma.A_LEADING_BYTES}, {SWIZZLE_ATOM_BYTES});
#pragma unroll
        for (int nt = 0; nt < {nt}; ++nt) wgmma_tf32_m64n{t.block_m}(acc[nt], &frag[nt][4 * kk], b);
    }}
    wgmma_commit();
{_TURN_GIVE if t.turns else ""}    wgmma_wait<0>();  // before the next stage's fragments are loaded (wgmma_pending says why)
{wgmma.hold_all(t, "nt")}
}}
"""


def generate(t: GemmTcTiling) -> KernelSource:
    schedule = f"TMA loads, cluster {t.cluster}, persistent {t.persistent}"
    schedule += f", L2 hints {t.l2_hint}" if t.hinted else ""
    cluster = f" __cluster_dims__({t.cluster}, 1, 1)" if t.cluster > 1 else ""
    loads = TMA_HELPERS + (L2_HINTED_COPIES if t.hinted else "") + TENSOR_MAP_DECLARATIONS
    code = f"""{ARCH_SPECIFIC_MARK}
// gemm_tensorcore tf32 wgmma (C^T = B^T A^T, B^T from registers): {t.m}x{t.n}x{t.k}, block {t.block_m}x{t.block_n}x{t.block_k},
// {t.consumers} consumer warpgroup(s) + a producer, {t.stages} stages, raster {t.raster}, {schedule}
typedef float ELEM;
{wgmma.HELPERS}{_HELPERS}{tma.TURN_HELPERS if t.takes_turns else ""}{loads}{_mma(t)}{_compute(t)}
{wgmma.kernel_entry(t, cluster)}
{tma.mainloop(t, store_transposed(t), tma.gemm_stage_copies(t))}
}}
"""
    return dataclasses.replace(tiled_source(t, code), tensor_maps=tma.tensor_maps(t))
