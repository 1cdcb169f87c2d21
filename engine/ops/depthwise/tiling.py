"""The tiling of a depthwise NCHW conv2d config (TVM topi's `depthwise_conv2d_nchw.cuda`).

Args as in TVM's logs: [data TENSOR [N, C, H, W], kernel TENSOR [C, multiplier, KH, KW],
strides, padding, dilation, out_dtype]; output channel f reads input channel f // multiplier.
Knobs (TVM's order): tile_f, tile_y, tile_x split four ways (blocks, vthreads, threads,
inner) over C*multiplier, OH, OW; auto_unroll_max_step in [0, 256, 1500]; unroll_explicit.

There is no reduction split: a block stages its whole input window and its filters in
shared memory once (TVM's cache_read at the block's x axis):

    input tile  [cin, (by-1)*sh + KH, (bx-1)*sw + KW]   floats
    weight tile [bf, KH, KW]                             floats

where cin is the most input channels any block's bf output channels read
(bf / multiplier when the block starts on a channel boundary).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...columns import ConfigColumns, as_int
from ...space import ConfigEntity
from ..conv2d.tiling import ConvParams, ConvTiling


def input_channels_per_block(block_f, multiplier: int, blocks):
    """Most distinct input channels that `block_f` consecutive output channels read, over all
    blocks (ints, or arrays over many configs: the blocks past a config's own count skipped)."""
    def read(b):
        return (b * block_f + block_f - 1) // multiplier - (b * block_f) // multiplier + 1

    if not isinstance(block_f, np.ndarray):
        return max(read(b) for b in range(min(blocks, multiplier)))
    most = read(0)
    for b in range(1, min(int(np.max(blocks)), multiplier)):
        most = np.where(b < blocks, np.maximum(most, read(b)), most)
    return most


@dataclass(frozen=True)
class DepthwiseTiling(ConvTiling):
    multiplier: int = 1

    @property
    def input_tile(self) -> tuple[int, int, int]:
        _, rows, cols = super().input_tile
        return (input_channels_per_block(self.block_tile[0], self.multiplier, self.f[0]), rows, cols)


def depthwise_tiling(params: ConvParams, config: "ConfigEntity | ConfigColumns") -> DepthwiseTiling:
    return DepthwiseTiling(
        f=config["tile_f"].size, y=config["tile_y"].size, x=config["tile_x"].size,
        rc=(1, 1), ry=(1, params.kh), rx=(1, params.kw),
        batch=params.n, stride=params.stride,
        auto_unroll_max_step=as_int(config["auto_unroll_max_step"].val),
        unroll_explicit=as_int(config["unroll_explicit"].val),
        multiplier=params.multiplier,
    )
