"""A 3x3 stride-1 NCHW fp32 convolution by Winograd's F(m x m, 3x3), unfused: the transforms, the products
and the output transform are phases of one persistent kernel, the products (m+2)² GEMMs of large tiles.

Why unfused: the fused kernel (engine.ops.conv2d_winograd, whose tiling.py says the algorithm) holds all
(m+2)² positions' accumulators in a block, which keeps its GEMM tiles small: it does the element-wise
products at about 11.6 TFLOP/s on the H200, where the fp32 SIMT GEMM (engine.ops.gemm) reaches about 45
with large register tiles. Here the products are that GEMM's block tiles, one position at a time. Args,
inputs, reference, FLOPs (the direct conv's) and the cuDNN baseline are the fused template's.

The phases, each block taking a strided share of each, with a grid barrier between them:

1. transforms: each filter into U[p][co][ci] (U = G g Gᵀ) and each input patch into V[p][ci][tile]
   (V = Bᵀ d B, zeros in the padding), p the (m+2)² positions, tile the output tiles of all images;
2. products: M_p[co][tile] = Σ_ci U_p[co][ci] · V_p[ci][tile] for each position: U_p is the GEMM's A
   (M = CO by K = CI, row-major), V_p its B (CI by the tiles), M_p its C. A work unit is one block
   tile of one position's GEMM (`block_co` channels by `block_tiles` tiles), units strided over the
   blocks; each is engine.ops.gemm's block tile as its own generators write it (warp and thread tiles,
   `block_k`, register prefetch or a cp.async ring of stages, its stores), over the position's arrays.
   A row of V and M holds the tiles padded to a multiple of 4 (`tiles_padded`), so the GEMM's vectors
   stay 16-byte aligned; V's padding is never written and M's never read.
3. output: Y = Aᵀ M A of each (image, channel, tile), to the NCHW output, edges clipped.

Workspace: `__device__` arrays of the module, sized for the layer and the config (U, V and M: positions
x CO x CI, x CI x tiles_padded and x CO x tiles_padded floats), not extra input arrays from make_inputs
(the runner would pass those, as the GEMM's split-K workspace is passed). Why: their size depends on the
config (F(2x2)'s V and M are 1.8 times F(4x4)'s on 28² 128→128 at batch 32, 51 MB each against 29), while
make_inputs is one per task, so it would size them for the largest and ship them through the runner's pipe
with every task; the kernel keeps `conv2d_nchw.cuda`'s three arrays, so cuDNN's baseline, a best config
applied from a log, and the other conv templates' inputs stay as they are; and the barrier's counter must
outlive launches anyway. The cost: each loaded module holds its own workspace, and two launches of one
module must not run at once (the runner's and the confirmations' launches are in stream order). The
module's whole `__device__` memory (the three arrays and the counter) is held under MAX_MODULE_BYTES, 2 GiB:
ptxas lays it out with 32-bit offsets, so past 4 GiB it wraps (the counter lands inside V); the bound also
keeps each array's index in the kernel's 32-bit ints.

The grid barrier: a 64-bit counter in `__device__` memory that only grows. Each block's thread 0 adds 1
with release semantics (its block's writes, ordered before by __syncthreads, are visible to whoever
acquires the counter), polls it with relaxed loads (32 ns apart) until it reaches the next multiple of the
grid, then acquires with one fence (kernel.py says why not an acquire load each poll). Every launch adds
twice the grid, so a launch starts at a multiple of it and no reset is needed between launches (CUDA graph
replays); 64 bits because a 32-bit counter would wrap after about 8 million launches of 264 blocks, within
a long tuning session, and the grid does not divide 2^32. The blocks of the products read what other
blocks wrote in the same launch, so nothing of the workspace is read through the read-only (non-coherent)
path.

The grid: `blocks_per_sm` x PERSISTENT_SMS blocks (an H200's or H100's SMs: the kernel is generated
without a device, as the tensor-core GEMM's persistent schedules are, and why_invalid refuses a GPU with
fewer), so that every block is resident at once, which a grid barrier needs: `__launch_bounds__(threads,
blocks_per_sm)` holds the registers to what that many blocks leave, and the rules hold shared memory and
threads to one SM's. Fewer only where the products would give a block under MIN_BLOCK_PRODUCTS
multiply-adds (tiny layers, such as the CPU emulator's, which holds at most 8 blocks of such a grid).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ...space import ConfigEntity
from ..base import FLOAT_BYTES, REGISTER_OVERHEAD, DeviceLimits, LaunchShape, launch_register_budget
from ..conv2d.tiling import ConvParams
from ..conv2d_winograd.tiling import WinogradTiles
from ..gemm.tiling import GemmTiling

TEMPLATE_NAME = "conv2d_nchw_winograd_nonfused"
# SMs of the GPUs this kernel is sized for (an H200's, an H100 SXM's): the persistent grid fills them.
PERSISTENT_SMS = 132
BLOCKS_PER_SM = (1, 2)
# A block's share of the products is at least this many multiply-adds (0.4 µs of one SM's work at the SIMT
# GEMM's 45 TFLOP/s), or the layer gets fewer blocks: a block with less spends its time at the barriers.
# Every preset's grid is full (the smallest, 56² 64→64 and 28² 128→128 at batch 1, have 441 blocks' worth).
MIN_BLOCK_PRODUCTS = 2**16
# One SM's threads, and the shared memory the driver keeps for each resident block beside its own
# (an SM's 228 KB is a block's opt-in 227 KB plus that 1 KB).
SM_THREADS, RESERVED_SHARED_BYTES = 2048, 1024
# The module's `__device__` bytes (workspace and counter) stay under this. ptxas gives module global memory
# 32-bit offsets: at 4 GiB they wrap (a 5 GiB module of ptxas 13.0 puts a counter declared last at 1 GiB,
# inside the arrays before it). Between 2 and 4 GiB its layout is right, but an offset there is a negative
# signed 32-bit int, and nothing here shows every relocation and the driver's loader take it as unsigned:
# 2 GiB stays clear of that too, and costs nothing (the WN- presets' largest workspace is under 200 MB;
# 56² 512→64 at batch 128 in F(4x4) is 1.94 GiB). Under it each array has fewer than 2^29 floats, so the
# kernel's 32-bit int indexes hold as well.
MAX_MODULE_BYTES = 2**31
# `__device__` arrays are aligned to this many bytes (the kernel's `__align__(16)`), the counter to 8.
DEVICE_ALIGNMENT = 16


@dataclass(frozen=True)
class NonfusedTiling(WinogradTiles):
    """A config's sizes: the tile m (the positions and tiles are the fused template's), blocks a SM, and the
    products' GEMM tiling (M = CO, N = tiles_padded, K = CI)."""

    blocks_per_sm: int
    gemm: GemmTiling

    @property
    def tiles_padded(self) -> int:
        return self.gemm.n

    @property
    def threads(self) -> int:
        return self.gemm.threads

    @property
    def row_tiles(self) -> int:
        """Block tiles of a position's GEMM along CO."""
        return -(-self.conv.co // self.gemm.block_m)

    @property
    def column_tiles(self) -> int:
        """Block tiles of a position's GEMM along the tiles."""
        return -(-self.tiles_padded // self.gemm.block_n)

    @property
    def units(self) -> int:
        """The products' work units: positions x block tiles."""
        return self.positions * self.row_tiles * self.column_tiles

    @property
    def products(self) -> int:
        """Multiply-adds of the element-wise products."""
        return self.positions * self.conv.co * self.conv.ci * self.tiles

    @property
    def workspace_floats(self) -> dict[str, int]:
        c = self.conv
        return {"U": self.positions * c.co * c.ci, "V": self.positions * c.ci * self.tiles_padded,
                "M": self.positions * c.co * self.tiles_padded}

    @property
    def module_bytes(self) -> int:
        """The module's `__device__` memory: each array padded to its alignment, and the counter's 8 bytes
        (padded likewise), whatever order ptxas lays them out in."""
        padded = (-(-FLOAT_BYTES * floats // DEVICE_ALIGNMENT) * DEVICE_ALIGNMENT
                  for floats in self.workspace_floats.values())
        return sum(padded) + DEVICE_ALIGNMENT

    @property
    def blocks(self) -> int:
        return max(1, min(self.blocks_per_sm * PERSISTENT_SMS, self.products // MIN_BLOCK_PRODUCTS))

    @property
    def grid(self) -> tuple[int, int, int]:
        return (self.blocks, 1, 1)

    @property
    def transform_registers(self) -> int:
        """A transform's values in and out (a patch's and its V, a product's and its tile), plus overhead."""
        return 2 * self.positions + REGISTER_OVERHEAD

    @property
    def product_registers(self) -> int:
        """The GEMM's estimate, plus a register for each of a stage's load rounds: ptxas keeps each round's
        guard, beside its address, through the units' loop. Of 60 random valid configs on 28² 128→128 at batch 32,
        9 spilled (up to 4.3 KB, with 80 rounds) under the GEMM's estimate without its addresses; with both, 7 of
        those 9 are refused, and 1 of the 51 that did not spill, which used 248 of its 255; of 60 drawn afresh (another
        seed) under the estimate, 1 spilled, 84 bytes (ptxas -v, sm_90)."""
        return self.gemm.registers + self.gemm.a_rounds + self.gemm.b_rounds

    @property
    def registers(self) -> int:
        """The larger of the products' and the transforms' needs: one kernel holds both."""
        return max(self.product_registers, self.transform_registers)

    @property
    def shared_bytes(self) -> int:
        """The products' stages: the transforms work in registers."""
        return self.gemm.shared_bytes

    def launch(self) -> LaunchShape:
        return dataclasses.replace(self.gemm.launch(), grid=self.grid, registers=self.registers)

    def why_not_tiled(self) -> str | None:
        reason = self.gemm.why_not_tiled()
        if reason:
            return f"the products' GEMM (M = CO {self.conv.co}, N = {self.tiles_padded} tiles, K = CI {self.conv.ci}): {reason}"
        if self.module_bytes >= MAX_MODULE_BYTES:
            floats = ", ".join(f"{name} {count}" for name, count in self.workspace_floats.items())
            return (f"the module's __device__ memory (the workspace's {floats} floats, and the barrier's counter) "
                    f"would take {self.module_bytes} bytes, not under {MAX_MODULE_BYTES} (2 GiB): ptxas lays it out "
                    "with 32-bit offsets, which wrap at 4 GiB")
        return None

    def why_not_resident(self, limits: DeviceLimits) -> str | None:
        """Why `blocks_per_sm` blocks of this tiling cannot be resident on one SM together (threads, shared
        memory), or the grid on the device at once (its blocks wait on one another at the grid barriers); or why
        they would be, but spill: the register estimate over what `__launch_bounds__` leaves each thread."""
        bps, threads = self.blocks_per_sm, self.threads
        if bps * threads > SM_THREADS:
            return f"{bps} blocks of {threads} threads exceed an SM's {SM_THREADS} threads"
        budget = launch_register_budget(bps * threads)
        if self.registers > budget:
            return (f"a thread needs about {self.registers} registers, more than the {budget} that {bps} block(s) of "
                    f"{threads} threads an SM leave it: __launch_bounds__({threads}, {bps}) would hold it to those and "
                    "spill the rest to local memory")
        per_sm = limits.max_shared_memory_optin + RESERVED_SHARED_BYTES
        if bps * (self.shared_bytes + RESERVED_SHARED_BYTES) > per_sm:
            return (f"{bps} blocks of {self.shared_bytes} bytes of shared memory (and {RESERVED_SHARED_BYTES} the "
                    f"driver keeps for each) exceed an SM's {per_sm}")
        if self.blocks > bps * limits.multiprocessors:
            return (f"the persistent grid's {self.blocks} blocks wait on one another, so all must be resident at "
                    f"once: more than {bps} a SM on this GPU's {limits.multiprocessors} SMs")
        return None


def nonfused_tiling(conv: ConvParams, config: ConfigEntity) -> NonfusedTiling:
    v = config.values()
    tile = v["tile"]
    tiles = WinogradTiles(conv, tile).tiles
    # a row of V and of M: the tiles, to a multiple of 4 floats
    gemm = GemmTiling(m=conv.co, n=-(-tiles // 4) * 4, k=conv.ci, block_m=v["block_co"], block_n=v["block_tiles"],
                      block_k=v["block_k"], warp_m=v["warp_co"], warp_n=v["warp_tiles"], thread_m=v["thread_co"],
                      thread_n=v["thread_tiles"], lanes_n=v["warp_lanes_n"], vector_a=v["vector_u"],
                      vector_b=v["vector_v"], pipeline=v["pipeline"], pad=v["smem_pad"], split_k=1,
                      unroll=v["unroll_k"])
    return NonfusedTiling(conv=conv, tile=tile, blocks_per_sm=v["blocks_per_sm"], gemm=gemm)

