"""Implicit-GEMM NHWC conv2d on tensor cores (fp16, bf16; fp32 accumulation), `tiling` says how."""
from __future__ import annotations

import numpy as np

from ...space import ConfigEntity, ConfigSpace, OtherKnob
from ..base import DeviceLimits, KernelSource, Template, first_valid
from ..gemm_tc.kernel import TOLERANCE
from ..gemm_tc.template import drawn_on, tiling_features, why_tiling_invalid
from ..gemm_tc.tiling import CLUSTER_SHARES, CLUSTERS, LOADERS, MAINLOOPS, SWAP_AB
from . import kernel
from .tiling import (BLOCK_M_EXTRAS, CONV_RINGS, EPILOGUES, TEMPLATE_NAME, WIDE_CLUSTERS, ConvTcParams, conv_tc_params,
                     conv_tc_tiling, why_block_m_invalid, why_wide_cluster_invalid)


# Each mainloop's configs leave the other's knobs at one value (the tiling's rules), so random
# draws keep them there (engine.ops.gemm_tc.template's mainloop_pins says why): wgmma stages
# one 128-byte row of K and stores its rows itself; the deeper rings and the TMA loader are its alone
# (split K is both's). Draws keep cluster_shares at b on wgmma too, as the GEMM's do (its mainloop_pins says why),
# and clusters at the cluster knob's size.
MAINLOOP_PINS = ("mainloop", {
    "mma_sync": {"consumers": 1, "producer": 0, "ring": 0, "loader": "cp_async", "cluster": 1, "persistent": 0,
                 "stream_k": 0, "swap_ab": 0, "cluster_shares": CLUSTER_SHARES[0], "wide_cluster": 0},
    "wgmma": {"block_k": 64, "warp_m": 16, "warp_n": 16, "epilogue": "registers", "cluster_shares": CLUSTER_SHARES[0],
              "wide_cluster": 0},
})


class Conv2dNHWCTensorCore(Template):
    name = TEMPLATE_NAME
    baseline_provider = "cudnn"

    def parse_args(self, args: list) -> ConvTcParams:
        return conv_tc_params(args)

    def define_space(self, params: ConvTcParams) -> ConfigSpace:
        return ConfigSpace([
            OtherKnob("block_m", [32, 64, 128, 256]),
            OtherKnob("block_n", [32, 64, 128, 256]),
            OtherKnob("block_k", [16, 32, 64]),
            OtherKnob("warp_m", [16, 32, 64]),
            OtherKnob("warp_n", [16, 32, 64]),
            OtherKnob("stages", [2, 3, 4, 5]),
            OtherKnob("raster", [1, 4, 8, 16]),
            OtherKnob("epilogue", list(EPILOGUES)),
            OtherKnob("split_k", [1, 2, 4, 8]),
            # Added after the mma.sync records: last, their first value the old kernel's, so every
            # earlier config keeps its index and every earlier log loads.
            OtherKnob("mainloop", list(MAINLOOPS), default="mma_sync"),
            OtherKnob("consumers", [1, 2], default=1),
            OtherKnob("producer", [0, 1], default=0),
            # After producer, for the same reason: stages added to `stages`, so wgmma's copies keep
            # more of a step's gathered rows in flight (its stages are 16-48 KB of shared memory's 227).
            OtherKnob("ring", list(CONV_RINGS), default=0),
            # After ring, for the same reason: the TMA producer (A by im2col, B by tiled boxes) and its
            # schedules, the GEMM's knobs of the same names.
            OtherKnob("loader", list(LOADERS), default="cp_async"),
            OtherKnob("cluster", list(CLUSTERS), default=1),
            OtherKnob("persistent", [0, 1], default=0),
            # After persistent, for the same reason: the persistent blocks' even shares of every tile's
            # K steps (stream-K), for the layers whose tiles leave SMs idle (98-104 tiles on 132).
            OtherKnob("stream_k", [0, 1], default=0),
            # After stream_k, for the same reason: the transposed product (out^T = W A^T), whose tile of
            # pixels is the instruction's N, so it may be 96 pixels (block_m_extra): a 14x14 layer at
            # batch 32 is 6272 pixels, 66 tiles of 96 by two of 128 channels, one tile per SM of 132.
            OtherKnob("swap_ab", list(SWAP_AB), default=0),
            OtherKnob("block_m_extra", list(BLOCK_M_EXTRAS), default=0),
            # After block_m_extra, for the same reason: what a cluster's blocks share, B's rows (neighbouring
            # pixel tiles) or A's (neighbouring channel tiles: cuDNN's 14x14 1x1 kernel, whose 2-block
            # clusters read each pixel row once for both 128-channel tiles).
            OtherKnob("cluster_shares", list(CLUSTER_SHARES), default=CLUSTER_SHARES[0]),
            # After cluster_shares, for the same reason: clusters of 4 or 8 blocks (engine.ops.conv2d_tc.tiling's
            # WIDE_CLUSTERS says why).
            OtherKnob("wide_cluster", list(WIDE_CLUSTERS), default=0),
        ], pins=MAINLOOP_PINS)

    def space_on(self, params: ConvTcParams, limits: DeviceLimits) -> ConfigSpace:
        return drawn_on(self.define_space(params), limits)

    def why_invalid(self, params: ConvTcParams, config: ConfigEntity, limits: DeviceLimits) -> str | None:
        tiling = conv_tc_tiling(params, config)
        return (why_block_m_invalid(config["block_m"].val, config["block_m_extra"].val)
                or why_wide_cluster_invalid(tiling, config["cluster"].val, config["wide_cluster"].val)
                or why_tiling_invalid(tiling, limits))

    def features(self, params: ConvTcParams, config: ConfigEntity) -> dict[str, float]:
        return tiling_features(conv_tc_tiling(params, config), config)

    def default_config(self, params: ConvTcParams, space: ConfigSpace) -> ConfigEntity:
        """128 pixels by 64 output channels (a ResNet stage's narrowest), 32-deep steps, four
        warps of 64x32, three stages: CUTLASS's Ampere implicit-GEMM tile, narrowed for 64 channels."""
        entity = [
            ["block_m", "ot", 128], ["block_n", "ot", 64], ["block_k", "ot", 32],
            ["warp_m", "ot", 64], ["warp_n", "ot", 32], ["stages", "ot", 3], ["raster", "ot", 1],
            ["epilogue", "ot", "registers"], ["split_k", "ot", 1],
        ]
        return first_valid(space, space.from_entity(entity))

    def flops(self, params: ConvTcParams) -> int:
        return params.flops

    def bytes_moved(self, params: ConvTcParams) -> int:
        return params.bytes_moved

    # -- GPU half
    def kernel(self, params: ConvTcParams, config: ConfigEntity) -> KernelSource:
        return kernel.generate(conv_tc_tiling(params, config))

    def make_inputs(self, params: ConvTcParams, rng: np.random.Generator) -> list[np.ndarray]:
        return kernel.make_inputs(params, rng)

    def reference(self, params: ConvTcParams, inputs: list[np.ndarray]) -> np.ndarray:
        return kernel.reference(params, inputs[0], inputs[1])

    def tolerance(self, params: ConvTcParams) -> float:
        return TOLERANCE[params.precision]

