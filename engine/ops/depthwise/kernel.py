"""CUDA source for depthwise NCHW convolution (`depthwise_conv2d_nchw.cuda`), from a config.

The schedule is the one engine.ops.depthwise.tiling describes (TVM topi's
depthwise schedule): output axes f (C x multiplier), y (OH), x (OW) split four
ways (block, virtual thread, thread, inner), blocks on blockIdx.z/y/x (batch
folded into z), threads on threadIdx.z/y/x, each thread holding vthread x inner
outputs of each axis in registers at TVM's placement (as engine.ops.conv2d.kernel).
There is no reduction split: a block stages, once, its whole input window of
the `cin` input channels its `bf` output channels read (halo, stride and zero
padding included) and its `bf` filters, then every thread runs the KH x KW
window over them. Output channel f reads input channel f // multiplier.

`auto_unroll_max_step` and `unroll_explicit` set the pragmas of the kernel
window loops (kh, then kw) as engine.ops.conv2d.kernel counts them.
"""
from __future__ import annotations

import numpy as np

from ..base import KernelSource
from ..conv2d.tiling import ConvParams
from ..cuda import COPY_HELPERS, cooperative_load, store_outputs, unroll_pragma
from .tiling import DepthwiseTiling

ENTRY = "depthwise_conv2d_nchw_kernel"


def _window_pragmas(kh: int, kw: int, tile_steps: int, max_step: int, explicit: int) -> tuple[str, str]:
    """Pragmas of the kh and kw loops: unrolled from the innermost out while
    (extent x steps inside) stays within `auto_unroll_max_step` (TVM's count)."""
    unroll_kw = max_step > 0 and kw * tile_steps <= max_step
    unroll_kh = unroll_kw and kh * kw * tile_steps <= max_step
    return unroll_pragma(unroll_kh, explicit), unroll_pragma(unroll_kw, explicit)


def generate(params: ConvParams, tiling: DepthwiseTiling) -> KernelSource:
    p = params
    (_, vf, tf, fi), (_, vy, ty, yi), (_, vx, tx, xi) = tiling.f, tiling.y, tiling.x
    nf, ny, nx = vf * fi, vy * yi, vx * xi
    bf, by, bx = tiling.block_tile
    cin, th, tw = tiling.input_tile
    sh, sw = p.stride
    top, left = p.padding[0], p.padding[1]
    f_blocks = tiling.f[0]
    threads = tiling.threads
    input_floats = cin * th * tw
    weight_floats = bf * p.kh * p.kw
    pragma_kh, pragma_kw = _window_pragmas(p.kh, p.kw, nf * ny * nx, tiling.auto_unroll_max_step,
                                           tiling.unroll_explicit)

    load_input = cooperative_load(
        input_floats, threads,
        f"const int c = i / {th * tw}, r = (i / {tw}) % {th}, q = i % {tw};\n"
        f"        const int iy = iy0 + r, ix = ix0 + q;\n"
        f"        const bool inside = c_lo + c < {p.ci} && (unsigned)iy < {p.h}u && (unsigned)ix < {p.w}u;\n"
        f"        copy4(&s_in[i], inside ? in_base + (c_lo + c) * {p.h * p.w} + iy * {p.w} + ix : in_base, inside);",
    )
    load_weight = cooperative_load(weight_floats, threads, "copy4(&s_w[i], w_base + i, true);")
    code = f"""// depthwise conv2d NCHW fp32: data [{p.n}, {p.ci}, {p.h}, {p.w}], multiplier {p.multiplier},
// kernel {p.kh}x{p.kw}, stride {list(p.stride)}, padding {list(p.padding)}, out [{p.n}, {p.co}, {p.oh}, {p.ow}]
// tile_f {tiling.f} tile_y {tiling.y} tile_x {tiling.x}
{COPY_HELPERS}
extern "C" __global__ void __launch_bounds__({threads})
{ENTRY}(const float* __restrict__ data, const float* __restrict__ weight, float* __restrict__ out)
{{
    extern __shared__ float smem[];
    float* s_in = smem;
    float* s_w = smem + {input_floats};
    const int tx = threadIdx.x, ty = threadIdx.y, tz = threadIdx.z;
    const int tid = (tz * {ty} + ty) * {tx} + tx;
    const int n = blockIdx.z / {f_blocks};
    const int f0 = (blockIdx.z % {f_blocks}) * {bf};
    const int c_lo = f0 / {p.multiplier};
    const int y0 = blockIdx.y * {by}, x0 = blockIdx.x * {bx};
    const int iy0 = y0 * {sh} - {top}, ix0 = x0 * {sw} - {left};
    const float* in_base = data + n * {p.ci * p.h * p.w};
    const float* w_base = weight + f0 * {p.kh * p.kw};

    {load_input}
    {load_weight}
    copy_commit();
    copy_wait_all();
    __syncthreads();

    float acc[{nf}][{ny}][{nx}];
#pragma unroll
    for (int a = 0; a < {nf}; ++a)
#pragma unroll
        for (int b = 0; b < {ny}; ++b)
#pragma unroll
            for (int d = 0; d < {nx}; ++d) acc[a][b][d] = 0.0f;

{pragma_kh}
    for (int ky = 0; ky < {p.kh}; ++ky) {{
{pragma_kw}
    for (int kx = 0; kx < {p.kw}; ++kx) {{
#pragma unroll
        for (int a = 0; a < {nf}; ++a) {{
            const int fl = (a / {fi}) * {tf * fi} + tz * {fi} + a % {fi};
            const float w = s_w[(fl * {p.kh} + ky) * {p.kw} + kx];
            const float* plane = s_in + ((f0 + fl) / {p.multiplier} - c_lo) * {th * tw};
#pragma unroll
            for (int b = 0; b < {ny}; ++b) {{
                const int yl = (b / {yi}) * {ty * yi} + ty * {yi} + b % {yi};
#pragma unroll
                for (int d = 0; d < {nx}; ++d) {{
                    const int xl = (d / {xi}) * {tx * xi} + tx * {xi} + d % {xi};
                    acc[a][b][d] = fmaf(plane[(yl * {sh} + ky) * {tw} + xl * {sw} + kx], w, acc[a][b][d]);
                }}
            }}
        }}
    }}}}

{store_outputs(p.co, p.oh, p.ow, (nf, ny, nx), (fi, yi, xi), (tf, ty, tx))}}}
"""
    return KernelSource(
        name=ENTRY,
        code=code,
        grid=tiling.grid,
        block=tiling.block,
        shared_bytes=4 * (input_floats + weight_floats),
        arg_order=("data", "kernel", "output"),
        output_index=2,
    )


def make_inputs(params: ConvParams, rng: np.random.Generator) -> list[np.ndarray]:
    """Random data and filters [C, multiplier, KH, KW] (never zeros), plus the output buffer."""
    data = rng.uniform(-1.0, 1.0, size=(params.n, params.ci, params.h, params.w)).astype(np.float32)
    weight = rng.uniform(-1.0, 1.0, size=(params.ci, params.multiplier, params.kh, params.kw)).astype(np.float32)
    return [data, weight, np.empty((params.n, params.co, params.oh, params.ow), dtype=np.float32)]


def reference(params: ConvParams, data: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """The depthwise convolution in float64, one kernel tap at a time."""
    p = params
    top, left, bottom, right = p.padding
    padded = np.zeros((p.n, p.ci, p.h + top + bottom, p.w + left + right), dtype=np.float64)
    padded[:, :, top:top + p.h, left:left + p.w] = data
    # Output channel f reads input channel f // multiplier: repeat each input channel.
    padded = np.repeat(padded, p.multiplier, axis=1)
    filters = weight.reshape(p.co, p.kh, p.kw).astype(np.float64)
    sh, sw = p.stride
    out = np.zeros((p.n, p.co, p.oh, p.ow), dtype=np.float64)
    for ky in range(p.kh):
        for kx in range(p.kw):
            window = padded[:, :, ky:ky + (p.oh - 1) * sh + 1:sh, kx:kx + (p.ow - 1) * sw + 1:sw]
            out += window * filters[None, :, ky, kx, None, None]
    return out
