"""CUDA source for the NCHW broadcast of engine.ops.broadcast, per tactic and op.

Arguments: (x, v, out) for div and mul_rsqrt, (v, out) for exp and rsqrt. Each op
is written as a broadcast part `b = g(v[c])` and an element part `h(x, b)`; the
general tactic evaluates both per element, tile_broadcast evaluates g once per
thread. Division stays a true division in both, so both tactics compute the same
numbers.

float16 tensors are raw 16-bit storage: loads and stores move 2, 4, 8 or 16 bytes of it,
each element is widened to float, computed in float and rounded once on the way out
(PTX `cvt`; NVRTC here has no cuda_fp16.h).
"""
from __future__ import annotations

import numpy as np

from ..base import KernelSource
from .tiling import EPSILON, BroadcastLayout, BroadcastParams

ENTRY = "broadcast_nchw_kernel"
_VECTOR_TYPE = {1: "float", 2: "float2", 4: "float4"}
# float16: the type that carries `vector` halves through one load or store.
_HALF_CARRIER = {1: "unsigned short", 2: "unsigned int", 4: "float2", 8: "float4"}
_HALF_HELPERS = r"""
#ifdef __CUDA_ARCH__
__device__ __forceinline__ float half_to_float(unsigned short h) {
    float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f;
}
__device__ __forceinline__ unsigned short float_to_half(float f) {
    unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h;
}
#endif
"""
# op -> (broadcast part of v, element part of x and b)
_PARTS = {
    "div": ("{v}", "{x} / {b}"),
    "mul_rsqrt": (f"rsqrtf({{v}} + {EPSILON!r}f)", "{x} * {b}"),
    "exp": ("expf({v})", "{b}"),
    "rsqrt": ("rsqrtf({v})", "{b}"),
}


def _lanes(name: str, width: int) -> list[str]:
    return [name] if width == 1 else [f"{name}.{c}" for c in "xyzw"[:width]]


def _vector_body(params: BroadcastParams, width: int, broadcast: str | None) -> str:
    """Compute and store the vector starting at flat element `e`.

    With `broadcast` (the name of a precomputed b) every lane uses it; without, each
    lane finds its channel and evaluates the broadcast part itself."""
    g, h = _PARTS[params.op]
    half = params.dtype == "float16"
    vt = _HALF_CARRIER[width] if half else _VECTOR_TYPE[width]
    lines = []
    if params.reads_x:
        lines.append(f"const {vt} xv = *reinterpret_cast<const {vt}*>(x + e);")
    lines.append(f"{vt} ov;")
    if half:
        x_lanes = [f"half_to_float(reinterpret_cast<const unsigned short*>(&xv)[{lane}])" for lane in range(width)]
        o_lanes = [f"reinterpret_cast<unsigned short*>(&ov)[{lane}]" for lane in range(width)]
    else:
        x_lanes, o_lanes = _lanes("xv", width), _lanes("ov", width)
    for lane in range(width):
        if broadcast is None:
            b = f"b{lane}"
            lines.append(f"const float {b} = {g.format(v=_load_v(params, f'((e + {lane}) / {params.hw}) % {params.c}'))};")
        else:
            b = broadcast
        value = h.format(x=x_lanes[lane] if params.reads_x else "", b=b)
        lines.append(f"{o_lanes[lane]} = {f'float_to_half({value})' if half else value};")
    lines.append(f"*reinterpret_cast<{vt}*>(out + e) = ov;")
    return "\n                ".join(lines)


def _load_v(params: BroadcastParams, index: str) -> str:
    load = f"__ldg(v + {index})"
    return f"half_to_float({load})" if params.dtype == "float16" else load


def _body(layout: BroadcastLayout) -> str:
    p, vec, ept = layout.params, layout.vector, layout.per_thread
    g, _ = _PARTS[p.op]
    if layout.tactic == "general":
        span = layout.threads * vec
        return f"""
    const long long first = (long long)blockIdx.x * {ept * span} + threadIdx.x * {vec};
#pragma unroll
    for (int k = 0; k < {ept}; ++k) {{
        const long long e = first + (long long)k * {span};
        if (e < {p.total}LL) {{
                {_vector_body(p, vec, None)}
        }}
    }}"""
    once = f"const float b = {g.format(v=_load_v(p, 'c'))};  // once per thread"
    if layout.whole_planes:
        ppb = layout.planes_per_block
        return f"""
    const int c = blockIdx.x;
    {once}
#pragma unroll
    for (int k = 0; k < {ept}; ++k) {{
        const int n = (blockIdx.y * {ept} + k) * {ppb} + threadIdx.y;
        if (n < {p.n}) {{
                const long long e = ((long long)n * {p.c} + c) * {p.hw} + threadIdx.x * {vec};
                {_vector_body(p, vec, "b")}
        }}
    }}"""
    # Channel c's planes as one axis of N x P vectors; P is a literal, so / and % are cheap.
    chunk, channel = ("blockIdx.x", "blockIdx.y") if layout.chunks_inside_planes else ("blockIdx.y", "blockIdx.x")
    return f"""
    const unsigned c = {channel};
    {once}
    const unsigned first = {chunk} * {layout.chunk_vectors}u + threadIdx.x;
#pragma unroll
    for (int k = 0; k < {ept}; ++k) {{
        const unsigned f = first + k * {layout.threads}u;
        if (f < {layout.channel_vectors}u) {{
                const unsigned n = f / {layout.plane_vectors}u, i = f % {layout.plane_vectors}u;
                const long long e = ((long long)n * {p.c} + c) * {p.hw} + (long long)i * {vec};
                {_vector_body(p, vec, "b")}
        }}
    }}"""


def generate(layout: BroadcastLayout) -> KernelSource:
    reason = layout.why_not()
    if reason:
        raise ValueError(reason)
    p = layout.params
    t = "unsigned short" if p.dtype == "float16" else "float"
    inputs = f"const {t}* __restrict__ x, const {t}* __restrict__ v" if p.reads_x else f"const {t}* __restrict__ v"
    dtype = "" if p.dtype == "float32" else f" {p.dtype}"
    helpers = _HALF_HELPERS if p.dtype == "float16" else ""
    code = f"""// broadcast_nchw {p.op}{dtype}: [{p.n}, {p.c}, {p.h}, {p.w}] with v[{p.c}]
// tactic {layout.tactic} threads {layout.threads} elems_per_thread {layout.per_thread} vector {layout.vector}
{helpers}extern "C" __global__ void __launch_bounds__({layout.block[0] * layout.block[1]})
{ENTRY}({inputs}, {t}* __restrict__ out)
{{{_body(layout)}
}}
"""
    names = ("x", "v", "out") if p.reads_x else ("v", "out")
    return KernelSource(name=ENTRY, code=code, grid=layout.grid, block=layout.block, shared_bytes=0,
                        arg_order=names, output_index=len(names) - 1)


def make_inputs(params: BroadcastParams, rng: np.random.Generator) -> list[np.ndarray]:
    """v in [0.5, 2) (positive: rsqrt and division stay finite); x in [-1, 1) where read."""
    shape = (params.n, params.c, params.h, params.w)
    dtype = np.dtype(params.dtype)
    v = rng.uniform(0.5, 2.0, size=params.c).astype(dtype)
    out = np.empty(shape, dtype=dtype)
    if params.reads_x:
        return [rng.uniform(-1.0, 1.0, size=shape).astype(dtype), v, out]
    return [v, out]


def reference(params: BroadcastParams, inputs: list[np.ndarray]) -> np.ndarray:
    exact = _exact(params, inputs)
    if params.dtype == "float16":  # what a kernel that rounds once can store
        return exact.astype(np.float16).astype(np.float64)
    return exact


def _exact(params: BroadcastParams, inputs: list[np.ndarray]) -> np.ndarray:
    v = inputs[-2].astype(np.float64)[None, :, None, None]
    shape = (params.n, params.c, params.h, params.w)
    if params.op == "exp":
        return np.broadcast_to(np.exp(v), shape).copy()
    if params.op == "rsqrt":
        return np.broadcast_to(1.0 / np.sqrt(v), shape).copy()
    x = inputs[0].astype(np.float64)
    if params.op == "div":
        return x / v
    return x / np.sqrt(v + EPSILON)
