"""Depthwise NCHW conv2d on CUDA: TVM topi's `depthwise_conv2d_nchw.cuda` (see `tiling`)."""
from __future__ import annotations

import numpy as np

from ...space import ConfigEntity, ConfigSpace, OtherKnob, SplitKnob
from ..base import BadArgs, DeviceLimits, KernelSource, Template, first_valid, why_launch_fails
from ..conv2d.tiling import (ConvParams, TiledConvBatchPath, conv_params, largest_divisor_at_most, nchw_conv_tensors,
                             spatial_features)
from . import kernel
from .tiling import depthwise_tiling


class DepthwiseConv2dNCHW(TiledConvBatchPath, Template):
    """The batch path is `depthwise_tiling` and `spatial_features` on columns (TiledConvBatchPath)."""

    name = "depthwise_conv2d_nchw.cuda"
    baseline_provider = "cudnn"
    tiling = staticmethod(depthwise_tiling)

    def parse_args(self, args: list) -> ConvParams:
        data, (kc, multiplier, kh, kw) = nchw_conv_tensors(self.name, args)
        if kc != data[1]:
            raise BadArgs(f"kernel has {kc} channels, data has {data[1]} (kernel is [C, multiplier, KH, KW])")
        return conv_params(data, (kh, kw), kc * multiplier, args[2], args[3], args[4],
                           multiplier=multiplier, args=args)

    def define_space(self, params: ConvParams) -> ConfigSpace:
        return ConfigSpace([
            SplitKnob("tile_f", params.co, 4),
            SplitKnob("tile_y", params.oh, 4),
            SplitKnob("tile_x", params.ow, 4),
            OtherKnob("auto_unroll_max_step", [0, 256, 1500]),
            OtherKnob("unroll_explicit", [0, 1]),
        ])

    def why_invalid(self, params: ConvParams, config: ConfigEntity, limits: DeviceLimits) -> str | None:
        return why_launch_fails(depthwise_tiling(params, config).launch(), limits)

    def flops(self, params: ConvParams) -> int:
        return params.flops

    def features(self, params: ConvParams, config: ConfigEntity) -> dict[str, float]:
        return spatial_features(params, config, depthwise_tiling(params, config), DeviceLimits())

    def default_config(self, params: ConvParams, space: ConfigSpace) -> ConfigEntity:
        """About 128 threads (x up to 16, then y, then f), one output per thread."""
        tx = largest_divisor_at_most(params.ow, 16)
        ty = largest_divisor_at_most(params.oh, max(1, 64 // tx))
        tf = largest_divisor_at_most(params.co, max(1, min(64, 128 // (tx * ty))))
        entity = [
            ["tile_f", "sp", [-1, 1, tf, 1]],
            ["tile_y", "sp", [-1, 1, ty, 1]],
            ["tile_x", "sp", [-1, 1, tx, 1]],
            ["auto_unroll_max_step", "ot", 256],
            ["unroll_explicit", "ot", 1],
        ]
        return first_valid(space, space.from_entity(entity))

    def bytes_moved(self, params: ConvParams) -> int:
        return params.bytes_moved

    # -- GPU half: the kernel stages exactly the tiles `depthwise_tiling` describes.
    def kernel(self, params: ConvParams, config: ConfigEntity) -> KernelSource:
        return kernel.generate(params, depthwise_tiling(params, config))

    def make_inputs(self, params: ConvParams, rng: np.random.Generator) -> list[np.ndarray]:
        return kernel.make_inputs(params, rng)

    def reference(self, params: ConvParams, inputs: list[np.ndarray]) -> np.ndarray:
        return kernel.reference(params, inputs[0], inputs[1])
