"""CUDA source for the unfused F(m x m, 3x3) Winograd convolution (`tiling` says what it computes and how):
one persistent kernel of three phases between two grid barriers, its products written by the fp32 GEMM's
generators (engine.ops.gemm.kernel)."""
from __future__ import annotations

from ..base import KernelSource
from ..conv2d_winograd import transforms
from ..conv2d_winograd.tiling import FILTER_TAPS
from ..gemm import kernel as gemm_kernel
from .tiling import NonfusedTiling

ENTRY = "winograd_nonfused_kernel"
# The workspace and the barrier's counter: the module's own global memory (`tiling` says why).
U, V, M, ARRIVALS = "winograd_u", "winograd_v", "winograd_m", "grid_arrivals"

# The barrier's two halves (tests/cuda_on_cpu's shim has its own): arrive with release semantics, returning
# the count before; wait until the count reaches `target`, then acquire. The wait polls with relaxed loads, 32 ns
# apart, and acquires once with a fence after the loop (PTX's acquire pattern: a strong read, then a fence): an
# ld.acquire each poll would order (and on the hardware invalidate L1 for) every poll of up to 264 waiting
# blocks, and back-to-back polls of the one counter's line take L2 bandwidth from the blocks still working.
_BARRIER_HELPERS = r"""
#ifdef __CUDA_ARCH__
__device__ __forceinline__ unsigned long long grid_arrive(unsigned long long* counter) {
    unsigned long long before;
    asm volatile("atom.add.release.gpu.global.u64 %0, [%1], 1;\n" : "=l"(before) : "l"(counter) : "memory");
    return before;
}
__device__ __forceinline__ void grid_wait(const unsigned long long* counter, unsigned long long target) {
    unsigned long long now;
    for (;;) {
        asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];\n" : "=l"(now) : "l"(counter) : "memory");
        if (now >= target) break;
        __nanosleep(32);
    }
    asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
}
#endif
"""


def _workspace(t: NonfusedTiling) -> str:
    floats = t.workspace_floats
    return f"""
__device__ __align__(16) float {U}[{floats["U"]}];  // U[p][co][ci]: the products' A
__device__ __align__(16) float {V}[{floats["V"]}];  // V[p][ci][tile]: their B
__device__ __align__(16) float {M}[{floats["M"]}];  // M[p][co][tile]: their C
__device__ unsigned long long {ARRIVALS};  // only grows: 2 x {t.blocks} a launch
__device__ __forceinline__ void grid_sync() {{
    __syncthreads();  // this block's writes come before its thread 0's release
    if (threadIdx.x == 0) {{
        const unsigned long long before = grid_arrive(&{ARRIVALS});
        grid_wait(&{ARRIVALS}, (before / {t.blocks} + 1) * {t.blocks});
    }}
    __syncthreads();  // ... and after its acquire, the other blocks' writes for every thread of this one
}}
"""


def _strided(count: int, t: NonfusedTiling) -> str:
    """A loop over `count` items, this block's threads taking every grid's worth of threads from their own."""
    return f"for (int i = blockIdx.x * {t.threads} + tid; i < {count}; i += {t.blocks * t.threads})"


def _transforms(t: NonfusedTiling) -> str:
    """Phase 1: filters (co, ci) into U, and patches (ci, tile) into V, consecutive threads along ci and tiles,
    so that each position's row of U and of V is written in whole lines."""
    c = t.conv
    p = t.positions
    tile_plane = t.tiles_h * t.tiles_w
    top, left = c.padding[0], c.padding[1]
    return f"""
    {_strided(c.co * c.ci, t)} {{
        float g[{FILTER_TAPS}], u[{p}];
#pragma unroll
        for (int e = 0; e < {FILTER_TAPS}; ++e) g[e] = __ldg(W + i * {FILTER_TAPS} + e);  // W[co][ci] is the i-th filter
        filter_transform(g, u);
#pragma unroll
        for (int e = 0; e < {p}; ++e) {U}[e * {c.co * c.ci} + i] = u[e];
    }}
    {_strided(c.ci * t.tiles, t)} {{
        const int ci = i / {t.tiles}, tile = i % {t.tiles};
        const int image = tile / {tile_plane}, row0 = tile % {tile_plane} / {t.tiles_w} * {t.tile} - {top};
        const int col0 = tile % {t.tiles_w} * {t.tile} - {left};
        const int at = ((image * {c.ci} + ci) * {c.h} + row0) * {c.w} + col0;
        float d[{p}], v[{p}];
#pragma unroll
        for (int e = 0; e < {p}; ++e)
            d[e] = (unsigned)(row0 + e / {t.patch}) < {c.h}u && (unsigned)(col0 + e % {t.patch}) < {c.w}u
                ? __ldg(D + at + e / {t.patch} * {c.w} + e % {t.patch}) : 0.0f;
        input_transform(d, v);
#pragma unroll
        for (int e = 0; e < {p}; ++e) {V}[e * {c.ci * t.tiles_padded} + ci * {t.tiles_padded} + tile] = v[e];
    }}"""


def _products(t: NonfusedTiling) -> str:
    """Phase 2: units of (position, co tile, tile tile), each the GEMM's block tile over the position's arrays
    (named A, B and C, as its generators read them)."""
    g, c = t.gemm, t.conv
    # Two parts of the GEMM's kernel body are not here: the sum of K slices (slice_k > 1) and the loads' loop
    # invariants (GemmTiling.load_invariants, a gathered operand's). A tiling with either would need them.
    if g.slice_k != 1 or any(g.load_invariants(operand) != ("", "") for operand in "AB"):
        raise ValueError(f"the unfused products take the GEMM's block tile without its K slices' sum or its loads' "
                         f"loop invariants: slice_k {g.slice_k} must be 1 and {type(g).__name__} have no invariants")
    columns = t.column_tiles
    return f"""
{gemm_kernel.slice_of_thread(g)}
{gemm_kernel.lane_origins(g)}
    for (int unit = blockIdx.x; unit < {t.units}; unit += {t.blocks}) {{
        const int position = unit / {t.row_tiles * columns};
        const int block_row = unit / {columns} % {t.row_tiles} * {g.block_m}, block_col = unit % {columns} * {g.block_n};
        const float* A = {U} + position * {c.co * c.ci};
        const float* B = {V} + position * {c.ci * t.tiles_padded};
        float* C = {M} + position * {c.co * t.tiles_padded};
{gemm_kernel.k_range(g)}
        {gemm_kernel.staging_registers(g)}
{gemm_kernel.zeroed_accumulators(g)}
{gemm_kernel.main_loop(g)}
{gemm_kernel.store_tile(g, "C")}
        __syncthreads();  // every thread is done with the stages the next unit fills
    }}"""


def _output(t: NonfusedTiling) -> str:
    """Phase 3: each (co, tile)'s products out of M, Y = Aᵀ M A, to the NCHW output."""
    c = t.conv
    return f"""
    {_strided(c.co * t.tiles, t)} {{
        const int co = i / {t.tiles}, tile = i % {t.tiles};
        float m[{t.positions}], out[{t.tile * t.tile}];
#pragma unroll
        for (int e = 0; e < {t.positions}; ++e) m[e] = __ldcg({M} + e * {c.co * t.tiles_padded} + co * {t.tiles_padded} + tile);
        output_transform(m, out);
        {transforms.tile_stores(t)}
    }}"""


def generate(t: NonfusedTiling) -> KernelSource:
    reason = t.why_not_tiled()
    if reason:
        raise ValueError(reason)
    c, g = t.conv, t.gemm
    code = f"""// conv2d NCHW fp32 Winograd F({t.tile}x{t.tile}, 3x3), unfused: data [{c.n}, {c.ci}, {c.h}, {c.w}], kernel [{c.co}, {c.ci}, 3, 3],
// padding {list(c.padding)}, out [{c.n}, {c.co}, {c.oh}, {c.ow}]: {t.tiles} tiles of {t.tile}x{t.tile}; {t.blocks} persistent blocks, {t.blocks_per_sm} a SM
// products: {t.positions} GEMMs [{c.co}, {t.tiles_padded}, {c.ci}] in {t.units} units of block {g.block_m}x{g.block_n}x{g.block_k},
// warp {g.warp_m}x{g.warp_n} lanes {g.lanes_m}x{g.lanes_n} thread {g.thread_m}x{g.thread_n} (x {g.iter_m}x{g.iter_n}) vectors {g.vector_a}/{g.vector_b}
// pipeline {g.pipeline} pad {g.pad} unroll {g.unroll}
{transforms.functions(t.tile)}{gemm_kernel.ASYNC_HELPERS}{_BARRIER_HELPERS}{_workspace(t)}
extern "C" __global__ void __launch_bounds__({t.threads}, {t.blocks_per_sm})
{ENTRY}(const float* __restrict__ D, const float* __restrict__ W, float* __restrict__ Y)
{{
    extern __shared__ __align__(16) float smem[];
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
{_transforms(t)}
    grid_sync();  // U and V are whole
{_products(t)}
    grid_sync();  // M is whole
{_output(t)}
}}
"""
    return KernelSource(name=ENTRY, code=code, grid=t.grid, block=(t.threads, 1, 1), shared_bytes=t.shared_bytes,
                        arg_order=("data", "kernel", "output"), output_index=2, co_resident=True)

