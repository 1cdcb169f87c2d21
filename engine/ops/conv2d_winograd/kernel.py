"""CUDA source for the fused F(m x m, 3x3) Winograd convolution (`tiling` says what it computes and how)."""
from __future__ import annotations

from ..base import KernelSource
from ..gemm.kernel import VECTOR_TYPE, load_rounds, vector_components
from . import transforms
from .tiling import FILTER_TAPS, WinogradTiling

ENTRY = "winograd_conv2d_kernel"


def _kept_offsets(t: WinogradTiling) -> str:
    """Each patch's input offset and its taps' padding tests (a bit each), each filter's offset: chunk invariants."""
    c = t.conv
    mask = _mask_type(t)
    top, left = c.padding[0], c.padding[1]
    patches, filters = t.chunk * t.block_tiles, t.block_co * t.chunk
    tile_plane = t.tiles_h * t.tiles_w
    return f"""
    int patch_offset[{t.patch_rounds}]; {mask} patch_taps[{t.patch_rounds}];
#pragma unroll
    for (int r = 0; r < {t.patch_rounds}; ++r) {{
        const int i = r * {t.threads} + tid;
        const int tile = block_tile + i % {t.block_tiles};
        const int image = tile / {tile_plane}, ty = tile % {tile_plane} / {t.tiles_w}, tx = tile % {t.tiles_w};
        const int row0 = ty * {t.tile} - {top}, col0 = tx * {t.tile} - {left};
        patch_offset[r] = ((image * {c.ci} + i / {t.block_tiles}) * {c.h} + row0) * {c.w} + col0;
        {mask} taps = 0;
#pragma unroll
        for (int e = 0; e < {t.positions}; ++e)
            taps |= ({mask})((unsigned)(row0 + e / {t.patch}) < {c.h}u && (unsigned)(col0 + e % {t.patch}) < {c.w}u) << e;
        patch_taps[r] = (i < {patches} && tile < {t.tiles}) ? taps : 0;
    }}
    int filter_offset[{t.filter_rounds}]; unsigned filter_live = 0u;
#pragma unroll
    for (int r = 0; r < {t.filter_rounds}; ++r) {{
        const int i = r * {t.threads} + tid, co = block_co + i % {t.block_co};
        filter_offset[r] = (co * {c.ci} + i / {t.block_co}) * {FILTER_TAPS};
        filter_live |= (unsigned)(i < {filters} && co < {c.co}) << r;
    }}"""


def _load(t: WinogradTiling) -> str:
    """The chunk from input channel `c0`: each thread's patches and filters into registers (zeros outside)."""
    c = t.conv
    tail = t.conv.ci % t.chunk != 0
    patch_live = f"c0 + (r * {t.threads} + tid) / {t.block_tiles} < {c.ci} && " if tail else ""
    filter_live = f" && c0 + (r * {t.threads} + tid) / {t.block_co} < {c.ci}" if tail else ""
    return f"""
#pragma unroll
        for (int r = 0; r < {t.patch_rounds}; ++r) {{
            const int at = patch_offset[r] + c0 * {c.h * c.w};
#pragma unroll
            for (int e = 0; e < {t.positions}; ++e)
                d[r][e] = {patch_live}(patch_taps[r] >> e & 1) ? __ldg(D + at + e / {t.patch} * {c.w} + e % {t.patch}) : 0.0f;
        }}
#pragma unroll
        for (int r = 0; r < {t.filter_rounds}; ++r) {{
            const bool live = (filter_live >> r & 1u){filter_live};
            const int at = filter_offset[r] + c0 * {FILTER_TAPS};
#pragma unroll
            for (int e = 0; e < {FILTER_TAPS}; ++e) g[r][e] = live ? __ldg(W + at + e) : 0.0f;
        }}"""


def _store(t: WinogradTiling, stage: str) -> str:
    """The registers' patches and filters, transformed, into `stage`: U[p][ci][co], then V[p][ci][tile]."""
    return f"""
        {{
            float* su = smem + ({stage}) * {t.stage_floats};
            float* sv = su + {t.u_floats};
#pragma unroll
            for (int r = 0; r < {t.patch_rounds}; ++r) {{
                const int i = r * {t.threads} + tid;
                {load_rounds(t.chunk * t.block_tiles, t.threads)[1]}{{
                    float v[{t.positions}];
                    input_transform(d[r], v);
#pragma unroll
                    for (int e = 0; e < {t.positions}; ++e) sv[e * {t.chunk * t.block_tiles} + i] = v[e];
                }}
            }}
#pragma unroll
            for (int r = 0; r < {t.filter_rounds}; ++r) {{
                const int i = r * {t.threads} + tid;
                {load_rounds(t.block_co * t.chunk, t.threads)[1]}{{
                    float u[{t.positions}];
                    filter_transform(g[r], u);
#pragma unroll
                    for (int e = 0; e < {t.positions}; ++e) su[e * {t.chunk * t.block_co} + i] = u[e];
                }}
            }}
        }}"""


def _compute(t: WinogradTiling, stage: str) -> str:
    """This warp's positions of the stage: outer products of U's and V's rows into the accumulators."""
    fa, fb = min(t.thread_co, 4), min(t.thread_tiles, 4)
    ta, tb = VECTOR_TYPE[fa], VECTOR_TYPE[fb]
    return f"""
        {{
            const float* su = smem + ({stage}) * {t.stage_floats} + p0 * {t.chunk * t.block_co} + co0;
            const float* sv = smem + ({stage}) * {t.stage_floats} + {t.u_floats} + p0 * {t.chunk * t.block_tiles} + t0;
#pragma unroll
            for (int pp = 0; pp < {t.warp_positions}; ++pp)
#pragma unroll
                for (int k = 0; k < {t.chunk}; ++k) {{
                    float a[{t.thread_co}], b[{t.thread_tiles}];
#pragma unroll
                    for (int x = 0; x < {t.thread_co}; x += {fa}) {{
                        const {ta} q = *reinterpret_cast<const {ta}*>(su + (pp * {t.chunk} + k) * {t.block_co} + x);
                        {" ".join(f"a[x + {e}] = {part};" for e, part in enumerate(vector_components("q", fa)))}
                    }}
#pragma unroll
                    for (int y = 0; y < {t.thread_tiles}; y += {fb}) {{
                        const {tb} q = *reinterpret_cast<const {tb}*>(sv + (pp * {t.chunk} + k) * {t.block_tiles} + y);
                        {" ".join(f"b[y + {e}] = {part};" for e, part in enumerate(vector_components("q", fb)))}
                    }}
#pragma unroll
                    for (int x = 0; x < {t.thread_co}; ++x)
#pragma unroll
                        for (int y = 0; y < {t.thread_tiles}; ++y) acc[pp][x][y] = fmaf(a[x], b[y], acc[pp][x][y]);
                }}
        }}"""


def _main_loop(t: WinogradTiling) -> str:
    if t.pipeline == "sync":
        return f"""
    for (int c0 = 0; c0 < {t.conv.ci}; c0 += {t.chunk}) {{{_load(t)}{_store(t, "0")}
        __syncthreads();{_compute(t, "0")}
        __syncthreads();
    }}"""
    return f"""
    {{
        const int c0 = 0;{_load(t)}{_store(t, "0")}
    }}
    __syncthreads();
    for (int chunk = 0; chunk < {t.chunks}; ++chunk) {{
        const bool more = chunk + 1 < {t.chunks};
        const int c0 = (chunk + 1) * {t.chunk};
        if (more) {{  // the next chunk's loads are in flight while this one computes{_load(t)}
        }}{_compute(t, "chunk & 1")}
        if (more) {_store(t, "(chunk + 1) & 1")}
        __syncthreads();
    }}"""


def _epilogue(t: WinogradTiling) -> str:
    """Accumulators into M[p][co][tile] in shared memory, then whole tiles out of it: Y = Aᵀ M A, to NCHW."""
    c = t.conv
    width = min(t.thread_tiles, 4)
    vt = VECTOR_TYPE[width]
    pairs = t.block_co * t.block_tiles
    values = ", ".join(f"acc[pp][x][y + {e}]" for e in range(width))
    vector = values if width == 1 else f"make_float{width}({values})"
    return f"""
#pragma unroll
    for (int pp = 0; pp < {t.warp_positions}; ++pp)
#pragma unroll
        for (int x = 0; x < {t.thread_co}; ++x)
#pragma unroll
            for (int y = 0; y < {t.thread_tiles}; y += {width})
                *reinterpret_cast<{vt}*>(smem + ((p0 + pp) * {t.block_co} + co0 + x) * {t.block_tiles} + t0 + y) = {vector};
    __syncthreads();
#pragma unroll 4
    for (int r = 0; r < {-(-pairs // t.threads)}; ++r) {{
        const int i = r * {t.threads} + tid;
        const int co = block_co + i / {t.block_tiles}, tile = block_tile + i % {t.block_tiles};
        if ({"i < " + str(pairs) + " && " if pairs % t.threads else ""}co < {c.co} && tile < {t.tiles}) {{
            float m[{t.positions}], out[{t.tile * t.tile}];
#pragma unroll
            for (int e = 0; e < {t.positions}; ++e) m[e] = smem[e * {pairs} + i];
            output_transform(m, out);
            {transforms.tile_stores(t)}
        }}
    }}"""


def _mask_type(t: WinogradTiling) -> str:
    """A patch's padding tests, a bit a tap."""
    return "unsigned" if t.positions <= 32 else "unsigned long long"


def generate(t: WinogradTiling) -> KernelSource:
    reason = t.why_not_tiled()
    if reason:
        raise ValueError(reason)
    c = t.conv
    code = f"""// conv2d NCHW fp32 Winograd F({t.tile}x{t.tile}, 3x3), fused: data [{c.n}, {c.ci}, {c.h}, {c.w}], kernel [{c.co}, {c.ci}, 3, 3],
// padding {list(c.padding)}, out [{c.n}, {c.co}, {c.oh}, {c.ow}]: {t.tiles} tiles of {t.tile}x{t.tile}
// block {t.block_co} channels x {t.block_tiles} tiles, chunk {t.chunk}; warp {t.warp_co}x{t.warp_tiles} of {t.warp_positions} position(s),
// lanes {t.lanes_m}x{t.lanes_n}, thread {t.thread_co}x{t.thread_tiles}; pipeline {t.pipeline}
{transforms.functions(t.tile)}
extern "C" __global__ void __launch_bounds__({t.threads})
{ENTRY}(const float* __restrict__ D, const float* __restrict__ W, float* __restrict__ Y)
{{
    extern __shared__ __align__(16) float smem[];
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    // This warp's positions, and its lane's first output channel and tile (within the block).
    const int p0 = warp / {t.warps_per_position_group} * {t.warp_positions}, wi = warp % {t.warps_per_position_group};
    const int co0 = wi / {t.warps_tiles} * {t.warp_co} + lane / {t.lanes_n} * {t.thread_co};
    const int t0 = wi % {t.warps_tiles} * {t.warp_tiles} + lane % {t.lanes_n} * {t.thread_tiles};
    const int block_tile = blockIdx.x * {t.block_tiles}, block_co = blockIdx.y * {t.block_co};
{_kept_offsets(t)}
    float d[{t.patch_rounds}][{t.positions}], g[{t.filter_rounds}][{FILTER_TAPS}];
    float acc[{t.warp_positions}][{t.thread_co}][{t.thread_tiles}];
#pragma unroll
    for (int pp = 0; pp < {t.warp_positions}; ++pp)
#pragma unroll
        for (int x = 0; x < {t.thread_co}; ++x)
#pragma unroll
            for (int y = 0; y < {t.thread_tiles}; ++y) acc[pp][x][y] = 0.0f;
{_main_loop(t)}
{_epilogue(t)}
}}
"""
    return KernelSource(name=ENTRY, code=code, grid=t.grid, block=(t.threads, 1, 1), shared_bytes=t.shared_bytes,
                        arg_order=("data", "kernel", "output"), output_index=2)

