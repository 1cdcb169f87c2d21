"""NCHW fp32 3x3 stride-1 conv2d by Winograd's F(2x2, 3x3) or F(4x4, 3x3), fused in one kernel (`tiling` says how)."""
from __future__ import annotations

import dataclasses
from abc import abstractmethod

import numpy as np

from ...space import ConfigEntity, ConfigSpace, OtherKnob
from ..base import (DeviceLimits, KernelSource, Template, first_valid, knob_features, launch_features,
                    why_launch_fails)
from ..conv2d import kernel as direct_kernel
from ..conv2d.tiling import ConvParams
from . import kernel
from .tiling import (PIPELINES, TEMPLATE_NAME, TILES, WinogradTiles, WinogradTiling, winograd_conv_params,
                     winograd_tiling)


class WinogradConv(Template):
    """What the Winograd templates share: `conv2d_nchw.cuda`'s workloads (3x3, stride 1), inputs, reference and
    cuDNN baseline, counted as the direct convolution's FLOPs, as cuDNN's own Winograd and FFT algorithms are,
    so the GFLOPS compare."""

    baseline_provider = "cudnn"

    def parse_args(self, args: list) -> ConvParams:
        return winograd_conv_params(args, self.name)

    def flops(self, params: ConvParams) -> int:
        return params.flops

    def bytes_moved(self, params: ConvParams) -> int:
        return params.bytes_moved

    def make_inputs(self, params: ConvParams, rng: np.random.Generator) -> list[np.ndarray]:
        return direct_kernel.make_inputs(params, rng)

    def reference(self, params: ConvParams, inputs: list[np.ndarray]) -> np.ndarray:
        return direct_kernel.reference(params, inputs[0], inputs[1])

    @abstractmethod
    def tiling(self, params: ConvParams, config: ConfigEntity) -> WinogradTiles:
        """The config's sizes (each template's tiling of the Winograd tiles)."""

    @abstractmethod
    def why_tiling_does_not_fit(self, tiling: WinogradTiles, limits: DeviceLimits) -> str | None:
        """Why a tiled, launchable config still does not fit (each template's own limit: registers, residency)."""

    def why_invalid(self, params: ConvParams, config: ConfigEntity, limits: DeviceLimits) -> str | None:
        tiling = self.tiling(params, config)
        reason = tiling.why_not_tiled()
        if reason:
            return reason
        # The kernel opts in to more than 48 KB of dynamic shared memory when it needs it.
        opted_in = dataclasses.replace(limits, max_shared_memory_per_block=limits.max_shared_memory_optin)
        return why_launch_fails(tiling.launch(), opted_in) or self.why_tiling_does_not_fit(tiling, limits)


class Conv2dNCHWWinograd(WinogradConv):
    """Fused: each block transforms its chunk of patches and filters, multiplies and transforms back."""

    name = TEMPLATE_NAME

    def define_space(self, params: ConvParams) -> ConfigSpace:
        return ConfigSpace([
            OtherKnob("tile", list(TILES)),
            OtherKnob("block_co", [16, 32, 64]),
            OtherKnob("block_tiles", [16, 32, 64]),
            OtherKnob("chunk", [4, 8, 16]),
            OtherKnob("warp_co", [8, 16, 32, 64]),
            OtherKnob("warp_tiles", [8, 16, 32, 64]),
            OtherKnob("warp_positions", [1, 2, 3, 4, 6, 8, 9]),
            OtherKnob("warp_lanes_n", [2, 4, 8, 16]),
            OtherKnob("pipeline", list(PIPELINES)),
        ])

    def tiling(self, params: ConvParams, config: ConfigEntity) -> WinogradTiling:
        return winograd_tiling(params, config)

    def why_tiling_does_not_fit(self, tiling: WinogradTiling, limits: DeviceLimits) -> str | None:
        return tiling.why_over_register_budget()

    def features(self, params: ConvParams, config: ConfigEntity) -> dict[str, float]:
        tiling = self.tiling(params, config)
        out = knob_features(config)
        out.update({
            **launch_features(threads=tiling.threads, work_per_thread=tiling.accumulators, registers=tiling.registers,
                              shared_bytes=tiling.shared_bytes, grid=tiling.grid),
            "tile_waste": tiling.grid[0] * tiling.block_tiles * tiling.grid[1] * tiling.block_co / (tiling.tiles * params.co),
            "chunks": tiling.chunks,
            # multiply-adds per float staged through shared memory, and per float a thread reads from it
            "block_intensity": tiling.block_co * tiling.block_tiles / (tiling.block_co + tiling.block_tiles),
            "thread_intensity": tiling.thread_co * tiling.thread_tiles / (tiling.thread_co + tiling.thread_tiles),
        })
        return out

    def default_config(self, params: ConvParams, space: ConfigSpace) -> ConfigEntity:
        """F(2x2, 3x3), 32 channels by 32 tiles, 8 warps of 2 positions, 4x8 registers a position, chunks of 8,
        prefetch."""
        entity = [["tile", "ot", 2], ["block_co", "ot", 32], ["block_tiles", "ot", 32], ["chunk", "ot", 8], ["warp_co", "ot", 32],
                  ["warp_tiles", "ot", 32], ["warp_positions", "ot", 2], ["warp_lanes_n", "ot", 4],
                  ["pipeline", "ot", "prefetch"]]
        return first_valid(space, space.from_entity(entity))

    # -- GPU half
    def kernel(self, params: ConvParams, config: ConfigEntity) -> KernelSource:
        return kernel.generate(self.tiling(params, config))



