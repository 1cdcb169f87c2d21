"""Dense fp32 GEMM on CUDA, row-major: C[M, N] = A[M, K] · B[K, N].

Args as a log writes them: [A TENSOR [M, K], B TENSOR [K, N]] (float32). The skinny
benchmark shapes read M × N × K (512×49×4608 is ResNet-18 C12 as an implicit GEMM: M = output
channels, N = output pixels, K = CI·KH·KW; 128×3136×576 a 56² layer).

The schedule is the SIMT warp-tiled SGEMM (CUTLASS's SIMT path, siboehm's "warptiling"):

* A block computes a `block_m × block_n` tile of C, stepping through K `block_k` at a
  time; each step stages A's tile transposed (`[block_k][block_m + pad]`, so a thread
  reads its rows as vectors) and B's tile as is (`[block_k][block_n + pad]`) in shared
  memory. `smem_pad` floats per row move the transposed stores off one bank.
* The block's warps each own a `warp_m × warp_n` tile. A warp's 32 lanes stand as
  `32 / warp_lanes_n` rows by `warp_lanes_n` columns; each lane holds `thread_m × thread_n`
  accumulators per sub-tile, and the warp tile is covered in `warp_m / (lanes_m·thread_m)`
  × `warp_n / (lanes_n·thread_n)` sub-tiles, so a lane's registers read as 4-wide vectors.
* Global loads are `vector_a`/`vector_b` floats wide (float4 = 16 bytes) where K (A's
  rows) and N (B's rows) keep them aligned.
* `pipeline`: `sync` (load, then compute), `prefetch` (two shared buffers; the next tile
  is read into registers while this one computes), `cp_async_S` (an S-stage ring filled
  by `cp.async`, Ampere and newer; A's elements are copied one by one, transposing).
* `slice_k` > 1 cuts each `block_k` step among that many groups of warps ("sliced-K"):
  every group owns the whole block tile for its share of the step, and at the end the
  groups' accumulators meet in shared memory, summed in group order. It gives a block
  with few output tiles more warps without smaller register tiles.
* `split_k` > 1 cuts K over blockIdx.z; each split writes its partial tile to a workspace
  and the last split to finish a tile (an atomic counter per tile) sums the partials in
  a fixed order into C. That is how a skinny shape (few output tiles) fills 132 SMs.
  `split_reduce` `cluster` (sm_90 and newer) makes a tile's splits one thread block cluster
  instead: each leaves its partial tile in its shared memory, and each sums one share of the
  tile over the cluster's shared memory (in split order) straight into C. No workspace, no
  counter, and the sum is spread over the splits rather than left to the last one.
* Tails: M, N and K need not be multiples of the tiles: loads past an edge are predicated
  (zero-filled) and stores past an edge skipped. Vector widths must divide the row length.

* `loader`: `threads` is all of the above; `tma` and `tma_rows` (sm_90a) have producer threads of their own
  drive the tensor memory accelerator into a ring of `stages` (the pipeline knob's cp_async_3 or _4) handed over
  by mbarriers, block_k 32, split K through the workspace or a cluster (its partial tile over the ring), and
  fix the knobs only the threads read (engine.ops.gemm.tma says how).
* `multicast` C > 1 (loader tma or tma_rows, sm_90): C neighbouring tile columns of one tile row, one thread
  block cluster, share A's box: each block's producer loads a C-th of its rows and the tensor memory
  accelerator multicasts them into every block of the cluster, so L2 serves A's box once a cluster, not once
  a block. Why A: the grid's x is the tile column and runs fastest, so a cluster along x is neighbouring
  tiles of one tile row, which share A and not B; and on the skinny goal shape (128×3136×576) M is one to
  four tile rows (block_m 128 to 32), so B's panels are shared by at most four blocks while A's box is
  shared by the 13 to 98 of a tile row. On the squares multicast 2 (4) halves (quarters) the A a block
  reads from L2; their 128×256 tiles read twice as much B as A a step, so B's multicast (a cluster along
  y, every stage then the cluster's to release with either loader) may save more there: not built.
  The grid's columns round up to whole clusters: a block past N's last tile loads its share of A,
  computes on zeros and stores nothing. The shares are whole 1024-byte swizzle atoms (8 rows of A), and
  one kernel has one cluster shape: not with split_reduce cluster.

Shared memory beyond 48 KB is asked for at launch (the runner sets the kernel's
dynamic shared memory attribute), so configs may use up to the device's opt-in limit.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ...space import ConfigEntity
from ..args import tensor_shape
from ..base import (FLOAT_BYTES, REGISTER_OVERHEAD, WARPGROUP, BadArgs, LaunchShape,
                    launch_register_budget)

TEMPLATE_NAME = "gemm"
PIPELINES = ("sync", "prefetch", "cp_async_2", "cp_async_3", "cp_async_4")
# Who fills the stages: every thread (`threads`: registers or cp.async, the pipeline knob's), or the
# tensor memory accelerator issued by producer threads of their own (sm_90a), which write A transposed
# into the stage (`tma`) or leave it as it lands (`tma_rows`): engine.ops.gemm.tma.
LOADERS = ("threads", "tma", "tma_rows")
# loader tma: a stage is A's block_m rows of TMA_BLOCK_K floats (one 128-byte swizzled row each) and
# B's TMA_BLOCK_K rows in panels of TMA_PANEL columns (one 128-byte swizzled row per k), so block_k is this.
TMA_BLOCK_K = TMA_PANEL = 32
SWIZZLE_ROW_BYTES, SWIZZLE_ATOM_BYTES, MBARRIER_BYTES = 128, 1024, 8
# multicast: blocks of one cluster (neighbouring tile columns) that share A's TMA box (engine.ops.gemm.tma)
MULTICASTS = (1, 2, 4)
# loader tma: a consumer's per-lane table of B's (tma_rows: and A's) swizzled chunk offsets (engine.ops.gemm.tma).
TMA_OFFSET_REGISTERS = 8
# loader tma: ptxas sizes a block's registers by whole warpgroups (8 consumer warps and one producer
# warp got 168 a thread, as 12 warps do), so where the consumers are whole warpgroups the producer
# is one too and keeps this many registers (setmaxnreg, a warpgroup at a time) if that gives the
# consumers more than a producer warp would leave them (the tensor-core GEMM's TMA producer does so).
TMA_PRODUCER_REGISTERS = 40
BLOCK_K_CHOICES = (8, 16, 32)
SPLIT_K_CHOICES = (1, 2, 4, 8, 16)
# Split-K partials live in a workspace of split_k x M x N floats; beyond this it is not worth the memory.
MAX_WORKSPACE_BYTES = 64 * 2**20
# A split should keep at least this much of K (shorter ones spend more on the fix-up than they save).
MIN_K_PER_SPLIT = 64


def warp_tile_misfit(block_m: int, block_n: int, warp_m: int, warp_n: int) -> str | None:
    """Why a block tile is not a whole number of warp tiles, or None (every GEMM family's rule)."""
    if block_m % warp_m or block_n % warp_n:
        return f"warp tile {warp_m}x{warp_n} does not divide block tile {block_m}x{block_n}"
    return None


def gemm_shapes(args: list) -> tuple[int, int, int]:
    if not isinstance(args, list) or len(args) != 2:
        raise BadArgs('gemm args are [["TENSOR", [M, K], "float32"], ["TENSOR", [K, N], "float32"]]')
    a = tensor_shape(args[0], "A")
    b = tensor_shape(args[1], "B")
    if len(a) != 2 or len(b) != 2:
        raise BadArgs(f"A {a} and B {b} must both be 2-D")
    if a[1] != b[0]:
        raise BadArgs(f"A {a} and B {b} do not multiply: A is [M, K], B is [K, N]")
    return a[0], b[1], a[1]


@dataclass(frozen=True)
class GemmParams:
    m: int
    n: int
    k: int
    args: list = dataclasses.field(default_factory=list, compare=False, repr=False)

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k

    @property
    def split_k_choices(self) -> list[int]:
        return [s for s in SPLIT_K_CHOICES
                if s == 1 or (s * self.m * self.n * FLOAT_BYTES <= MAX_WORKSPACE_BYTES and self.k >= s * MIN_K_PER_SPLIT)]


@dataclass(frozen=True)
class GemmTiling:
    """A config's sizes, and what they imply for one launch (see the module docstring)."""

    m: int
    n: int
    k: int
    block_m: int
    block_n: int
    block_k: int
    warp_m: int
    warp_n: int
    thread_m: int
    thread_n: int
    lanes_n: int
    vector_a: int
    vector_b: int
    pipeline: str
    pad: int
    split_k: int
    unroll: int
    slice_k: int = 1
    split_reduce: str = "workspace"
    loader: str = "threads"
    multicast: int = 1

    # How the threads' loaders reach B and where C goes: B and C row-major here. The implicit-GEMM
    # conv (engine.ops.conv2d_igemm) gathers B from its input and scatters C to its NCHW output.
    operand_parameters = "const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C"
    operand_names = ("a", "b", "c")

    def b_element(self, k: str, col: str) -> tuple[str, str | None, str]:
        """Statements that locate B's element (k, col), a condition it lies inside its source
        (None: always), and its address; they stand in round `r` of a tile's B loads (`kk`, `col`:
        the element's place in the tile)."""
        return "", None, f"B + (size_t)({k}) * {self.n} + {col}"

    def a_element(self) -> str:
        """A's element (block_row + row, k0 + kk) of round `r` of a tile's A loads, as an address (A is
        row-major M x K for every tiling, so the names in scope say where; b_element takes B's)."""
        return f"A + (size_t)(block_row + row) * {self.k} + k0 + kk"

    def load_invariants(self, operand: str) -> tuple[str, str]:
        """What the loads of `operand` ("A" or "B") may read that the K loop does not change, worked out
        before it: declarations, and the statements that fill them for round `r`'s element of every tile
        (A's `row`, `kk`; B's `kk`, `col`); none here."""
        return "", ""

    def c_address(self, row: str, col: str) -> str | None:
        """C's element (row, col) as an address; None where C is row-major M x N (the kernel's own text)."""
        return None

    @property
    def c_row_length(self) -> int:
        """Consecutive columns of C that lie side by side in memory (vector stores stay within them)."""
        return self.n

    @property
    def uses_tma(self) -> bool:
        return self.loader.startswith("tma")

    @property
    def a_transposed(self) -> bool:
        """loader tma: the producers transpose A into the stage (tma_rows: A's rows as they land)."""
        return self.loader == "tma"

    @property
    def lanes_m(self) -> int:
        return 32 // self.lanes_n

    @property
    def warps_m(self) -> int:
        return self.block_m // self.warp_m

    @property
    def warps_n(self) -> int:
        return self.block_n // self.warp_n

    @property
    def slice_threads(self) -> int:
        """Threads of one K slice: the warps that cover the block tile once."""
        return self.warps_m * self.warps_n * 32

    @property
    def consumer_threads(self) -> int:
        """Threads that compute (all of them, but for the TMA loaders' producer warp or warpgroup)."""
        return self.slice_threads * self.slice_k

    @property
    def threads(self) -> int:
        return self.consumer_threads + (self.producer_threads if self.uses_tma else 0)

    @property
    def producer_threads(self) -> int:
        """loader tma: a warpgroup that moves registers to the consumers, or one warp."""
        return WARPGROUP if self._moved_registers() > launch_register_budget(self.consumer_threads + 32) else 32

    @property
    def producer_registers(self) -> int:
        """loader tma: what a producer warpgroup keeps (setmaxnreg.dec); 0 for a producer warp."""
        return TMA_PRODUCER_REGISTERS if self.producer_threads == WARPGROUP else 0

    @property
    def consumer_registers(self) -> int:
        """loader tma: the registers a consumer thread has to work with (setmaxnreg.inc's, or the launch's)."""
        return self._moved_registers() if self.producer_registers else launch_register_budget(self.threads)

    def _moved_registers(self) -> int:
        """What each consumer would get beside a producer warpgroup that keeps TMA_PRODUCER_REGISTERS:
        the block's registers less the producer's in steps of 8, at most 248 (a larger .inc than the
        block holds would wait forever); 0 where the consumers are not whole warpgroups."""
        if self.consumer_threads % WARPGROUP:
            return 0
        threads = self.consumer_threads + WARPGROUP
        spare = launch_register_budget(threads) * threads - TMA_PRODUCER_REGISTERS * WARPGROUP
        return min(spare // self.consumer_threads // 8 * 8, 248)

    @property
    def slice_steps(self) -> int:
        """k-rows of each block_k step one slice computes."""
        return self.block_k // self.slice_k

    @property
    def sub_m(self) -> int:
        """Rows one pass of a warp's lanes covers."""
        return self.lanes_m * self.thread_m

    @property
    def sub_n(self) -> int:
        return self.lanes_n * self.thread_n

    @property
    def iter_m(self) -> int:
        return self.warp_m // self.sub_m

    @property
    def iter_n(self) -> int:
        return self.warp_n // self.sub_n

    @property
    def accumulators(self) -> int:
        return self.iter_m * self.iter_n * self.thread_m * self.thread_n

    @property
    def stages(self) -> int:
        return {"sync": 1, "prefetch": 2}.get(self.pipeline) or int(self.pipeline.rsplit("_", 1)[1])

    @property
    def uses_cp_async(self) -> bool:
        return self.pipeline.startswith("cp_async")

    @property
    def a_stride(self) -> int:
        """Floats per k-row of the transposed A tile in shared memory."""
        return self.block_m + self.pad

    @property
    def b_stride(self) -> int:
        return self.block_n + self.pad

    @property
    def stage_floats(self) -> int:
        return self.block_k * (self.a_stride + self.b_stride)

    @property
    def tma_a_bytes(self) -> int:
        """loader tma: A's box of a step, block_m rows of 128 bytes (a staging buffer's, and its
        place in the stage)."""
        return self.block_m * SWIZZLE_ROW_BYTES

    @property
    def tma_flag_offset(self) -> int:
        """loader tma, split_k > 1: where split K's "last split" flag sits, in bytes from the aligned
        ring: after the ring, the staging buffers and the barriers."""
        return (self.stages * (self.tma_stage_bytes + 2 * MBARRIER_BYTES) + self.tma_staging_bytes
                + self.tma_staging_barriers * MBARRIER_BYTES)

    @property
    def tma_staging_barriers(self) -> int:
        """loader tma: the staging buffers' barriers, `landed` (tma_rows has them unused) and (multicast)
        `freed`, when every block of the cluster has read a buffer."""
        return 4 if self.a_transposed and self.multicast > 1 else 2

    @property
    def a_share_rows(self) -> int:
        """loader tma: rows of A's box one block of the cluster copies (multicast: its share)."""
        return self.block_m // self.multicast

    @property
    def tma_staging_bytes(self) -> int:
        """loader tma: A's two staging buffers (tma_rows has none)."""
        return 2 * self.tma_a_bytes if self.a_transposed else 0

    @property
    def tma_b_bytes(self) -> int:
        """loader tma: B's panels of a step, the stage's first part (1024-byte aligned)."""
        return self.block_k * self.block_n * FLOAT_BYTES

    @property
    def tma_stage_bytes(self) -> int:
        return self.tma_b_bytes + self.tma_a_bytes


    @property
    def slice_exchange_floats(self) -> int:
        """Shared memory the K slices other than the first leave their accumulators in
        (after the main loop, over the stages)."""
        return (self.slice_k - 1) * self.block_m * self.block_n

    @property
    def uses_cluster(self) -> bool:
        return self.split_reduce == "cluster"

    @property
    def split_flag_offset(self) -> int:
        """Where, in floats, the split-K "last split" flag sits: after the stages (or the
        slices' exchange, or the partial tile a cluster split shares, if larger)."""
        partial = self.block_m * self.block_n if self.uses_cluster else 0
        return max(self.stages * self.stage_floats, self.slice_exchange_floats, partial)

    @property
    def shared_bytes(self) -> int:
        """All the block's shared memory, every byte of it dynamic: a static `__shared__`
        beside 48 KB of stages would put the launch over the limit the runner opts in to.
        loader tma: the ring aligned to a swizzle atom, A's two staging buffers (tma), then the ring's
        full and empty mbarriers and the buffers' two."""
        if self.uses_tma:
            # the ring's start moves up to a 1024-byte swizzle atom: at most 1008 bytes, 16-byte aligned as it is;
            # split K's "last split" flag comes last
            return SWIZZLE_ATOM_BYTES + self.tma_flag_offset + (FLOAT_BYTES if self.split_k > 1 and not self.uses_cluster else 0)
        flag = 1 if self.split_k > 1 and not self.uses_cluster else 0
        return FLOAT_BYTES * (self.split_flag_offset + flag)

    @property
    def a_vectors(self) -> int:
        return self.block_m * self.block_k // self.vector_a

    @property
    def b_vectors(self) -> int:
        return self.block_k * self.block_n // self.vector_b

    @property
    def a_rounds(self) -> int:
        """Rounds of a tile's A loads: a_vectors over the threads."""
        return -(-self.a_vectors // self.threads)

    @property
    def b_rounds(self) -> int:
        return -(-self.b_vectors // self.threads)

    @property
    def k_tiles(self) -> int:
        return -(-self.k // self.block_k)

    @property
    def k_per_split(self) -> int:
        """K each split covers: whole block_k steps, so only the last split has a K tail."""
        return -(-self.k_tiles // self.split_k) * self.block_k

    @property
    def tiles_n(self) -> int:
        return -(-self.n // self.block_n)

    @property
    def grid(self) -> tuple[int, int, int]:
        """One block a tile (times split_k); multicast: tile columns in whole clusters."""
        columns = -(-self.tiles_n // self.multicast) * self.multicast
        return (columns, -(-self.m // self.block_m), self.split_k)

    @property
    def registers(self) -> int:
        """Accumulators, one k-step's fragments, plus overhead; a TMA loader's consumer: its tables of swizzled
        offsets (tma_rows' A fragments hold 4 k); the threads' loaders: a 64-bit address for each load round of
        a stage, which ptxas keeps through the K loop, and prefetch's registers. Without the addresses the
        estimate ran low where a block's few threads copy many rounds: of 60 random valid configs each of
        4096³, 512×49×4608 and 128×3136×576, 26 spilled; with them, 18 of those 26 are refused and 3 of the 154
        that did not spill (ptxas -v, sm_90a)."""
        fragments = self.iter_m * self.thread_m + self.iter_n * self.thread_n
        if self.uses_tma:  # and the tables of swizzled chunk offsets; tma_rows reads 4 k of A at once
            tables = TMA_OFFSET_REGISTERS * (1 if self.a_transposed else 2)
            fragments += 0 if self.a_transposed else 3 * self.iter_m * self.thread_m
            return self.accumulators + fragments + tables + REGISTER_OVERHEAD
        staged = 2 * (self.a_rounds + self.b_rounds)
        if self.pipeline == "prefetch":
            staged += self.a_rounds * self.vector_a + self.b_rounds * self.vector_b
        return self.accumulators + fragments + staged + REGISTER_OVERHEAD

    def launch(self) -> LaunchShape:
        detail = (f"{self.stages} stage(s) of A {self.block_k}x{self.a_stride} + "
                  f"B {self.block_k}x{self.b_stride} floats")
        registers = self.registers
        if self.uses_tma:  # the consumers' budget is _why_not_tma's rule
            detail = f"{self.stages} TMA stage(s) of {self.tma_stage_bytes} bytes, aligned, and their barriers"
            registers = min(registers, launch_register_budget(self.threads))
        return LaunchShape((self.threads, 1, 1), self.grid, self.shared_bytes, registers, detail)

    def why_not_tiled(self) -> str | None:
        """Shapes that do not fit together, before any device limit."""
        misfit = warp_tile_misfit(self.block_m, self.block_n, self.warp_m, self.warp_n)
        if misfit:
            return misfit
        if self.warp_m % self.sub_m or self.warp_n % self.sub_n:
            return (f"a warp's lanes ({self.lanes_m}x{self.lanes_n}) with {self.thread_m}x{self.thread_n} "
                    f"registers each cover {self.sub_m}x{self.sub_n}, which does not divide the warp tile "
                    f"{self.warp_m}x{self.warp_n}")
        if self.k % self.vector_a:
            return f"vector_a {self.vector_a} does not divide K = {self.k} (A's rows would be misaligned)"
        if self.n % self.vector_b:
            return f"vector_b {self.vector_b} does not divide N = {self.n} (B's rows would be misaligned)"
        if self.uses_cluster and self.split_k == 1:
            return "split_reduce cluster needs split_k > 1 (there is nothing to sum)"
        if self.block_k % self.slice_k:
            return f"slice_k {self.slice_k} does not divide block_k {self.block_k}"
        if self.vector_b > self.block_n:
            return f"vector_b {self.vector_b} is wider than block_n {self.block_n}"
        if self.multicast > 1 and not self.uses_tma:
            return f"multicast {self.multicast} shares A's TMA box: it takes loader tma or tma_rows, not {self.loader}"
        if self.uses_tma:
            return self._why_not_tma()
        if self.uses_cp_async and self.vector_a != 1:
            return ("cp.async pipelines copy A element by element (transposing it into shared memory); "
                    f"vector_a must be 1, not {self.vector_a}")
        if self.split_k > 1 and self.k_per_split * (self.split_k - 1) >= self.k:
            return (f"split_k {self.split_k} with block_k {self.block_k} leaves the last split of "
                    f"K = {self.k} empty")
        return None

    def _why_not_tma(self) -> str | None:
        """The TMA loaders' rules: the shapes their boxes, swizzle and register layout are built on
        (engine.ops.gemm.tma), and fixed values for the knobs only the threads' loaders read."""
        loader = f"loader {self.loader}"
        if self.stages < 3:  # a stage is released a step late (engine.ops.gemm.tma): 2 would load nothing ahead
            return f"{loader} fills a ring of 3 or 4 stages (pipeline cp_async_3 or cp_async_4), not {self.pipeline}"
        if self.block_k != TMA_BLOCK_K:
            return f"{loader} copies 128-byte rows of A: block_k must be {TMA_BLOCK_K}, not {self.block_k}"
        if self.thread_n % 4:
            return f"{loader} reads B 4 columns at a time: thread_n must be a multiple of 4, not {self.thread_n}"
        if self.warp_n % TMA_PANEL:
            return f"{loader}'s B panels are {TMA_PANEL} columns: warp_n must be a multiple, not {self.warp_n}"
        # vector_a and vector_b 4 (the vectors' rules: K and N multiples of 4) also keep the tensor maps'
        # row pitches the 16-byte multiples the TMA unit needs.
        fixed = (("vector_a", self.vector_a, 4), ("vector_b", self.vector_b, 4), ("smem_pad", self.pad, 0),
                 ("unroll_k", self.unroll, 32), ("slice_k", self.slice_k, 1))
        loose = [f"{knob} {value}" for knob, value, wanted in fixed if value != wanted]
        if loose:
            wanted = ", ".join(f"{knob} {wanted}" for knob, _, wanted in fixed)
            return f"{loader} takes {wanted} (not {', '.join(loose)})"
        partial, ring = self.block_m * self.block_n * FLOAT_BYTES, self.stages * self.tma_stage_bytes
        if self.uses_cluster and partial > ring:
            return (f"split_reduce cluster leaves the {partial // 1024} KB partial tile over {loader}'s ring of "
                    f"{ring // 1024} KB: it takes more stages or a smaller tile")
        if self.registers > self.consumer_registers:
            return (f"a consumer thread needs about {self.registers} registers (accumulators and fragments), "
                    f"more than the {self.consumer_registers} it gets beside the producer")
        return self._why_not_multicast()

    def _why_not_multicast(self) -> str | None:
        """multicast: a cluster of tile columns whose blocks each copy a share of A's box (engine.ops.gemm.tma)."""
        c = self.multicast
        if c == 1:
            return None
        if self.uses_cluster:
            return (f"multicast {c}'s cluster is {c} tile columns, split_reduce cluster's a tile's splits: a kernel "
                    "has one cluster shape (take split_reduce workspace)")
        if self.block_m % (c * SWIZZLE_ATOM_BYTES // SWIZZLE_ROW_BYTES):
            return (f"multicast {c} cuts A's box into {c} shares of whole 1024-byte swizzle atoms (8 rows): "
                    f"block_m must be a multiple of {c * SWIZZLE_ATOM_BYTES // SWIZZLE_ROW_BYTES}, not {self.block_m}")
        if self.tiles_n < c:
            return (f"multicast {c} shares A's box among {c} tile columns, and N = {self.n} has {self.tiles_n} "
                    f"of block_n {self.block_n}")
        return None


def gemm_tiling(params: GemmParams, config: ConfigEntity, tiling: type[GemmTiling] = GemmTiling,
                **more) -> GemmTiling:
    """The config's tiling (`tiling` and `more`: a subclass's, with its fields)."""
    v = config.values()
    return tiling(
        m=params.m, n=params.n, k=params.k,
        block_m=v["block_m"], block_n=v["block_n"], block_k=v["block_k"],
        warp_m=v["warp_m"], warp_n=v["warp_n"], thread_m=v["thread_m"], thread_n=v["thread_n"],
        lanes_n=v["warp_lanes_n"], vector_a=v["vector_a"], vector_b=v["vector_b"],
        pipeline=v["pipeline"], pad=v["smem_pad"], split_k=v["split_k"], unroll=v["unroll_k"],
        slice_k=v["slice_k"], split_reduce=v["split_reduce"], loader=v["loader"],
        multicast=v.get("multicast", 1), **more,  # the implicit-GEMM conv (threads' loader only) has no multicast
    )
