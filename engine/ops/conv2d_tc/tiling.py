"""An NHWC convolution on tensor cores as an implicit GEMM (sm_80 and newer), fp32 accumulation.

Args as TVM writes an NHWC tensor-core conv, the weights KRSC ("OHWI": output channel, kernel
row, kernel column, input channel, as cuDNN's channels-last filters lie):

    [["TENSOR", [N, H, W, C], dtype], ["TENSOR", [K, R, S, C], dtype], [sh, sw], [pt, pl, pb, pr], [1, 1], dtype]

dtype float16 or bfloat16 for all three (the output is NHWC in the input's precision, as cuDNN
writes it). The GEMM view: M = N·P·Q output pixels, N = K output channels, GEMM K = R·S·C, so
C[pixel, k] = Σ A[pixel, (r, s, c)] · W[k, (r, s, c)]. A is never formed: a step's A tile is
gathered from the input by 16-byte cp.async copies of 8 channels (C is contiguous, so a copy
never straddles a kernel tap), zero-filled where the tap falls in the padding or past M or K;
B's tile is `block_n` rows of the KRSC weights (K-major: read by ldmatrix without .trans).
Everything after the copies is one of engine.ops.gemm_tc's mainloops (`mainloop`): mma.sync (its
ring of stages, ldmatrix fragments, m16n8k16 products and epilogue) or, on Hopper, wgmma with the
cp_async loader (the copies land in the 128B-swizzled rows its descriptors read: a pixel's row of A,
an output channel's of B, so B is K-major, the instruction's transpose bit clear; a producer
warpgroup and 1 or 2 consumers, as the GEMM's). So `ConvTcTiling` is a `GemmTcTiling` with the
gathered A and the K-major B. Its knobs are the GEMM's mma.sync ones less sliced K (split K, over a
thread block cluster, for layers of few tiles: 7x7 at batch 32 is 1568 pixels; either mainloop),
the epilogue's path (`ConvTcTiling.epilogue`), and wgmma's consumers, producer and deeper rings
(`ring`: its cp_async loader takes what the GEMM gives its TMA loader).

wgmma's `loader` tma (producer 1): the tensor memory accelerator gathers A itself, in im2col mode
(`im2col_map`): one copy a step brings the tile's block_m output pixels' input rows of the step's
64 channels at the step's filter tap, zeros in the padding and past the last image, straight into
the 128B-swizzled rows the descriptors read; B's rows are a tiled map's box of the weights as a
K x RSC matrix. One producer thread issues both, so no thread computes a gathered address (the
Nsight profile of 2026-12-03: the cp_async loaders issued 1.8-2.6x cuDNN's instructions). With
it, the GEMM's clusters (the blocks of neighbouring pixel tiles share B's rows by multicast),
persistent blocks and split K, and stream-K (`stream_k`: persistent blocks share every tile's K steps,
engine.ops.gemm_tc.tma). It takes C a multiple of 64 (a step is one tap's 64 channels). And the GEMM's
`swap_ab`: the transposed product out^T = W A^T from the same stages, the weights' rows the instruction's
A (64 output channels each) and the tile's pixels its N, so a tile may be 96 pixels (`block_m_extra`: 96 and
160-pixel tiles, which only the transposed product takes, and 192, one consumer's three m64 instructions too).
C and K must be multiples of 8 (a rule of the workload: the copies, and the output's pairs).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ...space import ConfigEntity
from ..args import tensor_shape
from ..base import BadArgs, Im2colTensorMap
from ..conv2d.tiling import ConvParams, conv_params
from ..gemm_tc.tiling import B_PAD_ELEMENTS, SWIZZLE_BYTES, WGMMA_MAX_N, GemmTcTiling
from ..gemm_tc.workload import COPY_BYTES, ELEMENT_BYTES

TEMPLATE_NAME = "conv2d_nhwc_tensorcore"
PRECISIONS = ("float16", "bfloat16")
CHANNELS_PER_COPY = COPY_BYTES // 2  # 8 16-bit channels


def nhwc_tensor(arg, what: str) -> tuple[list[int], str]:
    shape = tensor_shape(arg, what)
    if len(shape) != 4:
        raise BadArgs(f"{what} shape {shape} is not 4-D")
    if arg[2] not in PRECISIONS:
        raise BadArgs(f"{what} dtype {arg[2]!r} is not supported (float16 or bfloat16)")
    return shape, arg[2]


@dataclass(frozen=True)
class ConvTcParams:
    conv: ConvParams  # the geometry (its NCHW names: ci = C, co = K, kh = R, kw = S, oh = P, ow = Q)
    precision: str
    args: list = dataclasses.field(default_factory=list, compare=False, repr=False)

    @property
    def gemm_m(self) -> int:
        return self.conv.n * self.conv.oh * self.conv.ow

    @property
    def gemm_n(self) -> int:
        return self.conv.co

    @property
    def gemm_k(self) -> int:
        return self.conv.kh * self.conv.kw * self.conv.ci

    @property
    def data_shape(self) -> tuple[int, int, int, int]:
        c = self.conv
        return (c.n, c.h, c.w, c.ci)

    @property
    def kernel_shape(self) -> tuple[int, int, int, int]:
        c = self.conv
        return (c.co, c.kh, c.kw, c.ci)

    @property
    def out_shape(self) -> tuple[int, int, int, int]:
        c = self.conv
        return (c.n, c.oh, c.ow, c.co)

    @property
    def flops(self) -> int:
        return self.conv.flops

    @property
    def bytes_moved(self) -> int:
        """Input and weights read once, the output written once, all in the input precision."""
        elements = sum(a * b * c * d for a, b, c, d in (self.data_shape, self.kernel_shape, self.out_shape))
        return ELEMENT_BYTES[self.precision] * elements


def conv_tc_params(args: list) -> ConvTcParams:
    """The workload's params; BadArgs with the accepted form otherwise."""
    if not isinstance(args, list) or len(args) != 6:
        raise BadArgs(f"{TEMPLATE_NAME} args are [data NHWC, kernel KRSC, strides, padding, dilation, out_dtype]")
    (n, h, w, c), dtype = nhwc_tensor(args[0], "data")
    (k, r, s, kc), kernel_dtype = nhwc_tensor(args[1], "kernel")
    if kernel_dtype != dtype or args[5] != dtype:
        raise BadArgs(f"data {dtype!r}, kernel {kernel_dtype!r} and out_dtype {args[5]!r} must be one precision "
                      "(the output is written in the input's)")
    if kc != c:
        raise BadArgs(f"kernel has {kc} input channels, data has {c}")
    for what, size in (("C (input channels)", c), ("K (output channels)", k)):
        if size % CHANNELS_PER_COPY:
            raise BadArgs(f"{what} = {size} is not a multiple of {CHANNELS_PER_COPY} "
                          "(16-byte copies of 8 channels, and the output's channel pairs)")
    conv = conv_params([n, c, h, w], (r, s), k, args[2], args[3], args[4], args=args)
    return ConvTcParams(conv, dtype, list(args))


EPILOGUES = ("registers", "shared")
# wgmma: stages added to the stages knob's 2 to 5 (the `ring` knob; the GEMM's are its TMA loader's).
CONV_RINGS = (0, 2, 4)
# The output tile's rows in shared memory (epilogue "shared"): padded by 16 bytes, so the eight
# rows one warp's packed pairs land in start four banks apart (no conflicts).
TILE_PAD_ELEMENTS = 8
# Pixels added to block_m's (the block_m_extra knob, last so earlier configs keep their indexes): 96, 160
# and 192-pixel tiles, which the transposed product (swap_ab, the pixels its N) and one consumer's three m64
# instructions (192) can take. Each sum has one config: the extra is less than block_m, whose knob has
# the powers of two.
BLOCK_M_EXTRAS = (0, 32, 64)
# Clusters wider than the cluster knob's 2 blocks (the wide_cluster knob, last for the same reason): 0 keeps
# the cluster knob's size, 4 or 8 make a 2-block cluster that many blocks. cuDNN's pick on the 7x7 512->512
# 3x3 layer at batch 32 runs 128 x 64 tiles in 8-block clusters, a pixel tile's 8 channel tiles
# (docs/benchmarks/tensor-core-conv-h200.md, b4f399e); sharing A, each block brings an eighth of the pixels.
WIDE_CLUSTERS = (0, 4, 8)
# 4-D im2col tensor maps: the box's corners lie within [-128, 127] of the input's edges, and
# TMA steps by at most 8 elements along a dimension (cuTensorMapEncodeIm2col's limits).
IM2COL_CORNER_RANGE = 128
IM2COL_MAX_STRIDE = 8


@dataclass(frozen=True)
class ConvTcTiling(GemmTcTiling):
    """The GEMM tiling of the implicit GEMM, with the convolution it gathers A from.

    `epilogue`: "registers" stores each thread's accumulator pairs straight to the output (4-byte
    words, eight rows apart per warp); "shared" rounds them into a 16-bit tile in shared memory
    first and writes it out in whole 16-byte row pieces (coalesced rows). With split_k > 1 the
    cluster's sum stores its share itself (the epilogue knob stays "registers")."""

    conv: ConvParams | None = None
    epilogue: str = "registers"

    b_k_major = True
    cp_async_rings = True

    @property
    def b_stride(self) -> int:
        """Elements per row of B's staged [block_n][block_k] tile (block_k plus the pad)."""
        return self.block_k + B_PAD_ELEMENTS

    @property
    def stage_elements(self) -> int:
        return self.block_m * self.a_stride + self.block_n * self.b_stride

    @property
    def tile_stride(self) -> int:
        return self.block_n + TILE_PAD_ELEMENTS

    @property
    def shared_bytes(self) -> int:
        tile = self.block_m * self.tile_stride * self.element_bytes if self.epilogue == "shared" else 0
        return max(super().shared_bytes, tile)

    @property
    def a_box_rows(self) -> int:
        """tma: an im2col copy always brings block_m pixels (past the last image, zeros); sharing A,
        each block of the cluster brings its share of them into every block."""
        return self.block_m // self.a_sharers

    @property
    def im2col_corners(self) -> tuple[tuple[int, int], tuple[int, int]]:
        """The box the filter's top-left tap walks, (h, w) from the input's first row and column
        and from its last: from -padding to the last output pixel's corner."""
        c = self.conv
        top, left = c.padding[0], c.padding[1]
        lower = (-top, -left)
        upper = ((c.oh - 1) * c.stride[0] - top - (c.h - 1), (c.ow - 1) * c.stride[1] - left - (c.w - 1))
        return lower, upper

    def why_not_tiled(self) -> str | None:
        if self.wgmma and self.tma:
            reason = self._why_not_im2col()
            if reason:
                return reason
        if self.epilogue == "shared" and self.wgmma:
            return ("the wgmma mainloop's consumers store their rows in 16-byte pieces themselves: "
                    "it takes epilogue \"registers\"")
        if self.epilogue == "shared" and self.split_k > 1:
            return "with split_k the cluster's sum stores the output itself: epilogue \"shared\" is for split_k 1"
        return super().why_not_tiled()

    def _why_not_im2col(self) -> str | None:
        c = self.conv
        if c.ci % self.block_k:
            return (f"the tma loader's steps are one filter tap's {self.block_k} channels each (one im2col copy): "
                    f"C = {c.ci} is not a multiple of {self.block_k}")
        if max(c.stride) > IM2COL_MAX_STRIDE:
            return f"TMA walks pixels by strides of at most {IM2COL_MAX_STRIDE}, not {list(c.stride)}"
        if any(not -IM2COL_CORNER_RANGE <= x < IM2COL_CORNER_RANGE for corner in self.im2col_corners for x in corner):
            return (f"an im2col box's corners lie within {IM2COL_CORNER_RANGE} pixels of the input's edges "
                    f"(4-D tensor maps): this layer's are {self.im2col_corners}")
        return None

    def _why_not_multicast(self) -> str | None:
        """A cluster's blocks each load and multicast an equal share of B's rows (sharing A, of A's
        pixel rows), whole 1024-byte swizzle atoms (8 rows) each: in place of the GEMM's rule of whole
        64-column panels (its B is N-major), so a 64-channel tile parts in two."""
        rows, what = (self.block_m, "A's pixel") if self.shares_a else (self.block_n, "B's")
        if rows % (8 * self.cluster):
            return f"{what} {rows} rows do not part into whole 8-row atoms among a cluster of {self.cluster}"
        return None


def why_block_m_invalid(block_m: int, extra: int) -> str | None:
    """The block_m_extra knob's rule: each tile height one config, at most wgmma's 256 (its N, swapped)."""
    if extra and not extra < block_m <= WGMMA_MAX_N - extra:
        return (f"block_m_extra {extra} makes tiles of 96, 160 or 192 pixels from block_m 64 or 128 "
                f"(the others are block_m's own): not from block_m {block_m}")
    return None


def why_wide_cluster_invalid(tiling: ConvTcTiling, cluster: int, wide_cluster: int) -> str | None:
    """The wide_cluster knob's rules: it widens a 2-block cluster (so each cluster size is one config), and
    at least half of its blocks have a tile (the neighbouring channel tiles that share A, or pixel tiles B)."""
    if not wide_cluster:
        return None
    if cluster != 2:
        return (f"wide_cluster {wide_cluster} widens the cluster knob's 2-block cluster to {wide_cluster} blocks: "
                f"it takes cluster 2, not {cluster}")
    tiles, what = (tiling.tiles_n, "channel") if tiling.shares_a else (tiling.tiles_m, "pixel")
    if 2 * tiles <= wide_cluster:
        return (f"a cluster of {wide_cluster} blocks takes {wide_cluster} neighbouring {what} tiles, and this layer "
                f"has {tiles}: half of its blocks or more would have none")
    return None


def cluster_blocks(values: dict) -> int:
    """A config's blocks a cluster (its knob values by name): wide_cluster's where it widens one, else the cluster
    knob's."""
    return values["wide_cluster"] or values["cluster"]


def im2col_map(t: ConvTcTiling, symbol: str) -> Im2colTensorMap:
    """The tma loader's map of the input (argument 0): block_m pixels (a block's share) of 64 channels a copy."""
    lower, upper = t.im2col_corners
    c = t.conv
    return Im2colTensorMap(symbol, 0, (c.n, c.h, c.w, c.ci), lower, upper, c.stride, SWIZZLE_BYTES // t.element_bytes,
                           t.a_box_rows, t.element_bytes)


def conv_tc_tiling(params: ConvTcParams, config: ConfigEntity) -> ConvTcTiling:
    v = config.values()
    return ConvTcTiling(
        m=params.gemm_m, n=params.gemm_n, k=params.gemm_k, precision=params.precision,
        block_m=v["block_m"] + v["block_m_extra"], block_n=v["block_n"], block_k=v["block_k"],
        warp_m=v["warp_m"], warp_n=v["warp_n"], warps_k=1, stages=v["stages"] + v["ring"], raster=v["raster"], ring=v["ring"],
        split_k=v["split_k"], conv=params.conv, epilogue=v["epilogue"], c_dtype=params.precision,
        mainloop=v["mainloop"], consumers=v["consumers"], producer=v["producer"],
        loader=v["loader"], cluster=cluster_blocks(v), persistent=v["persistent"], stream_k=v["stream_k"],
        swap_ab=v["swap_ab"], cluster_shares=v["cluster_shares"],
    )
