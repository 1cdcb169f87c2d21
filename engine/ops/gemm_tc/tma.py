"""The wgmma mainloop's TMA schedule (`loader` tma, engine.ops.gemm_tc.wgmma), from a GemmTcTiling.

* Warpgroup 0 is the producer: it keeps 40 registers (`setmaxnreg`; each of 2 consumers then
  gets 232) and one of its threads issues each stage's copies to the tensor memory accelerator,
  (the GEMM's) `cp.async.bulk.tensor.2d` boxes of 128-byte rows (A one box of block_m rows, or of M's where a
  tile is taller than M, B one of 64 rows per 64-column panel) that land in the layout the wgmma descriptors read (the tensor map's
  128B swizzle is the same permutation of the address) and zero past the matrix's edges.
  `full[s]` expects the stage's bytes (`arrive.expect_tx`, one arrival) and completes when they
  landed; `empty[s]` completes once every consumer warp released the stage (one arrival per warp:
  a warp's `wait_group` retired its reads). The tensor maps are `__constant__` symbols the runner
  encodes for the task's arrays at load time (engine.gpu.tensor_map).
* `cluster` 2: the blocks of a thread block cluster take neighbouring tile rows of one tile
  column, so B's tile is the same for both; block `rank` loads its half of B's panels and
  multicasts them into both blocks' stages (each block's `full[s]` counts its own A and both
  halves of B), so a stage is free only once the consumers of every block released it: they
  arrive on each block's `empty[s]`. Barriers are initialised before any block multicasts or
  arrives remotely, and no block leaves while another still may (`cluster_sync`).
* `persistent` 1: PERSISTENT_BLOCKS blocks walk the tiles (a cluster's blocks the same ones),
  the stage ring and its barrier phases running on from tile to tile, so the producer loads a
  tile's first stages while the consumers still store the last one. Otherwise one tile a block.
* `pingpong` 1 (persistent, 2 consumers): each consumer computes whole tiles, the two taking
  the block's tiles in turn; the stage ring is filled in tile order, so one consumer's mainloop
  runs while the other stores its last tile (CUTLASS's ping-pong), and a stage is released by
  the one warpgroup that read it. The consumers' mainloops take turns by named barriers (as tf32's
  `turns` do its stages): a consumer waits on a stage's full barrier only once the other consumer
  consumed every step before its own, because an mbarrier's parity tells apart only its current
  and last phase (a consumer a tile ahead would pass a wait for a phase not yet begun).
* `stream_k` 1 (persistent, cluster 1): the blocks take even shares of all tiles' K steps in tile
  order (stream-K), so a share may start or end within a tile; a tile's later pieces leave fp32
  partials in global memory for the block of its first piece to add before it stores (_stream_sum).
  `stream_k` S > 1: the same with S blocks a tile, each its tile's S-th share (split K without a cluster).
* The producer's copies of a step are the caller's (`StageCopies`): the GEMM's 2-D boxes by default,
  the implicit-GEMM conv's im2col copy of A and box of B (engine.ops.conv2d_tc.kernel).
* `l2_hint` stream_b: the GEMM's copies carry L2 eviction priorities as cache hints, B's boxes
  evict-first and A's evict-last (two policies the producer makes once a tile: `gemm_stage_copies`).
* `split_k` > 1 (cluster 1, persistent 0): the grid's z is the split, the splits of a tile one
  cluster; each block's producer loads its share of the K steps (engine.ops.gemm_tc.kernel's
  k_range) and the consumers leave their partial tile for the cluster's sum (wgmma's _split_sum),
  the producer warpgroup meeting them at its two cluster barriers before it leaves.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..base import TensorMap
from ..hopper import A_TENSOR_MAP, B_TENSOR_MAP, arrive_in_every_block
from .kernel import k_range, tile_of_block
from .tiling import SWIZZLE_BYTES, WARPGROUP, GemmTcTiling

def tensor_maps(t: GemmTcTiling) -> tuple[TensorMap, ...]:
    """A's boxes are block_m rows of 64 k (M's rows, where a tile is taller), B's 64 k rows of one
    64-column panel (a block's share of them, b_box_rows)."""
    row = SWIZZLE_BYTES // t.element_bytes
    return (TensorMap(A_TENSOR_MAP, 0, t.m, t.k, t.a_box_rows, row, t.element_bytes),
            TensorMap(B_TENSOR_MAP, 1, t.k, t.n, t.b_box_rows, row, t.element_bytes))


# turns (tf32's two consumers, engine.ops.gemm_tc.wgmma_tf32): consumer 0 issues a stage once
# consumer 1 issued the last (named barrier 2), consumer 1 once consumer 0 issued this one (1).
# Consumer 1's first arrival lets consumer 0 start; consumer 0's last wait takes its last one.
_TURNS_START = "\n    if (consumer == 1) turn_arrive(2);  // consumer 0 goes first"
_TURNS_END = "\n    if (consumer == 0) turn_wait(2);  // consumer 1's last turn, so both barriers end empty"
# pingpong: a consumer gives the turn once it issued its tile's last products (it waits on no full
# barrier after that), before its last wait and its stores, so the other's mainloop runs under them;
# in a round where it has no tile, at once.
_PINGPONG_GIVE = "\n    turn_arrive(consumer == 0 ? 1 : 2);  // the other consumer's mainloop may start"
_PINGPONG_ROUND_END = " else turn_arrive(consumer == 0 ? 1 : 2);\n    }"
# turns and pingpong: named barrier `id` of the two consumer warpgroups (256 threads), waited at or passed.
TURN_HELPERS = r"""
#ifdef __CUDA_ARCH__
__device__ __forceinline__ void turn_wait(unsigned id) { asm volatile("bar.sync %0, 256;\n" :: "r"(id) : "memory"); }
__device__ __forceinline__ void turn_arrive(unsigned id) { asm volatile("bar.arrive %0, 256;\n" :: "r"(id) : "memory"); }
#endif
"""


def _tiles(t: GemmTcTiling) -> str:
    """The loop over this block's tiles (clusters' tiles: a cluster's blocks walk the same);
    stream_k: over its share's pieces of tiles (`it`, the piece's first step of all tiles' steps)."""
    if t.stream_k:
        return "for (int it = share_first; it < share_end; it += k_count)"
    first, stride = _walk(t)
    return f"for (int tile = {first}; tile < {t.tile_blocks // t.cluster}; tile += {stride})"


# stream_k: a share's partial tiles wait in global memory for the block of the tile's first share,
# one slot a block (only a share's first piece of a tile can start past the tile's first step), and
# a flag a block says its slot is written; the tile's first share clears the flags it read, so
# every launch starts with them clear (a module's __device__ memory starts zeroed).
STREAM_PARTIALS, STREAM_FLAGS = "stream_partials", "stream_flags"
STREAM_HELPERS = r"""
#ifdef __CUDA_ARCH__
__device__ __forceinline__ void flag_release(unsigned* flag) {
    asm volatile("st.release.gpu.global.u32 [%0], 1;\n" :: "l"(flag) : "memory");
}
__device__ __forceinline__ void flag_wait(const unsigned* flag) {
    unsigned set;
    do { asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(set) : "l"(flag) : "memory"); } while (!set);
}
// Named barrier 3 of the consumer warpgroups' `count` threads.
__device__ __forceinline__ void consumers_sync(unsigned count) { asm volatile("bar.sync 3, %0;\n" :: "r"(count) : "memory"); }
#endif
"""


def stream_declarations(t: GemmTcTiling) -> str:
    """stream_k: the partial tiles' slots and their flags, one each a block."""
    if not t.stream_k:
        return ""
    return f"""
__device__ float {STREAM_PARTIALS}[{t.stream_blocks * t.block_m * t.block_n}];
__device__ unsigned {STREAM_FLAGS}[{t.stream_blocks}];
"""


def _share_start(t: GemmTcTiling, block: str) -> str:
    """stream_k: the first step of block `block`'s share, block * steps / blocks (in 64 bits: the
    product passes 2^31 on large layers)."""
    return f"(int)((long long)({block}) * {t.stream_steps} / {t.stream_blocks})"


def _stream_share(t: GemmTcTiling) -> str:
    """stream_k: this block's share of the stream_steps steps."""
    if not t.stream_k:
        return ""
    return f"""    const int share_first = {_share_start(t, "blockIdx.x")}, share_end = {_share_start(t, "blockIdx.x + 1")};
    int k_first = 0, k_count = 0;
"""


def _stream_sum(t: GemmTcTiling, store: str) -> str:
    """stream_k, after a piece's products: a piece past the tile's first step leaves its partial in
    its block's slot and sets its flag; the tile's first piece (a share's last), where others follow,
    waits for each later block whose share starts within the tile, adds its slot, and stores the
    tile with `store`. The first piece waits, not the last: it comes at the end of its block's
    share and the later pieces at the start of theirs, so its wait is short (the GPU holds every
    block at once: why_tiling_invalid's rule)."""
    tiles, per_tile = t.accumulator_tiles
    threads = t.consumers * WARPGROUP
    slot = t.block_m * t.block_n
    each = f"""#pragma unroll
        for (int mt = 0; mt < {tiles}; ++mt)
#pragma unroll
            for (int i = 0; i < {per_tile}; ++i)"""
    return f"""
    const int ctid = tid - {WARPGROUP};
    if (k_first > 0) {{  // a later piece of the tile: its partial, for the block of the tile's first piece
        float* slot = {STREAM_PARTIALS} + (size_t)blockIdx.x * {slot};
        {each} __stcg(slot + (mt * {per_tile} + i) * {threads} + ctid, acc[mt][i]);
        __threadfence();  // each writer's partial at GPU scope before the barrier, as CUTLASS's fixup does
        consumers_sync({threads});
        if (ctid == 0) flag_release({STREAM_FLAGS} + blockIdx.x);
    }} else if (k_count < {t.k_tiles}) {{  // the tile's first piece: the later pieces' partials
        int later = blockIdx.x + 1;
        for (; later < {t.stream_blocks} && {_share_start(t, "later")} < it + {t.k_tiles}; ++later) {{
            flag_wait({STREAM_FLAGS} + later);
            const float* slot = {STREAM_PARTIALS} + (size_t)later * {slot};
            {each} acc[mt][i] += __ldcg(slot + (mt * {per_tile} + i) * {threads} + ctid);
        }}
        consumers_sync({threads});  // every consumer read them: clear their flags for the next launch
        if (ctid == 0) for (int b = blockIdx.x + 1; b < later; ++b) {STREAM_FLAGS}[b] = 0;
    }}
    if (k_first == 0) {{{store}
    }}"""


def _walk(t: GemmTcTiling) -> tuple[str, str]:
    """This block's first tile (its cluster's) and the stride between its tiles."""
    if t.cluster == 1:
        return "blockIdx.x", "gridDim.x"
    return f"blockIdx.x / {t.cluster}", f"gridDim.x / {t.cluster}"


def _pingpong_rounds(t: GemmTcTiling) -> str:
    """pingpong: rounds of two of the block's tiles, the first consumer's then the second's; each
    consumer's steps in the ring follow from the round. The loop's body opens with the turn."""
    first, stride = _walk(t)
    return f"""for (int round = 0, pair = {first}; pair < {t.tile_blocks // t.cluster}; ++round, pair += 2 * ({stride})) {{
    const int tile = pair + consumer * ({stride});
    step = (2 * round + consumer) * {t.k_tiles};
    turn_wait(consumer == 0 ? 2 : 1);  // the other consumer's mainloop is done (its turn passed)
    if (tile < {t.tile_blocks // t.cluster}) """


def _tile_origin(t: GemmTcTiling) -> str:
    piece = (f"""    const int tile = it / {t.k_tiles};
    k_first = it % {t.k_tiles}, k_count = min({t.k_tiles} - k_first, share_end - it);
""" if t.stream_k else "")
    return f"""{piece}{tile_of_block(t, "tile")}
    const int row0 = tile_m * {t.block_m}, col0 = tile_n * {t.block_n};"""


def _steps(t: GemmTcTiling) -> tuple[str, str]:
    """The block's step count and the K step of its step `kt`: all of them, or (split_k > 1)
    its split's share (k_range), or (stream_k) the piece's; split_k 1 keeps the count a literal,
    as before split_k came."""
    return (str(t.k_tiles), "kt") if t.split_k == 1 and not t.stream_k else ("k_count", "(k_first + kt)")


def load_b(t: GemmTcTiling, address: str, box: str) -> str:
    """The copy of one of B's boxes (`box`: the map, its coordinates, the barrier) to shared
    `address`: with clusters that share B, multicast into every block of the cluster; with l2_hint,
    under B's L2 policy."""
    hinted, policy = ("_hinted", ", b_policy") if t.hinted else ("", "")
    if t.b_sharers > 1:
        return f"tma_load_2d_multicast{hinted}({address}, {box}, {(1 << t.cluster) - 1}{policy})"
    return f"tma_load_2d{hinted}({address}, {box}{policy})"


def cluster_rank(t: GemmTcTiling, rank: str) -> str:
    """The rank in the kernel's cluster of the block at tile rank `rank` of this block's (its blocks of one
    split: with split K over the cluster too, the splits are its z, `cluster` ranks apart)."""
    return f"{rank} + {t.cluster} * blockIdx.z" if t.split_k > 1 else rank


def a_share_mask(t: GemmTcTiling) -> str:
    """Sharing A: the cluster ranks a block's share of A lands in, its split's blocks (with split K the
    splits are the cluster's z, `cluster` ranks apart)."""
    blocks = (1 << t.cluster) - 1
    return str(blocks) if t.split_k == 1 else f"{blocks} << ({t.cluster} * blockIdx.z)"


def load_a_share(t: GemmTcTiling, stage: str, k: str, row0: str) -> str:
    """The copy of A's box at column `k`, tile row `row0`, into `stage`, counting on `bar`: the whole box, or
    (sharing A) this block's share of its rows, multicast into the blocks of its split (l2_hint: A's policy)."""
    hinted, policy = ("_hinted", ", a_policy") if t.hinted else ("", "")
    if not t.shares_a:
        return f"tma_load_2d{hinted}({stage}, &{A_TENSOR_MAP}, {k}, {row0}, bar{policy})"
    rows = t.a_box_rows
    return (f"tma_load_2d_multicast{hinted}({stage} + rank * {rows * SWIZZLE_BYTES}, &{A_TENSOR_MAP}, {k}, "
            f"{row0} + rank * {rows}, bar, {a_share_mask(t)}{policy})")


def gemm_copies(t: GemmTcTiling, k_step: str) -> str:
    """The GEMM's copies of K step `k_step` into `stage`, counting on `bar`: A's box, then this
    block's B panels (with clusters, its share; a cluster of more blocks than panels, its rows of them)."""
    panel_bytes = t.block_k * SWIZZLE_BYTES
    load_a = load_a_share(t, "stage", f"{k_step} * {t.block_k}", "row0")
    columns = SWIZZLE_BYTES // t.element_bytes
    if t.b_box_rows < t.block_k:  # piece p: rows (p % parts) of panel p / parts
        parts = t.block_k // t.b_box_rows
        share = t.b_panels * parts // t.cluster
        b_address = (f"stage + {t.block_m * SWIZZLE_BYTES} + (p / {parts}) * {panel_bytes} "
                     f"+ (p % {parts}) * {t.b_box_rows * SWIZZLE_BYTES}")
        b_box = (f"&{B_TENSOR_MAP}, col0 + (p / {parts}) * {columns}, "
                 f"{k_step} * {t.block_k} + (p % {parts}) * {t.b_box_rows}, bar")
    else:
        share = t.b_panels // t.b_sharers
        b_address = f"stage + {t.block_m * SWIZZLE_BYTES} + p * {panel_bytes}"
        b_box = f"&{B_TENSOR_MAP}, col0 + p * {columns}, {k_step} * {t.block_k}, bar"
    first = f"rank * {share} + " if t.b_sharers > 1 else ""
    return f"""                    {load_a};
#pragma unroll
                    for (int p = {first}0; p < {first}{share}; ++p) {load_b(t, b_address, b_box)};"""


# l2_hint stream_b: the producer's two L2 policies (engine.ops.hopper.L2_HINTED_COPIES), among its lines
# at each tile's start because that is where a StageCopies puts them (createpolicy is one instruction).
_STREAM_B_POLICIES = """
                const unsigned long long a_policy = l2_evict_last(), b_policy = l2_evict_first();"""


@dataclass(frozen=True)
class StageCopies:
    """What the producer thread issues: `tile`, lines once per tile (after row0 and col0), and
    `step(t, k_step)`, the copies of K step `k_step` into shared address `stage` that complete
    on barrier `bar` (the GEMM's: gemm_copies; the implicit-GEMM conv gathers A by im2col)."""
    step: Callable[[GemmTcTiling, str], str] = gemm_copies
    tile: str = ""


def gemm_stage_copies(t: GemmTcTiling) -> StageCopies:
    """The GEMM's copies, with l2_hint's policies made at each tile's start."""
    return StageCopies(gemm_copies, _STREAM_B_POLICIES if t.hinted else "")


def _producer(t: GemmTcTiling, copies: StageCopies) -> str:
    """One thread fills step `step`'s buffer once the step `stages` before it was released."""
    s, stage_bytes = t.stages, t.wgmma_stage_bytes
    count, k_step = _steps(t)
    return f"""
        if (tid == 0) {{
            int step = 0;
#pragma unroll 1
            {_tiles(t)} {{
{_tile_origin(t)}{copies.tile}
#pragma unroll 1
                for (int kt = 0; kt < {count}; ++kt, ++step) {{
                    const int s = step % {s};
                    const unsigned stage = ring + s * {stage_bytes}, bar = full + 8 * s;
                    if (step >= {s}) barrier_wait(empty + 8 * s, ((step / {s}) + 1) & 1);
                    barrier_arrive_expect_tx(bar, {t.tma_stage_bytes});
{copies.step(t, k_step)}
                }}
            }}
        }}"""


def _release(t: GemmTcTiling, step: str) -> str:
    """A consumer warp gives step `step`'s buffer back to every producer that writes it."""
    bar = f"empty + 8 * (({step}) % {t.stages})"
    if t.cluster == 1:
        return f"if ((tid & 31) == 0) barrier_arrive({bar});"
    return f"if ((tid & 31) == 0) {arrive_in_every_block(bar, t.cluster, cluster_rank(t, 'r'))}"


def mainloop(t: GemmTcTiling, store: str, copies: StageCopies) -> str:
    """The kernel's body after its shared memory and thread indexes: barriers, the producer (its
    copies `copies`: the GEMM's are `gemm_stage_copies(t)`) and the consumers, each consumer storing
    its rows of every tile with `store`."""
    s, stage_bytes, pending = t.stages, t.wgmma_stage_bytes, t.wgmma_pending
    count, _ = _steps(t)
    tiles, per_tile = t.accumulator_tiles
    start = "cluster_sync();  // every block's barriers are initialised" if t.cluster > 1 else "__syncthreads();"
    # (with split K, the sum's last cluster barrier comes after every block's last arrival and copy)
    leave = "\n    cluster_sync();  // the other blocks may still multicast into this one or arrive on its barriers" \
        if t.cluster > 1 and t.split_k == 1 else ""
    # split_k > 1: the producers meet the consumers at the split-K sum's two cluster barriers
    producer_leave = ("\n    cluster_sync();  // the splits' partial tiles are in place\n    cluster_sync();  // and summed"
                      if t.split_k > 1 else leave)
    last_release = (f"\n        {_release(t, 'step - 1')}  // the tile's last stage: its group retired"
                    if pending else "")
    return f"""
{k_range(t)}{_stream_share(t)}    if (tid == 0) {{
#pragma unroll
        for (int s = 0; s < {s}; ++s) {{
            barrier_init(full + 8 * s, 1);
            barrier_init(empty + 8 * s, {t.cluster * t.stage_consumers * WARPGROUP // 32});
        }}
        barrier_init_fence();
    }}
    {start}
    if (warpgroup == 0) {{
{f"        registers_down<{t.producer_registers}>();" if t.producer_registers else ""}{_producer(t, copies)}{producer_leave.replace(chr(10), chr(10) + "    ")}
        return;
    }}
{f"    registers_up<{t.consumer_registers}>();" if t.consumer_registers else ""}
    const int consumer = warpgroup - 1;
    int step = 0;{_TURNS_START if t.takes_turns else ""}
#pragma unroll 1
    {_pingpong_rounds(t) if t.pingpong else _tiles(t)} {{
{_tile_origin(t)}
    float acc[{tiles}][{per_tile}];
#pragma unroll
    for (int mt = 0; mt < {tiles}; ++mt)
#pragma unroll
        for (int i = 0; i < {per_tile}; ++i) acc[mt][i] = 0.0f;
#pragma unroll 1
    for (int kt = 0; kt < {count}; ++kt, ++step) {{
        const int s = step % {s};
        barrier_wait(full + 8 * s, (step / {s}) & 1);
        __syncwarp();  // the warp leaves the spin loop together: wgmma is .sync.aligned
        compute_stage(acc, ring + s * {stage_bytes}, consumer);
        {f"if (kt >= {pending}) " if pending else ""}{_release(t, f"step - {pending}")}
    }}{_PINGPONG_GIVE if t.pingpong else ""}
    wgmma_wait<0>();{last_release}
{_stream_sum(t, store) if t.stream_k else store}
    }}{_PINGPONG_ROUND_END if t.pingpong else ""}{_TURNS_END if t.takes_turns else ""}{leave}"""
