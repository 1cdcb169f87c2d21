"""CUDA source for direct NCHW convolution, from the split sizes a config names.

One generator serves `conv2d_nchw.cuda` (TVM topi's conv2d_direct: 2-way
reduction splits) and the seed tutorial's `conv2d_no_batching` (3-way
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

from dataclasses import dataclass

import numpy as np

from engine.flops import conv2d_output_size
from engine.kernels import KernelSource

ENTRY = "conv2d_nchw_kernel"


@dataclass(frozen=True)
class ConvShape:
    """An NCHW fp32 convolution; padding is (top, left, bottom, right)."""

    batch: int
    in_channels: int
    height: int
    width: int
    out_channels: int
    kernel_h: int
    kernel_w: int
    stride_h: int = 1
    stride_w: int = 1
    pad_top: int = 0
    pad_left: int = 0
    pad_bottom: int = 0
    pad_right: int = 0
    dilation_h: int = 1
    dilation_w: int = 1

    @property
    def out_h(self) -> int:
        return conv2d_output_size(self.height, self.kernel_h, self.stride_h, self.pad_top, self.pad_bottom, self.dilation_h)

    @property
    def out_w(self) -> int:
        return conv2d_output_size(self.width, self.kernel_w, self.stride_w, self.pad_left, self.pad_right, self.dilation_w)

    @property
    def data_shape(self) -> tuple[int, int, int, int]:
        return (self.batch, self.in_channels, self.height, self.width)

    @property
    def kernel_shape(self) -> tuple[int, int, int, int]:
        return (self.out_channels, self.in_channels, self.kernel_h, self.kernel_w)

    @property
    def out_shape(self) -> tuple[int, int, int, int]:
        return (self.batch, self.out_channels, self.out_h, self.out_w)


@dataclass(frozen=True)
class ConvSchedule:
    """Split sizes, outer first. `tile_kh` and `tile_kw` name the axes they split
    (the knob names that carry them differ between templates and log vintages)."""

    tile_f: tuple[int, ...]
    tile_y: tuple[int, ...]
    tile_x: tuple[int, ...]
    tile_rc: tuple[int, ...]
    tile_kh: tuple[int, ...]
    tile_kw: tuple[int, ...]
    auto_unroll_max_step: int = 0
    unroll_explicit: int = 0


class ScheduleError(ValueError):
    """Split sizes that do not tile the convolution they are applied to."""


def _spatial(split: tuple[int, ...], extent: int, name: str) -> tuple[int, int, int, int]:
    if len(split) != 4 or any(s < 1 for s in split):
        raise ScheduleError(f"{name} {split} is not four positive sizes")
    if split[0] * split[1] * split[2] * split[3] != extent:
        raise ScheduleError(f"{name} {split} does not multiply to {extent}")
    return split  # type: ignore[return-value]


def _reduction(split: tuple[int, ...], extent: int, name: str) -> tuple[int, int, int]:
    if len(split) not in (2, 3) or any(s < 1 for s in split):
        raise ScheduleError(f"{name} {split} is not two or three positive sizes")
    if int(np.prod(split)) != extent:
        raise ScheduleError(f"{name} {split} does not multiply to {extent}")
    return (split[0], split[1], 1) if len(split) == 2 else split  # type: ignore[return-value]


@dataclass(frozen=True)
class _Plan:
    """Every size the kernel text needs, derived once from shape and schedule."""

    shape: ConvShape
    f: tuple[int, int, int, int]
    y: tuple[int, int, int, int]
    x: tuple[int, int, int, int]
    rc: tuple[int, int, int]
    kh: tuple[int, int, int]
    kw: tuple[int, int, int]

    @property
    def block_f(self) -> int:
        return self.f[1] * self.f[2] * self.f[3]

    @property
    def block_y(self) -> int:
        return self.y[1] * self.y[2] * self.y[3]

    @property
    def block_x(self) -> int:
        return self.x[1] * self.x[2] * self.x[3]

    @property
    def staged(self) -> tuple[int, int, int]:
        """Reduction extents staged per outer step (middle x inner)."""
        return (self.rc[1] * self.rc[2], self.kh[1] * self.kh[2], self.kw[1] * self.kw[2])

    @property
    def tile_h(self) -> int:
        return (self.block_y - 1) * self.shape.stride_h + (self.staged[1] - 1) * self.shape.dilation_h + 1

    @property
    def tile_w(self) -> int:
        return (self.block_x - 1) * self.shape.stride_w + (self.staged[2] - 1) * self.shape.dilation_w + 1

    @property
    def input_tile(self) -> int:
        return self.staged[0] * self.tile_h * self.tile_w

    @property
    def weight_tile(self) -> int:
        rc, ry, rx = self.staged
        return self.block_f * rc * ry * rx

    @property
    def threads(self) -> int:
        return self.f[2] * self.y[2] * self.x[2]


def plan(shape: ConvShape, schedule: ConvSchedule) -> _Plan:
    return _Plan(
        shape=shape,
        f=_spatial(schedule.tile_f, shape.out_channels, "tile_f"),
        y=_spatial(schedule.tile_y, shape.out_h, "tile_y"),
        x=_spatial(schedule.tile_x, shape.out_w, "tile_x"),
        rc=_reduction(schedule.tile_rc, shape.in_channels, "tile_rc"),
        kh=_reduction(schedule.tile_kh, shape.kernel_h, "kernel-height split"),
        kw=_reduction(schedule.tile_kw, shape.kernel_w, "kernel-width split"),
    )


# Global-to-shared copies: asynchronous (cp.async, sm_80 and newer, zero-filled when the
# predicate is off) so a step's tiles load while the previous step computes; plain loads
# on older GPUs, where the two buffers still keep the loads and the compute apart.
COPY_HELPERS = r"""
#if __CUDA_ARCH__ >= 800
__device__ __forceinline__ void copy4(float* dst, const float* src, bool pred) {
    const unsigned address = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" :: "r"(address), "l"(src), "r"(pred ? 4 : 0));
}
__device__ __forceinline__ void copy_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void copy_wait_but_one() { asm volatile("cp.async.wait_group 1;\n" ::: "memory"); }
__device__ __forceinline__ void copy_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }
#else
__device__ __forceinline__ void copy4(float* dst, const float* src, bool pred) { *dst = pred ? __ldg(src) : 0.0f; }
__device__ __forceinline__ void copy_commit() {}
__device__ __forceinline__ void copy_wait_but_one() {}
__device__ __forceinline__ void copy_wait_all() {}
#endif
"""


def unroll_pragma(unrolled: bool, explicit: int) -> str:
    if unrolled:
        return "#pragma unroll"
    return "#pragma unroll 1" if explicit else ""


def _reduction_pragmas(p: _Plan, schedule: ConvSchedule) -> list[str]:
    """Pragmas for the reduction loops inside one outer step, outermost first
    (rc, kh, kw middle, then rc, kh, kw inner), counted the way TVM's unroller counts."""
    steps = p.f[1] * p.f[3] * p.y[1] * p.y[3] * p.x[1] * p.x[3]  # the always-unrolled FMA tile
    extents = [p.rc[1], p.kh[1], p.kw[1], p.rc[2], p.kh[2], p.kw[2]]
    unrolled = schedule.auto_unroll_max_step > 0
    pragmas = []
    for extent in reversed(extents):  # innermost first
        unrolled = unrolled and extent * steps <= schedule.auto_unroll_max_step
        if unrolled:
            steps *= extent
        pragmas.append(unroll_pragma(unrolled, schedule.unroll_explicit))
    return pragmas[::-1]


# Cooperative loads of more rounds than this are unrolled only this far: enough loads in
# flight per thread, without a code size (and compile time) that grows with the tile.
FULL_UNROLL_ROUNDS = 8
PARTIAL_UNROLL = 4


def cooperative_load(count: int, threads: int, body: str) -> str:
    """All threads copy `count` elements, element `i` by thread `i % threads`."""
    rounds = -(-count // threads)
    guard = "" if count % threads == 0 else f"if (i < {count}) "
    pragma = "#pragma unroll" if rounds <= FULL_UNROLL_ROUNDS else f"#pragma unroll {PARTIAL_UNROLL}"
    return (
        f"{pragma}\n"
        f"    for (int k = 0; k < {rounds}; ++k) {{\n"
        f"        const int i = k * {threads} + tid;\n"
        f"        {guard}{{\n        {body}\n        }}\n"
        f"    }}"
    )


def store_outputs(channels: int, out_h: int, out_w: int, counts: tuple[int, int, int],
                  inner: tuple[int, int, int], threads: tuple[int, int, int]) -> str:
    """CUDA that writes a thread's accumulators `acc[f][y][x]` to `out`: per axis `counts`
    (vthread x inner) values, placed as TVM's split places them: vthread-major, then the
    thread's slot, then the inner element. Expects `out`, `n`, `f0`, `y0`, `x0`, `tz`, `ty`,
    `tx` in scope."""
    nf, ny, nx = counts
    fi, yi, xi = inner
    tf, ty, tx = threads
    return f"""    float* out_base = out + (n * {channels} + f0) * {out_h * out_w};
#pragma unroll
    for (int a = 0; a < {nf}; ++a) {{
        const int fl = (a / {fi}) * {tf * fi} + tz * {fi} + a % {fi};
#pragma unroll
        for (int b = 0; b < {ny}; ++b) {{
            const int y = y0 + (b / {yi}) * {ty * yi} + ty * {yi} + b % {yi};
#pragma unroll
            for (int d = 0; d < {nx}; ++d) {{
                const int x = x0 + (d / {xi}) * {tx * xi} + tx * {xi} + d % {xi};
                out_base[(fl * {out_h} + y) * {out_w} + x] = acc[a][b][d];
            }}
        }}
    }}
"""


def generate(shape: ConvShape, schedule: ConvSchedule) -> KernelSource:
    p = plan(shape, schedule)
    s = shape
    vf, tf, fi = p.f[1], p.f[2], p.f[3]
    vy, ty, yi = p.y[1], p.y[2], p.y[3]
    vx, tx, xi = p.x[1], p.x[2], p.x[3]
    nf, ny, nx = vf * fi, vy * yi, vx * xi
    rco, rcm, rci = p.rc
    kho, khm, khi = p.kh
    kwo, kwm, kwi = p.kw
    rc_s, kh_s, kw_s = p.staged
    th, tw = p.tile_h, p.tile_w
    f_blocks = p.f[0]
    pr_rcm, pr_khm, pr_kwm, pr_rci, pr_khi, pr_kwi = _reduction_pragmas(p, schedule)

    load_input = cooperative_load(
        p.input_tile, p.threads,
        f"const int c = i / {th * tw}, r = (i / {tw}) % {th}, q = i % {tw};\n"
        f"        const int iy = iy0 + r, ix = ix0 + q;\n"
        f"        const bool inside = (unsigned)iy < {s.height}u && (unsigned)ix < {s.width}u;\n"
        f"        copy4(&s_in[i], inside ? in_base + (c0 + c) * {s.height * s.width} + iy * {s.width} + ix : in_base,"
        f" inside);",
    )
    load_weight = cooperative_load(
        p.weight_tile, p.threads,
        f"const int ff = i / {rc_s * kh_s * kw_s}, c = (i / {kh_s * kw_s}) % {rc_s};\n"
        f"        const int ky = (i / {kw_s}) % {kh_s}, kx = i % {kw_s};\n"
        f"        copy4(&s_w[i], w_base + (ff * {s.in_channels} + c0 + c) * {s.kernel_h * s.kernel_w}"
        f" + (ky0 + ky) * {s.kernel_w} + kx0 + kx, true);",
    )

    steps = rco * kho * kwo
    stages = 2 if steps > 1 else 1
    stage = p.input_tile + p.weight_tile
    code = f"""// conv2d NCHW fp32: data {list(s.data_shape)}, kernel {list(s.kernel_shape)}, out {list(s.out_shape)}
// tile_f {p.f} tile_y {p.y} tile_x {p.x} rc {p.rc} kh {p.kh} kw {p.kw}
{COPY_HELPERS}
extern "C" __global__ void __launch_bounds__({p.threads})
{ENTRY}(const float* __restrict__ data, const float* __restrict__ weight, float* __restrict__ out)
{{
    extern __shared__ float smem[];
    const int tx = threadIdx.x, ty = threadIdx.y, tz = threadIdx.z;
    const int tid = (tz * {ty} + ty) * {tx} + tx;
    const int n = blockIdx.z / {f_blocks};
    const int f0 = (blockIdx.z % {f_blocks}) * {p.block_f};
    const int y0 = blockIdx.y * {p.block_y}, x0 = blockIdx.x * {p.block_x};
    const float* in_base = data + n * {s.in_channels * s.height * s.width};
    const float* w_base = weight + f0 * {s.in_channels * s.kernel_h * s.kernel_w};

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
        const int iy0 = y0 * {s.stride_h} - {s.pad_top} + ky0 * {s.dilation_h};
        const int ix0 = x0 * {s.stride_w} - {s.pad_left} + kx0 * {s.dilation_w};
        float* s_in = smem + buf * {stage};
        float* s_w = s_in + {p.input_tile};
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
    const float* smem_w = smem_in + {p.input_tile};
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
                a_reg[b][d] = smem_in[(c * {th} + yl * {s.stride_h} + ky * {s.dilation_h}) * {tw}
                                      + xl * {s.stride_w} + kx * {s.dilation_w}];
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

{store_outputs(s.out_channels, s.out_h, s.out_w, (nf, ny, nx), (fi, yi, xi), (tf, ty, tx))}}}
"""
    return KernelSource(
        name=ENTRY,
        code=code,
        grid=(p.x[0], p.y[0], s.batch * f_blocks),
        block=(tx, ty, tf),
        shared_bytes=4 * stages * stage,
        arg_order=("data", "kernel", "output"),
        output_index=2,
    )


def make_inputs(shape: ConvShape, rng: np.random.Generator) -> list[np.ndarray]:
    """Random data and weights (never zeros: they hide unwritten outputs), plus the output buffer."""
    data = rng.uniform(-1.0, 1.0, size=shape.data_shape).astype(np.float32)
    weight = rng.uniform(-1.0, 1.0, size=shape.kernel_shape).astype(np.float32)
    return [data, weight, np.empty(shape.out_shape, dtype=np.float32)]


def reference(shape: ConvShape, data: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """The convolution in float64 on the CPU, as an im2col matrix product."""
    s = shape
    padded = np.zeros(
        (s.batch, s.in_channels, s.height + s.pad_top + s.pad_bottom, s.width + s.pad_left + s.pad_right),
        dtype=np.float64,
    )
    padded[:, :, s.pad_top:s.pad_top + s.height, s.pad_left:s.pad_left + s.width] = data
    oh, ow = s.out_h, s.out_w
    columns = np.empty((s.batch, s.in_channels, s.kernel_h, s.kernel_w, oh, ow), dtype=np.float64)
    for ky in range(s.kernel_h):
        for kx in range(s.kernel_w):
            top, left = ky * s.dilation_h, kx * s.dilation_w
            columns[:, :, ky, kx] = padded[
                :, :,
                top:top + (oh - 1) * s.stride_h + 1:s.stride_h,
                left:left + (ow - 1) * s.stride_w + 1:s.stride_w,
            ]
    columns = columns.reshape(s.batch, -1, oh * ow)
    kernel_matrix = weight.reshape(s.out_channels, -1).astype(np.float64)
    return np.einsum("ok,nkp->nop", kernel_matrix, columns).reshape(s.out_shape)


# ---------------------------------------------------------------- the templates' side
# engine.templates.conv2d delegates its GPU half here. Its params carry n, ci, h, w,
# co, kh, kw, stride (sh, sw) and padding (top, left, bottom, right); its configs name
# tile_ry for the kernel-height split and tile_rx for the kernel-width split.


def shape_of(params) -> ConvShape:
    top, left, bottom, right = params.padding
    return ConvShape(
        batch=params.n, in_channels=params.ci, height=params.h, width=params.w,
        out_channels=params.co, kernel_h=params.kh, kernel_w=params.kw,
        stride_h=params.stride[0], stride_w=params.stride[1],
        pad_top=top, pad_left=left, pad_bottom=bottom, pad_right=right,
    )


def schedule_of(config) -> ConvSchedule:
    return ConvSchedule(
        tile_f=tuple(config["tile_f"].size), tile_y=tuple(config["tile_y"].size),
        tile_x=tuple(config["tile_x"].size), tile_rc=tuple(config["tile_rc"].size),
        tile_kh=tuple(config["tile_ry"].size), tile_kw=tuple(config["tile_rx"].size),
        auto_unroll_max_step=int(config["auto_unroll_max_step"].val),
        unroll_explicit=int(config["unroll_explicit"].val),
    )


def kernel_for(params, config) -> KernelSource:
    return generate(shape_of(params), schedule_of(config))


def inputs_for(params, rng: np.random.Generator) -> list[np.ndarray]:
    return make_inputs(shape_of(params), rng)


def reference_for(params, inputs: list[np.ndarray]) -> np.ndarray:
    return reference(shape_of(params), inputs[0], inputs[1])
