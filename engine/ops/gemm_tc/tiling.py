"""Tensor-core GEMM (sm_80 and newer), row-major: C[M, N] = A[M, K] · B[K, N], fp32 accumulation.

The workload (its args, precision and C's dtype) is engine.ops.gemm_tc.workload's.

The schedule (CUTLASS's multistage mma.sync GEMM, written afresh):

* A block computes a `block_m × block_n` tile of C (the grid is 1-D; `raster` groups that
  many rows of tiles so neighbouring blocks share B's columns in L2: Triton's grouped order).
* Each step stages A's `block_m × block_k` and B's `block_k × block_n` tile in shared memory
  with 16-byte `cp.async` copies, `stages` steps in flight (a ring of 2 to 4 buffers). Rows
  are padded (`A_PAD_BYTES`, `B_PAD_ELEMENTS`), so `ldmatrix`'s eight row reads and the TF32
  fragment reads hit eight different bank groups (no conflicts).
* The block's warps stand `block_m / warp_m` × `block_n / warp_n` × `warps_k`; a warp owns a
  `warp_m × warp_n` tile of `mma.sync` m16n8k16 (fp16, bf16: fragments by `ldmatrix`, B's
  transposed by `.trans`) or m16n8k8 (tf32: fragments read as words and rounded to TF32 by
  `cvt.rna`). `warps_k` > 1 ("sliced K") cuts each step's K among that many warp groups, whose
  accumulators meet in shared memory at the end, summed in group order: a skinny shape (an
  LLM decode step, M = 16) gets more warps per output tile, so more loads in flight.
* `split_k` > 1 (sm_90 clusters; on wgmma with the tma loader) cuts a tile's K steps over that many blocks of one
  thread block cluster (grid z, the rank): each leaves its warp groups' partial tiles in its
  shared memory, and after the cluster barrier each sums its share of the tile over the
  cluster's blocks (split, then warp group order) straight into C: C is written once, no
  workspace, no atomics. A decode step (M = 16: 128 tiles of 16x32) then streams B from
  every SM. Only for shapes of few tiles (`SPLIT_K_MAX_TILES`).
* Tails: M, N and K need not be multiples of the tiles (copies past an edge are zero-filled,
  stores past an edge skipped); a 16-byte copy must not straddle a row's end, so K and N
  must be multiples of 8 elements (fp16, bf16) or 4 (tf32): a rule of the workload (its args
  are refused), since no config could run another.

`mainloop` picks the schedule: "mma_sync" (the above; sm_80 and newer) or "wgmma" (Hopper's
warpgroup MMA, sm_90a only: engine.ops.gemm_tc.wgmma says how; tf32's, which computes C's
transpose, engine.ops.gemm_tc.wgmma_tf32). The knobs of one mainloop
stand at their first value in the other's configs (a rule), so each kernel has one config
and the mma_sync configs keep the indexes they had before wgmma came.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ...space import ConfigEntity
from ..gemm.tiling import warp_tile_misfit
from ..base import FLOAT_BYTES, WARPGROUP, LaunchShape
from .workload import COPY_BYTES, ELEMENT_BYTES, TF32_MODE, GemmTcParams

# Per precision the k of one mma instruction.
MMA_K = {"float16": 16, "bfloat16": 16, "tf32": 8}
# Row pads: A's rows by 16 bytes, B's by 8 elements (16 bytes for 16-bit types, 32 for tf32,
# whose fragment reads walk B's rows four at a time): either way the eight rows one fragment
# read touches start in eight different bank groups.
A_PAD_BYTES = 16
B_PAD_ELEMENTS = 8
# Registers a thread needs besides accumulators and fragments: addresses, indexes, loop counters
# (ptxas gives a 64x64 warp tile 222-242 registers, against 128 + 32 + this).
TC_REGISTER_OVERHEAD = 56
MAINLOOPS = ("mma_sync", "wgmma")
# wgmma: one warpgroup (4 warps) issues each instruction; a consumer warpgroup owns a multiple
# of 64 rows (m64 instructions) of the block's tile (tf32: of its columns, engine.ops.gemm_tc.wgmma_tf32);
# K is staged one 128-byte row of the 128B swizzle at a time (64 16-bit elements, 32 tf32);
# the instruction's N is the block's, up to 256 (tf32: its rows). (A warpgroup: engine.ops.base.WARPGROUP.)
WGMMA_M = 64
WGMMA_MAX_N = 256
SWIZZLE_BYTES = 128
WGMMA_BLOCK_K = {precision: SWIZZLE_BYTES // size for precision, size in ELEMENT_BYTES.items()}
# tf32's B^T fragments: 4 words per k8 slice of each 64-column tile, 4 slices a stage.
TF32_FRAGMENT_WORDS = 16
SWIZZLE_ATOM_BYTES = 1024  # 8 rows of 128 bytes: what the swizzle permutes within, its alignment
MBARRIER_BYTES = 8
# Registers a wgmma thread needs besides accumulators: descriptors, addresses, loop counters.
WGMMA_REGISTER_OVERHEAD = 40
# split_k > 1 only where the tiles of C number fewer than this (two waves of an H200's 132 SMs):
# with more, every SM has tiles already, and a split only adds the partial tiles' sum.
SPLIT_K_MAX_TILES = 264
# The register file of an SM (a block of __launch_bounds__(threads, 1) may hold all of it), and
# what a warp-specialised producer thread keeps after setmaxnreg.dec: its unrolled cp.async
# addresses need it (ptxas spills the 128x256 loader below about 96, with tails in M, N and K
# below about 128); 136 leaves each of 2 consumers 184, over the 168 they have without it.
REGISTER_FILE = 65536
PRODUCER_REGISTERS = 136
# wgmma loaders: 16-byte cp.async copies by the loading threads, or TMA (the tensor memory
# accelerator: one thread of the producer warpgroup issues each stage's box copies, which land
# swizzled and complete on the stage's mbarrier). A TMA producer keeps CUTLASS's 40 registers,
# leaving each of 2 consumers 232.
LOADERS = ("cp_async", "tma")
TMA_PRODUCER_REGISTERS = 40
# wgmma with tma: a thread block cluster of this many blocks takes neighbouring tile rows of one
# tile column; B's tile is the same for all of them, so each block loads its share of B's panels
# and the copy engine multicasts it into every block of the cluster (B read once per cluster).
CLUSTERS = (1, 2)
# wgmma tma persistent 1: this many blocks (an H200's SMs, one block each) walk the tiles, so
# each block's producer loads its next tile while its consumers store the last one. The grid
# is the kernel's only tie to it: on another GPU the same kernel runs in more or fewer waves.
PERSISTENT_BLOCKS = 132
# wgmma tma stream_k 1: each persistent block takes an even share of all tiles' K steps, at least
# this many (a share may end or start within a tile: the tile's first share adds the others' partials).
# stream_k S > 1 (CUTLASS's stream-K scheduler in its split-K mode): each tile's K steps in S shares of
# at least this many, one block each, so the blocks start together and step through K in lockstep: the
# j-th shares of one tile row's tiles read the same boxes of A at once, which L2's request coalescer
# serves once (stream_k 1's staggered shares lose that: docs/benchmarks/tensor-core-conv-h200.md).
STREAM_K_MIN_STEPS = 4
STREAM_K_SHARES = (0, 1, 2, 4)  # the stream_k knob's values
# wgmma tma: stages beyond the `stages` knob's 2 to 4 (the `ring` knob), so a decode step's blocks keep
# more of B in flight from HBM; shared memory bounds them (a 64x64 tile's stage is 16 KB: at most 14).
RINGS = (0, 4, 8, 12)
# wgmma tma: the L2 eviction priority the copies ask for. "stream_b" marks B's boxes evict-first and
# A's evict-last: in a decode step B (the weights) is read once and A by every tile column, so B's
# lines should make room before A's or anything else in L2 does.
L2_HINTS = ("normal", "stream_b")
# wgmma tma, 16-bit: swap_ab 1 computes C's transpose, C^T = B^T A^T, as tf32's kernel does: the instruction's
# M (64 rows a time) runs along B's columns and its N (block_m: 16 to 256, the knob's values) along A's rows. A decode step's
# few rows of A then make narrow tiles (block_m 16 or 32) whose stages are mostly B's weights, and a
# cluster of such tile rows reads each of B's boxes once (multicast) where the plain kernel's tile needs 64 rows.
SWAP_AB = (0, 1)
# wgmma tma, cluster 2: what its blocks share by multicast, B's tile (neighbouring tile rows of one tile column)
# or A's (neighbouring tile columns of one tile row: a decode step's one tile row of A, read once a cluster;
# with split K the cluster is columns x splits).
CLUSTER_SHARES = ("b", "a")


@dataclass(frozen=True)
class GemmTcTiling:
    """A config's sizes, and what they imply for one launch (see the module docstring)."""

    m: int
    n: int
    k: int
    precision: str
    block_m: int
    block_n: int
    block_k: int
    warp_m: int
    warp_n: int
    warps_k: int
    stages: int
    raster: int
    mainloop: str = "mma_sync"
    consumers: int = 1  # wgmma: consumer warpgroups
    producer: int = 0  # wgmma: 1 adds a warpgroup that only loads (warp specialisation)
    split_k: int = 1  # a tile's K over this many blocks of one cluster (wgmma: with the tma loader)
    loader: str = "cp_async"  # wgmma: cp_async or tma (LOADERS)
    cluster: int = 1  # wgmma tma: blocks of one cluster, sharing B's tile by multicast (CLUSTERS)
    persistent: int = 0  # wgmma tma: 1 launches PERSISTENT_BLOCKS blocks that walk the tiles
    turns: int = 0  # wgmma tf32, 2 consumers: 1 has them issue each stage's instructions in turn
    pingpong: int = 0  # wgmma 16-bit, tma, persistent, 2 consumers: 1 gives each consumer whole tiles in turn
    c_dtype: str = "float32"  # the workload's: C float32, or in the 16-bit input's precision
    ring: int = 0  # wgmma tma: of `stages`, how many the ring knob added to the stages knob's
    stream_k: int = 0  # wgmma tma persistent: blocks share K steps (1: all tiles' evenly; S > 1: each tile's in S)
    l2_hint: str = "normal"  # wgmma tma: the copies' L2 eviction priorities (L2_HINTS)
    swap_ab: int = 0  # wgmma tma 16-bit: 1 computes C^T = B^T A^T (SWAP_AB)
    cluster_shares: str = "b"  # wgmma tma cluster > 1: the operand its blocks share (CLUSTER_SHARES)

    @property
    def c_16bit(self) -> bool:
        return self.c_dtype != "float32"

    @property
    def c_type(self) -> str:
        """C's element type in the kernel's source (16-bit: the bits, as ELEM holds them)."""
        return "ELEM" if self.c_16bit else "float"

    @property
    def tma(self) -> bool:
        return self.loader == "tma"

    @property
    def hinted(self) -> bool:
        """The TMA copies carry L2 eviction priorities (l2_hint other than normal)."""
        return self.l2_hint != L2_HINTS[0]

    # B staged [k][n] (row-major B); a subclass staging it [n][k] (K-major) says True.
    b_k_major = False
    # The ring knob's deeper rings and wgmma's split K are the GEMM's TMA loader's; a subclass whose
    # cp_async loader takes them too (the conv's gathered A, which came before its TMA loader) says True.
    cp_async_rings = False

    @property
    def partial_bytes(self) -> int:
        """split_k > 1: each warp group's partial tile, in shared memory for the cluster's sum."""
        return self.warps_k * self.block_m * self.block_n * FLOAT_BYTES if self.split_k > 1 else 0

    @property
    def wgmma(self) -> bool:
        return self.mainloop == "wgmma"

    @property
    def wgmma_partial_offset(self) -> int:
        """wgmma: bytes of shared memory before split_k's partial tile (the aligned ring and its
        barriers): the consumers write it while the other consumer's last products may still read the ring."""
        return self.stages * self.wgmma_stage_bytes + SWIZZLE_ATOM_BYTES + 2 * self.stages * MBARRIER_BYTES

    @property
    def takes_turns(self) -> bool:
        """The two consumers take turns by named barriers: tf32's stages (turns), 16-bit tiles (pingpong)."""
        return bool(self.turns or self.pingpong)

    @property
    def transposed(self) -> bool:
        """wgmma computes C's transpose (tf32 always, 16-bit with swap_ab): the consumers share out
        the tile's columns, 64 a time (n_tiles), and the instruction's N is block_m."""
        return self.wgmma and (self.precision == TF32_MODE or bool(self.swap_ab))

    @property
    def consumer_rows(self) -> int:
        """wgmma: rows of the block's tile one consumer warpgroup owns (pingpong or transposed: all of them)."""
        return self.block_m if self.pingpong or self.transposed else self.block_m // self.consumers

    @property
    def consumer_row_offset(self) -> int:
        """wgmma: how far apart the consumers' rows start (pingpong: each has its own tile)."""
        return 0 if self.pingpong else self.consumer_rows

    @property
    def stage_consumers(self) -> int:
        """Consumer warpgroups that read (and release) each stage: one with pingpong, else all."""
        return 1 if self.pingpong else self.consumers

    @property
    def consumer_cols(self) -> int:
        """wgmma transposed: columns of the block's tile one consumer warpgroup owns (all its rows)."""
        return self.block_n // self.consumers

    @property
    def n_tiles(self) -> int:
        """wgmma transposed: m64 instructions (64 columns of C each) per consumer per k slice."""
        return self.consumer_cols // WGMMA_M

    @property
    def m_tiles(self) -> int:
        """wgmma: m64 instructions per consumer per k16 step."""
        return self.consumer_rows // WGMMA_M

    @property
    def wgmma_stage_bytes(self) -> int:
        """One step's A (block_m rows) and B (block_k rows), each row one 128-byte swizzle row."""
        return (self.block_m + self.block_k * self.block_n // (SWIZZLE_BYTES // self.element_bytes)) * SWIZZLE_BYTES

    @property
    def a_box_rows(self) -> int:
        """wgmma tma: rows of A's box. A tile taller than M (a decode step's 16 tokens in 64 rows, one
        tile row) loads M's rows only, rounded up to 8: the stage's rows past them hold whatever they
        held, which reaches only C's rows past M, never stored (a row of C reads only its row of A)."""
        if self.cluster == 1 and self.m < self.block_m:
            return -(-self.m // 8) * 8
        return self.block_m // self.a_sharers

    @property
    def tma_stage_bytes(self) -> int:
        """The bytes a TMA stage's copies bring (its full barrier expects them; sharing A, every block's share)."""
        return self.wgmma_stage_bytes - (self.block_m - self.a_box_rows * self.a_sharers) * SWIZZLE_BYTES

    @property
    def wgmma_pending(self) -> int:
        """wgmma groups a consumer leaves in flight after issuing a step (CUTLASS keeps one):
        its stage is released a step later, so it takes a ring of 3 or more. tf32 keeps none:
        its fragments come from registers, and ptxas serialises every wgmma whose fragments are
        loaded while an earlier group is in flight (C7513)."""
        return 1 if self.stages >= 3 and self.precision != TF32_MODE else 0

    @property
    def accumulator_tiles(self) -> tuple[int, int]:
        """wgmma: a consumer's accumulators, as instructions x registers of each (m64 tiles of its
        rows x block_n / 2; transposed: 64-column tiles of its columns x block_m / 2)."""
        if self.transposed:
            return self.n_tiles, self.block_m // 2
        return self.m_tiles, self.block_n // 2

    @property
    def wgmma_lag(self) -> int:
        """Steps the loads run ahead of the products: the ring less the steps being multiplied."""
        return self.stages - 1 - self.wgmma_pending

    @property
    def launch_registers(self) -> int:
        """Registers per thread __launch_bounds__(threads, 1) allows: a warp's share of the
        register file, allocated 256 (8 a thread) at a time, at most 255."""
        warps = -(-self.threads // 32)
        return min(REGISTER_FILE // (warps * 256) * 8, 255)

    @property
    def producer_registers(self) -> int:
        """wgmma producer 1 with 2 consumers (384 threads, 168 registers each at launch): what
        the loading warpgroup keeps (setmaxnreg.dec); 0 where nothing is moved: one consumer
        has 255 already, and 4 leave too few at launch (ptxas gives 640 threads 88) to share."""
        if not (self.producer and self.consumers == 2):
            return 0
        return TMA_PRODUCER_REGISTERS if self.tma else PRODUCER_REGISTERS

    @property
    def consumer_registers(self) -> int:
        """What each consumer thread gets (setmaxnreg.inc): the block's registers less the
        producer's, shared by the consumers, in steps of 8, at most 248 (so never more than
        the block holds: a larger .inc would wait forever)."""
        if not self.producer_registers:
            return 0
        spare = self.launch_registers * self.threads - self.producer_registers * WARPGROUP
        return min(spare // (self.consumers * WARPGROUP) // 8 * 8, 248)

    @property
    def loaders(self) -> int:
        """wgmma: threads issuing the copies (the producer warpgroup, or every consumer)."""
        return WARPGROUP if self.producer else self.consumers * WARPGROUP

    @property
    def warp_tile(self) -> tuple[int, int]:
        """The C tile one warp (mma_sync) or one consumer warpgroup (wgmma) computes."""
        if not self.wgmma:
            return (self.warp_m, self.warp_n)
        return (self.block_m, self.consumer_cols) if self.transposed else (self.consumer_rows, self.block_n)

    @property
    def element_bytes(self) -> int:
        return ELEMENT_BYTES[self.precision]

    @property
    def mma_k(self) -> int:
        return MMA_K[self.precision]

    @property
    def copy_elements(self) -> int:
        """Elements of one 16-byte cp.async copy."""
        return COPY_BYTES // self.element_bytes


    @property
    def warps_m(self) -> int:
        return self.block_m // self.warp_m

    @property
    def warps_n(self) -> int:
        return self.block_n // self.warp_n

    @property
    def threads(self) -> int:
        if self.wgmma:
            return (self.consumers + self.producer) * WARPGROUP
        return self.warps_m * self.warps_n * self.warps_k * 32

    @property
    def frags_m(self) -> int:
        """m16 fragments of a warp tile's rows."""
        return self.warp_m // 16

    @property
    def frags_n(self) -> int:
        """n8 fragments of a warp tile's columns."""
        return self.warp_n // 8

    @property
    def slice_k(self) -> int:
        """K of each step one warp group computes."""
        return self.block_k // self.warps_k

    @property
    def a_stride(self) -> int:
        """Elements per row of A's staged tile (block_k plus the pad)."""
        return self.block_k + A_PAD_BYTES // self.element_bytes

    @property
    def b_stride(self) -> int:
        return self.block_n + B_PAD_ELEMENTS

    @property
    def stage_elements(self) -> int:
        return self.block_m * self.a_stride + self.block_k * self.b_stride

    @property
    def accumulators(self) -> int:
        if self.wgmma:
            return math.prod(self.warp_tile) // WARPGROUP
        return self.frags_m * self.frags_n * 4

    @property
    def exchange_bytes(self) -> int:
        """Shared memory the warp groups other than the first leave their accumulators in."""
        return (self.warps_k - 1) * self.warps_m * self.warps_n * 32 * self.accumulators * FLOAT_BYTES

    @property
    def shared_bytes(self) -> int:
        if self.wgmma:  # the ring, slack to align it to a swizzle atom, a full and an empty barrier per stage
            # and (tma) split_k's partial tile after them; cp_async's lies in the ring
            return self.wgmma_partial_offset + (self.partial_bytes if self.tma else 0)
        return max(self.stages * self.stage_elements * self.element_bytes, self.exchange_bytes, self.partial_bytes)

    @property
    def tiles_m(self) -> int:
        return -(-self.m // self.block_m)

    @property
    def tiles_n(self) -> int:
        return -(-self.n // self.block_n)

    @property
    def cluster_rows(self) -> int:
        """Rows of clusters (of the tile rows that share B) over C: the rows `raster` groups."""
        return -(-self.tiles_m // self.b_sharers)

    @property
    def cluster_cols(self) -> int:
        """Columns of clusters (of the tile columns that share A) over C."""
        return -(-self.tiles_n // self.a_sharers)

    @property
    def a_sharers(self) -> int:
        """Blocks that share A's tile, each copying its share of the rows into all of them: the cluster's
        when it shares A (neighbouring tile columns), else 1."""
        return self.cluster if self.shares_a else 1

    @property
    def b_sharers(self) -> int:
        """Blocks that share B's tile, each copying its share into all of them: the cluster's unless it
        shares A (neighbouring tile rows), else 1."""
        return 1 if self.shares_a else self.cluster

    @property
    def shares_a(self) -> bool:
        """A cluster's blocks take neighbouring tile columns of one tile row and share A's tile
        (cluster_shares "a"; the GEMM's clusters share B, on neighbouring tile rows)."""
        return self.cluster > 1 and self.cluster_shares == "a"

    @property
    def b_panels(self) -> int:
        """wgmma: B's 64-column (128-byte) panels of one stage."""
        return self.block_n // (SWIZZLE_BYTES // self.element_bytes)

    @property
    def b_box_rows(self) -> int:
        """wgmma tma: k rows of one of B's boxes: a panel's block_k, or (a cluster of more blocks than a
        stage has panels: a swap_ab tile of one panel) the rows of each block's share of the panel (sharing A,
        each block loads all of its own)."""
        return self.block_k // max(1, self.b_sharers // self.b_panels)

    @property
    def k_tiles(self) -> int:
        return -(-self.k // self.block_k)

    @property
    def tile_grid(self) -> tuple[int, int]:
        """The tile rows and columns the blocks take: whole clusters, so a cluster's last rows may lie
        past M (sharing A, its last columns past N)."""
        return self.cluster_rows * self.b_sharers, self.cluster_cols * self.a_sharers

    @property
    def tile_blocks(self) -> int:
        """Blocks of one per tile."""
        rows, cols = self.tile_grid
        return rows * cols

    @property
    def stream_steps(self) -> int:
        """stream_k: the steps the blocks share, every tile's K steps in tile order."""
        return self.tile_blocks * self.k_tiles

    @property
    def stream_blocks(self) -> int:
        """stream_k 1: PERSISTENT_BLOCKS blocks, fewer where they would have under STREAM_K_MIN_STEPS each;
        stream_k S > 1: S blocks a tile (block b's share, b * stream_steps / stream_blocks on, is then its
        tile's S-th part)."""
        if self.stream_k > 1:
            return self.tile_blocks * self.stream_k
        return min(PERSISTENT_BLOCKS, self.stream_steps // STREAM_K_MIN_STEPS)

    @property
    def grid(self) -> tuple[int, int, int]:
        """One block per tile, times split_k; persistent: at most PERSISTENT_BLOCKS (whole clusters);
        stream_k: stream_blocks."""
        if self.stream_k:
            return (self.stream_blocks, 1, 1)
        if self.persistent:
            return (min(self.tile_blocks, PERSISTENT_BLOCKS // self.cluster * self.cluster), 1, 1)
        return (self.tile_blocks, 1, self.split_k)

    @property
    def registers(self) -> int:
        """Accumulators, one k-step's fragments (A: 4 words per m16, B: 2 per n8), plus overhead
        (wgmma reads both operands from shared memory: accumulators and overhead only)."""
        if self.precision == TF32_MODE and self.wgmma:
            if not self.producer_registers:
                return self.consumer_register_estimate
            # setmaxnreg moves registers from the producer to the consumers: the block's average
            held = self.producer_registers * WARPGROUP + self.consumer_register_estimate * self.consumers * WARPGROUP
            return -(-held // self.threads)
        if self.wgmma:
            return self.accumulators + WGMMA_REGISTER_OVERHEAD
        return self.accumulators + 4 * self.frags_m + 2 * self.frags_n + TC_REGISTER_OVERHEAD

    @property
    def consumer_register_estimate(self) -> int:
        """wgmma tf32: a consumer thread's accumulators, one stage's B^T fragments and overhead."""
        return self.accumulators + TF32_FRAGMENT_WORDS * self.n_tiles + WGMMA_REGISTER_OVERHEAD

    def launch(self) -> LaunchShape:
        if self.wgmma:
            detail = (f"{self.stages} stage(s) of A {self.block_m}x{self.block_k} + B {self.block_k}x{self.block_n} "
                      f"{self.precision} elements, 128B-swizzled")
            return LaunchShape((self.threads, 1, 1), self.grid, self.shared_bytes, self.registers, detail)
        detail = (f"{self.stages} stage(s) of A {self.block_m}x{self.a_stride} + "
                  f"B {self.block_k}x{self.b_stride} {self.precision} elements")
        return LaunchShape((self.threads, 1, 1), self.grid, self.shared_bytes, self.registers, detail)

    def why_not_tiled(self) -> str | None:
        """Shapes that do not fit together, before any device limit."""
        if self.cluster_shares == CLUSTER_SHARES[1] and (self.cluster == 1 or self.precision == TF32_MODE):
            return ("cluster_shares a is what a cluster's blocks share, on the 16-bit precisions' wgmma kernel: "
                    "with cluster 1 (or tf32) it is b's kernel, take b")
        reason = self._why_not_wgmma() if self.wgmma else self._why_not_mma_sync()
        if reason:
            return reason
        if self.raster > self.cluster_rows and self.raster > 1:
            what = "tile rows" if self.cluster == 1 or self.shares_a else f"rows of {self.cluster}-block clusters"
            return f"raster group of {self.raster} {what} is more than the {self.cluster_rows} there are"
        return None

    def _why_not_mma_sync(self) -> str | None:
        if (self.consumers, self.producer, self.loader, self.cluster, self.persistent, self.turns, self.pingpong,
                self.ring, self.stream_k, self.l2_hint, self.swap_ab) != (1, 0, LOADERS[0], 1, 0, 0, 0, 0, 0,
                                                                           L2_HINTS[0], 0):
            return ("consumers, producer, loader, cluster, persistent, turns, pingpong, ring, stream_k, l2_hint and "
                    f"swap_ab are the wgmma mainloop's knobs: mma_sync configs leave them at 1, 0, {LOADERS[0]}, 1, "
                    f"0, 0, 0, 0, 0, {L2_HINTS[0]} and 0")
        misfit = warp_tile_misfit(self.block_m, self.block_n, self.warp_m, self.warp_n)
        if misfit:
            return misfit
        if self.block_k % self.warps_k or self.slice_k % self.mma_k:
            return (f"block_k {self.block_k} over warps_k {self.warps_k} is not a whole number of "
                    f"{self.mma_k}-deep mma steps")
        return self._why_not_split()

    def _why_not_split(self) -> str | None:
        """split_k's rules, either mainloop's."""
        if self.split_k > 1 and self.tiles_m * self.tiles_n >= SPLIT_K_MAX_TILES:
            return (f"split_k is for shapes of few tiles of C: {self.tiles_m * self.tiles_n} tiles "
                    f"({SPLIT_K_MAX_TILES} or more) fill the GPU without it")
        if self.split_k > self.k_tiles:
            return (f"split_k {self.split_k} leaves a split without a step: K {self.k} is "
                    f"{self.k_tiles} step(s) of {self.block_k}")
        if (self.block_m * self.block_n) % (4 * self.split_k):  # each split sums whole float4s of the tile
            return f"a {self.block_m}x{self.block_n} tile does not part into {self.split_k} shares of float4s"
        return None

    def _why_not_wgmma(self) -> str | None:
        if self.turns and self.precision != TF32_MODE:
            return "turns are tf32's (its consumers wait for each stage's products): 16-bit configs leave it at 0"
        if self.pingpong and self.precision == TF32_MODE:
            return ("pingpong is the 16-bit precisions': tf32's consumers wait for each stage's products, so one "
                    "consumer's mainloop alone would leave the tensor cores idle at every stage")
        if self.pingpong and not (self.tma and self.persistent and self.consumers == 2 and self.split_k == 1):
            return ("pingpong has 2 consumers take whole tiles in turn as persistent blocks walk them: it takes "
                    "loader tma, persistent 1, consumers 2 and split_k 1")
        if self.stream_k and not (self.tma and self.persistent and self.cluster == 1 and self.split_k == 1
                                  and not self.pingpong and self.precision != TF32_MODE):
            return ("stream_k parts the tiles' K steps among persistent blocks, one tile's shares summed in global "
                    "memory: it takes a 16-bit precision, loader tma, persistent 1, cluster 1, split_k 1 and pingpong 0")
        if self.stream_k and self.stream_blocks < 2:
            return (f"stream_k gives each block {STREAM_K_MIN_STEPS} steps or more: {self.stream_steps} steps "
                    "are too few to share")
        if self.stream_k > 1 and self.k_tiles < self.stream_k * STREAM_K_MIN_STEPS:
            return (f"stream_k {self.stream_k} gives each of a tile's shares {STREAM_K_MIN_STEPS} steps or more: "
                    f"its {self.k_tiles} K steps are too few")
        if (self.warp_m, self.warp_n, self.warps_k) != (16, 16, 1):
            return "warp_m, warp_n and warps_k are the mma_sync mainloop's knobs: wgmma configs leave them at 16, 16, 1"
        if self.hinted and not self.tma:
            return f"l2_hint {self.l2_hint} is a cache hint on the tma loader's copies: it takes loader tma"
        block_k = WGMMA_BLOCK_K[self.precision]
        if self.block_k != block_k:
            return (f"the wgmma mainloop stages K {block_k} {self.precision} elements at a time "
                    f"(one 128-byte swizzled row), not {self.block_k}")
        if self.precision == TF32_MODE:
            return self._why_not_wgmma_tf32() or self._why_not_multicast()
        if self.block_n % (SWIZZLE_BYTES // self.element_bytes) or self.block_n > WGMMA_MAX_N:
            return f"wgmma's block_n is a multiple of 64 up to {WGMMA_MAX_N} (B's 128-byte swizzled rows), not {self.block_n}"
        reason = self._why_not_swapped() if self.swap_ab else None
        if reason:
            return reason
        if not self.swap_ab and self.block_m % (self.stage_consumers * WGMMA_M):
            return (f"block_m {self.block_m} is not a multiple of {WGMMA_M} rows for each of "
                    f"{self.stage_consumers} consumer warpgroup(s)")
        if self.tma and not self.producer:
            return "the tma loader is issued by the producer warpgroup: it takes producer 1"
        if self.cluster > 1 and not self.tma:
            return "a cluster shares B's tile by TMA multicast: it takes the tma loader"
        if self.persistent and not self.tma:
            return "persistent blocks are the tma loader's schedule: they take the tma loader"
        reason = self._why_not_multicast()
        if reason:
            return reason
        if self.ring and not (self.tma or self.cp_async_rings):
            return f"a ring of {self.stages} stages is the tma loader's: it takes loader tma (or ring 0)"
        if self.split_k > 1 and not (self.cp_async_rings and not self.tma
                                     or self.tma and (self.cluster == 1 or self.shares_a) and not self.persistent):
            return ("wgmma's split_k is the tma loader's, one tile a block, its cluster the splits (times the tile "
                    "columns sharing A): it takes loader tma, cluster 1 or cluster_shares a, and persistent 0")
        ring_bytes = self.stages * self.wgmma_stage_bytes
        if self.split_k > 1 and not self.tma and self.partial_bytes > ring_bytes:
            return (f"split_k's partial tile ({self.partial_bytes // 1024} KB of fp32) is summed from the ring of "
                    f"stages ({ring_bytes // 1024} KB): it takes more stages or a smaller tile")
        return self._why_not_split()

    def _why_not_swapped(self) -> str | None:
        """swap_ab 1 (16-bit): A's tile is the instruction's N and the consumers share out B's columns."""
        if not self.tma or self.pingpong:
            return "swap_ab takes loader tma and pingpong 0"
        if self.block_n % (self.consumers * WGMMA_M):
            return (f"with swap_ab, block_n {self.block_n} is not a multiple of {WGMMA_M} columns for each of "
                    f"{self.consumers} consumer warpgroup(s)")
        return None

    def _why_not_multicast(self) -> str | None:
        """A cluster's blocks each load and multicast an equal share of B (sharing A, of A's rows: block_m / cluster,
        whole 8-row atoms for every block_m the knob has): the GEMM's always part, by panels or by a panel's
        rows (b_box_rows); the implicit-GEMM conv's tiling has a rule of its own."""
        return None

    def _why_not_wgmma_tf32(self) -> str | None:
        """tf32 computes C's transpose (engine.ops.gemm_tc.wgmma_tf32): B^T's fragments from
        registers, A's tile the instruction's N; only with the tma loader, one tile a block's K."""
        if not (self.tma and self.producer):
            return ("tf32 on wgmma takes loader tma and producer 1 (wgmma reads TF32 from shared memory K-major "
                    "only: this row-major B reaches it through registers, A through TMA)")
        if self.split_k > 1:
            return "tf32 on wgmma has no split_k: it takes split_k 1"
        if self.block_m % 8 or self.block_m > WGMMA_MAX_N:
            return (f"tf32's block_m is the instruction's N (and A's TMA box rows): a multiple of 8 up to "
                    f"{WGMMA_MAX_N}, not {self.block_m}")
        if self.turns and self.consumers != 2:
            return f"turns are taken by 2 consumer warpgroups, not {self.consumers}"
        if self.block_n % (self.consumers * WGMMA_M):
            return (f"block_n {self.block_n} is not a multiple of {WGMMA_M} columns for each of "
                    f"{self.consumers} consumer warpgroup(s) (tf32's consumers share out C's columns)")
        if self.producer_registers and self.consumer_register_estimate > self.consumer_registers:
            return (f"a consumer thread needs about {self.consumer_register_estimate} registers (accumulators and "
                    f"fragments), more than the {self.consumer_registers} setmaxnreg gives it")
        return None


def gemm_tc_tiling(params: GemmTcParams, config: ConfigEntity) -> GemmTcTiling:
    v = config.values()
    return GemmTcTiling(
        m=params.m, n=params.n, k=params.k, precision=params.precision,
        block_m=v["block_m"], block_n=v["block_n"], block_k=v["block_k"],
        warp_m=v["warp_m"], warp_n=v["warp_n"], warps_k=v["warps_k"],
        stages=v["stages"] + v["ring"], raster=v["raster"], ring=v["ring"],
        mainloop=v["mainloop"], consumers=v["consumers"], producer=v["producer"], split_k=v["split_k"],
        loader=v["loader"], cluster=v["cluster"], persistent=v["persistent"], turns=v["turns"],
        pingpong=v["pingpong"], c_dtype=params.c_dtype, l2_hint=v["l2_hint"], stream_k=v["stream_k"],
        swap_ab=v["swap_ab"], cluster_shares=v["cluster_shares"],
    )
