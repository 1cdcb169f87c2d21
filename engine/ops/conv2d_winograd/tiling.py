"""A 3x3 stride-1 NCHW fp32 convolution by Winograd's minimal filtering F(2x2, 3x3), fused in one kernel.

Args are `conv2d_nchw.cuda`'s (engine.ops.conv2d), so the direct conv, the implicit GEMM and this tune the
same layers and each one's leaderboard links the others'. Lavin and Gray's algorithm ("Fast Algorithms
for Convolutional Neural Networks", 2015): the output is cut into 2x2 tiles, each read from a 4x4 input
patch (stride 2, overlapping by 2; zeros in the padding), and

    V = Bᵀ d B (the patch, adds only)     U = G g Gᵀ (each filter)     Y = Aᵀ [Σ_ci U ⊙ V] A

so a tile's 36 multiply-adds per input channel become the 16 of the element-wise product. Summed over
input channels, that product is 16 independent GEMMs, one per position p of the 4x4 transform:

    M_p[co, tile] = Σ_ci U_p[co, ci] · V_p[ci, tile]

A block owns `block_co` output channels by `block_tiles` tiles, and steps through the input channels
`chunk` at a time: its threads load the chunk's patches and filters, transform them (V and U, the filters
each block again: the workload's weights are its input) into shared memory as U[p][ci][co] and V[p][ci][tile],
then compute. The warps split the 16 positions among them, `positions` each, and within a position the
block tile as the SIMT GEMM does (warp tiles of `warp_co` x `warp_tiles`, lanes `32 / warp_lanes_n` by
`warp_lanes_n`, each with a contiguous register tile), so the multiply-adds are outer products from
shared memory, vector reads. At the end the accumulators meet in shared memory (M[p][co][tile]) and each
thread transforms whole tiles back (Y = Aᵀ M A) to the NCHW output. `pipeline` `prefetch` loads the next
chunk into registers while this one computes, into the other of two stages; `sync` loads, then computes.
A thread's patches and filters keep their tile and channel offsets, and the padding tests of their 16
taps, from chunk to chunk: they are worked out once, before the loop.

Cost: the filter transform is repeated by every column of blocks, and the patches overlap (16 reads
for 4 outputs); both stay off the multiply-adds' loop, once a chunk. F(2x2, 3x3) adds about an ulp per
transform: its error against the float64 reference stays near the direct conv's.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...space import ConfigEntity
from ..base import FLOAT_BYTES, REGISTER_OVERHEAD, BadArgs, LaunchShape
from ..conv2d.tiling import ConvParams, nchw_conv_params

TEMPLATE_NAME = "conv2d_nchw_winograd_fused"
PIPELINES = ("sync", "prefetch")
POSITIONS = 16  # of F(2x2, 3x3)'s 4x4 transform
TILE = 2  # outputs a side of a tile
PATCH = 4  # inputs a side of a patch
FILTER_TAPS = 9
REGISTER_TILE_SIDES = (1, 2, 4, 8)


def winograd_conv_params(args: list) -> ConvParams:
    conv = nchw_conv_params(TEMPLATE_NAME, args)
    if (conv.kh, conv.kw) != (3, 3) or conv.stride != (1, 1):
        raise BadArgs(f"{TEMPLATE_NAME} computes 3x3 convolutions of stride 1 (F(2x2, 3x3)), not "
                      f"{conv.kh}x{conv.kw} of stride {list(conv.stride)}: the direct and implicit-GEMM templates "
                      "take the others")
    return conv


@dataclass(frozen=True)
class WinogradTiling:
    conv: ConvParams
    block_co: int
    block_tiles: int
    chunk: int
    warp_co: int
    warp_tiles: int
    positions: int
    lanes_n: int
    pipeline: str

    @property
    def tiles_h(self) -> int:
        return -(-self.conv.oh // TILE)

    @property
    def tiles_w(self) -> int:
        return -(-self.conv.ow // TILE)

    @property
    def tiles(self) -> int:
        """2x2 output tiles of all images: the GEMMs' N."""
        return self.conv.n * self.tiles_h * self.tiles_w

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
        return self.warps_per_position_group * (POSITIONS // self.positions) * 32

    @property
    def accumulators(self) -> int:
        return self.positions * self.thread_co * self.thread_tiles

    @property
    def stages(self) -> int:
        return 2 if self.pipeline == "prefetch" else 1

    @property
    def u_floats(self) -> int:
        """U[p][ci][co] of one stage; V[p][ci][tile] follows it."""
        return POSITIONS * self.chunk * self.block_co

    @property
    def stage_floats(self) -> int:
        return POSITIONS * self.chunk * (self.block_co + self.block_tiles)

    @property
    def exchange_floats(self) -> int:
        """M[p][co][tile]: the accumulators of the block, where each thread finds its tiles' 16 positions."""
        return POSITIONS * self.block_co * self.block_tiles

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
        held = POSITIONS * self.patch_rounds + FILTER_TAPS * self.filter_rounds
        staged = held if self.pipeline == "prefetch" else POSITIONS  # sync: one patch at a time
        kept = 2 * self.patch_rounds + self.filter_rounds
        return self.accumulators + self.thread_co + self.thread_tiles + staged + kept + REGISTER_OVERHEAD

    def launch(self) -> LaunchShape:
        detail = (f"{self.stages} stage(s) of U {POSITIONS}x{self.chunk}x{self.block_co} + V {POSITIONS}x{self.chunk}x"
                  f"{self.block_tiles} floats, or the {POSITIONS}x{self.block_co}x{self.block_tiles} exchange")
        return LaunchShape((self.threads, 1, 1), self.grid, self.shared_bytes, self.registers, detail)

    def why_not_tiled(self) -> str | None:
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


def winograd_tiling(conv: ConvParams, config: ConfigEntity) -> WinogradTiling:
    v = config.values()
    return WinogradTiling(conv=conv, block_co=v["block_co"], block_tiles=v["block_tiles"], chunk=v["chunk"],
                          warp_co=v["warp_co"], warp_tiles=v["warp_tiles"], positions=v["positions"],
                          lanes_n=v["warp_lanes_n"], pipeline=v["pipeline"])
