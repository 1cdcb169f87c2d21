"""Direct NCHW conv2d on CUDA: TVM topi's `conv2d_nchw.cuda` and the seed's `conv2d_no_batching`.

The schedule (topi `schedule_direct_cuda`, the seed tutorial's template): each output
axis f (CO), y (OH), x (OW) is split four ways, outer to inner, into
blocks x virtual threads x threads x per-thread inner extent, so a block computes
a (bf, by, bx) = (vf*tf*fi, vy*ty*yi, vx*tx*xi) output tile with tf*ty*tx threads,
each holding vf*fi * vy*yi * vx*xi accumulators. The reduction axes rc (CI), ry (KH),
rx (KW) are split 2 ways (3 in the seed), outer first; each outer step stages in
shared memory, cooperatively:

    input tile  [src, (by-1)*sh + sry, (bx-1)*sw + srx]   floats
    weight tile [bf, src, sry, srx]                        floats

where (src, sry, srx) are the reduction extents inside one outer step (the product
of every part but the outer one). Shared memory per block is 4 bytes times the two
tile sizes: `ConvTiling.shared_bytes`. The CUDA kernel stages exactly these tiles.
Launch: block = (tx, ty, tf), grid = (OW/bx, OH/by, N*CO/bf).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ..flops import FlopCountError, as_padding, as_pair, conv2d_output_size, tensor_shape
from ..space import ConfigEntity, ConfigSpace, OtherKnob, SplitKnob
from .base import (
    FLOAT_BYTES,
    MAX_TENSOR_ELEMENTS,
    REFERENCE_THREAD_SLOTS,
    REGISTER_OVERHEAD,
    BadArgs,
    DeviceLimits,
    LaunchShape,
    Template,
    first_valid,
    knob_features,
    why_launch_fails,
)

DEFAULT_THREADS = 128


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


def nchw_shape(arg, what: str) -> list[int]:
    shape = _as_bad_args(tensor_shape, arg, what)
    if len(shape) != 4:
        raise BadArgs(f"{what} shape {shape} is not 4-D (NCHW)")
    if arg[2] != "float32":
        raise BadArgs(f"{what} dtype {arg[2]!r} is not supported (only float32)")
    return shape


def _as_bad_args(parse, *value):
    """Run one of engine.flops' argument readers, reporting its complaint as BadArgs."""
    try:
        return parse(*value)
    except FlopCountError as exc:
        raise BadArgs(str(exc)) from None


def conv_params(data: list[int], kernel_hw: tuple[int, int], co: int, stride, padding, dilation,
                multiplier: int = 0, args: list | None = None) -> ConvParams:
    """Check a convolution's geometry and work out its output size; BadArgs when unusable."""
    n, ci, h, w = data
    kh, kw = kernel_hw
    sh, sw = _as_bad_args(as_pair, stride, "strides")
    if sh < 1 or sw < 1:
        raise BadArgs(f"strides {stride!r} must be positive")
    pad = _as_bad_args(as_padding, padding)
    if min(pad) < 0:
        raise BadArgs(f"padding {padding!r} must not be negative")
    if _as_bad_args(as_pair, dilation, "dilation") != (1, 1):
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


@dataclass(frozen=True)
class ConvTiling:
    """The launch and staging a direct-conv config implies (see the module docstring)."""

    f: tuple[int, int, int, int]  # blocks, vthreads, threads, inner
    y: tuple[int, int, int, int]
    x: tuple[int, int, int, int]
    rc: tuple[int, ...]  # outer first
    ry: tuple[int, ...]
    rx: tuple[int, ...]
    batch: int
    stride: tuple[int, int]

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

    @property
    def block_tile(self) -> tuple[int, int, int]:
        """Output extents (f, y, x) one block computes."""
        return (self.f[1] * self.f[2] * self.f[3], self.y[1] * self.y[2] * self.y[3], self.x[1] * self.x[2] * self.x[3])

    @property
    def thread_tile(self) -> tuple[int, int, int]:
        """Output extents (f, y, x) one thread computes (vthreads folded in)."""
        return (self.f[1] * self.f[3], self.y[1] * self.y[3], self.x[1] * self.x[3])

    @property
    def accumulators(self) -> int:
        return math.prod(self.thread_tile)

    @property
    def reduction_step(self) -> tuple[int, int, int]:
        """Reduction extents (rc, ry, rx) staged per outer step."""
        return (math.prod(self.rc[1:]), math.prod(self.ry[1:]), math.prod(self.rx[1:]))

    @property
    def outer_steps(self) -> int:
        return self.rc[0] * self.ry[0] * self.rx[0]

    @property
    def input_tile(self) -> tuple[int, int, int]:
        src, sry, srx = self.reduction_step
        bf, by, bx = self.block_tile
        return (src, (by - 1) * self.stride[0] + sry, (bx - 1) * self.stride[1] + srx)

    @property
    def weight_tile(self) -> tuple[int, int, int, int]:
        return (self.block_tile[0], *self.reduction_step)

    @property
    def shared_bytes(self) -> int:
        return FLOAT_BYTES * (math.prod(self.input_tile) + math.prod(self.weight_tile))

    @property
    def registers(self) -> int:
        """Accumulators, plus the inputs and weights one inner step reads, plus overhead."""
        tf, ty, tx = self.thread_tile
        return self.accumulators + tf + ty * tx + REGISTER_OVERHEAD

    def launch(self) -> LaunchShape:
        detail = ("input tile {} + weight tile {} floats".format(
            "x".join(map(str, self.input_tile)), "x".join(map(str, self.weight_tile))))
        return LaunchShape(self.block, self.grid, self.shared_bytes, self.registers, detail)


def conv2d_tiling(params: ConvParams, config: ConfigEntity) -> ConvTiling:
    return ConvTiling(
        f=config["tile_f"].size, y=config["tile_y"].size, x=config["tile_x"].size,
        rc=config["tile_rc"].size, ry=config["tile_ry"].size, rx=config["tile_rx"].size,
        batch=params.n, stride=params.stride,
    )


def largest_divisor_at_most(n: int, bound: int) -> int:
    return max(d for d in range(1, max(1, min(n, bound)) + 1) if n % d == 0)


def spatial_features(params: ConvParams, config: ConfigEntity, tiling: ConvTiling, flops: int,
                     limits: DeviceLimits) -> dict[str, float]:
    """Features both direct-conv templates share: knobs, then launch shape, then intensity."""
    launch = tiling.launch()
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
        "arithmetic_intensity": flops / (blocks * tiling.outer_steps * staged_floats),
    })
    return out


@lru_cache(maxsize=256)
def conv_flops(template: type[Template], params: ConvParams) -> int:
    """A convolution's FLOPs, counted once per (template, workload): `features` asks for every config."""
    return template().flops(params)


class _DirectConv2d(Template):
    """Space, rules, features and default shared by both direct conv2d tasks."""

    baseline_provider = "cudnn"
    reduction_parts = 2
    legacy_swaps: tuple[tuple[str, str], ...] = ()
    unroll_steps = (0, 512, 1500)

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

    def bytes_moved(self, params: ConvParams) -> int:
        """Data and weights read once, output written once: the roofline's least traffic."""
        data = params.n * params.ci * params.h * params.w
        weights = params.co * params.ci * params.kh * params.kw
        return FLOAT_BYTES * (data + weights + params.n * params.co * params.oh * params.ow)

    def features(self, params: ConvParams, config: ConfigEntity) -> dict[str, float]:
        return spatial_features(params, config, conv2d_tiling(params, config), conv_flops(type(self), params),
                                DeviceLimits())

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

    # -- GPU half: engine.kernels.conv2d generates the CUDA source that stages these tiles.
    def kernel(self, params: ConvParams, config: ConfigEntity):
        from ..kernels.conv2d import kernel_for

        return kernel_for(params, config)

    def make_inputs(self, params: ConvParams, rng: np.random.Generator) -> list[np.ndarray]:
        from ..kernels.conv2d import inputs_for

        return inputs_for(params, rng)

    def reference(self, params: ConvParams, inputs: list[np.ndarray]) -> np.ndarray:
        from ..kernels.conv2d import reference_for

        return reference_for(params, inputs)


class Conv2dNCHW(_DirectConv2d):
    """TVM topi's `conv2d_nchw.cuda` (schedule_direct_cuda); args as in its logs:
    [data TENSOR, kernel TENSOR [CO, CI, KH, KW], strides, padding, dilation, out_dtype]."""

    name = "conv2d_nchw.cuda"
    reduction_parts = 2
    # TVM's logs up to 2019 list tile_rx (splitting KH) before tile_ry (splitting KW);
    # by position that is today's tile_ry then tile_rx, which is how their indexes count.
    legacy_swaps = (("tile_ry", "tile_rx"),)

    def parse_args(self, args: list) -> ConvParams:
        if not isinstance(args, list) or len(args) != 6:
            raise BadArgs(f"{self.name} args are [data, kernel, strides, padding, dilation, out_dtype]")
        data = nchw_shape(args[0], "data")
        co, kci, kh, kw = nchw_shape(args[1], "kernel")
        if kci != data[1]:
            raise BadArgs(f"kernel has {kci} input channels, data has {data[1]}")
        if args[5] != "float32":
            raise BadArgs(f"out_dtype {args[5]!r} is not supported (only float32)")
        return conv_params(data, (kh, kw), co, args[2], args[3], args[4], args=args)


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
