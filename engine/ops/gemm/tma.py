"""CUDA source of the fp32 GEMM's TMA loaders (`loader` tma and tma_rows, sm_90a), from a GemmTiling.

The threads' loaders spend issue slots on every copy: a cp.async (or a load and a store) per
vector with its address and bounds arithmetic, and a `__syncthreads` per stage that stalls every
warp. The SIMT GEMM is issue-bound (Nsight: issue slots 82 % busy, 20.8 G instructions for
17.2 G FFMAs at 8192³), so those slots are what these loaders give back to the FFMAs:

* Producer threads of their own (a warpgroup that hands registers to the consumers by setmaxnreg,
  or one warp: GemmTiling.producer_threads) fill a ring of `stages`; their first thread issues the
  tensor memory accelerator's copies. B's `32 x block_n` tile goes as `block_n / 32` boxes of 32 x 32
  straight into the stage (one 128-byte row per k, 128B-swizzled: the 16-byte chunk c of row k lands
  at chunk c ^ (k % 8)); A's `block_m x 32` box (one 128-byte row per M row, swizzled alike):
  - `tma`: one step ahead into one of two staging buffers, which all producer threads write
    transposed into the stage (`[k][m]`, a row of A a thread, so a warp's stores are consecutive
    words), as the threads' loaders do: a consumer reads 4 rows of one k as a float4, and each
    FFMA's two factors sit in registers of different banks;
  - `tma_rows`: straight into the stage, read as it lands: a consumer reads 4 k of one row as a
    float4, its rows `lanes_m` apart (interleaved with its warp's other lanes, so a warp's reads of
    one chunk hit 8 distinct chunks under the swizzle). No transposing, but the 4 rows' values of
    one k share a register bank: at 4096³ its 8x8 tiles stalled 0.74 warps per issue on dispatch
    against cuBLAS's 0.10 (Nsight at de06fd9). Small tiles of many blocks an SM (1024³) hide that.
* Barriers: `full[s]` completes when the stage's bytes landed and (tma) every producer thread stored
  its rows of A; `empty[s]` when every consumer warp is done reading the stage, which a warp says
  once it finished the step after, so a step's copies start once the step `stages - 1` before it is
  done: `stages - 2` steps load while one computes (the rules ask for 3 stages or more). Why late: the
  arrival's release orders a warp's reads before generic-proxy writes, but the next write into the
  stage is a TMA copy's (the async proxy), and a stage released right after its reads was overwritten
  under them (4096³, 8325360); a step later every load of it has fed an FFMA, so it is done. (tma) `landed[b]`
  when a staging buffer's box arrived. The producers meet at a named barrier after each step, so a
  staging buffer is read before the copy two steps on refills it.
* A lane's 4-column groups of B interleave with its warp's other lanes (`4 * lanes_n` apart): a
  warp's reads of one k-row of a B panel are consecutive chunks, conflict-free under the swizzle.
  The swizzle's XOR splits into the lane's part and a literal, so a lane keeps a table of 8 byte
  offsets (two with tma_rows: A's too) and every read of a swizzled tile is a table entry plus a literal.
* split_k > 1: through the workspace (engine.ops.gemm.kernel's epilogue, the consumers' barrier its own), or
  (split_reduce cluster) a tile's splits one cluster, whose consumers leave their partial tiles over the
  ring (every copy landed and was read) and sum them as the threads' loaders do; the producers stay to
  meet them at the cluster's two barriers.
* `multicast` C > 1: C neighbouring tile columns are one cluster (`rank` blockIdx.x % C), and each block's
  first producer thread copies rows [rank, rank + 1) · block_m / C of A's box with the `.multicast::cluster`
  copy, into the same offset of every block of the cluster, each block's barrier counting the bytes that land
  in it; so each block's barrier still expects the whole box (from C copies, some of which may land before
  its own producer's expect_tx: the count goes below zero, and its pending arrival holds the phase open).
  What a block may overwrite in another is then the cluster's to release:
  - tma_rows: A's box is in the stage, so `empty[s]` counts the consumer warps of every block of the
    cluster, and each consumer warp arrives on every block's (remotely, as the tensor-core GEMM's cluster
    does): a producer refills a stage once the whole cluster is done with it;
  - tma: A's box is in the staging buffers, and the stages stay the block's own; `freed[b]` counts one
    arrival from each block, whose first producer thread gives it once its producers met after reading
    buffer b (the named barrier), and a buffer is refilled only once it completed.
  The barriers are initialised before the cluster's barrier, so no copy or arrival finds one unset, and
  every thread meets the cluster's barrier once more before it leaves (the consumers after the main loop,
  the producers after their last copy), so no block leaves while another may still arrive on its barriers.
"""
from __future__ import annotations

from ..base import ARCH_SPECIFIC_MARK, KernelSource, TensorMap
from ..hopper import (A_TENSOR_MAP, B_TENSOR_MAP, LOAD_SHARED_CLUSTER4, MBARRIERS, REGISTER_MOVES, SHARED_ADDRESS,
                      TENSOR_MAP_DECLARATIONS, TMA_HELPERS, arrive_in_every_block)
from .kernel import ENTRY, VECTOR_TYPE, epilogue, k_range, kernel_source, zeroed_accumulators
from .tiling import (FLOAT_BYTES, MBARRIER_BYTES, SWIZZLE_ATOM_BYTES, SWIZZLE_ROW_BYTES, TMA_BLOCK_K, TMA_PANEL,
                     GemmTiling)

PANEL_BYTES = TMA_BLOCK_K * SWIZZLE_ROW_BYTES  # one of B's 32-column boxes in a stage
# The producers' own: a copy's bytes expected without an arrival (the producer arrives once its
# stores of A are done too), and their named barrier. (Not in engine.ops.hopper's MBARRIERS: those are
# in the tensor-core kernels' sources, which would change.)
PRODUCER_HELPERS = r"""__device__ __forceinline__ void barrier_expect_tx(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;\n" :: "r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void producers_sync(unsigned count) { asm volatile("bar.sync 1, %0;\n" :: "r"(count) : "memory"); }
"""
# split_k > 1: the consumers' barrier in the split-K epilogue (named barrier 3; the producers have left).
CONSUMER_HELPERS = r"""__device__ __forceinline__ void consumers_sync(unsigned count) { asm volatile("bar.sync 3, %0;\n" :: "r"(count) : "memory"); }
"""
CHUNKS = SWIZZLE_ROW_BYTES // 16  # 16-byte chunks of a swizzled row, and the atom's rows


def tensor_maps(t: GemmTiling) -> tuple[TensorMap, TensorMap]:
    """A's box is a block's share of the tile's rows (all of them, but with multicast), B's one 32x32 panel."""
    return (TensorMap(A_TENSOR_MAP, 0, t.m, t.k, t.a_share_rows, TMA_BLOCK_K, FLOAT_BYTES),
            TensorMap(B_TENSOR_MAP, 1, t.k, t.n, TMA_BLOCK_K, TMA_PANEL, FLOAT_BYTES))


def _producer(t: GemmTiling) -> str:
    """The producer threads' loop: one thread copies each stage (tma_rows), or (tma) all of them
    write A transposed into it too; `ptid` is a producer thread's rank among them."""
    if not t.a_transposed:
        return _producer_of_copies(t)
    s, bar = t.stages, MBARRIER_BYTES
    steps, k0 = _steps(t)
    a_box = _a_copy(t, "staging + ((kt + 1) & 1) * " + str(t.tma_a_bytes), f"{k0}(kt + 1) * {TMA_BLOCK_K}",
                    f"landed + {bar} * ((kt + 1) & 1)")
    freed_wait, freed_arrival = "", ""
    if t.multicast > 1:
        freed_wait = f"""
                if (kt > 0) barrier_wait(freed + {bar} * ((kt + 1) & 1), ((kt - 1) >> 1) & 1);  // every block read it at step kt - 1"""
        freed_arrival = f"""
            if (ptid == 0 && kt + 2 < {steps}) {arrive_in_every_block(f"freed + {bar} * (kt & 1)", t.multicast)}"""
    return _producers(t, "the producers", f"""        const int ptid = tid - {t.consumer_threads};
        if (ptid == 0) {{  // A's first box
            barrier_arrive_expect_tx(landed, {t.tma_a_bytes});
            {_a_copy(t, "staging", k0.removesuffix(" + ") or "0", "landed")};
        }}
#pragma unroll 1
        for (int kt = 0; kt < {steps}; ++kt) {{
            const int s = kt % {s};
            const unsigned stage = ring + s * {t.tma_stage_bytes};
            if (ptid == 0 && kt + 1 < {steps}) {{  // the next step's A, into the other staging buffer{freed_wait}
                barrier_arrive_expect_tx(landed + {bar} * ((kt + 1) & 1), {t.tma_a_bytes});
                {a_box};
            }}
            if (kt >= {s}) barrier_wait(empty + {bar} * s, ((kt / {s}) + 1) & 1);
            if (ptid == 0) {{  // B's panels, straight into the stage
                barrier_expect_tx(full + {bar} * s, {t.tma_b_bytes});
{_b_panels(t)}
            }}
            barrier_wait(landed + {bar} * (kt & 1), (kt >> 1) & 1);
            // A's rows, transposed: row r's chunk c (at c ^ (r % 8) in the swizzled box) is k 4c..4c+3.
            const unsigned char* box = staging_rows + (kt & 1) * {t.tma_a_bytes};
            float* at = reinterpret_cast<float*>(stages + s * {t.tma_stage_bytes} + {t.tma_b_bytes});
#pragma unroll 1
            for (int r = ptid; r < {t.block_m}; r += {t.producer_threads}) {{
#pragma unroll
                for (int c = 0; c < {CHUNKS}; ++c) {{
                    const float4 v = *reinterpret_cast<const float4*>(box + r * {SWIZZLE_ROW_BYTES} + ((c ^ (r & 7)) << 4));
                    at[(4 * c) * {t.block_m} + r] = v.x; at[(4 * c + 1) * {t.block_m} + r] = v.y;
                    at[(4 * c + 2) * {t.block_m} + r] = v.z; at[(4 * c + 3) * {t.block_m} + r] = v.w;
                }}
            }}
            barrier_arrive(full + {bar} * s);
            producers_sync({t.producer_threads});  // the staging buffer is read: the copy after next may refill it{freed_arrival}
        }}""")


def _producer_of_copies(t: GemmTiling) -> str:
    """tma_rows: one thread issues each stage's copies, B's panels and A's box."""
    s, bar = t.stages, MBARRIER_BYTES
    steps, k0 = _steps(t)
    return _producers(t, "the producers: one thread issues every copy", f"""        if (tid == {t.consumer_threads}) {{
#pragma unroll 1
            for (int kt = 0; kt < {steps}; ++kt) {{
                const int s = kt % {s};
                const unsigned stage = ring + s * {t.tma_stage_bytes};
                if (kt >= {s}) barrier_wait(empty + {bar} * s, ((kt / {s}) + 1) & 1);
                barrier_arrive_expect_tx(full + {bar} * s, {t.tma_stage_bytes});
{_b_panels(t)}
                {_a_copy(t, f"stage + {t.tma_b_bytes}", f"{k0}kt * {TMA_BLOCK_K}", f"full + {bar} * s")};
            }}
        }}""")


def _producers(t: GemmTiling, comment: str, body: str) -> str:
    """The producer warps' branch: (a warpgroup) registers handed to the consumers, `body`, and out
    (split_reduce cluster: once they met the consumers at the cluster sum's two barriers; multicast: at the
    cluster's barrier)."""
    meet = ""
    if t.uses_cluster:
        meet = """
        cluster_sync();  // the splits' partial tiles are in place
        cluster_sync();  // and summed"""
    elif t.multicast > 1:
        meet = """
        cluster_sync();  // the cluster's last arrivals on this block's barriers are in"""
    return f"""
    if (warp >= {t.consumer_threads // 32}) {{  // {comment}
{f"        registers_down<{t.producer_registers}>();" if t.producer_registers else ""}
{body}{meet}
        return;
    }}"""


def _a_copy(t: GemmTiling, dst: str, k: str, bar: str) -> str:
    """The copy of A's box at column `k` to shared `dst`, counting on `bar`: the whole box, or (multicast)
    this block's share of its rows, into the same place in every block of the cluster."""
    if t.multicast == 1:
        return f"tma_load_2d({dst}, &{A_TENSOR_MAP}, {k}, block_row, {bar})"
    rows = t.a_share_rows
    return (f"tma_load_2d_multicast({dst} + rank * {rows * SWIZZLE_ROW_BYTES}, &{A_TENSOR_MAP}, {k}, "
            f"block_row + rank * {rows}, {bar}, {(1 << t.multicast) - 1})")


def _stages_shared(t: GemmTiling) -> bool:
    """multicast tma_rows: the stages hold A's box from every block of the cluster, so all of them release
    them (tma's go through the staging buffers: the stages stay the block's own)."""
    return t.multicast > 1 and not t.a_transposed


def _steps(t: GemmTiling) -> tuple[str, str]:
    """The block's step count and what its K coordinates start from: all K's, a literal (as before
    split K came, so those sources stayed the same), or (split_k > 1) its split's (kernel.k_range)."""
    return (str(t.k_tiles), "") if t.split_k == 1 else ("k_tiles", "k_begin + ")


def _b_panels(t: GemmTiling) -> str:
    """The copies of step kt's B panels into `stage`, counting on its full barrier."""
    return f"""#pragma unroll
                for (int p = 0; p < {t.block_n // TMA_PANEL}; ++p)
                    tma_load_2d(stage + p * {PANEL_BYTES}, &{B_TENSOR_MAP}, block_col + p * {TMA_PANEL}, {_steps(t)[1]}kt * {TMA_BLOCK_K},
                                full + {MBARRIER_BYTES} * s);"""


def _b_read(t: GemmTiling) -> str:
    """The float4 of the lane's 4-column group (j, g) of B at k `kk`, into b[j]: `cols` is the group's
    literal offset from the lane's first column; the chunk table takes its place in the swizzle atom."""
    cols = f"(j * {t.sub_n} + g * {4 * t.lanes_n})"
    return f"""const float4 v = *reinterpret_cast<const float4*>(
                            stage + b_at[(({cols} / 4) & 7) ^ (kk & 7)] + {cols} / {TMA_PANEL} * {PANEL_BYTES}
                            + kk * {SWIZZLE_ROW_BYTES});
                        b[j][g * 4] = v.x; b[j][g * 4 + 1] = v.y; b[j][g * 4 + 2] = v.z; b[j][g * 4 + 3] = v.w;"""


def _outer_product(t: GemmTiling, a: str) -> str:
    """acc += a x b over the lane's register tile, `a` the expression of A's value for (i, x)."""
    return f"""#pragma unroll
                for (int i = 0; i < {t.iter_m}; ++i)
#pragma unroll
                    for (int j = 0; j < {t.iter_n}; ++j)
#pragma unroll
                        for (int x = 0; x < {t.thread_m}; ++x)
#pragma unroll
                            for (int y = 0; y < {t.thread_n}; ++y)
                                acc[i][j][x][y] = fmaf({a}, b[j][y], acc[i][j][x][y]);"""


def _compute(t: GemmTiling) -> str:
    """One stage (tma): per k, the lane's A rows (float4s of the transposed tile) and B columns,
    then the outer product."""
    if not t.a_transposed:
        return _compute_rows(t)
    fa = min(t.thread_m, 4)
    ta = VECTOR_TYPE[fa]
    parts = " ".join(f"a[i][x + {e}] = v{'.' + 'xyzw'[e] if fa > 1 else ''};" for e in range(fa))
    return f"""
#pragma unroll
        for (int kk = 0; kk < {TMA_BLOCK_K}; ++kk) {{
            float a[{t.iter_m}][{t.thread_m}], b[{t.iter_n}][{t.thread_n}];
#pragma unroll
            for (int i = 0; i < {t.iter_m}; ++i)
#pragma unroll
                for (int x = 0; x < {t.thread_m}; x += {fa}) {{
                    const {ta} v = *reinterpret_cast<const {ta}*>(at + kk * {t.block_m} + a_row0 + i * {t.sub_m} + x);
                    {parts}
                }}
#pragma unroll
            for (int j = 0; j < {t.iter_n}; ++j)
#pragma unroll
                for (int g = 0; g < {t.thread_n // 4}; ++g) {{
                        {_b_read(t)}
                }}
{_outer_product(t, "a[i][x]")}
        }}"""


def _compute_rows(t: GemmTiling) -> str:
    """One stage (tma_rows): per 16-byte chunk of A's rows (4 k), the lane's A rows, then per k its
    B columns and the outer product. `rows` is a row's literal offset from the lane's first; the
    chunk table takes its place in the swizzle atom."""
    rows = f"(i * {t.sub_m} + x * {t.lanes_m})"
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
                    for (int g = 0; g < {t.thread_n // 4}; ++g) {{
                        {_b_read(t)}
                    }}
{_outer_product(t, "a[i][x][q]")}
            }}
        }}"""


def _consumers(t: GemmTiling) -> str:
    s = t.stages
    rows = "consecutive" if t.a_transposed else "lanes_m apart"
    a_table = "" if t.a_transposed else f"""
        a_at[v] = {t.tma_b_bytes} + a_row0 * {SWIZZLE_ROW_BYTES} + ((v ^ (lane_m & 7)) << 4);"""
    return f"""{f"{chr(10)}    registers_up<{t.consumer_registers}>();" if t.producer_registers else ""}
    const int lane_m = lane / {t.lanes_n}, lane_n = lane % {t.lanes_n};
    // This lane's first row (within the block) of A's tile, its rows {rows}, and first
    // column of B's, its 4-column groups 4 * lanes_n apart.
    const int a_row0 = (warp / {t.warps_n}) * {t.warp_m} + lane_m{f" * {t.thread_m}" if t.a_transposed else ""};
    const int b_col0 = (warp % {t.warps_n}) * {t.warp_n} + lane_n * 4;
    // Byte offsets within a stage of this lane's first B column's{"" if t.a_transposed else " (and A row's)"} chunk whose
    // place in the swizzle atom, XORed with the lane's own, is v.
    unsigned b_at[{CHUNKS}]{"" if t.a_transposed else f", a_at[{CHUNKS}]"};
#pragma unroll
    for (int v = 0; v < {CHUNKS}; ++v) {{
        b_at[v] = (b_col0 / {TMA_PANEL}) * {PANEL_BYTES} + ((v ^ (lane_n & 7)) << 4);{a_table}
    }}
{zeroed_accumulators(t)}
#pragma unroll 1
    for (int kt = 0; kt < {_steps(t)[0]}; ++kt) {{
        const int s = kt % {s};
        barrier_wait(full + {MBARRIER_BYTES} * s, (kt / {s}) & 1);
        const unsigned char* stage = stages + s * {t.tma_stage_bytes};
{f"        const float* at = reinterpret_cast<const float*>(stage + {t.tma_b_bytes});{chr(10)}" if t.a_transposed else ""}{_compute(t)}
        // The step before's stage is free: every load of it fed an FFMA the warp issued before this step
        // began. (Its own stage is not yet: a load issued is not a load done, and an arrival right after
        // the reads let a copy overwrite a stage still being read: wrong products at 4096³, 8325360.)
        __syncwarp();
        if (kt > 0 && lane == 0) {_release(t, f"empty + {MBARRIER_BYTES} * ((kt - 1) % {s})")}
    }}{_consumers_leave(t)}"""


def _release(t: GemmTiling, bar: str) -> str:
    """A consumer warp's release of a stage: to its block's producer, or every block's (multicast tma_rows)."""
    return arrive_in_every_block(bar, t.multicast) if _stages_shared(t) else f"barrier_arrive({bar});"


def _consumers_leave(t: GemmTiling) -> str:
    """multicast: the consumers meet the cluster's barrier (its blocks' last arrivals on one another's
    barriers are in) before the epilogue; a block past N's last tile leaves there."""
    if t.multicast == 1:
        return ""
    past = (f"\n    if (block_col >= {t.n}) return;  // past N's last tile: it loaded its share of A for the cluster"
            if t.grid[0] > t.tiles_n else "")
    return f"\n    cluster_sync();  // no block leaves while another may still arrive on its barriers{past}"


def _cluster_dims(t: GemmTiling) -> str:
    """A cluster of a tile's splits (split_reduce cluster), or of tile columns (multicast), or none."""
    if t.uses_cluster:
        return f" __cluster_dims__(1, 1, {t.split_k})"
    return f" __cluster_dims__({t.multicast}, 1, 1)" if t.multicast > 1 else ""


def _freed_init(t: GemmTiling) -> str:
    """multicast tma: the staging buffers' `freed`, one arrival from each block of the cluster."""
    if t.tma_staging_barriers == 2:
        return ""
    return f"""
        barrier_init(freed, {t.multicast});
        barrier_init(freed + {MBARRIER_BYTES}, {t.multicast});"""


def generate(t: GemmTiling) -> KernelSource:
    """The kernel for one loader tma or tma_rows config; the tiling must be one the template's rules accept."""
    reason = t.why_not_tiled()
    if reason:
        raise ValueError(reason)
    s = t.stages
    code = f"""{ARCH_SPECIFIC_MARK}
// gemm fp32 row-major: C[{t.m}, {t.n}] = A[{t.m}, {t.k}] . B[{t.k}, {t.n}]
// block {t.block_m}x{t.block_n}x{t.block_k} warp {t.warp_m}x{t.warp_n} lanes {t.lanes_m}x{t.lanes_n}
// thread {t.thread_m}x{t.thread_n} (x {t.iter_m}x{t.iter_n}), B's columns interleaved
// loader {t.loader}: {t.producer_threads} producer threads, {s} stages of {t.tma_stage_bytes} bytes{", A transposed by them" if t.a_transposed else ""}{f", A's box multicast over {t.multicast} tile columns" if t.multicast > 1 else ""}
#ifdef __CUDA_ARCH__
{SHARED_ADDRESS}{MBARRIERS}{REGISTER_MOVES}{PRODUCER_HELPERS}{CONSUMER_HELPERS if t.split_k > 1 else ""}{LOAD_SHARED_CLUSTER4 if t.uses_cluster else ""}#endif
{TMA_HELPERS}{TENSOR_MAP_DECLARATIONS}
extern "C" __global__ void __launch_bounds__({t.threads}, 1){_cluster_dims(t)}
{ENTRY}(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
        float* __restrict__ workspace, int* __restrict__ counters)
{{
    extern __shared__ __align__(1024) unsigned char smem[];
    // The swizzle permutes within 1024-byte atoms: the ring starts on one, the barriers follow it.
    const unsigned base = shared_address(smem);
    const unsigned ring = (base + {SWIZZLE_ATOM_BYTES - 1}u) & ~{SWIZZLE_ATOM_BYTES - 1}u;
    // The ring's stages (B's panels, then A), (tma) A's two staging buffers, the barriers.
    const unsigned staging = ring + {s * t.tma_stage_bytes}, full = staging + {t.tma_staging_bytes};
    const unsigned empty = full + {MBARRIER_BYTES * s}, landed = empty + {MBARRIER_BYTES * s}{f", freed = landed + {2 * MBARRIER_BYTES}" if t.tma_staging_barriers > 2 else ""};
    unsigned char* stages = smem + (ring - base);
    const unsigned char* staging_rows = stages + {s * t.tma_stage_bytes};
    (void)staging; (void)staging_rows; (void)landed;  // tma_rows stages nothing
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int block_row = blockIdx.y * {t.block_m}, block_col = blockIdx.x * {t.block_n};
{f"    const int rank = blockIdx.x % {t.multicast};  // in the cluster: which share of A's box this block copies{chr(10)}" if t.multicast > 1 else ""}{k_range(t) + chr(10) if t.split_k > 1 else ""}    if (tid == 0) {{
#pragma unroll
        for (int s = 0; s < {s}; ++s) {{
            barrier_init(full + {MBARRIER_BYTES} * s, {t.producer_threads if t.a_transposed else 1});
            barrier_init(empty + {MBARRIER_BYTES} * s, {t.consumer_threads // 32 * (t.multicast if _stages_shared(t) else 1)});
        }}
        barrier_init(landed, 1);
        barrier_init(landed + {MBARRIER_BYTES}, 1);{_freed_init(t)}
        barrier_init_fence();
    }}
    {"cluster_sync();  // every block's barriers are set before another copies or arrives into it" if t.multicast > 1 else "__syncthreads();"}
{_producer(t)}
{_consumers(t)}
{epilogue(t, f"stages + {t.tma_flag_offset}", f"consumers_sync({t.consumer_threads});")}
}}
"""
    return kernel_source(t, code, tensor_maps=tensor_maps(t))
