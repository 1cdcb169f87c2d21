"""CUDA source of the fp32 GEMM's TMA loader (`loader` tma, sm_90 and newer), from a GemmTiling.

The threads' loaders spend issue slots on every copy: a cp.async (or a load and a store) per
vector and its address and bounds arithmetic, and a `__syncthreads` per stage that stalls every
warp. The SIMT GEMM is issue-bound (Nsight: issue slots 82 % busy, 20.8 G instructions for
17.2 G FFMAs at 8192³), so those slots are what this loader gives back to the FFMAs:

* A warp of its own (the block's last) is the producer: one of its threads issues each stage's
  copies to the tensor memory accelerator, A's `block_m x 32` box (one 128-byte row per M row)
  and B's `32 x block_n` tile as `block_n / 32` boxes of 32 x 32 (one 128-byte row per k), into a
  ring of `stages` with the 128-byte swizzle (the 16-byte chunk c of a box row r lands at chunk
  c ^ (r % 8)), zeros past M, N and K. `full[s]` completes when a stage's bytes landed (the
  producer's one arrival expects them), `empty[s]` when every consumer warp is done reading it.
* The consumer warps tile the block as the threads' loader's do, but a lane's rows and columns
  interleave with its warp's other lanes: its rows are `lanes_m` apart and its 4-column groups
  `4 * lanes_n` apart. A warp's reads of A at one chunk then touch consecutive rows, 8 distinct
  chunks under the swizzle, and its reads of B one k-row's consecutive chunks: no bank conflicts.
* A lane reads 4 k of each of its A rows at once (a float4 along the row), then per k its B
  columns as float4s. The swizzle's XOR splits into the lane's part (its row's or column's
  place in the atom) and the instruction's (a literal), so the lane keeps two tables of 8 byte
  offsets and every read is a table entry plus a literal: no address arithmetic in the loop.
"""
from __future__ import annotations

from ..base import ARCH_SPECIFIC_MARK, KernelSource, TensorMap
from ..hopper import (A_TENSOR_MAP, B_TENSOR_MAP, MBARRIERS, REGISTER_MOVES, SHARED_ADDRESS, TENSOR_MAP_DECLARATIONS,
                      TMA_HELPERS)
from .kernel import ENTRY, store_tile
from .tiling import (FLOAT_BYTES, MBARRIER_BYTES, SWIZZLE_ATOM_BYTES, SWIZZLE_ROW_BYTES, TMA_BLOCK_K, TMA_PANEL,
                     GemmTiling)

PANEL_BYTES = TMA_BLOCK_K * SWIZZLE_ROW_BYTES  # one of B's 32-column boxes in a stage
CHUNKS = SWIZZLE_ROW_BYTES // 16  # 16-byte chunks of a swizzled row, and the atom's rows


def tensor_maps(t: GemmTiling) -> tuple[TensorMap, TensorMap]:
    return (TensorMap(A_TENSOR_MAP, 0, t.m, t.k, t.block_m, TMA_BLOCK_K, FLOAT_BYTES),
            TensorMap(B_TENSOR_MAP, 1, t.k, t.n, TMA_BLOCK_K, TMA_PANEL, FLOAT_BYTES))


def _producer(t: GemmTiling) -> str:
    s = t.stages
    return f"""
    if (warp >= {t.consumer_threads // 32}) {{  // the producer warpgroup: one thread issues every copy
{f"        registers_down<{t.producer_registers}>();" if t.producer_registers else ""}
        if (tid == {t.consumer_threads}) {{
#pragma unroll 1
            for (int kt = 0; kt < {t.k_tiles}; ++kt) {{
                const int s = kt % {s};
                const unsigned stage = ring + s * {t.tma_stage_bytes}, bar = full + {MBARRIER_BYTES} * s;
                if (kt >= {s}) barrier_wait(empty + {MBARRIER_BYTES} * s, ((kt / {s}) + 1) & 1);
                barrier_arrive_expect_tx(bar, {t.tma_stage_bytes});
                tma_load_2d(stage, &{A_TENSOR_MAP}, kt * {TMA_BLOCK_K}, block_row, bar);
#pragma unroll
                for (int p = 0; p < {t.block_n // TMA_PANEL}; ++p)
                    tma_load_2d(stage + {t.tma_a_bytes} + p * {PANEL_BYTES}, &{B_TENSOR_MAP}, block_col + p * {TMA_PANEL},
                                kt * {TMA_BLOCK_K}, bar);
            }}
        }}
        return;
    }}"""


def _compute(t: GemmTiling) -> str:
    """One stage: per 16-byte chunk of A's rows (4 k), the lane's A rows, then per k its B
    columns and the outer product. `rows` and `cols` are a row's and a 4-column group's literal
    offsets from the lane's first; the chunk tables take their place in the swizzle atom."""
    rows = f"(i * {t.sub_m} + x * {t.lanes_m})"
    cols = f"(j * {t.sub_n} + g * {4 * t.lanes_n})"
    groups = t.thread_n // 4
    return f"""
#pragma unroll
        for (int c = 0; c < {CHUNKS}; ++c) {{
            float a[{t.iter_m}][{t.thread_m}][4];
#pragma unroll
            for (int i = 0; i < {t.iter_m}; ++i)
#pragma unroll
                for (int x = 0; x < {t.thread_m}; ++x) {{
                    const float4 v = *reinterpret_cast<const float4*>(
                        stage + a_at[c ^ ({rows} & 7)] + {rows} * {SWIZZLE_ROW_BYTES});
                    a[i][x][0] = v.x; a[i][x][1] = v.y; a[i][x][2] = v.z; a[i][x][3] = v.w;
                }}
#pragma unroll
            for (int q = 0; q < 4; ++q) {{
                const int kk = c * 4 + q;
                float b[{t.iter_n}][{t.thread_n}];
#pragma unroll
                for (int j = 0; j < {t.iter_n}; ++j)
#pragma unroll
                    for (int g = 0; g < {groups}; ++g) {{
                        const float4 v = *reinterpret_cast<const float4*>(
                            stage + b_at[(({cols} / 4) & 7) ^ (kk & 7)] + {cols} / {TMA_PANEL} * {PANEL_BYTES}
                            + kk * {SWIZZLE_ROW_BYTES});
                        b[j][g * 4] = v.x; b[j][g * 4 + 1] = v.y; b[j][g * 4 + 2] = v.z; b[j][g * 4 + 3] = v.w;
                    }}
#pragma unroll
                for (int i = 0; i < {t.iter_m}; ++i)
#pragma unroll
                    for (int j = 0; j < {t.iter_n}; ++j)
#pragma unroll
                        for (int x = 0; x < {t.thread_m}; ++x)
#pragma unroll
                            for (int y = 0; y < {t.thread_n}; ++y)
                                acc[i][j][x][y] = fmaf(a[i][x][q], b[j][y], acc[i][j][x][y]);
            }}
        }}"""


def _consumers(t: GemmTiling) -> str:
    s = t.stages
    return f"""{f"{chr(10)}    registers_up<{t.consumer_registers}>();" if t.producer_registers else ""}
    const int lane_m = lane / {t.lanes_n}, lane_n = lane % {t.lanes_n};
    // This lane's first row (within the block) of A's tile and first column of B's; its others
    // are lanes_m rows and 4 * lanes_n columns apart.
    const int a_row0 = (warp / {t.warps_n}) * {t.warp_m} + lane_m;
    const int b_col0 = (warp % {t.warps_n}) * {t.warp_n} + lane_n * 4;
    // Byte offsets within a stage of this lane's first A row's and first B column's chunk whose
    // place in the swizzle atom, XORed with the lane's own, is v.
    unsigned a_at[{CHUNKS}], b_at[{CHUNKS}];
#pragma unroll
    for (int v = 0; v < {CHUNKS}; ++v) {{
        a_at[v] = a_row0 * {SWIZZLE_ROW_BYTES} + ((v ^ (lane_m & 7)) << 4);
        b_at[v] = {t.tma_a_bytes} + (b_col0 / {TMA_PANEL}) * {PANEL_BYTES} + ((v ^ (lane_n & 7)) << 4);
    }}
    float acc[{t.iter_m}][{t.iter_n}][{t.thread_m}][{t.thread_n}];
#pragma unroll
    for (int i = 0; i < {t.iter_m}; ++i)
#pragma unroll
        for (int j = 0; j < {t.iter_n}; ++j)
#pragma unroll
            for (int x = 0; x < {t.thread_m}; ++x)
#pragma unroll
                for (int y = 0; y < {t.thread_n}; ++y) acc[i][j][x][y] = 0.0f;
#pragma unroll 1
    for (int kt = 0; kt < {t.k_tiles}; ++kt) {{
        const int s = kt % {s};
        barrier_wait(full + {MBARRIER_BYTES} * s, (kt / {s}) & 1);
        const unsigned char* stage = stages + s * {t.tma_stage_bytes};
{_compute(t)}
        __syncwarp();  // the warp's reads of the stage are done: one arrival for them all
        if (lane == 0) barrier_arrive(empty + {MBARRIER_BYTES} * s);
    }}"""


def generate(t: GemmTiling) -> KernelSource:
    """The kernel for one loader-tma config; the tiling must be one the template's rules accept."""
    reason = t.why_not_tiled()
    if reason:
        raise ValueError(reason)
    s = t.stages
    code = f"""{ARCH_SPECIFIC_MARK}
// gemm fp32 row-major: C[{t.m}, {t.n}] = A[{t.m}, {t.k}] . B[{t.k}, {t.n}]
// block {t.block_m}x{t.block_n}x{t.block_k} warp {t.warp_m}x{t.warp_n} lanes {t.lanes_m}x{t.lanes_n}
// thread {t.thread_m}x{t.thread_n} (x {t.iter_m}x{t.iter_n}), interleaved
// loader tma: a producer warpgroup, {s} stages of {t.tma_stage_bytes} bytes
#ifdef __CUDA_ARCH__
{SHARED_ADDRESS}{MBARRIERS}{REGISTER_MOVES}#endif
{TMA_HELPERS}{TENSOR_MAP_DECLARATIONS}
extern "C" __global__ void __launch_bounds__({t.threads}, 1)
{ENTRY}(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
        float* __restrict__ workspace, int* __restrict__ counters)
{{
    extern __shared__ __align__(1024) unsigned char smem[];
    // The swizzle permutes within 1024-byte atoms: the ring starts on one, the barriers follow it.
    const unsigned base = shared_address(smem);
    const unsigned ring = (base + {SWIZZLE_ATOM_BYTES - 1}u) & ~{SWIZZLE_ATOM_BYTES - 1}u;
    const unsigned full = ring + {s * t.tma_stage_bytes}, empty = full + {MBARRIER_BYTES * s};
    const unsigned char* stages = smem + (ring - base);
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int block_row = blockIdx.y * {t.block_m}, block_col = blockIdx.x * {t.block_n};
    if (tid == 0) {{
#pragma unroll
        for (int s = 0; s < {s}; ++s) {{
            barrier_init(full + {MBARRIER_BYTES} * s, 1);
            barrier_init(empty + {MBARRIER_BYTES} * s, {t.consumer_threads // 32});
        }}
        barrier_init_fence();
    }}
    __syncthreads();
{_producer(t)}
{_consumers(t)}
{store_tile(t, "C")}
}}
"""
    return KernelSource(
        name=ENTRY,
        code=code,
        grid=t.grid,
        block=(t.threads, 1, 1),
        shared_bytes=t.shared_bytes,
        arg_order=("a", "b", "c", "workspace", "counters"),
        output_index=2,
        tensor_maps=tensor_maps(t),
    )
