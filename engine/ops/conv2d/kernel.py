"""CUDA source for direct NCHW convolution, from the tiling a config gives (`ConvTiling`).

One generator serves `conv2d_nchw.cuda` (TVM topi's conv2d_direct: 2-way
reduction splits) and the AutoTVM tutorial's `conv2d_no_batching` (3-way
reduction splits). Both schedules are the same loop nest:

* Output axes CO, OH, OW are split 4 ways (block, virtual thread, thread,
  inner). Blocks map to blockIdx.z/y/x (batch folded into z), threads to
  threadIdx.z/y/x, and each thread keeps vthread x inner outputs of each axis
  in registers. Output element `b*(V*T*I) + v*(T*I) + t*I + i` of a split
  (V, T, I the vthread, thread and inner extents) belongs to block b,
  vthread v, thread t, inner i -- TVM's placement.
* Reduction axes CI, KH, KW are split outer / middle / inner (a 2-way split
  is (outer, inner, 1)). Each outer step stages an input tile, halo and
  stride included, and a weight tile through shared memory, loaded by all
  threads together with zero-filled (predicated) padding; each reduction step
  inside reads the thread's inputs and weights into registers and does an
  outer-product update of its accumulators.
* Shared memory per stage: input tile `RC * ((BY-1)*SH + (RY-1)*DH + 1) *
  ((BX-1)*SW + (RX-1)*DW + 1)` plus weight tile `BF * RC * RY * RX` floats, where
  RC, RY, RX are the middle x inner extents: the space's validity rule counts
  the same (one stage, at most 48 KB). With more than one outer step the kernel
  keeps two stages (double buffering: `cp.async` fills the next step's tiles
  while this step computes), so it asks for twice that as dynamic shared
  memory; the runner opts in past 48 KB (an H200 block may have 227 KB).

`auto_unroll_max_step` and `unroll_explicit` become `#pragma unroll` choices,
counted as TVM's unroller counts steps: the reduction loops inside an outer
step (middle rc, kh, kw, then inner rc, kh, kw) are fully unrolled from the
innermost outwards while (loop extent x steps inside) stays at most
`auto_unroll_max_step`. Loops left rolled get `#pragma unroll 1` when
`unroll_explicit` is 1 and no pragma (the compiler's own choice) when it is 0.
Register-tile loops are always unrolled: they index register arrays, which
a rolled loop would push to local memory.
"""
from __future__ import annotations

import math

import numpy as np

from ..base import KernelSource
from ..cuda import COPY_HELPERS, cooperative_load, store_outputs, unroll_pragma
from .tiling import ConvParams, ConvTiling, three_way

ENTRY = "conv2d_nchw_kernel"
# The templates take dilation 1 only; the kernel text keeps the factor where a dilation goes.
DILATION = 1


def _reduction_pragmas(t: ConvTiling, rc3, kh3, kw3) -> list[str]:
    """Pragmas for the reduction loops inside one outer step, outermost first
    (rc, kh, kw middle, then rc, kh, kw inner), counted the way TVM's unroller counts."""
    steps = t.f[1] * t.f[3] * t.y[1] * t.y[3] * t.x[1] * t.x[3]  # the always-unrolled FMA tile
    extents = [rc3[1], kh3[1], kw3[1], rc3[2], kh3[2], kw3[2]]
    unrolled = t.auto_unroll_max_step > 0
    pragmas = []
    for extent in reversed(extents):  # innermost first
        unrolled = unrolled and extent * steps <= t.auto_unroll_max_step
        if unrolled:
            steps *= extent
        pragmas.append(unroll_pragma(unrolled, t.unroll_explicit))
    return pragmas[::-1]


def generate(s: ConvParams, t: ConvTiling) -> KernelSource:
    rc3, kh3, kw3 = three_way(t.rc), three_way(t.ry), three_way(t.rx)
    bf, by, bx = t.block_tile
    input_floats, weight_floats = math.prod(t.input_tile), math.prod(t.weight_tile)
    vf, tf, fi = t.f[1], t.f[2], t.f[3]
    vy, ty, yi = t.y[1], t.y[2], t.y[3]
    vx, tx, xi = t.x[1], t.x[2], t.x[3]
    nf, ny, nx = vf * fi, vy * yi, vx * xi
    rco, rcm, rci = rc3
    kho, khm, khi = kh3
    kwo, kwm, kwi = kw3
    rc_s, kh_s, kw_s = t.reduction_step
    th, tw = t.input_tile[1], t.input_tile[2]
    f_blocks = t.f[0]
    pr_rcm, pr_khm, pr_kwm, pr_rci, pr_khi, pr_kwi = _reduction_pragmas(t, rc3, kh3, kw3)

    load_input = cooperative_load(
        input_floats, t.threads,
        f"const int c = i / {th * tw}, r = (i / {tw}) % {th}, q = i % {tw};\n"
        f"        const int iy = iy0 + r, ix = ix0 + q;\n"
        f"        const bool inside = (unsigned)iy < {s.h}u && (unsigned)ix < {s.w}u;\n"
        f"        copy4(&s_in[i], inside ? in_base + (c0 + c) * {s.h * s.w} + iy * {s.w} + ix : in_base,"
        f" inside);",
    )
    load_weight = cooperative_load(
        weight_floats, t.threads,
        f"const int ff = i / {rc_s * kh_s * kw_s}, c = (i / {kh_s * kw_s}) % {rc_s};\n"
        f"        const int ky = (i / {kw_s}) % {kh_s}, kx = i % {kw_s};\n"
        f"        copy4(&s_w[i], w_base + (ff * {s.ci} + c0 + c) * {s.kh * s.kw}"
        f" + (ky0 + ky) * {s.kw} + kx0 + kx, true);",
    )

    steps = rco * kho * kwo
    stages = 2 if steps > 1 else 1
    stage = input_floats + weight_floats
    code = f"""// conv2d NCHW fp32: data {list(s.data_shape)}, kernel {list(s.kernel_shape)}, out {list(s.out_shape)}
// tile_f {t.f} tile_y {t.y} tile_x {t.x} rc {rc3} kh {kh3} kw {kw3}
{COPY_HELPERS}
extern "C" __global__ void __launch_bounds__({t.threads})
{ENTRY}(const float* __restrict__ data, const float* __restrict__ weight, float* __restrict__ out)
{{
    extern __shared__ float smem[];
    const int tx = threadIdx.x, ty = threadIdx.y, tz = threadIdx.z;
    const int tid = (tz * {ty} + ty) * {tx} + tx;
    const int n = blockIdx.z / {f_blocks};
    const int f0 = (blockIdx.z % {f_blocks}) * {bf};
    const int y0 = blockIdx.y * {by}, x0 = blockIdx.x * {bx};
    const float* in_base = data + n * {s.ci * s.h * s.w};
    const float* w_base = weight + f0 * {s.ci * s.kh * s.kw};

    float acc[{nf}][{ny}][{nx}];
#pragma unroll
    for (int a = 0; a < {nf}; ++a)
#pragma unroll
        for (int b = 0; b < {ny}; ++b)
#pragma unroll
            for (int d = 0; d < {nx}; ++d) acc[a][b][d] = 0.0f;

    // Stage the tiles of outer step `step` (rc, kh, kw outer loops flattened) into buffer `buf`.
    auto stage_tiles = [&](int step, int buf) {{
        const int c0 = (step / {kho * kwo}) * {rc_s};
        const int ky0 = ((step / {kwo}) % {kho}) * {kh_s}, kx0 = (step % {kwo}) * {kw_s};
        const int iy0 = y0 * {s.stride[0]} - {s.padding[0]} + ky0 * {DILATION};
        const int ix0 = x0 * {s.stride[1]} - {s.padding[1]} + kx0 * {DILATION};
        float* s_in = smem + buf * {stage};
        float* s_w = s_in + {input_floats};
    {load_input}
    {load_weight}
        copy_commit();
    }};

    stage_tiles(0, 0);
#pragma unroll 1
    for (int step = 0; step < {steps}; ++step) {{
    if (step + 1 < {steps}) {{
        stage_tiles(step + 1, (step + 1) & 1);  // the next step's tiles load while this one computes
        copy_wait_but_one();
    }} else {{
        copy_wait_all();
    }}
    __syncthreads();
    const float* smem_in = smem + (step & 1) * {stage};
    const float* smem_w = smem_in + {input_floats};
{pr_rcm}
    for (int rcm = 0; rcm < {rcm}; ++rcm) {{
{pr_khm}
    for (int khm = 0; khm < {khm}; ++khm) {{
{pr_kwm}
    for (int kwm = 0; kwm < {kwm}; ++kwm) {{
{pr_rci}
    for (int rci = 0; rci < {rci}; ++rci) {{
{pr_khi}
    for (int khi = 0; khi < {khi}; ++khi) {{
{pr_kwi}
    for (int kwi = 0; kwi < {kwi}; ++kwi) {{
        const int c = rcm * {rci} + rci, ky = khm * {khi} + khi, kx = kwm * {kwi} + kwi;
        float a_reg[{ny}][{nx}];
        float w_reg[{nf}];
#pragma unroll
        for (int b = 0; b < {ny}; ++b)
#pragma unroll
            for (int d = 0; d < {nx}; ++d) {{
                const int yl = (b / {yi}) * {ty * yi} + ty * {yi} + b % {yi};
                const int xl = (d / {xi}) * {tx * xi} + tx * {xi} + d % {xi};
                a_reg[b][d] = smem_in[(c * {th} + yl * {s.stride[0]} + ky * {DILATION}) * {tw}
                                      + xl * {s.stride[1]} + kx * {DILATION}];
            }}
#pragma unroll
        for (int a = 0; a < {nf}; ++a) {{
            const int fl = (a / {fi}) * {tf * fi} + tz * {fi} + a % {fi};
            w_reg[a] = smem_w[((fl * {rc_s} + c) * {kh_s} + ky) * {kw_s} + kx];
        }}
#pragma unroll
        for (int a = 0; a < {nf}; ++a)
#pragma unroll
            for (int b = 0; b < {ny}; ++b)
#pragma unroll
                for (int d = 0; d < {nx}; ++d)
                    acc[a][b][d] = fmaf(a_reg[b][d], w_reg[a], acc[a][b][d]);
    }}}}}}}}}}}}
    __syncthreads();  // every thread is done with this buffer before it is refilled
    }}

{store_outputs(s.co, s.oh, s.ow, (nf, ny, nx), (fi, yi, xi), (tf, ty, tx))}}}
"""
    return KernelSource(
        name=ENTRY,
        code=code,
        grid=(t.x[0], t.y[0], s.n * f_blocks),
        block=(tx, ty, tf),
        shared_bytes=4 * stages * stage,
        arg_order=("data", "kernel", "output"),
        output_index=2,
    )


def make_inputs(params: ConvParams, rng: np.random.Generator) -> list[np.ndarray]:
    """Random data and weights (never zeros: they hide unwritten outputs), plus the output buffer."""
    data = rng.uniform(-1.0, 1.0, size=params.data_shape).astype(np.float32)
    weight = rng.uniform(-1.0, 1.0, size=params.kernel_shape).astype(np.float32)
    return [data, weight, np.empty(params.out_shape, dtype=np.float32)]


def reference(s: ConvParams, data: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """The convolution in float64 on the CPU, as an im2col matrix product."""
    padded = np.zeros(
        (s.n, s.ci, s.h + s.padding[0] + s.padding[2], s.w + s.padding[1] + s.padding[3]),
        dtype=np.float64,
    )
    padded[:, :, s.padding[0]:s.padding[0] + s.h, s.padding[1]:s.padding[1] + s.w] = data
    oh, ow = s.oh, s.ow
    columns = np.empty((s.n, s.ci, s.kh, s.kw, oh, ow), dtype=np.float64)
    for ky in range(s.kh):
        for kx in range(s.kw):
            top, left = ky, kx
            columns[:, :, ky, kx] = padded[
                :, :,
                top:top + (oh - 1) * s.stride[0] + 1:s.stride[0],
                left:left + (ow - 1) * s.stride[1] + 1:s.stride[1],
            ]
    columns = columns.reshape(s.n, -1, oh * ow)
    kernel_matrix = weight.reshape(s.co, -1).astype(np.float64)
    return np.einsum("ok,nkp->nop", kernel_matrix, columns).reshape(s.out_shape)
