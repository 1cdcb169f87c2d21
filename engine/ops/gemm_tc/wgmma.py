"""CUDA source of the tensor-core GEMM's wgmma mainloop (sm_90a), from a GemmTcTiling.

Hopper's warpgroup MMA: four warps (a warpgroup, 128 threads) issue one
`wgmma.mma_async.m64nNk16` together, reading A and B straight from shared memory through
64-bit matrix descriptors and accumulating into registers; mma.sync cannot feed Hopper's
tensor cores fast enough. The schedule:

* The block computes `block_m x block_n` of C; `consumers` warpgroups each own
  `block_m / consumers` rows (m64 instructions stacked), every one the block's full
  `block_n` (the instruction's N, 64 to 256). The grid and `raster` are the mma_sync kernel's.
* Each step stages A's `block_m x 64` and B's `64 x block_n` tiles in a ring of `stages`
  buffers, laid out as wgmma's 128-byte swizzle wants them: A (row-major, so K-major) one
  128-byte row per M row; B (row-major, so N-major: the instruction's transpose bit)
  in panels of 64 columns, one 128-byte row per k. Within each 1024-byte atom (eight such
  rows) the 16-byte chunk c of row r sits at chunk c ^ (r % 8): bank-conflict-free for the
  tensor core, and the same permutation the descriptor's swizzle mode undoes.
* `loader` cp_async: the copies are 16-byte `cp.async` (zero-filled past M, N and K edges),
  written into the swizzled places by the loading threads themselves. (A tiling whose only loader
  this is, the conv's gathered A, also takes deeper rings and split K with it: each split's
  partial tile is summed from the ring once every product retired.) Writes of the generic
  proxy become visible to wgmma (the async proxy) through `fence.proxy.async.shared::cta` by
  the writing thread after its copies completed, before the barrier that hands the stage over.
* `loader` tma (producer 1 only): the tensor memory accelerator copies each stage, issued by
  one producer thread; with it, 2-block clusters that multicast B and persistent blocks
  (engine.ops.gemm_tc.tma says how), and split_k: a tile's K over a cluster of 2 to 8 blocks whose
  partial tiles the mma_sync kernel's cluster sum adds into C (decode shapes' few tiles of C).
* `producer` 0: every consumer thread loads, a `__syncthreads` per step hands stages over
  (the mma_sync kernel's ring). `producer` 1 (warp specialisation): warpgroup 0 only loads,
  `stages - 1` steps ahead, and the stages are handed over by mbarriers: `full[s]` (the 128
  producer threads arrive when their copies of step s landed and were fenced) and
  `empty[s]` (every consumer thread arrives once its wgmma group of step s retired).
* Per step: `wgmma.fence`, 4 k16 instructions per m64 tile, `commit_group`, then (rings of
  3 or more) `wait_group 1`: the step's group stays in flight while the next is issued, and
  the stage of the step before is released (the loads run `stages - 2` steps ahead); a
  2-stage ring waits for its group (`wait_group 0`). Warp-specialised blocks of 2 consumers
  move registers from the producer to the consumers (`setmaxnreg`). Accumulators start at
  zero; the epilogue stores them to C (rows past M, columns past N skipped; N is a multiple of 8, the workload's rule):
  float32 pairs, or a 16-bit C's packed pairs transposed among a quad's lanes into 16-byte stores (QUAD_TRANSPOSE).

* `swap_ab` 1 (tma): C^T = B^T A^T from the same stages. Each of B's 64-column panels is the A of an
  m64 instruction (N-major: imm-trans-a 1) and A's rows are its B (K-major), so the instruction's N is
  block_m (16 to 256) and the consumers share out the tile's columns. The accumulators, the stores and
  split K's partial tile are then tf32's transposed ones (engine.ops.gemm_tc.epilogue). A K-major B (the
  conv's weights) is the instruction's A as it lies, 64 of its rows an instruction: neither operand transposed.

TF32 is engine.ops.gemm_tc.wgmma_tf32's: wgmma reads TF32 operands from shared memory K-major
only, and this workload's B is row-major (N-major).
"""
from __future__ import annotations

import dataclasses

from ..base import ARCH_SPECIFIC_MARK, KernelSource
from ..hopper import L2_HINTED_COPIES, MBARRIERS, REGISTER_MOVES, SHARED_ADDRESS, TENSOR_MAP_DECLARATIONS, TMA_HELPERS
from . import tma
from .epilogue import QUAD_TRANSPOSE, split_sum, store
from .kernel import CLUSTER_HELPERS, ENTRY, PACK_HELPERS, k_range, steps, tile_of_block, tiled_source
from .tiling import SWIZZLE_ATOM_BYTES, SWIZZLE_BYTES, WARPGROUP, WGMMA_M, GemmTcTiling

_TYPE = {"float16": "f16", "bfloat16": "bf16"}
# Descriptor strides (bytes): consecutive 8-row groups of a swizzled operand are one atom
# apart; B's 64-column panels are a panel (block_k rows of 128 bytes) apart; A's leading
# offset is unused by K-major swizzled layouts (the k16 slice lies within one 128-byte row).
A_LEADING_BYTES = 16

# The PTX sits behind __CUDA_ARCH__: without it (tests/cuda_on_cpu.py's host build) that
# emulator supplies these functions, and the wgmma's per thread from the descriptors' layout as
# the PTX ISA defines it, so CI checks the loader's swizzle, the descriptors and the epilogue.
HELPERS = r"""
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "gemm_tensorcore's wgmma mainloop needs sm_90a (wgmma.mma_async exists on Hopper only)"
#endif
#ifdef __CUDA_ARCH__
""" + SHARED_ADDRESS + r"""__device__ __forceinline__ void copy16(unsigned dst, const void* src, bool pred) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 :: "r"(dst), "l"(src), "r"(pred ? 16 : 0) : "memory");
}
__device__ __forceinline__ void copy16_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int PENDING>
__device__ __forceinline__ void copy16_wait() {
    asm volatile("cp.async.wait_group %0;\n" :: "n"(PENDING) : "memory");
}
// This thread's shared-memory writes (its completed copies) become visible to the async proxy.
__device__ __forceinline__ void fence_async_proxy() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
""" + MBARRIERS + r"""__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int PENDING>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" :: "n"(PENDING) : "memory"); }
""" + REGISTER_MOVES + r"""// Keeps the compiler from moving accumulator reads or writes across the asynchronous MMA.
__device__ __forceinline__ void hold(float& x) { asm volatile("" : "+f"(x) :: "memory"); }
#endif
// A matrix descriptor: start address, leading and stride byte offsets (all >> 4), 128B swizzle.
__device__ __forceinline__ unsigned long long descriptor(unsigned address, unsigned leading, unsigned stride) {
    return (unsigned long long)((address & 0x3FFFF) >> 4) | ((unsigned long long)(leading >> 4) << 16)
         | ((unsigned long long)(stride >> 4) << 32) | (1ull << 62);
}
"""


def _mma_name(t: GemmTcTiling) -> str:
    """The instruction's function: the operands' layouts are in its name (the CPU emulator reads them by it)."""
    if t.swap_ab and not t.b_k_major:
        return f"wgmma_{t.precision}_m64n{t.block_m}_swap_ab"
    n = t.block_m if t.swap_ab else t.block_n
    return f"wgmma_{t.precision}_m64n{n}{'_b_kmajor' if t.b_k_major else ''}"


def _mma(t: GemmTcTiling) -> str:
    """One m64nNk16 instruction, D += A B (scale-d 1): A K-major, B N-major (imm-trans-b 1; a K-major B, 0);
    swap_ab: N is block_m, A (B's panel) N-major (imm-trans-a 1; a K-major B's rows, 0) and B (A's rows) K-major."""
    n = t.block_m if t.swap_ab else t.block_n
    count = n // 2
    transposes = "0, 0" if t.b_k_major else "1, 0" if t.swap_ab else "0, 1"
    registers = ", ".join(f"%{i}" for i in range(count))
    outputs = ", ".join(f'"+f"(d[{i}])' for i in range(count))
    return f"""
#ifdef __CUDA_ARCH__
__device__ __forceinline__ void {_mma_name(t)}(float (&d)[{count}], unsigned long long a, unsigned long long b) {{
    asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{count + 2}, 0;\\n"
                 "wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{_TYPE[t.precision]}.{_TYPE[t.precision]} "
                 "{{{registers}}}, %{count}, %{count + 1}, p, 1, 1, {transposes};\\n}}\\n"
                 : {outputs}
                 : "l"(a), "l"(b), "r"(1));
}}
#endif
"""


def _load_stage(t: GemmTcTiling) -> str:
    """One step's tiles into their swizzled places; `t` counts the loading threads from 0."""
    chunks_per_row = SWIZZLE_BYTES // 16  # 16-byte chunks of a 128-byte row: 8
    ce = 16 // t.element_bytes
    b_row_chunks = t.block_n // ce
    panel_bytes = t.block_k * SWIZZLE_BYTES
    a_chunks, b_chunks = t.block_m * chunks_per_row, t.block_k * b_row_chunks
    a_pred = " && ".join(c for c in (None if t.m % t.block_m == 0 else f"row0 + r < {t.m}",
                                     None if t.k % t.block_k == 0 else f"k0 + c * {ce} < {t.k}") if c) or "true"
    b_pred = " && ".join(c for c in (None if t.k % t.block_k == 0 else f"k0 + r < {t.k}",
                                     None if t.n % t.block_n == 0 else f"col0 + c * {ce} < {t.n}") if c) or "true"

    def loop(what, chunks, body):
        rounds = -(-chunks // t.loaders)
        guard = "" if chunks % t.loaders == 0 else f"if (i < {chunks}) "
        return f"""    // {what}: {chunks} 16-byte copies over {t.loaders} threads
#pragma unroll
    for (int round = 0; round < {rounds}; ++round) {{
        const int i = round * {t.loaders} + t;
        {guard}{{
{body}
        }}
    }}
"""
    a_body = f"""            const int r = i / {chunks_per_row}, c = i % {chunks_per_row};
            const bool pred = {a_pred};
            copy16(stage + r * {SWIZZLE_BYTES} + ((c ^ (r & 7)) << 4),
                   pred ? A + (size_t)(row0 + r) * {t.k} + k0 + c * {ce} : A, pred);"""
    b_body = f"""            const int r = i / {b_row_chunks}, c = i % {b_row_chunks};
            const int panel = c / {chunks_per_row}, within = c % {chunks_per_row};
            const bool pred = {b_pred};
            copy16(stage + {t.block_m * SWIZZLE_BYTES} + panel * {panel_bytes} + r * {SWIZZLE_BYTES} + ((within ^ (r & 7)) << 4),
                   pred ? B + (size_t)(k0 + r) * {t.n} + col0 + c * {ce} : B, pred);"""
    return f"""
__device__ __forceinline__ void load_stage(unsigned stage, const ELEM* __restrict__ A, const ELEM* __restrict__ B,
                                           int row0, int col0, int k0, int t) {{
{loop("A", a_chunks, a_body)}{loop("B", b_chunks, b_body)}}}
"""


def hold_all(t: GemmTcTiling, tile: str = "mt") -> str:
    """Every accumulator held in place (before and after the products: `hold`), `tile` the loop's index."""
    tiles, per_tile = t.accumulator_tiles
    return f"""#pragma unroll
    for (int {tile} = 0; {tile} < {tiles}; ++{tile})
#pragma unroll
        for (int i = 0; i < {per_tile}; ++i) hold(acc[{tile}][i]);"""


def _compute(t: GemmTcTiling) -> str:
    """This consumer's products of one stage: per k16 slice one B descriptor, one A per m64 tile.
    The k16 slice of A is 32 bytes into each 128-byte row (the swizzle is of the address, so
    the start address moves and the atom stays); B's is 16 rows (two atoms) further down, or
    (a K-major B, one row per column of C) 32 bytes into each row, as A's. swap_ab: A's rows are
    the instruction's B, read as a K-major B is, and each of this consumer's 64-column panels of B
    the A of one instruction, read as an N-major B is (one panel, so its leading offset goes unused);
    a K-major B's 64 rows the A of one, read as A is."""
    panel_bytes = t.block_k * SWIZZLE_BYTES
    tiles, per_tile = t.accumulator_tiles
    if t.swap_ab and t.b_k_major:
        bases = f"""    const unsigned rows_base = stage;
    const unsigned b_rows_base = stage + {t.block_m * SWIZZLE_BYTES} + consumer * {t.consumer_cols * SWIZZLE_BYTES};"""
        shared = f"descriptor(rows_base + kk * 32, {A_LEADING_BYTES}, {SWIZZLE_ATOM_BYTES})"
        each = (f"descriptor(b_rows_base + mt * {WGMMA_M * SWIZZLE_BYTES} + kk * 32, {A_LEADING_BYTES}, "
                f"{SWIZZLE_ATOM_BYTES}), b")
    elif t.swap_ab:
        bases = f"""    const unsigned rows_base = stage;
    const unsigned panels_base = stage + {t.block_m * SWIZZLE_BYTES} + consumer * {t.n_tiles * panel_bytes};"""
        shared = f"descriptor(rows_base + kk * 32, {A_LEADING_BYTES}, {SWIZZLE_ATOM_BYTES})"
        each = (f"descriptor(panels_base + mt * {panel_bytes} + kk * {16 * SWIZZLE_BYTES}, {panel_bytes}, "
                f"{SWIZZLE_ATOM_BYTES}), b")
    else:
        bases = f"""    const unsigned a_base = stage + consumer * {t.consumer_row_offset * SWIZZLE_BYTES};
    const unsigned b_base = stage + {t.block_m * SWIZZLE_BYTES};"""
        shared = (f"descriptor(b_base + kk * 32, {A_LEADING_BYTES}, {SWIZZLE_ATOM_BYTES})" if t.b_k_major
                  else f"descriptor(b_base + kk * {16 * SWIZZLE_BYTES}, {panel_bytes}, {SWIZZLE_ATOM_BYTES})")
        each = f"""descriptor(a_base + mt * {WGMMA_M * SWIZZLE_BYTES} + kk * 32,
                                                                  {A_LEADING_BYTES}, {SWIZZLE_ATOM_BYTES}), b"""
    return f"""
__device__ __forceinline__ void compute_stage(float (&acc)[{tiles}][{per_tile}], unsigned stage, int consumer) {{
{bases}
{hold_all(t)}
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < {t.block_k // 16}; ++kk) {{
        const unsigned long long b = {shared};
#pragma unroll
        for (int mt = 0; mt < {tiles}; ++mt)
            {_mma_name(t)}(acc[mt], {each});
    }}
    wgmma_commit();
    wgmma_wait<{t.wgmma_pending}>();  // {"the previous step's group retired, this one runs on" if t.wgmma_pending else "this step's products are done"}
{hold_all(t)}
}}
"""


def _mainloop_shared(t: GemmTcTiling) -> str:
    """producer 0: all consumer threads load, `lag` steps ahead, a barrier per step. With a
    wgmma group left in flight (stages >= 3), step kt's loads go into step kt - 2's buffer:
    after the barrier every warpgroup's wait retired the groups up to kt - 2, not kt - 1."""
    s, stage_bytes, lag = t.stages, t.wgmma_stage_bytes, t.wgmma_lag
    count, first = steps(t)
    return f"""
    const int consumer = warpgroup;
#pragma unroll
    for (int s = 0; s < {lag}; ++s) {{
        if (s < {count}) load_stage(ring + s * {stage_bytes}, A, B, row0, col0, {first}s * {t.block_k}, tid);
        copy16_commit();
    }}
#pragma unroll 1
    for (int kt = 0; kt < {count}; ++kt) {{
        copy16_wait<{lag - 1}>();
        fence_async_proxy();
        __syncthreads();  // step kt landed for every thread; every wgmma of step kt - {t.wgmma_pending + 1} retired
        const int next = kt + {lag};
        if (next < {count}) load_stage(ring + (next % {s}) * {stage_bytes}, A, B, row0, col0, {first}next * {t.block_k}, tid);
        copy16_commit();
        compute_stage(acc, ring + (kt % {s}) * {stage_bytes}, consumer);
    }}
    wgmma_wait<0>();"""


def _producer_cp_async(t: GemmTcTiling) -> str:
    """The producer warpgroup's 128 threads copy; step kt - lag is handed over once this
    thread's copies of it completed (lag groups stay in flight), every thread arriving."""
    s, stage_bytes, lag = t.stages, t.wgmma_stage_bytes, t.wgmma_lag
    count, first = steps(t)
    tail = str(max(0, t.k_tiles - lag)) if count.isdigit() else f"max(0, {count} - {lag})"
    return f"""
#pragma unroll 1
        for (int kt = 0; kt < {count}; ++kt) {{
            const int s = kt % {s};
            if (kt >= {s}) barrier_wait(empty + 8 * s, ((kt / {s}) + 1) & 1);
            load_stage(ring + s * {stage_bytes}, A, B, row0, col0, {first}kt * {t.block_k}, tid);
            copy16_commit();
            if (kt >= {lag}) {{
                copy16_wait<{lag}>();
                fence_async_proxy();
                barrier_arrive(full + 8 * ((kt - {lag}) % {s}));
            }}
        }}
        copy16_wait<0>();
        fence_async_proxy();
#pragma unroll 1
        for (int kt = {tail}; kt < {count}; ++kt) barrier_arrive(full + 8 * (kt % {s}));"""


# split_k, producer 1, cp_async: the producer's part of _split_sum's barriers, once its copies landed.
PRODUCER_MEETS_THE_SUM = """
        __syncthreads();
        cluster_arrive_wait();
        cluster_arrive_wait();"""


def _mainloop_specialised(t: GemmTcTiling) -> str:
    """producer 1 (loader cp_async): warpgroup 0 loads, the consumers (warpgroups 1..) multiply;
    mbarriers hand over. A consumer releases step kt - pending's buffer once that step's group
    retired; the producer fills step kt's buffer once the step `stages` before it was released,
    so the step a consumer waits for never waits itself on the consumer's next release (no cycle).
    With split_k the producer meets the split sum's barriers, summing nothing (its registers were given away)."""
    s, stage_bytes, pending = t.stages, t.wgmma_stage_bytes, t.wgmma_pending
    producer_registers, consumer_registers = t.producer_registers, t.consumer_registers
    return f"""
    if (tid == 0) {{
#pragma unroll
        for (int s = 0; s < {s}; ++s) {{
            barrier_init(full + 8 * s, {WARPGROUP});
            barrier_init(empty + 8 * s, {t.consumers * WARPGROUP});
        }}
        barrier_init_fence();
    }}
    __syncthreads();
    if (warpgroup == 0) {{
{f"        registers_down<{producer_registers}>();" if producer_registers else ""}{_producer_cp_async(t)}{PRODUCER_MEETS_THE_SUM if t.split_k > 1 else ""}
        return;
    }}
{f"    registers_up<{consumer_registers}>();" if consumer_registers else ""}
    const int consumer = warpgroup - 1;
#pragma unroll 1
    for (int kt = 0; kt < {steps(t)[0]}; ++kt) {{
        const int s = kt % {s};
        barrier_wait(full + 8 * s, (kt / {s}) & 1);
        __syncwarp();  // the warp leaves the spin loop together: wgmma is .sync.aligned
        fence_async_proxy();
        compute_stage(acc, ring + s * {stage_bytes}, consumer);
        {f"if (kt >= {pending}) " if pending else ""}barrier_arrive(empty + 8 * ((kt - {pending} + {s}) % {s}));
    }}
    wgmma_wait<0>();"""


def kernel_entry(t: GemmTcTiling, cluster: str, entry: str = ENTRY) -> str:
    """The kernel's signature (`cluster`: its __cluster_dims__, or nothing) and the addresses of its
    shared memory, up to the body: the stage ring and its full and empty barriers after it."""
    return f"""extern "C" __global__ void __launch_bounds__({t.threads}, 1){cluster}
{entry}(const ELEM* __restrict__ A, const ELEM* __restrict__ B, {t.c_type}* __restrict__ C) {{
    extern __shared__ __align__(1024) unsigned char smem[];
    // The swizzle permutes within 1024-byte atoms: the ring starts on one, the barriers follow it.
    const unsigned ring = (shared_address(smem) + {SWIZZLE_ATOM_BYTES - 1}u) & ~{SWIZZLE_ATOM_BYTES - 1}u;
    const unsigned full = ring + {t.stages * t.wgmma_stage_bytes}, empty = full + {8 * t.stages};
    (void)full; (void)empty;
    const int tid = threadIdx.x, warpgroup = tid / {WARPGROUP};"""


def generate(t: GemmTcTiling) -> KernelSource:
    title = f"gemm_tensorcore {t.precision}{f' (C {t.c_dtype})' if t.c_16bit else ''} wgmma: {t.m}x{t.n}x{t.k}"
    loads = TMA_HELPERS + (L2_HINTED_COPIES if t.hinted else "") + TENSOR_MAP_DECLARATIONS if t.tma else _load_stage(t)
    code = kernel_code(t, ENTRY, title, loads)
    return dataclasses.replace(tiled_source(t, code), tensor_maps=tma.tensor_maps(t) if t.tma else ())


def kernel_code(t: GemmTcTiling, entry: str, title: str, loads: str, copies: tma.StageCopies | None = None) -> str:
    """The wgmma kernel `entry` of a 16-bit tiling, (A, B, C) -> C: `title` its first comment's
    start, `loads` the staging of a step (the cp_async loaders' `load_stage(stage, A, B, row0,
    col0, k0, tid)` into the swizzled rows, or the TMA helpers), `copies` the TMA producer's (the
    tma loader's only: the GEMM's, with l2_hint's policies, where None)."""
    if t.tma:  # the TMA schedule walks its tiles itself
        body = tma.mainloop(t, split_sum(t) if t.split_k > 1 else store(t), copies or tma.gemm_stage_copies(t))
    else:
        body = f"""{tile_of_block(t)}
    const int row0 = tile_m * {t.block_m}, col0 = tile_n * {t.block_n};
{k_range(t)}    float acc[{t.m_tiles}][{t.block_n // 2}];
#pragma unroll
    for (int mt = 0; mt < {t.m_tiles}; ++mt)
#pragma unroll
        for (int i = 0; i < {t.block_n // 2}; ++i) acc[mt][i] = 0.0f;
{_mainloop_specialised(t) if t.producer else _mainloop_shared(t)}
{split_sum(t) if t.split_k > 1 else store(t)}"""
    schedule = f", TMA loads, cluster {t.cluster}{' sharing A' if t.shares_a else ''}, persistent {t.persistent}" if t.tma else ""
    schedule += f", split_k {t.split_k}" if t.split_k > 1 else ""
    schedule += f", L2 hints {t.l2_hint}" if t.hinted else ""
    schedule += ", swap_ab (C^T = B^T A^T)" if t.swap_ab else ""
    cluster = f" __cluster_dims__({t.cluster}, 1, {t.split_k})" if t.cluster > 1 or t.split_k > 1 else ""
    return f"""{ARCH_SPECIFIC_MARK}
// {title}, block {t.block_m}x{t.block_n}x{t.block_k},
// {t.consumers} consumer warpgroup(s){" + a producer" if t.producer else ""}, {t.stages} stages, raster {t.raster}{schedule}
typedef unsigned short ELEM;
{HELPERS}{PACK_HELPERS + QUAD_TRANSPOSE if t.c_16bit else ""}{CLUSTER_HELPERS if t.split_k > 1 else ""}{loads}{tma.TURN_HELPERS if t.takes_turns else ""}{tma.STREAM_HELPERS + tma.stream_declarations(t) if t.stream_k else ""}{_mma(t)}{_compute(t)}
{kernel_entry(t, cluster, entry)}
{body}
}}
"""
