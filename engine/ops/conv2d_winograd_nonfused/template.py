"""NCHW fp32 3x3 stride-1 conv2d by Winograd's F(2x2, 3x3) or F(4x4, 3x3), unfused in one persistent kernel
(`tiling` says how)."""
from __future__ import annotations

from ...space import ConfigEntity, ConfigSpace, OtherKnob
from ..base import FLOAT_BYTES, DeviceLimits, KernelSource, first_valid, knob_features, launch_features
from ..conv2d.tiling import ConvParams
from ..conv2d_winograd.template import WinogradConv
from ..conv2d_winograd.tiling import TILES
from ..gemm.tiling import BLOCK_K_CHOICES, PIPELINES
from . import kernel
from .tiling import BLOCKS_PER_SM, TEMPLATE_NAME, NonfusedTiling, nonfused_tiling


class Conv2dNCHWWinogradNonfused(WinogradConv):
    """Unfused: the products' knobs are the fp32 GEMM's (M = CO, N = tiles, K = CI)."""

    name = TEMPLATE_NAME

    def define_space(self, params: ConvParams) -> ConfigSpace:
        return ConfigSpace([
            OtherKnob("tile", list(TILES)),
            OtherKnob("block_co", [16, 32, 64, 128]),
            OtherKnob("block_tiles", [16, 32, 64, 128]),
            OtherKnob("block_k", list(BLOCK_K_CHOICES)),
            OtherKnob("warp_co", [16, 32, 64]),
            OtherKnob("warp_tiles", [16, 32, 64, 128]),
            OtherKnob("thread_co", [1, 2, 4, 8]),
            OtherKnob("thread_tiles", [1, 2, 4, 8]),
            OtherKnob("warp_lanes_n", [2, 4, 8, 16]),
            OtherKnob("vector_u", [1, 2, 4]),
            OtherKnob("vector_v", [1, 2, 4]),
            OtherKnob("pipeline", list(PIPELINES)),
            OtherKnob("smem_pad", [0, 4]),
            OtherKnob("unroll_k", [1, 4, 32]),
            OtherKnob("blocks_per_sm", list(BLOCKS_PER_SM)),
        ])

    def tiling(self, params: ConvParams, config: ConfigEntity) -> NonfusedTiling:
        return nonfused_tiling(params, config)

    def why_tiling_does_not_fit(self, tiling: NonfusedTiling, limits: DeviceLimits) -> str | None:
        return tiling.why_not_resident(limits)

    def features(self, params: ConvParams, config: ConfigEntity) -> dict[str, float]:
        tiling = self.tiling(params, config)
        g = tiling.gemm
        out = knob_features(config)
        out.update({
            **launch_features(threads=tiling.threads, work_per_thread=g.accumulators, registers=tiling.registers,
                              shared_bytes=tiling.shared_bytes, grid=tiling.grid),
            "positions": tiling.positions,
            "tile_waste": tiling.row_tiles * g.block_m * tiling.column_tiles * g.block_n / (params.co * tiling.tiles),
            # the products' units a block takes, and how full its last round of them is
            "units_per_block": tiling.units / tiling.blocks,
            "last_round": tiling.units / tiling.blocks / -(-tiling.units // tiling.blocks),
            "k_steps": g.k_tiles,
            "stages": g.stages,
            "workspace_mb": FLOAT_BYTES * sum(tiling.workspace_floats.values()) / 2**20,
            # multiply-adds per float staged through shared memory, and per float a thread reads from it
            "block_intensity": g.block_m * g.block_n / (g.block_m + g.block_n),
            "thread_intensity": g.accumulators / (g.iter_m * g.thread_m + g.iter_n * g.thread_n),
        })
        return out

    def default_config(self, params: ConvParams, space: ConfigSpace) -> ConfigEntity:
        """F(4x4, 3x3) and the GEMM's textbook 64x64x8 tile (128 threads of 4x8 registers, register prefetch),
        two blocks a SM."""
        entity = [["tile", "ot", 4], ["block_co", "ot", 64], ["block_tiles", "ot", 64], ["block_k", "ot", 8],
                  ["warp_co", "ot", 32], ["warp_tiles", "ot", 32], ["thread_co", "ot", 4], ["thread_tiles", "ot", 8],
                  ["warp_lanes_n", "ot", 4], ["vector_u", "ot", 4 if params.ci % 4 == 0 else 1], ["vector_v", "ot", 4],
                  ["pipeline", "ot", "prefetch"], ["smem_pad", "ot", 4], ["unroll_k", "ot", 32],
                  ["blocks_per_sm", "ot", 2]]
        return first_valid(space, space.from_entity(entity))

    # -- GPU half
    def kernel(self, params: ConvParams, config: ConfigEntity) -> KernelSource:
        return kernel.generate(self.tiling(params, config))
