"""Direct NCHW conv2d on CUDA: TVM topi's `conv2d_nchw.cuda` and `conv2d_no_batching`
of TVM's tutorial "Tuning High Performance Convolution on NVIDIA GPUs".

Both tasks share one space (TVM's knobs, in TVM's order), one set of
rules and one CUDA generator; they differ in how their args are spelled and in how many
ways the reduction axes are split (two in TVM's task, three in the tutorial's). The geometry
a config gives is `tiling.ConvTiling`.
"""
from __future__ import annotations

import numpy as np

from ...space import ConfigEntity, ConfigSpace, OtherKnob, SplitKnob
from ..base import BadArgs, DeviceLimits, KernelSource, Template, first_valid, why_launch_fails
from . import kernel
from .tiling import (ConvParams, TiledConvBatchPath, conv2d_tiling, conv_params, largest_divisor_at_most,
                     nchw_conv_params, spatial_features)

DEFAULT_THREADS = 128


class _DirectConv2d(TiledConvBatchPath, Template):
    """Space, rules, features and default shared by both direct conv2d tasks; the batch path is
    `conv2d_tiling` and `spatial_features` on columns (TiledConvBatchPath)."""

    baseline_provider = "cudnn"
    reduction_parts = 2
    legacy_swaps: tuple[tuple[str, str], ...] = ()
    unroll_steps = (0, 512, 1500)
    tiling = staticmethod(conv2d_tiling)

    def define_space(self, params: ConvParams) -> ConfigSpace:
        knobs = [
            SplitKnob("tile_f", params.co, 4),
            SplitKnob("tile_y", params.oh, 4),
            SplitKnob("tile_x", params.ow, 4),
            SplitKnob("tile_rc", params.ci, self.reduction_parts),
            SplitKnob("tile_ry", params.kh, self.reduction_parts),
            SplitKnob("tile_rx", params.kw, self.reduction_parts),
            OtherKnob("auto_unroll_max_step", list(self.unroll_steps)),
            OtherKnob("unroll_explicit", [0, 1]),
        ]
        return ConfigSpace(knobs, legacy_swaps=self.legacy_swaps)

    def why_invalid(self, params: ConvParams, config: ConfigEntity, limits: DeviceLimits) -> str | None:
        return why_launch_fails(conv2d_tiling(params, config).launch(), limits)

    def flops(self, params: ConvParams) -> int:
        return params.flops

    def bytes_moved(self, params: ConvParams) -> int:
        return params.bytes_moved

    def features(self, params: ConvParams, config: ConfigEntity) -> dict[str, float]:
        return spatial_features(params, config, conv2d_tiling(params, config), DeviceLimits())

    def default_config(self, params: ConvParams, space: ConfigSpace) -> ConfigEntity:
        """About DEFAULT_THREADS threads (x, then y, then f), 4 outputs of f per thread,
        8 input channels per shared-memory step, the whole kernel window per step."""
        tx = largest_divisor_at_most(params.ow, 16)
        ty = largest_divisor_at_most(params.oh, max(1, 64 // tx))
        tf = largest_divisor_at_most(params.co, max(1, min(64, DEFAULT_THREADS // (tx * ty))))
        fi = largest_divisor_at_most(params.co // tf, 4)
        step_rc = largest_divisor_at_most(params.ci, 8)
        middle = [1] * (self.reduction_parts - 2)
        entity = [
            ["tile_f", "sp", [-1, 1, tf, fi]],
            ["tile_y", "sp", [-1, 1, ty, 1]],
            ["tile_x", "sp", [-1, 1, tx, 1]],
            ["tile_rc", "sp", [-1, *middle, step_rc]],
            ["tile_ry", "sp", [-1, *middle, params.kh]],
            ["tile_rx", "sp", [-1, *middle, params.kw]],
            ["auto_unroll_max_step", "ot", 512],
            ["unroll_explicit", "ot", 1],
        ]
        return first_valid(space, space.from_entity(entity))

    # -- GPU half: the kernel stages exactly the tiles `conv2d_tiling` describes.
    def kernel(self, params: ConvParams, config: ConfigEntity) -> KernelSource:
        return kernel.generate(params, conv2d_tiling(params, config))

    def make_inputs(self, params: ConvParams, rng: np.random.Generator) -> list[np.ndarray]:
        return kernel.make_inputs(params, rng)

    def reference(self, params: ConvParams, inputs: list[np.ndarray]) -> np.ndarray:
        return kernel.reference(params, inputs[0], inputs[1])


class Conv2dNCHW(_DirectConv2d):
    """TVM topi's `conv2d_nchw.cuda` (schedule_direct_cuda); args as in its logs:
    [data TENSOR, kernel TENSOR [CO, CI, KH, KW], strides, padding, dilation, out_dtype]."""

    name = "conv2d_nchw.cuda"
    reduction_parts = 2
    # TVM's logs up to 2019 list tile_rx (splitting KH) before tile_ry (splitting KW);
    # by position that is today's tile_ry then tile_rx, which is how their indexes count.
    legacy_swaps = (("tile_ry", "tile_rx"),)

    def parse_args(self, args: list) -> ConvParams:
        return nchw_conv_params(self.name, args)


class Conv2dNoBatching(_DirectConv2d):
    """The seed tutorial's template: args [N, H, W, CO, CI, KH, KW, [sh, sw], [ph, pw]], N = 1,
    reduction axes split three ways (outer, middle, inner; a step stages middle x inner).

    The tutorial defines tile_ry on KH and tile_rx on KW but applies tile_rx to KH and
    tile_ry to KW; its kernels are square, so the two readings give the same spaces. Here
    tile_ry splits KH, as defined."""

    name = "conv2d_no_batching"
    reduction_parts = 3

    def parse_args(self, args: list) -> ConvParams:
        if not isinstance(args, list) or len(args) != 9:
            raise BadArgs(f"{self.name} args are [N, H, W, CO, CI, KH, KW, [sh, sw], [ph, pw]]")
        sizes = args[:7]
        if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in sizes):
            raise BadArgs(f"N, H, W, CO, CI, KH, KW {sizes} must be positive integers")
        n, h, w, co, ci, kh, kw = sizes
        if n != 1:
            raise BadArgs(f"{self.name} takes batch size N = 1 only, not {n}")
        return conv_params([n, ci, h, w], (kh, kw), co, args[7], args[8], 1, args=args)
