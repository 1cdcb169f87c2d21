"""CUDA text that the convolution kernels (direct and depthwise) share: the global-to-shared
copy helpers, unroll pragmas, cooperative tile loads and the accumulator store at TVM's
placement. Pure text generation; no operator's params are read here."""
from __future__ import annotations


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
