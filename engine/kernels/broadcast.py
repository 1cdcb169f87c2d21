"""CUDA source for the NCHW broadcast of engine.templates.broadcast, per tactic and op.

Arguments: (x, v, out) for div and mul_rsqrt, (v, out) for exp and rsqrt. Each op
is written as a broadcast part `b = g(v[c])` and an element part `h(x, b)`; the
general tactic evaluates both per element, tile_broadcast evaluates g once per
thread. Division stays a true division in both, so both tactics compute the same
numbers.
"""
from __future__ import annotations

import numpy as np

from ..templates.broadcast import EPSILON, BroadcastLayout, BroadcastParams
from . import KernelSource

ENTRY = "broadcast_nchw_kernel"
_VECTOR_TYPE = {1: "float", 2: "float2", 4: "float4"}
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
    vt = _VECTOR_TYPE[width]
    lines = []
    if params.reads_x:
        lines.append(f"const {vt} xv = *reinterpret_cast<const {vt}*>(x + e);")
    lines.append(f"{vt} ov;")
    x_lanes, o_lanes = _lanes("xv", width), _lanes("ov", width)
    for lane in range(width):
        if broadcast is None:
            b = f"b{lane}"
            lines.append(f"const float {b} = {g.format(v=f'__ldg(v + ((e + {lane}) / {params.hw}) % {params.c})')};")
        else:
            b = broadcast
        lines.append(f"{o_lanes[lane]} = {h.format(x=x_lanes[lane] if params.reads_x else '', b=b)};")
    lines.append(f"*reinterpret_cast<{vt}*>(out + e) = ov;")
    return "\n                ".join(lines)


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
    once = f"const float b = {g.format(v='__ldg(v + c)')};  // once per thread"
    if layout.whole_planes:
        ppb = layout.planes_per_block
        return f"""
    const int c = blockIdx.y;
    {once}
#pragma unroll
    for (int k = 0; k < {ept}; ++k) {{
        const int n = (blockIdx.x * {ept} + k) * {ppb} + threadIdx.y;
        if (n < {p.n}) {{
                const long long e = ((long long)n * {p.c} + c) * {p.hw} + threadIdx.x * {vec};
                {_vector_body(p, vec, "b")}
        }}
    }}"""
    return f"""
    const int c = blockIdx.y, n = blockIdx.z;
    {once}
    const long long plane = ((long long)n * {p.c} + c) * {p.hw};
#pragma unroll
    for (int k = 0; k < {ept}; ++k) {{
        const int i = (blockIdx.x * {ept} + k) * {layout.threads} + threadIdx.x;
        if (i < {layout.plane_vectors}) {{
                const long long e = plane + (long long)i * {vec};
                {_vector_body(p, vec, "b")}
        }}
    }}"""


def generate(layout: BroadcastLayout) -> KernelSource:
    reason = layout.why_not()
    if reason:
        raise ValueError(reason)
    p = layout.params
    inputs = "const float* __restrict__ x, const float* __restrict__ v" if p.reads_x else "const float* __restrict__ v"
    code = f"""// broadcast_nchw {p.op}: [{p.n}, {p.c}, {p.h}, {p.w}] with v[{p.c}]
// tactic {layout.tactic} threads {layout.threads} elems_per_thread {layout.per_thread} vector {layout.vector}
extern "C" __global__ void __launch_bounds__({layout.block[0] * layout.block[1]})
{ENTRY}({inputs}, float* __restrict__ out)
{{{_body(layout)}
}}
"""
    names = ("x", "v", "out") if p.reads_x else ("v", "out")
    return KernelSource(name=ENTRY, code=code, grid=layout.grid, block=layout.block, shared_bytes=0,
                        arg_order=names, output_index=len(names) - 1)


def make_inputs(params: BroadcastParams, rng: np.random.Generator) -> list[np.ndarray]:
    """v in [0.5, 2) (positive: rsqrt and division stay finite); x in [-1, 1) where read."""
    shape = (params.n, params.c, params.h, params.w)
    v = rng.uniform(0.5, 2.0, size=params.c).astype(np.float32)
    out = np.empty(shape, dtype=np.float32)
    if params.reads_x:
        return [rng.uniform(-1.0, 1.0, size=shape).astype(np.float32), v, out]
    return [v, out]


def reference(params: BroadcastParams, inputs: list[np.ndarray]) -> np.ndarray:
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
