"""A direct NCHW convolution's params and the tiling a config gives it: one geometry that
the validity rules, the cost-model features and the CUDA generator all read.

The schedule (topi `schedule_direct_cuda`; the template of TVM's tutorial "Tuning High Performance Convolution on NVIDIA GPUs"): each output
axis f (CO), y (OH), x (OW) is split four ways, outer to inner, into
blocks x virtual threads x threads x per-thread inner extent, so a block computes
a (bf, by, bx) = (vf*tf*fi, vy*ty*yi, vx*tx*xi) output tile with tf*ty*tx threads,
each holding vf*fi * vy*yi * vx*xi accumulators. The reduction axes rc (CI), ry (KH),
rx (KW) are split 2 ways (3 in the tutorial's), outer first; each outer step stages in
shared memory, cooperatively:

    input tile  [src, (by-1)*sh + sry, (bx-1)*sw + srx]   floats
    weight tile [bf, src, sry, srx]                        floats

where (src, sry, srx) are the reduction extents inside one outer step (the product
of every part but the outer one). Shared memory per stage is 4 bytes times the two
tile sizes: `ConvTiling.shared_bytes`. The CUDA kernel stages exactly these tiles.
Launch: block = (tx, ty, tf), grid = (OW/bx, OH/by, N*CO/bf).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable

import numpy as np

from ...columns import ConfigColumns, as_int
from ...space import ConfigEntity
from ..args import as_padding, as_pair, conv2d_output_size, tensor_shape
from ..base import (FLOAT_BYTES, MAX_TENSOR_ELEMENTS, REFERENCE_THREAD_SLOTS, REGISTER_OVERHEAD, BadArgs,
                    DeviceLimits, LaunchShape, knob_features, launch_fails)


@dataclass(frozen=True)
class ConvParams:
    """A 2-D convolution, NCHW, float32. `multiplier` > 0 only for depthwise (CO = C * multiplier)."""

    n: int
    ci: int
    h: int
    w: int
    co: int
    kh: int
    kw: int
    stride: tuple[int, int]
    padding: tuple[int, int, int, int]  # top, left, bottom, right
    oh: int
    ow: int
    multiplier: int = 0
    args: list = field(default_factory=list, compare=False, repr=False)

    @property
    def data_shape(self) -> tuple[int, int, int, int]:
        return (self.n, self.ci, self.h, self.w)

    @property
    def kernel_shape(self) -> tuple[int, int, int, int]:
        """[CO, CI, KH, KW]; a depthwise filter bank is [C, multiplier, KH, KW]."""
        if self.multiplier:
            return (self.ci, self.multiplier, self.kh, self.kw)
        return (self.co, self.ci, self.kh, self.kw)

    @property
    def out_shape(self) -> tuple[int, int, int, int]:
        return (self.n, self.co, self.oh, self.ow)

    @property
    def bytes_moved(self) -> int:
        """Data and weights read once, output written once: the roofline's least traffic (a depthwise
        layer's few FLOPs a byte make it a matter of bandwidth as much as of GFLOPS)."""
        return FLOAT_BYTES * sum(math.prod(shape) for shape in (self.data_shape, self.kernel_shape, self.out_shape))

    @property
    def flops(self) -> int:
        """One multiply-add per output, input channel (one for depthwise) and window tap."""
        reduction = self.kh * self.kw * (1 if self.multiplier else self.ci)
        return 2 * self.n * self.co * self.oh * self.ow * reduction


def nchw_shape(arg, what: str) -> list[int]:
    shape = tensor_shape(arg, what)
    if len(shape) != 4:
        raise BadArgs(f"{what} shape {shape} is not 4-D (NCHW)")
    if arg[2] != "float32":
        raise BadArgs(f"{what} dtype {arg[2]!r} is not supported (only float32)")
    return shape


def nchw_conv_tensors(task_name: str, args: list) -> tuple[list[int], list[int]]:
    """The data and kernel shapes of args as TVM's NCHW convolutions write them: [data TENSOR,
    kernel TENSOR, strides, padding, dilation, out_dtype], all float32."""
    if not isinstance(args, list) or len(args) != 6:
        raise BadArgs(f"{task_name} args are [data, kernel, strides, padding, dilation, out_dtype]")
    data, kernel = nchw_shape(args[0], "data"), nchw_shape(args[1], "kernel")
    if args[5] != "float32":
        raise BadArgs(f"out_dtype {args[5]!r} is not supported (only float32)")
    return data, kernel


def nchw_conv_params(task_name: str, args: list) -> ConvParams:
    """`conv2d_nchw.cuda`'s args: data [N, CI, H, W], kernel [CO, CI, KH, KW]."""
    data, (co, kci, kh, kw) = nchw_conv_tensors(task_name, args)
    if kci != data[1]:
        raise BadArgs(f"kernel has {kci} input channels, data has {data[1]}")
    return conv_params(data, (kh, kw), co, args[2], args[3], args[4], args=args)


def conv_params(data: list[int], kernel_hw: tuple[int, int], co: int, stride, padding, dilation,
                multiplier: int = 0, args: list | None = None) -> ConvParams:
    """Check a convolution's geometry and work out its output size; BadArgs when unusable."""
    n, ci, h, w = data
    kh, kw = kernel_hw
    sh, sw = as_pair(stride, "strides")
    if sh < 1 or sw < 1:
        raise BadArgs(f"strides {stride!r} must be positive")
    pad = as_padding(padding)
    if min(pad) < 0:
        raise BadArgs(f"padding {padding!r} must not be negative")
    if as_pair(dilation, "dilation") != (1, 1):
        raise BadArgs(f"dilation {dilation!r} is not supported (only 1)")
    padded_h, padded_w = h + pad[0] + pad[2], w + pad[1] + pad[3]
    if kh > padded_h or kw > padded_w:
        raise BadArgs(f"kernel {kh}x{kw} is larger than the padded input {padded_h}x{padded_w}")
    oh = conv2d_output_size(h, kh, sh, pad[0], pad[2])
    ow = conv2d_output_size(w, kw, sw, pad[1], pad[3])
    for what, elements in (("data", n * ci * h * w), ("kernel", co * (ci if not multiplier else 1) * kh * kw),
                           ("output", n * co * oh * ow)):
        if elements > MAX_TENSOR_ELEMENTS:
            raise BadArgs(f"{what} would have {elements} elements, more than 2^31 - 1")
    return ConvParams(n, ci, h, w, co, kh, kw, (sh, sw), pad, oh, ow, multiplier, list(args or []))


def three_way(split: tuple[int, ...]) -> tuple[int, int, int]:
    """A reduction split as (outer, middle, inner): a 2-way split is (outer, inner, 1)."""
    return (split[0], split[1], 1) if len(split) == 2 else split  # type: ignore[return-value]


@dataclass(frozen=True)
class ConvTiling:
    """The launch and staging a direct-conv config implies (see the module docstring).

    The tiles rules and features read several times are computed once (`cached_property`):
    over a batch of configs each is a few numpy operations, repeated dozens of times a step."""

    f: tuple[int, int, int, int]  # blocks, vthreads, threads, inner
    y: tuple[int, int, int, int]
    x: tuple[int, int, int, int]
    rc: tuple[int, ...]  # outer first
    ry: tuple[int, ...]
    rx: tuple[int, ...]
    batch: int
    stride: tuple[int, int]
    auto_unroll_max_step: int = 0
    unroll_explicit: int = 0

    @property
    def block(self) -> tuple[int, int, int]:
        return (self.x[2], self.y[2], self.f[2])

    @property
    def grid(self) -> tuple[int, int, int]:
        return (self.x[0], self.y[0], self.batch * self.f[0])

    @property
    def threads(self) -> int:
        return self.f[2] * self.y[2] * self.x[2]

    @property
    def vthreads(self) -> int:
        return self.f[1] * self.y[1] * self.x[1]

    @cached_property
    def block_tile(self) -> tuple[int, int, int]:
        """Output extents (f, y, x) one block computes."""
        return (self.f[1] * self.f[2] * self.f[3], self.y[1] * self.y[2] * self.y[3], self.x[1] * self.x[2] * self.x[3])

    @cached_property
    def thread_tile(self) -> tuple[int, int, int]:
        """Output extents (f, y, x) one thread computes (vthreads folded in)."""
        return (self.f[1] * self.f[3], self.y[1] * self.y[3], self.x[1] * self.x[3])

    @property
    def accumulators(self) -> int:
        return math.prod(self.thread_tile)

    @cached_property
    def reduction_step(self) -> tuple[int, int, int]:
        """Reduction extents (rc, ry, rx) staged per outer step."""
        return (math.prod(self.rc[1:]), math.prod(self.ry[1:]), math.prod(self.rx[1:]))

    @property
    def outer_steps(self) -> int:
        return self.rc[0] * self.ry[0] * self.rx[0]

    @cached_property
    def input_tile(self) -> tuple[int, int, int]:
        src, sry, srx = self.reduction_step
        bf, by, bx = self.block_tile
        return (src, (by - 1) * self.stride[0] + sry, (bx - 1) * self.stride[1] + srx)

    @property
    def weight_tile(self) -> tuple[int, int, int, int]:
        return (self.block_tile[0], *self.reduction_step)

    @cached_property
    def stage_floats(self) -> int:
        """Floats of one shared-memory stage: the input tile and the weight tile."""
        return math.prod(self.input_tile) + math.prod(self.weight_tile)

    @property
    def shared_bytes(self) -> int:
        return FLOAT_BYTES * self.stage_floats

    @property
    def registers(self) -> int:
        """Accumulators, plus the inputs and weights one inner step reads, plus overhead."""
        tf, ty, tx = self.thread_tile
        return self.accumulators + tf + ty * tx + REGISTER_OVERHEAD

    def launch(self, detail: bool = True) -> LaunchShape:
        """The launch; `detail` off where no reason is written (features, a batch of configs)."""
        text = ("input tile {} + weight tile {} floats".format(
            "x".join(map(str, self.input_tile)), "x".join(map(str, self.weight_tile)))) if detail else ""
        return LaunchShape(self.block, self.grid, self.shared_bytes, self.registers, text)


def conv2d_tiling(params: ConvParams, config: "ConfigEntity | ConfigColumns") -> ConvTiling:
    """The tiling of one config, or of many at once (`ConfigColumns`: every field an array)."""
    return ConvTiling(
        f=config["tile_f"].size, y=config["tile_y"].size, x=config["tile_x"].size,
        rc=config["tile_rc"].size, ry=config["tile_ry"].size, rx=config["tile_rx"].size,
        batch=params.n, stride=params.stride,
        auto_unroll_max_step=as_int(config["auto_unroll_max_step"].val),
        unroll_explicit=as_int(config["unroll_explicit"].val),
    )


class TiledConvBatchPath:
    """The batch path of a template whose rules and features are its tiling's arithmetic (the direct
    and depthwise convs): `tiling(params, config)` on `ConfigColumns` gives the tilings of many
    configs at once, every field an array, so the per-config code runs unchanged on columns.
    Mixed in before `Template`: `class T(TiledConvBatchPath, Template)`, with `tiling` set."""

    has_batch_path = True
    tiling: Callable[[ConvParams, Any], ConvTiling]  # conv2d_tiling, depthwise_tiling (a staticmethod)

    def features_of_columns(self, params: ConvParams, columns: ConfigColumns) -> dict[str, np.ndarray]:
        return self.features(params, columns)

    def invalid_of_columns(self, params: ConvParams, columns: ConfigColumns, limits: DeviceLimits) -> np.ndarray:
        return launch_fails(self.tiling(params, columns).launch(detail=False), limits)


def largest_divisor_at_most(n: int, bound: int) -> int:
    return max(d for d in range(1, max(1, min(n, bound)) + 1) if n % d == 0)


def spatial_features(params: ConvParams, config: "ConfigEntity | ConfigColumns", tiling: ConvTiling,
                     limits: DeviceLimits) -> dict[str, float]:
    """Features both direct-conv templates and depthwise share: knobs, then launch shape, then
    intensity. Plain arithmetic, so it runs on one config or on `ConfigColumns` alike."""
    launch = tiling.launch(detail=False)
    warps = -(-tiling.threads // limits.warp_size)
    blocks = math.prod(launch.grid)
    staged_floats = tiling.shared_bytes / FLOAT_BYTES
    out = knob_features(config)
    out.update({
        "threads_per_block": tiling.threads,
        "warp_fill": tiling.threads / (warps * limits.warp_size),  # small blocks waste lanes
        "vthreads": tiling.vthreads,
        "work_per_thread": tiling.accumulators,
        "registers_estimate": tiling.registers,
        "shared_bytes": tiling.shared_bytes,
        "blocks": blocks,
        "waves": blocks * tiling.threads / REFERENCE_THREAD_SLOTS,
        "unroll_step": config["auto_unroll_max_step"].val,
        "unroll_explicit": config["unroll_explicit"].val,
        "reduction_step_rc": tiling.reduction_step[0],
        "reduction_step_ry": tiling.reduction_step[1],
        "reduction_step_rx": tiling.reduction_step[2],
        "outer_steps": tiling.outer_steps,
        # FLOPs per float staged through shared memory: the data reuse a tile buys.
        "arithmetic_intensity": params.flops / (blocks * tiling.outer_steps * staged_floats),
    })
    return out
