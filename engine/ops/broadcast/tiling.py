"""NCHW broadcasts on CUDA with two tactics: CINN's general tiling and its TileBroadcastTactic.

Args: [["TENSOR", [N, C, H, W], dtype], op] with dtype float32 or float16 (x, v and out
all of it; fp16 is computed in fp32 and rounded once, as the fp16 models of Paddle CINN's TileBroadcastTactic pull request were) and op one of
    div        out[n,c,h,w] = x[n,c,h,w] / v[c]
    mul_rsqrt  out[n,c,h,w] = x[n,c,h,w] * rsqrt(v[c] + 1e-5)
    exp        out[n,c,h,w] = exp(v[c])
    rsqrt      out[n,c,h,w] = rsqrt(v[c])
(the first two read x and v, the last two only v; the tensor arg gives the output shape).

Knobs: `tactic`, `threads` (per block), `elems_per_thread`, `vector` (floats per load/store).

* general: every axis fused into one and tiled together; element e of the fused axis
  belongs to channel (e / HW) % C, so the broadcast value is loaded and computed again
  for every element (CINN's `exp(var[k * 256 + threadIdx.x])`). A block covers
  threads x elems_per_thread vectors, its threads striding by one vector each.
* tile_broadcast: C gets a block axis of its own, so a thread loads v[c] and computes
  its part of f once, then streams its elements. The tactic's rule: only when H x W is a
  multiple of 32. The tactic binds by the size of an H x W plane; here the plane is
  counted in vectors (P) against the block:
    - P < threads (the tactic's small binding, [(blockIdx.y, loop), blockIdx.x, threadIdx.x]):
      a block holds threads // P whole planes of one channel (threadIdx.y picks the
      plane), each thread taking elems_per_thread planes (n) in turn; blocks over
      (C, N chunks);
    - P >= threads: channel c's N planes fused into one axis of N x P vectors, cut into
      chunks of threads x elems_per_thread vectors (S). With S < P, blocks over
      (chunks, C): the tactic's large binding, [blockIdx.x', blockIdx.y, (blockIdx.x, loop,
      threadIdx.x)]. With S >= P, blocks over (C, chunks), so that neighbouring blocks
      write neighbouring planes: S = P is the tactic's medium binding (a block per (n, c)
      plane, looping over it); a larger S keeps blocks big where planes are short in
      vectors (fp16 32 x 32 planes are 128 vectors of 8).
  `elems_per_thread` beyond what N (or N x P) needs only repeats a smaller config, so
  such configs are ruled invalid.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ...space import ConfigEntity
from ..args import tensor_shape
from ..base import BadArgs, LaunchShape

TEMPLATE_NAME = "broadcast_nchw"
BINARY_OPS = ("div", "mul_rsqrt")
UNARY_OPS = ("exp", "rsqrt")
OPS = BINARY_OPS + UNARY_OPS
# FLOPs per output element: mul_rsqrt adds, takes the root and multiplies.
OP_FLOPS = {"div": 1, "mul_rsqrt": 3, "exp": 1, "rsqrt": 1}
EPSILON = 1e-5
ELEMENT_BYTES = {"float32": 4, "float16": 2}
# Elements per vector load/store; 16 bytes is the widest either way.
VECTOR_CHOICES = {"float32": [1, 2, 4], "float16": [1, 2, 4, 8]}
TILE_BROADCAST_MULTIPLE = 32  # the CINN tactic's condition on H x W
REGISTERS_ESTIMATE = 32  # a streaming kernel: indexes, one vector in, one out


def broadcast_shape(args: list) -> tuple[list[int], str]:
    if not isinstance(args, list) or len(args) != 2:
        raise BadArgs(f'broadcast_nchw args are [["TENSOR", [N, C, H, W], "float32"], op] with op in {", ".join(OPS)}')
    shape = tensor_shape(args[0], "x")
    if len(shape) != 4:
        raise BadArgs(f"x shape {shape} is not 4-D (NCHW)")
    if args[1] not in OPS:
        raise BadArgs(f"op {args[1]!r} is not one of {', '.join(OPS)}")
    return shape, args[1]


@dataclass(frozen=True)
class BroadcastParams:
    n: int
    c: int
    h: int
    w: int
    op: str
    dtype: str = "float32"
    args: list = field(default_factory=list, compare=False, repr=False)

    @property
    def element_bytes(self) -> int:
        return ELEMENT_BYTES[self.dtype]

    @property
    def hw(self) -> int:
        return self.h * self.w

    @property
    def total(self) -> int:
        return self.n * self.c * self.hw

    @property
    def flops(self) -> int:
        return self.total * OP_FLOPS[self.op]

    @property
    def reads_x(self) -> bool:
        return self.op in BINARY_OPS


@dataclass(frozen=True)
class BroadcastLayout:
    """Launch geometry of a config (see the module docstring)."""

    params: BroadcastParams
    tactic: str
    threads: int
    per_thread: int
    vector: int

    @property
    def plane_vectors(self) -> int:
        return self.params.hw // self.vector

    @property
    def whole_planes(self) -> bool:
        """tile_broadcast with planes smaller than a block: several whole planes per block."""
        return self.tactic == "tile_broadcast" and self.plane_vectors < self.threads

    @property
    def planes_per_block(self) -> int:
        return self.threads // self.plane_vectors

    @property
    def channel_vectors(self) -> int:
        """Vectors of one channel over all N planes: the fused axis of the P >= threads binding."""
        return self.params.n * self.plane_vectors

    @property
    def chunk_vectors(self) -> int:
        return self.threads * self.per_thread

    @property
    def chunks_inside_planes(self) -> bool:
        """P >= threads binding with chunks shorter than a plane: chunks go on blockIdx.x."""
        return self.chunk_vectors < self.plane_vectors

    @property
    def block(self) -> tuple[int, int, int]:
        if self.whole_planes:
            return (self.plane_vectors, self.planes_per_block, 1)
        return (self.threads, 1, 1)

    @property
    def grid(self) -> tuple[int, int, int]:
        p = self.params
        if self.tactic == "general":
            return (-(-p.total // (self.threads * self.per_thread * self.vector)), 1, 1)
        if self.whole_planes:
            return (p.c, -(-p.n // (self.planes_per_block * self.per_thread)), 1)
        chunks = -(-self.channel_vectors // self.chunk_vectors)
        return (chunks, p.c, 1) if self.chunks_inside_planes else (p.c, chunks, 1)

    @property
    def broadcast_evaluations(self) -> int:
        """How many times v[c] is loaded and f's broadcast part computed, over the launch."""
        if self.tactic == "general":
            return self.params.total
        return math.prod(self.block) * math.prod(self.grid)

    def launch(self) -> LaunchShape:
        return LaunchShape(self.block, self.grid, 0, REGISTERS_ESTIMATE)

    def why_not(self) -> str | None:
        p = self.params
        if self.tactic == "general":
            if p.total % self.vector:
                return f"vector {self.vector} does not divide N*C*H*W = {p.total}"
            return None
        if p.hw % TILE_BROADCAST_MULTIPLE:
            return (f"tile_broadcast needs H*W to be a multiple of {TILE_BROADCAST_MULTIPLE} (CINN's condition); "
                    f"H*W = {p.h}*{p.w} = {p.hw}")
        if self.per_thread > 1:
            if self.whole_planes and self.planes_per_block * (self.per_thread // 2) >= p.n:
                return (f"elems_per_thread {self.per_thread} gives each thread more planes than "
                        f"N = {p.n} needs with {self.planes_per_block} planes per block")
            if not self.whole_planes and self.threads * (self.per_thread // 2) >= self.channel_vectors:
                return (f"elems_per_thread {self.per_thread} is more than a channel's N*H*W of "
                        f"{self.channel_vectors} vectors needs with {self.threads} threads")
        return None


def broadcast_layout(params: BroadcastParams, config: ConfigEntity) -> BroadcastLayout:
    return BroadcastLayout(params, config["tactic"].val, config["threads"].val,
                           config["elems_per_thread"].val, config["vector"].val)
