"""A 3x3 stride-1 NCHW fp32 convolution by Winograd's minimal filtering F(m x m, 3x3), fused in one kernel.

Args are `conv2d_nchw.cuda`'s (engine.ops.conv2d), so the direct conv, the implicit GEMM and this tune the
same layers and each one's leaderboard links the others'. Lavin and Gray's algorithm ("Fast Algorithms
for Convolutional Neural Networks", 2015): the output is cut into m x m tiles (`tile` m = 2 or 4), each
read from an (m+2) x (m+2) input patch (patches overlap by 2; zeros in the padding), and

    V = Bᵀ d B (the patch)     U = G g Gᵀ (each filter)     Y = Aᵀ [Σ_ci U ⊙ V] A

so a tile's 9·m² multiply-adds per input channel become the (m+2)² of the element-wise product: 16 for
4 outputs at m = 2 (2.25 times fewer), 36 for 16 at m = 4 (4 times fewer, for larger transforms and a
larger rounding error, a few 1e-6 of the output's norm against F(2x2)'s 1e-7). Summed over input
channels, that product is (m+2)² independent GEMMs, one per position p of the transform:

    M_p[co, tile] = Σ_ci U_p[co, ci] · V_p[ci, tile]

A block owns `block_co` output channels by `block_tiles` tiles, and steps through the input channels
`chunk` at a time: its threads load the chunk's patches and filters, transform them (V and U, the filters
each block again: the workload's weights are its input) into shared memory as U[p][ci][co] and V[p][ci][tile],
then compute. The warps split the positions among them, `warp_positions` each, and within a position the
block tile as the SIMT GEMM does (warp tiles of `warp_co` x `warp_tiles`, lanes `32 / warp_lanes_n` by
`warp_lanes_n`, each with a contiguous register tile), so the multiply-adds are outer products from
shared memory, vector reads. At the end the accumulators meet in shared memory (M[p][co][tile]) and each
thread transforms whole tiles back (Y = Aᵀ M A) to the NCHW output. `pipeline` `prefetch` loads the next
chunk into registers while this one computes, into the other of two stages; `sync` loads, then computes.
A thread's patches and filters keep their tile and channel offsets, and the padding tests of their
taps, from chunk to chunk: they are worked out once, before the loop.

Cost: the filter transform is repeated by every column of blocks, and the patches overlap; both stay off
the multiply-adds' loop, once a chunk.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...space import ConfigEntity
from ..base import FLOAT_BYTES, REGISTER_OVERHEAD, BadArgs, LaunchShape, launch_register_budget
from ..conv2d.tiling import ConvParams, nchw_conv_params

TEMPLATE_NAME = "conv2d_nchw_winograd_fused"
PIPELINES = ("sync", "prefetch")
TILES = (2, 4)  # outputs a side of a tile: F(2x2, 3x3) and F(4x4, 3x3)
FILTER_TAPS = 9
REGISTER_TILE_SIDES = (1, 2, 4, 8)


def winograd_conv_params(args: list, template_name: str) -> ConvParams:
    """`conv2d_nchw.cuda`'s args, of a 3x3 stride-1 layer (BadArgs in `template_name`'s words otherwise)."""
    conv = nchw_conv_params(template_name, args)
    if (conv.kh, conv.kw) != (3, 3) or conv.stride != (1, 1):
        raise BadArgs(f"{template_name} computes 3x3 convolutions of stride 1 (F(m x m, 3x3)), not "
                      f"{conv.kh}x{conv.kw} of stride {list(conv.stride)}: the direct and implicit-GEMM templates "
                      "take the others")
    return conv


@dataclass(frozen=True)
class WinogradTiles:
    """A layer cut into F(m x m, 3x3)'s tiles (`tile` m), as both Winograd templates cut it (the unfused one's
    tiling, engine.ops.conv2d_winograd_nonfused, builds on this too)."""

    conv: ConvParams
    tile: int

    @property
    def patch(self) -> int:
        """Inputs a side of a tile's patch."""
        return self.tile + 2

    @property
    def positions(self) -> int:
        """Of the transform: the GEMMs."""
        return self.patch * self.patch

    @property
    def tiles_h(self) -> int:
        return -(-self.conv.oh // self.tile)

    @property
    def tiles_w(self) -> int:
        return -(-self.conv.ow // self.tile)

    @property
    def tiles(self) -> int:
        """Output tiles of all images: the GEMMs' N."""
        return self.conv.n * self.tiles_h * self.tiles_w


@dataclass(frozen=True)
class WinogradTiling(WinogradTiles):
    block_co: int
    block_tiles: int
    chunk: int
    warp_co: int
    warp_tiles: int
    warp_positions: int
    lanes_n: int
    pipeline: str

    @property
    def lanes_m(self) -> int:
        return 32 // self.lanes_n

    @property
    def thread_co(self) -> int:
        return self.warp_co // self.lanes_m

    @property
    def thread_tiles(self) -> int:
        return self.warp_tiles // self.lanes_n

    @property
    def warps_co(self) -> int:
        return self.block_co // self.warp_co

    @property
    def warps_tiles(self) -> int:
        return self.block_tiles // self.warp_tiles

    @property
    def warps_per_position_group(self) -> int:
        return self.warps_co * self.warps_tiles

    @property
    def threads(self) -> int:
        return self.warps_per_position_group * (self.positions // self.warp_positions) * 32

    @property
    def accumulators(self) -> int:
        return self.warp_positions * self.thread_co * self.thread_tiles

    @property
    def stages(self) -> int:
        return 2 if self.pipeline == "prefetch" else 1

    @property
    def u_floats(self) -> int:
        """U[p][ci][co] of one stage; V[p][ci][tile] follows it."""
        return self.positions * self.chunk * self.block_co

    @property
    def stage_floats(self) -> int:
        return self.positions * self.chunk * (self.block_co + self.block_tiles)

    @property
    def exchange_floats(self) -> int:
        """M[p][co][tile]: the accumulators of the block, where each thread finds its tiles' positions."""
        return self.positions * self.block_co * self.block_tiles

    @property
    def shared_bytes(self) -> int:
        return FLOAT_BYTES * max(self.stages * self.stage_floats, self.exchange_floats)

    @property
    def patch_rounds(self) -> int:
        """Rounds of the threads' (channel, tile) patches a chunk."""
        return -(-self.chunk * self.block_tiles // self.threads)

    @property
    def filter_rounds(self) -> int:
        """Rounds of the threads' (output channel, channel) filters a chunk."""
        return -(-self.block_co * self.chunk // self.threads)

    @property
    def chunks(self) -> int:
        return -(-self.conv.ci // self.chunk)

    @property
    def grid(self) -> tuple[int, int, int]:
        return (-(-self.tiles // self.block_tiles), -(-self.conv.co // self.block_co), 1)

    @property
    def registers(self) -> int:
        """Accumulators, a step's fragments, the patches and filters in flight, their kept offsets and tests."""
        held = self.positions * self.patch_rounds + FILTER_TAPS * self.filter_rounds
        kept = (2 + (self.positions > 32)) * self.patch_rounds + self.filter_rounds
        # the transforms' scratch: fitted to ptxas 13.0's counts (docs/benchmarks/conv2d-winograd-loop-mix.md)
        scratch = max(16, self.positions // 2)
        return self.accumulators + self.thread_co + self.thread_tiles + held + kept + scratch + REGISTER_OVERHEAD

    def launch(self) -> LaunchShape:
        p = self.positions
        detail = (f"{self.stages} stage(s) of U {p}x{self.chunk}x{self.block_co} + V {p}x{self.chunk}x"
                  f"{self.block_tiles} floats, or the {p}x{self.block_co}x{self.block_tiles} exchange")
        return LaunchShape((self.threads, 1, 1), self.grid, self.shared_bytes, self.registers, detail)

    def why_not_tiled(self) -> str | None:
        if self.positions % self.warp_positions:
            return f"warp_positions {self.warp_positions} does not divide F({self.tile}x{self.tile}, 3x3)'s {self.positions}"
        if self.block_co % self.warp_co or self.block_tiles % self.warp_tiles:
            return (f"warp tile {self.warp_co}x{self.warp_tiles} does not divide block tile "
                    f"{self.block_co}x{self.block_tiles}")
        if self.warp_co % self.lanes_m or self.warp_tiles % self.lanes_n:
            return (f"a warp's lanes ({self.lanes_m}x{self.lanes_n}) do not divide its tile "
                    f"{self.warp_co}x{self.warp_tiles}")
        if self.thread_co not in REGISTER_TILE_SIDES or self.thread_tiles not in REGISTER_TILE_SIDES:
            return (f"a lane's register tile {self.thread_co}x{self.thread_tiles} must have sides among "
                    f"{list(REGISTER_TILE_SIDES)}")
        return None

    def why_over_register_budget(self) -> str | None:
        budget = launch_register_budget(self.threads)
        if self.registers > budget:
            return (f"a thread needs about {self.registers} registers, more than the {budget} a block of "
                    f"{self.threads} threads leaves it (ptxas budgets whole warpgroups)")
        return None


def winograd_tiling(conv: ConvParams, config: ConfigEntity) -> WinogradTiling:
    v = config.values()
    return WinogradTiling(conv=conv, tile=v["tile"], block_co=v["block_co"], block_tiles=v["block_tiles"],
                          chunk=v["chunk"], warp_co=v["warp_co"], warp_tiles=v["warp_tiles"],
                          warp_positions=v["warp_positions"], lanes_n=v["warp_lanes_n"], pipeline=v["pipeline"])
