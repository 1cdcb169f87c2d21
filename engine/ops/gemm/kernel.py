"""CUDA source for the warp-tiled fp32 GEMM of engine.ops.gemm, from a GemmTiling.

Every size is a literal in the source (the runner passes arrays only), so NVRTC
sees constant loop bounds and unrolls the register tile completely. The
arguments are (A, B, C, workspace, counters) (the implicit-GEMM conv's: its data as B, its weights as A,
its output as C, in its own order: `GemmTiling.operand_parameters`); the last two are touched
only by split-K configs: `make_inputs` sizes them for the largest split the
space offers, and the counters start at zero and are put back to zero by the
block that finishes each tile, so launches can repeat (CUDA graph replays).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..base import KernelSource
from .tiling import GemmParams, GemmTiling

ENTRY = "gemm_kernel"
SMALLEST_TILE = 16  # the smallest block_m / block_n of the space: sizes the counter array
# Below this many multiply-adds the reference is computed in float64; above it, float32
# BLAS (its error, about 1e-6 relative, is far inside the runner's 1e-4 tolerance).
FLOAT64_REFERENCE_LIMIT = 2**33

VECTOR_TYPE = {1: "float", 2: "float2", 4: "float4"}

# cp.async (sm_80 and newer): `bytes` from global to shared, zero-filled when `pred` is
# false. Older GPUs copy through registers, so the same source compiles everywhere.
ASYNC_HELPERS = r"""
template <int BYTES>
__device__ __forceinline__ void copy_async(float* dst, const float* src, bool pred) {
#if __CUDA_ARCH__ >= 800
    const unsigned address = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n"
                 :: "r"(address), "l"(src), "n"(BYTES), "r"(pred ? BYTES : 0));
#else
    #pragma unroll
    for (int e = 0; e < BYTES / 4; ++e) dst[e] = pred ? src[e] : 0.0f;
#endif
}
__device__ __forceinline__ void copy_commit() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}
template <int PENDING>
__device__ __forceinline__ void copy_wait() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" :: "n"(PENDING) : "memory");
#endif
}
"""


# Thread block clusters (sm_90 and newer): the cluster barrier (release/acquire by default)
# and a float4 read of the same shared-memory offset in another block of the cluster. The
# template refuses clusters on older GPUs; their compile keeps the local read.
_CLUSTER_HELPERS = r"""
__device__ __forceinline__ void cluster_sync() {
#if __CUDA_ARCH__ >= 900
    asm volatile("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ float4 load_from_block(const float* local, unsigned rank) {
#if __CUDA_ARCH__ >= 900
    unsigned remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n"
                 : "=r"(remote) : "r"((unsigned)__cvta_generic_to_shared(local)), "r"(rank));
    float4 v;
    asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(remote) : "memory");
    return v;
#else
    return *reinterpret_cast<const float4*>(local);
#endif
}
"""


# A split-K cluster is the split_k blocks of one tile (grid z); only sm_90 and newer know clusters.
_CLUSTER_DIMS = """
#if __CUDA_ARCH__ >= 900
#define GEMM_CLUSTER __cluster_dims__(1, 1, {splits})
#else
#define GEMM_CLUSTER
#endif
"""


def vector_components(value: str, width: int) -> list[str]:
    """The scalar parts of a float/float2/float4 expression (register arrays stay scalar,
    so the compiler keeps them in registers)."""
    return [value] if width == 1 else [f"{value}.{c}" for c in "xyzw"[:width]]


def _make_vector(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else f"make_float{len(parts)}({', '.join(parts)})"


def load_rounds(count: int, threads: int) -> tuple[int, str]:
    """Rounds of a cooperative copy of `count` vectors, and the guard its last round needs."""
    return -(-count // threads), ("" if count % threads == 0 else f"if (i < {count}) ")


def _a_index(t: GemmTiling) -> str:
    """Row and k (within the tile) of A's vector `i`: consecutive threads read along K."""
    per_row = t.block_k // t.vector_a
    return f"const int row = i / {per_row}, kk = (i % {per_row}) * {t.vector_a};"


def _b_index(t: GemmTiling) -> str:
    per_row = t.block_n // t.vector_b
    return f"const int kk = i / {per_row}, col = (i % {per_row}) * {t.vector_b};"


def _predicate(*conditions: str | None) -> str:
    """The conditions that can fail, joined; "true" when none can (the compiler then drops
    the tests, and the address arithmetic they guard shrinks with them)."""
    return " && ".join(c for c in conditions if c) or "true"


def _k_inside(t: GemmTiling) -> str | None:
    """K steps are whole when block_k divides K (split boundaries are whole steps by construction)."""
    return None if t.k % t.block_k == 0 else "k0 + kk < k_end"


def _a_pred(t: GemmTiling) -> str:
    return _predicate(None if t.m % t.block_m == 0 else f"block_row + row < {t.m}", _k_inside(t))


def _b_pred(t: GemmTiling, inside: str | None = None) -> str:
    """B's element (k0 + kk, block_col + col) lies in B (and, where B is gathered, `inside` its source)."""
    return _predicate(_k_inside(t), None if t.n % t.block_n == 0 else f"block_col + col < {t.n}", inside)


def _fetch_to_registers(t: GemmTiling) -> str:
    """Global -> registers (ra, rb) for the tile starting at k0: zero outside the matrix."""
    ra_rounds, ra_guard = load_rounds(t.a_vectors, t.threads)
    rb_rounds, rb_guard = load_rounds(t.b_vectors, t.threads)
    va, vb = VECTOR_TYPE[t.vector_a], VECTOR_TYPE[t.vector_b]
    b_where, b_inside, b_address = t.b_element("k0 + kk", "block_col + col")
    return f"""
#pragma unroll
        for (int r = 0; r < {ra_rounds}; ++r) {{
            const int i = r * {t.threads} + tid;
            ra[r] = {va}{{}};
            {ra_guard}{{
                {_a_index(t)}
                if ({_a_pred(t)})
                    ra[r] = *reinterpret_cast<const {va}*>({t.a_element()});
            }}
        }}
#pragma unroll
        for (int r = 0; r < {rb_rounds}; ++r) {{
            const int i = r * {t.threads} + tid;
            rb[r] = {vb}{{}};
            {rb_guard}{{
                {_b_index(t)}{b_where}
                if ({_b_pred(t, b_inside)})
                    rb[r] = *reinterpret_cast<const {vb}*>({b_address});
            }}
        }}"""


def _store_registers(t: GemmTiling) -> str:
    """Registers -> shared stage `sa`/`sb`: A transposed element by element, B as vectors."""
    ra_rounds, ra_guard = load_rounds(t.a_vectors, t.threads)
    rb_rounds, rb_guard = load_rounds(t.b_vectors, t.threads)
    vb = VECTOR_TYPE[t.vector_b]
    return f"""
#pragma unroll
        for (int r = 0; r < {ra_rounds}; ++r) {{
            const int i = r * {t.threads} + tid;
            {ra_guard}{{
                {_a_index(t)}
                {" ".join(f"sa[(kk + {v}) * {t.a_stride} + row] = {part};"
                          for v, part in enumerate(vector_components("ra[r]", t.vector_a)))}
            }}
        }}
#pragma unroll
        for (int r = 0; r < {rb_rounds}; ++r) {{
            const int i = r * {t.threads} + tid;
            {rb_guard}{{
                {_b_index(t)}
                *reinterpret_cast<{vb}*>(sb + kk * {t.b_stride} + col) = rb[r];
            }}
        }}"""


def _issue_async(t: GemmTiling) -> str:
    """cp.async copies of the tile starting at k0 into stage `sa`/`sb`."""
    ra_rounds, ra_guard = load_rounds(t.a_vectors, t.threads)
    rb_rounds, rb_guard = load_rounds(t.b_vectors, t.threads)
    b_where, b_inside, b_address = t.b_element("k0 + kk", "block_col + col")
    return f"""
#pragma unroll
        for (int r = 0; r < {ra_rounds}; ++r) {{
            const int i = r * {t.threads} + tid;
            {ra_guard}{{
                {_a_index(t)}
                const bool pred = {_a_pred(t)};
                copy_async<4>(sa + kk * {t.a_stride} + row,
                              pred ? {t.a_element()} : A, pred);
            }}
        }}
#pragma unroll
        for (int r = 0; r < {rb_rounds}; ++r) {{
            const int i = r * {t.threads} + tid;
            {rb_guard}{{
                {_b_index(t)}{b_where}
                const bool pred = {_b_pred(t, b_inside)};
                copy_async<{4 * t.vector_b}>(sb + kk * {t.b_stride} + col,
                              pred ? {b_address} : B, pred);
            }}
        }}"""


def _loop_invariants(t: GemmTiling) -> str:
    """The tiling's loop invariants of A's and B's loads (`GemmTiling.load_invariants`), worked out one
    round at a time as the loaders go; nothing where it has none."""
    out = []
    for operand, vectors, index in (("A", t.a_vectors, _a_index(t)), ("B", t.b_vectors, _b_index(t))):
        declarations, statements = t.load_invariants(operand)
        if not declarations:
            continue
        rounds, guard = load_rounds(vectors, t.threads)
        out.append(f"""
    {declarations}
#pragma unroll
    for (int r = 0; r < {rounds}; ++r) {{
        const int i = r * {t.threads} + tid;
        {guard}{{
            {index}
            {statements}
        }}
    }}""")
    return "".join(out)


def _stage_pointers(t: GemmTiling, stage: str) -> str:
    return (f"float* sa = smem + ({stage}) * {t.stage_floats}; "
            f"float* sb = sa + {t.block_k * t.a_stride};")


def _compute(t: GemmTiling) -> str:
    """One shared-memory stage (`sa`, `sb`): block_k outer-product steps on the register tile."""
    fa, fb = min(t.thread_m, 4), min(t.thread_n, 4)
    ta, tb = VECTOR_TYPE[fa], VECTOR_TYPE[fb]
    unroll = "#pragma unroll" if t.unroll >= t.slice_steps else f"#pragma unroll {t.unroll}"
    return f"""
{unroll}
        for (int kk = k_slice0; kk < k_slice0 + {t.slice_steps}; ++kk) {{
            float a_frag[{t.iter_m}][{t.thread_m}], b_frag[{t.iter_n}][{t.thread_n}];
#pragma unroll
            for (int i = 0; i < {t.iter_m}; ++i)
#pragma unroll
                for (int x = 0; x < {t.thread_m}; x += {fa}) {{
                    const {ta} v = *reinterpret_cast<const {ta}*>(sa + kk * {t.a_stride} + a_row0 + i * {t.sub_m} + x);
                    {" ".join(f"a_frag[i][x + {e}] = {part};" for e, part in enumerate(vector_components("v", fa)))}
                }}
#pragma unroll
            for (int j = 0; j < {t.iter_n}; ++j)
#pragma unroll
                for (int y = 0; y < {t.thread_n}; y += {fb}) {{
                    const {tb} v = *reinterpret_cast<const {tb}*>(sb + kk * {t.b_stride} + b_col0 + j * {t.sub_n} + y);
                    {" ".join(f"b_frag[j][y + {e}] = {part};" for e, part in enumerate(vector_components("v", fb)))}
                }}
#pragma unroll
            for (int i = 0; i < {t.iter_m}; ++i)
#pragma unroll
                for (int j = 0; j < {t.iter_n}; ++j)
#pragma unroll
                    for (int x = 0; x < {t.thread_m}; ++x)
#pragma unroll
                        for (int y = 0; y < {t.thread_n}; ++y)
                            acc[i][j][x][y] = fmaf(a_frag[i][x], b_frag[j][y], acc[i][j][x][y]);
        }}"""


def main_loop(t: GemmTiling) -> str:
    compute = _compute(t)
    if t.pipeline == "sync":
        return f"""
    for (int tile = 0; tile < k_tiles; ++tile) {{
        const int k0 = k_begin + tile * {t.block_k};
        {_stage_pointers(t, "0")}
        {_fetch_to_registers(t)}
        {_store_registers(t)}
        __syncthreads();
        {compute}
        __syncthreads();
    }}"""
    if t.pipeline == "prefetch":
        return f"""
    if (k_tiles > 0) {{
        const int k0 = k_begin;
        {_stage_pointers(t, "0")}
        {_fetch_to_registers(t)}
        {_store_registers(t)}
    }}
    __syncthreads();
    for (int tile = 0; tile < k_tiles; ++tile) {{
        const bool more = tile + 1 < k_tiles;
        if (more) {{  // the next tile's loads are in flight while this one computes
            const int k0 = k_begin + (tile + 1) * {t.block_k};
            {_fetch_to_registers(t)}
        }}
        {{
            {_stage_pointers(t, "tile & 1")}
            {compute}
        }}
        if (more) {{
            {_stage_pointers(t, "(tile + 1) & 1")}
            {_store_registers(t)}
        }}
        __syncthreads();
    }}"""
    stages = t.stages
    return f"""
#pragma unroll
    for (int s = 0; s < {stages - 1}; ++s) {{
        if (s < k_tiles) {{
            const int k0 = k_begin + s * {t.block_k};
            {_stage_pointers(t, "s")}
            {_issue_async(t)}
        }}
        copy_commit();
    }}
    for (int tile = 0; tile < k_tiles; ++tile) {{
        copy_wait<{stages - 2}>();  // this tile has landed; later ones may still be in flight
        __syncthreads();            // ... for every thread, and the stage refilled next is free
        const int next = tile + {stages - 1};
        if (next < k_tiles) {{
            const int k0 = k_begin + next * {t.block_k};
            {_stage_pointers(t, f"next % {stages}")}
            {_issue_async(t)}
        }}
        copy_commit();
        {{
            {_stage_pointers(t, f"tile % {stages}")}
            {compute}
        }}
    }}"""


def _sum_slices(t: GemmTiling) -> str:
    """Slices 1.. leave their accumulators in shared memory (element-major, so a warp's
    stores and loads are consecutive words); slice 0 adds them in slice order."""
    if t.slice_k == 1:
        return ""
    per_slice = t.block_m * t.block_n
    loops = f"""
#pragma unroll
        for (int i = 0; i < {t.iter_m}; ++i)
#pragma unroll
            for (int j = 0; j < {t.iter_n}; ++j)
#pragma unroll
                for (int x = 0; x < {t.thread_m}; ++x)
#pragma unroll
                    for (int y = 0; y < {t.thread_n}; ++y)"""
    element = f"(((i * {t.iter_n} + j) * {t.thread_m} + x) * {t.thread_n} + y) * {t.slice_threads} + slice_tid"
    return f"""
    {"copy_wait<0>();" if t.uses_cp_async else ""}
    __syncthreads();  // every slice is done with the stages the exchange overwrites
    const int slice_tid = tid % {t.slice_threads};
    if (slice > 0) {{
        float* mine = smem + (slice - 1) * {per_slice};
        {loops}
                        mine[{element}] = acc[i][j][x][y];
    }}
    __syncthreads();
    if (slice == 0) {{
        for (int s = 0; s < {t.slice_k - 1}; ++s) {{
            const float* theirs = smem + s * {per_slice};
            {loops}
                        acc[i][j][x][y] += theirs[{element}];
        }}
    }}"""


def register_places(t: GemmTiling) -> tuple[str, str]:
    """Where accumulator acc[i][j][x][y] lies past its lane's (a_row0 + i * sub_m, b_col0 + j * sub_n):
    loader tma's lanes interleave their 4-column groups, 4 * lanes_n apart, and tma_rows' their rows,
    lanes_m apart (engine.ops.gemm.tma)."""
    y_col = f"y / 4 * {4 * t.lanes_n}" if t.uses_tma else "y"
    x_row = f"x * {t.lanes_m}" if t.uses_tma and not t.a_transposed else "x"
    return x_row, y_col


def store_tile(t: GemmTiling, target: str) -> str:
    """Write the register tile to `target`, skipping what lies past the edges: C where it lies
    (`GemmTiling.c_address`), or ("workspace") a row-major M x N partial; with K slices, slice 0 holds
    the sums and writes."""
    if t.slice_k > 1:
        return f"""
    if (slice == 0) {{{store_tile(dataclasses.replace(t, slice_k=1), target)}
    }}"""
    row_length = t.c_row_length if target == "C" else t.n
    width = 4 if t.thread_n % 4 == 0 and row_length % 4 == 0 else 2 if t.thread_n % 2 == 0 and row_length % 2 == 0 else 1
    vt = VECTOR_TYPE[width]
    x_row, y_col = register_places(t)
    address = (target == "C" and t.c_address("row", "col")) or f"{target} + (size_t)row * {t.n} + col"
    return f"""
#pragma unroll
    for (int i = 0; i < {t.iter_m}; ++i)
#pragma unroll
        for (int x = 0; x < {t.thread_m}; ++x) {{
            const int row = block_row + a_row0 + i * {t.sub_m} + {x_row};
            if ({_predicate(None if t.m % t.block_m == 0 else f"row < {t.m}")}) {{
#pragma unroll
                for (int j = 0; j < {t.iter_n}; ++j)
#pragma unroll
                    for (int y = 0; y < {t.thread_n}; y += {width}) {{
                        const int col = block_col + b_col0 + j * {t.sub_n} + {y_col};
                        if ({_predicate(None if t.n % t.block_n == 0 else f"col < {t.n}")})
                            *reinterpret_cast<{vt}*>({address}) =
                                {_make_vector([f"acc[i][j][x][y + {e}]" for e in range(width)])};
                    }}
            }}
        }}"""


def _cluster_epilogue(t: GemmTiling, sync: str) -> str:
    """Split-K over a cluster (blockIdx.z is the rank): partial tiles meet in shared memory (the TMA
    loaders': over their ring, summed by the consumers, `sync` their barrier), and each split sums
    its share of the tile, in split order, into C."""
    width = min(t.thread_n, 4)
    share = t.block_m * t.block_n // t.split_k // 4  # float4s of the tile each split sums
    threads = t.consumer_threads
    rounds, guard = load_rounds(share, threads)
    partial = "partial" if t.uses_tma else "smem"
    x_row, y_col = register_places(t)
    edges = [None if t.m % t.block_m == 0 else f"row < {t.m}"]
    if t.c_row_length % 4 == 0:
        address = t.c_address("row", "col") or f"C + (size_t)row * {t.n} + col"
        store = f"""if ({_predicate(*edges, None if t.n % t.block_n == 0 else f"col < {t.n}")})
                *reinterpret_cast<float4*>({address}) = sum;"""
    else:  # rows of C are not 16-byte aligned: one float at a time
        elements = [(e, c, t.c_address("row", f"col + {e}")) for e, c in enumerate("xyzw")]
        store = f"""if ({_predicate(*edges)}) {{
                {" ".join(f"if (col + {e} < {t.n}) *({address}) = sum.{c};" if address else
                          f"if (col + {e} < {t.n}) C[(size_t)row * {t.n} + col + {e}] = sum.{c};"
                          for e, c, address in elements)}
            }}"""
    # the TMA loaders' kernel reads the other splits' by shared address (engine.ops.hopper's LOAD_SHARED_CLUSTER4)
    declare = (f"{chr(10)}    float* partial = reinterpret_cast<float*>(stages);"
               f"{chr(10)}    const unsigned partial_address = shared_address(partial);" if t.uses_tma else "")
    read = "load_shared_cluster4(partial_address + e * 4, s)" if t.uses_tma else "load_from_block(smem + e, s)"
    return f"""
    {_sum_slices(t)}
    {sync}  // the stages (and the slices' exchange) are read; the partial tile goes over them{declare}
    if ({"slice == 0" if t.slice_k > 1 else "true"}) {{
#pragma unroll
        for (int i = 0; i < {t.iter_m}; ++i)
#pragma unroll
            for (int x = 0; x < {t.thread_m}; ++x)
#pragma unroll
                for (int j = 0; j < {t.iter_n}; ++j)
#pragma unroll
                    for (int y = 0; y < {t.thread_n}; y += {width})
                        *reinterpret_cast<{VECTOR_TYPE[width]}*>({partial} + (a_row0 + i * {t.sub_m} + {x_row}) * {t.block_n}
                                                       + b_col0 + j * {t.sub_n} + {y_col}) =
                            {_make_vector([f"acc[i][j][x][y + {e}]" for e in range(width)])};
    }}
    cluster_sync();  // every split's partial tile is in its shared memory
#pragma unroll
    for (int r = 0; r < {rounds}; ++r) {{
        const int i = r * {threads} + tid;
        {guard}{{
            const int e = (blockIdx.z * {share} + i) * 4;  // this split's share of the tile
            float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
            for (int s = 0; s < {t.split_k}; ++s) {{
                const float4 part = {read};
                sum.x += part.x; sum.y += part.y; sum.z += part.z; sum.w += part.w;
            }}
            const int row = block_row + e / {t.block_n}, col = block_col + e % {t.block_n};
            {store}
        }}
    }}
    cluster_sync();  // no block leaves while another still reads its shared memory"""


def epilogue(t: GemmTiling, flag: str | None = None, sync: str = "__syncthreads();") -> str:
    """C from the register tile, or (split_k > 1) each split's partial through the workspace, the last
    split to finish a tile summing them. The TMA loaders' kernel (engine.ops.gemm.tma) names its own
    `flag` (an int's address in shared memory) and `sync` (a barrier of its consumer threads alone:
    its producers have left)."""
    if t.split_k == 1:
        return _sum_slices(t) + store_tile(t, "C")
    if t.uses_cluster:
        return _cluster_epilogue(t, sync)
    # The fix-up sits on the critical path of every tile: its loads go out in unrolled
    # rounds (all of a round's splits in flight at once), 16 bytes wide where rows allow.
    width = 4 if t.c_row_length % 4 == 0 else 1
    vt = VECTOR_TYPE[width]
    tile_vectors = t.block_m * t.block_n // width
    rounds, guard = load_rounds(tile_vectors, t.consumer_threads)
    zero = "make_float4(0.0f, 0.0f, 0.0f, 0.0f)" if width == 4 else "0.0f"
    flag = flag or f"smem + {t.split_flag_offset}"
    add = ("sum.x += part.x; sum.y += part.y; sum.z += part.z; sum.w += part.w;" if width == 4
           else "sum += part;")
    # a multicast grid's columns past N's last tile have no tile and no counter (engine.ops.gemm.tma)
    columns = "gridDim.x" if t.grid[0] == t.tiles_n else t.tiles_n
    return f"""
    {_sum_slices(t)}
    {store_tile(t, f"(workspace + (size_t)blockIdx.z * {t.m * t.n})")}
    // The last split to finish this tile sums every split's partial, in split order.
    int* last_split = reinterpret_cast<int*>({flag});  // dynamic: see GemmTiling.shared_bytes
    __threadfence();
    {sync}
    const int tile_id = blockIdx.y * {columns} + blockIdx.x;
    if (tid == 0) *last_split = atomicAdd(&counters[tile_id], 1) == {t.split_k - 1};
    {sync}
    if (!*last_split) return;
    __threadfence();
#pragma unroll {min(rounds, 8)}
    for (int r = 0; r < {rounds}; ++r) {{
        const int i = r * {t.consumer_threads} + tid;
        {guard}{{
            const int row = block_row + i / {t.block_n // width}, col = block_col + (i % {t.block_n // width}) * {width};
            if ({_predicate(None if t.m % t.block_m == 0 else f"row < {t.m}",
                            None if t.n % t.block_n == 0 else f"col < {t.n}")}) {{
                const size_t at = (size_t)row * {t.n} + col;
                {vt} sum = {zero};
#pragma unroll
                for (int s = 0; s < {t.split_k}; ++s) {{
                    const {vt} part = __ldcg(reinterpret_cast<const {vt}*>(workspace + (size_t)s * {t.m * t.n} + at));
                    {add}
                }}
                *reinterpret_cast<{vt}*>({t.c_address("row", "col") or "C + at"}) = sum;
            }}
        }}
    }}
    if (tid == 0) counters[tile_id] = 0;  // ready for the next launch"""


def slice_of_thread(t: GemmTiling) -> str:
    if t.slice_k == 1:  # literal zeros: the compiler folds them out of every shared address
        return "    const int k_slice0 = 0;"
    return f"""    // This thread's K slice: the k-rows [k_slice0, k_slice0 + {t.slice_steps}) of every step.
    const int slice = tid / {t.slice_threads}, k_slice0 = slice * {t.slice_steps};"""


def k_range(t: GemmTiling) -> str:
    """This block's K range; its step count is a literal where K divides evenly (always
    without split-K), so the main loop's trip count is constant."""
    if t.split_k == 1:
        return f"""    const int k_begin = 0, k_end = {t.k};
    const int k_tiles = {t.k_tiles};"""
    if t.k % t.block_k == 0 and t.k_per_split * t.split_k == t.k:  # every split the same whole steps
        return f"""    const int k_begin = blockIdx.z * {t.k_per_split}, k_end = k_begin + {t.k_per_split};
    const int k_tiles = {t.k_per_split // t.block_k};"""
    return f"""    const int k_begin = blockIdx.z * {t.k_per_split};
    const int k_end = min({t.k}, k_begin + {t.k_per_split});
    const int k_tiles = (k_end - k_begin + {t.block_k - 1}) / {t.block_k};"""


def generate(t: GemmTiling) -> KernelSource:
    """The kernel for one config; the tiling must be one the template's rules accept."""
    reason = t.why_not_tiled()
    if reason:
        raise ValueError(reason)
    code = f"""// gemm fp32 row-major: C[{t.m}, {t.n}] = A[{t.m}, {t.k}] . B[{t.k}, {t.n}]
// block {t.block_m}x{t.block_n}x{t.block_k} warp {t.warp_m}x{t.warp_n} lanes {t.lanes_m}x{t.lanes_n}
// thread {t.thread_m}x{t.thread_n} (x {t.iter_m}x{t.iter_n}) vectors {t.vector_a}/{t.vector_b}
// pipeline {t.pipeline} pad {t.pad} split_k {t.split_k} unroll {t.unroll} slice_k {t.slice_k} split_reduce {t.split_reduce}
{ASYNC_HELPERS}{_CLUSTER_HELPERS + _CLUSTER_DIMS.format(splits=t.split_k) if t.uses_cluster else ""}
extern "C" __global__ void __launch_bounds__({t.threads}){" GEMM_CLUSTER" if t.uses_cluster else ""}
{ENTRY}({t.operand_parameters},
        float* __restrict__ workspace, int* __restrict__ counters)
{{
    extern __shared__ __align__(16) float smem[];
    const int tid = threadIdx.x;
    const int warp = tid / 32{f" % {t.warps_m * t.warps_n}" if t.slice_k > 1 else ""}, lane = tid % 32;
{slice_of_thread(t)}
    const int block_row = blockIdx.y * {t.block_m}, block_col = blockIdx.x * {t.block_n};
{lane_origins(t)}
{k_range(t)}
    {staging_registers(t)}{_loop_invariants(t)}

{zeroed_accumulators(t)}
{main_loop(t)}
{epilogue(t)}
}}
"""
    return kernel_source(t, code)


def staging_registers(t: GemmTiling) -> str:
    """`ra` and `rb`, where pipelines sync and prefetch load a step's A and B on their way to shared memory;
    nothing for the cp.async rings (their copies skip registers)."""
    if t.pipeline not in ("sync", "prefetch"):
        return ""
    return (f"{VECTOR_TYPE[t.vector_a]} ra[{load_rounds(t.a_vectors, t.threads)[0]}]; "
            f"{VECTOR_TYPE[t.vector_b]} rb[{load_rounds(t.b_vectors, t.threads)[0]}];")


def lane_origins(t: GemmTiling) -> str:
    """`a_row0` and `b_col0`, from the thread's `warp` and `lane` (every loader's but the TMA ones)."""
    return f"""    // This lane's first row (within the block) of A's tile and first column of B's.
    const int a_row0 = (warp / {t.warps_n}) * {t.warp_m} + (lane / {t.lanes_n}) * {t.thread_m};
    const int b_col0 = (warp % {t.warps_n}) * {t.warp_n} + (lane % {t.lanes_n}) * {t.thread_n};"""


def zeroed_accumulators(t: GemmTiling) -> str:
    """A thread's register tile, declared and zeroed (every loader's)."""
    return f"""    float acc[{t.iter_m}][{t.iter_n}][{t.thread_m}][{t.thread_n}];
#pragma unroll
    for (int i = 0; i < {t.iter_m}; ++i)
#pragma unroll
        for (int j = 0; j < {t.iter_n}; ++j)
#pragma unroll
            for (int x = 0; x < {t.thread_m}; ++x)
#pragma unroll
                for (int y = 0; y < {t.thread_n}; ++y) acc[i][j][x][y] = 0.0f;"""


def kernel_source(t: GemmTiling, code: str, **more) -> KernelSource:
    """The launch of a GEMM kernel: one block per tile (times split_k), its operands then (workspace, counters)."""
    return KernelSource(name=ENTRY, code=code, grid=t.grid, block=(t.threads, 1, 1), shared_bytes=t.shared_bytes,
                        arg_order=(*t.operand_names, "workspace", "counters"), output_index=2, **more)


def make_inputs(params: GemmParams, rng: np.random.Generator) -> list[np.ndarray]:
    """A and B uniform in [-1, 1), C to be written, and the split-K workspace and counters."""
    a = rng.uniform(-1.0, 1.0, size=(params.m, params.k)).astype(np.float32)
    b = rng.uniform(-1.0, 1.0, size=(params.k, params.n)).astype(np.float32)
    return [a, b, np.empty((params.m, params.n), dtype=np.float32), *split_k_buffers(params)]


def split_k_buffers(params: GemmParams) -> list[np.ndarray]:
    """The workspace and the per-tile counters, sized for the largest split the space offers."""
    split = max(params.split_k_choices)
    workspace = np.zeros(split * params.m * params.n if split > 1 else 1, dtype=np.float32)
    tiles = -(-params.m // SMALLEST_TILE) * -(-params.n // SMALLEST_TILE)
    counters = np.zeros(tiles if split > 1 else 1, dtype=np.int32)
    return [workspace, counters]


def reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    m, k = a.shape
    if m * k * b.shape[1] <= FLOAT64_REFERENCE_LIMIT:
        return a.astype(np.float64) @ b.astype(np.float64)
    return (a @ b).astype(np.float64)
