"""The C++ that tests/cuda_on_cpu.py compiles a generated CUDA kernel with: SHIM, the CUDA
built-ins, the fiber scheduler (each CUDA thread a fiber of the launching OS thread, switched
where it waits) and the PTX stand-ins of the tensor-core paths; DRIVER, the launch of one
kernel over its grid, filled in per kernel (%(params)s, %(entry)s, %(call)s). Rules for shim
code: no thread_local (a thread's state lives in its CudaThread), a spin-wait yields
(yield_thread), block-wide waits are Barriers met with arrive_and_wait."""

SHIM = r"""
#include <math.h>
#include <sys/mman.h>
#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>
struct dim3_t { unsigned x, y, z; };
static dim3_t gridDim, blockDim;
// A cluster's CUDA threads are fibers of the launching OS thread: one runs until it waits (at a
// barrier, a warp meet, an mbarrier), then the scheduler (the driver's) resumes the next that
// can go. Switching a fiber is a few registers, not an OS context switch, so a 256-thread block
// meeting its warps thousands of times stays cheap on a CI machine of two cores; the order is
// fixed, so a run is repeatable. A thread's own state is its fiber's (`self`); a block's is
// pointed to by the globals the scheduler sets before resuming a fiber of that block.
#ifndef __x86_64__
#error "the emulator's fiber switch is x86-64 assembly"
#endif
extern "C" __attribute__((visibility("hidden"))) void fiber_switch(void** save_sp, void* next_sp);
// Saves the callee-saved registers on this stack, stores its top in *save_sp, and returns on
// the stack at next_sp (where the same registers were saved, or a fiber's first frame waits).
// Not swapcontext: it saves the signal mask with a system call at every switch. MXCSR and the x87
// control word are callee-saved as well, but nothing here changes them, so all fibers share the thread's.
asm(R"(
    .text
    .globl fiber_switch
    .hidden fiber_switch
    .type fiber_switch, @function
fiber_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
)");
struct CudaThread {
    dim3_t index, block;
    unsigned rank;  // its block's within the cluster
    void* sp = nullptr;  // its stack's top while it is not running
    const unsigned* waits_on = nullptr;  // a barrier's phase count it waits to see move on
    unsigned waits_while = 0;
    bool done = false;
    bool spinning = false;  // it yielded in an mbarrier wait that found the phase not done
    // wgmma's commit groups of products not run yet (see wgmma_commit).
    std::vector<std::vector<std::function<void()>>> wgmma_groups;
    std::vector<std::function<void()>> wgmma_open;
};
static CudaThread* self;
static void* scheduler_sp;
#define threadIdx (self->index)
#define blockIdx (self->block)
inline void yield_thread() { fiber_switch(&self->sp, scheduler_sp); }
// A barrier of `count` threads: the last to arrive starts the next phase and goes on; the
// others wait (are not resumed) until it has.
struct Barrier { unsigned count, arrived = 0, phase = 0; };
// Counts arrivals at any barrier (block, named, mbarrier): a round of the scheduler in which every
// thread it resumed spun again in an mbarrier wait and nothing arrived anywhere is a deadlock
// (nothing left can complete a phase they wait for).
static unsigned long long sync_events;
inline void arrive_and_wait(Barrier& b) {
    ++sync_events;
    if (++b.arrived == b.count) { b.arrived = 0; ++b.phase; return; }
    self->waits_on = &b.phase;
    self->waits_while = b.phase;
    yield_thread();
}
static Barrier* block_barrier;
inline void __syncthreads() { arrive_and_wait(*block_barrier); }
inline void __threadfence() {}
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __cluster_dims__(...)
#define __shared__ static
#define __constant__
#define __align__(n) alignas(n)
struct alignas(8) float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(8) uint2 { unsigned x, y; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
inline float2 make_float2(float x, float y) { return {x, y}; }
inline uint2 make_uint2(unsigned x, unsigned y) { return {x, y}; }
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
template <class T> inline T __ldg(const T* p) { return *p; }
template <class T> inline T __ldcg(const T* p) { return *p; }
template <class T> inline void __stcg(T* p, T v) { *p = v; }
inline int atomicAdd(int* p, int v) { int old = *p; *p += v; return old; }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
// fp16 storage (engine.ops.broadcast.kernel): the PTX cvt conversions, rounding to nearest even.
inline float half_to_float(unsigned short h) { _Float16 f; memcpy(&f, &h, 2); return (float)f; }
inline unsigned short float_to_half(float x) { _Float16 f = (_Float16)x; unsigned short h; memcpy(&h, &f, 2); return h; }
// 16-bit outputs in pairs (engine.ops.gemm_tc.kernel's PACK_HELPERS): PTX cvt.rn.f16x2 / bf16x2, nearest even.
inline unsigned short float_to_bfloat16(float x) {
    unsigned u; memcpy(&u, &x, 4); return (unsigned short)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
inline unsigned pack_float16x2(float lo, float hi) { return float_to_half(lo) | ((unsigned)float_to_half(hi) << 16); }
inline unsigned pack_bfloat16x2(float lo, float hi) {
    return float_to_bfloat16(lo) | ((unsigned)float_to_bfloat16(hi) << 16);
}
using std::min;
using std::max;
// Each block of a cluster has its own shared memory (its rank's), the others' reachable.
constexpr int MAX_CLUSTER = 8;
alignas(1024) static unsigned char shared_pool[MAX_CLUSTER][256 * 1024];
static unsigned char* dynamic_smem;
static Barrier* cluster_barrier;
inline void cluster_arrive_wait() { arrive_and_wait(*cluster_barrier); }
// A float4 at a shared address (an offset into a block's shared memory) of block `rank`.
inline float4 load_shared_cluster4(unsigned address, unsigned rank) {
    float4 v; memcpy(&v, shared_pool[rank] + address, 16); return v;
}

// Tensor-core PTX, emulated (see the module docstring).
struct WarpSlots { const void* address[32]; unsigned a[32][4]; unsigned b[32][2]; float c[32][4]; unsigned word[32]; };
static Barrier* warp_barriers;
static WarpSlots* warp_slots;
inline unsigned linear_thread() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
inline void warp_meet() { arrive_and_wait(warp_barriers[linear_thread() / 32]); }
// shfl.sync.bfly: every lane of the warp leaves its word, then reads its partner's (lane ^ lanes).
inline unsigned shfl_xor(unsigned v, int lanes) {
    const unsigned lane = linear_thread() % 32;
    WarpSlots& slots = warp_slots[linear_thread() / 32];
    slots.word[lane] = v;
    warp_meet();
    const unsigned r = slots.word[lane ^ lanes];
    warp_meet();  // no lane overwrites its word before its partner has read it
    return r;
}
inline void copy16(void* dst, const void* src, bool pred) { if (pred) memcpy(dst, src, 16); else memset(dst, 0, 16); }
inline void copy16_commit() {}
template <int PENDING> inline void copy16_wait() {}
inline void ldmatrix_lanes(unsigned (&r)[4], const void* p, bool trans) {
    const unsigned lane = linear_thread() % 32;
    WarpSlots& slots = warp_slots[linear_thread() / 32];
    slots.address[lane] = p;
    warp_meet();
    for (int m = 0; m < 4; ++m) {  // matrix m's eight rows are at the addresses of lanes 8m .. 8m + 7
        unsigned short lo, hi;
        if (!trans) {
            const unsigned short* row = (const unsigned short*)slots.address[8 * m + lane / 4];
            lo = row[2 * (lane % 4)];
            hi = row[2 * (lane % 4) + 1];
        } else {
            lo = ((const unsigned short*)slots.address[8 * m + 2 * (lane % 4)])[lane / 4];
            hi = ((const unsigned short*)slots.address[8 * m + 2 * (lane % 4) + 1])[lane / 4];
        }
        r[m] = lo | ((unsigned)hi << 16);
    }
    warp_meet();
}
inline void ldmatrix_x4(unsigned (&r)[4], const void* p) { ldmatrix_lanes(r, p, false); }
inline void ldmatrix_x4_trans(unsigned (&r)[4], const void* p) { ldmatrix_lanes(r, p, true); }
inline unsigned to_tf32(float x) { unsigned u; memcpy(&u, &x, 4); return (u + 0x1000u) & 0xFFFFE000u; }
enum class Mma { f16, bf16, tf32 };
template <Mma KIND> inline float mma_value(const unsigned* words, int element) {
    if (KIND == Mma::tf32) { float f; memcpy(&f, &words[element], 4); return f; }
    const unsigned short bits = (unsigned short)(words[element / 2] >> (16 * (element % 2)));
    if (KIND == Mma::f16) return half_to_float(bits);
    const unsigned wide = (unsigned)bits << 16;
    float f; memcpy(&f, &wide, 4); return f;
}
// m16n8k16 (f16, bf16: two elements a word) or m16n8k8 (tf32), A row-major, B column-major.
template <Mma KIND> inline void mma_lanes(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    const unsigned lane = linear_thread() % 32;
    WarpSlots& slots = warp_slots[linear_thread() / 32];
    memcpy(slots.a[lane], a, sizeof a); memcpy(slots.b[lane], b, sizeof b); memcpy(slots.c[lane], c, sizeof c);
    warp_meet();
    const int depth = KIND == Mma::tf32 ? 8 : 16, half = depth / 2, per_word = KIND == Mma::tf32 ? 1 : 2;
    float d[4];
    for (int i = 0; i < 4; ++i) {
        const int row = lane / 4 + (i >= 2 ? 8 : 0), col = 2 * (lane % 4) + i % 2;
        float sum = c[i];
        for (int k = 0; k < depth; ++k) {
            const int a_word = (row >= 8 ? 1 : 0) + (k >= half ? 2 : 0), b_word = k >= half ? 1 : 0;
            const int a_lane = (row % 8) * 4 + (k % half) / per_word, b_lane = col * 4 + (k % half) / per_word;
            const int within = (k % half) % per_word;
            sum += mma_value<KIND>(slots.a[a_lane], a_word * per_word + within)
                 * mma_value<KIND>(slots.b[b_lane], b_word * per_word + within);
        }
        d[i] = sum;
    }
    warp_meet();
    memcpy(c, d, sizeof d);
}
inline void mma_float16(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) { mma_lanes<Mma::f16>(c, a, b); }
inline void mma_bfloat16(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) { mma_lanes<Mma::bf16>(c, a, b); }
inline void mma_tf32(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) { mma_lanes<Mma::tf32>(c, a, b); }

// wgmma (engine.ops.gemm_tc.wgmma): shared memory by byte offsets into dynamic_smem, copies at
// once (so commits, waits and proxy fences have nothing to do), mbarriers as counters.
inline void __syncwarp() { warp_meet(); }
inline unsigned shared_address(const void* p) { return (unsigned)((const unsigned char*)p - dynamic_smem); }
inline void copy16(unsigned dst, const void* src, bool pred) { copy16(dynamic_smem + dst, src, pred); }
inline void fence_async_proxy() {}
// An mbarrier's phase completes once its arrivals are in and the bytes it expects (expect_tx)
// have landed (complete_tx): counters (the fibers share one OS thread, so no lock).
struct Mbarrier { int pending; long long bytes; std::atomic<unsigned> completed; int count; };
static Mbarrier mbarrier_pool[MAX_CLUSTER][64];  // a block's by (offset / 8) % 64: a kernel's barriers are consecutive
static Mbarrier* mbarriers;
inline Mbarrier& mbarrier_at(unsigned bar) { return mbarriers[(bar / 8) % 64]; }
inline void barrier_init(unsigned bar, unsigned count) {
    Mbarrier& m = mbarrier_at(bar); m.count = (int)count; m.pending = (int)count; m.bytes = 0; m.completed = 0;
}
inline void barrier_init_fence() {}
inline void barrier_update(Mbarrier& m, int arrivals, long long expected, long long landed) {
    ++sync_events;
    m.pending -= arrivals; m.bytes += expected - landed;
    if (m.pending == 0 && m.bytes == 0) { m.pending = m.count; m.completed.fetch_add(1); }
}
inline void barrier_update(unsigned bar, int arrivals, long long expected, long long landed) {
    barrier_update(mbarrier_at(bar), arrivals, expected, landed);
}
// An arrival on the barrier at `bar` of the cluster's block `rank`.
inline void barrier_arrive_remote(unsigned bar, unsigned rank) { barrier_update(mbarrier_pool[rank][(bar / 8) % 64], 1, 0, 0); }
inline void barrier_arrive(unsigned bar) { barrier_update(bar, 1, 0, 0); }
inline void barrier_arrive_expect_tx(unsigned bar, unsigned bytes) { barrier_update(bar, 1, bytes, 0); }
// try_wait.parity P: true once the phase of parity P completed, i.e. the current phase's is not P.
inline void barrier_wait(unsigned bar, unsigned parity) {
    while ((mbarrier_at(bar).completed.load() & 1u) == parity) {
        self->spinning = true;
        yield_thread();
    }
    self->spinning = false;
}
// The byte a 128B-swizzled operand's element lies at: a row's 16-byte chunks permuted by the
// row's place in its 1024-byte atom (address bits 4-6 ^= bits 7-9).
inline unsigned swizzled(unsigned address) { return address ^ (((address >> 7) & 7u) << 4); }
// TMA (loader tma): the runner's CUtensorMap is, here, where the matrix is and how it is cut
// (cuda_on_cpu.run writes it into the kernel's __constant__ from the KernelSource's TensorMap).
struct EmulatedTensorMap { const unsigned char* base; unsigned long long rows, columns, box_rows, box_columns, element_bytes; };
// The box at column x, row y lands at once in the shared memory of each block of `mask` (cluster
// ranks), 128B-swizzled by its shared address, zeros past the matrix's edges, and its bytes
// complete on each one's barrier at `bar`.
inline void tma_load_2d_multicast(unsigned dst, const void* map, int x, int y, unsigned bar, unsigned short mask) {
    const EmulatedTensorMap& t = *(const EmulatedTensorMap*)map;
    const unsigned long long row_bytes = t.box_columns * t.element_bytes;
    if (row_bytes != 128 || dst % 1024) abort();  // a 128B-swizzled box: 128-byte rows from an atom's start
    for (unsigned rank = 0; rank < MAX_CLUSTER; ++rank) {
        if (!(mask >> rank & 1)) continue;
        for (unsigned long long r = 0; r < t.box_rows; ++r)
            for (unsigned long long c = 0; c < t.box_columns; ++c) {
                const unsigned long long row = y + r, column = x + c;
                unsigned char* to = shared_pool[rank] + swizzled(dst + r * row_bytes + c * t.element_bytes);
                if (row < t.rows && column < t.columns)
                    memcpy(to, t.base + (row * t.columns + column) * t.element_bytes, t.element_bytes);
                else
                    memset(to, 0, t.element_bytes);
            }
        barrier_update(mbarrier_pool[rank][(bar / 8) % 64], 0, 0, t.box_rows * row_bytes);
    }
}
// Into this block alone.
inline void tma_load_2d(unsigned dst, const void* map, int x, int y, unsigned bar) {
    tma_load_2d_multicast(dst, map, x, y, bar, (unsigned short)(1u << (dynamic_smem - shared_pool[0]) / sizeof shared_pool[0]));
}
// L2 eviction priorities (l2_hint): a hint to a cache the CPU has not; the copies are the plain ones.
inline unsigned long long l2_evict_first() { return 1; }
inline unsigned long long l2_evict_last() { return 2; }
inline void tma_load_2d_hinted(unsigned dst, const void* map, int x, int y, unsigned bar, unsigned long long) {
    tma_load_2d(dst, map, x, y, bar);
}
inline void tma_load_2d_multicast_hinted(unsigned dst, const void* map, int x, int y, unsigned bar, unsigned short mask,
                                         unsigned long long) {
    tma_load_2d_multicast(dst, map, x, y, bar, mask);
}
// The im2col map (cuda_on_cpu.run writes it from the KernelSource's Im2colTensorMap): the NHWC
// input, the filter corners' box (h, w, from the first row and column and from the last), the
// walk's strides and one copy's channels and pixels.
struct EmulatedIm2colMap {
    const unsigned char* base;
    long long n, h, w, c, lower_h, lower_w, upper_h, upper_w, stride_h, stride_w, channels, pixels, element_bytes;
};
// `pixels` rows of `channels` elements at `dst` in the shared memory of each block of `mask` (cluster
// ranks), 128B-swizzled: the corners from (w, h) of image n on, W then H then N by the strides within
// the box, each read at its corner plus the tap's offsets (s, r); zeros outside the input (the padding,
// and past the last image). Its bytes complete on each one's barrier at `bar`.
inline void tma_load_im2col_multicast(unsigned dst, const void* map, int c, int w, int h, int n, unsigned short s,
                                      unsigned short r, unsigned bar, unsigned short mask) {
    const EmulatedIm2colMap& t = *(const EmulatedIm2colMap*)map;
    const long long row_bytes = t.channels * t.element_bytes;
    if (row_bytes != 128 || dst % 1024) abort();  // a 128B-swizzled box: 128-byte rows from an atom's start
    const long long last_w = t.w - 1 + t.upper_w, last_h = t.h - 1 + t.upper_h;
    if (w < t.lower_w || w > last_w || h < t.lower_h || h > last_h) abort();  // a corner outside the box
    for (unsigned rank = 0; rank < MAX_CLUSTER; ++rank) {
        if (!(mask >> rank & 1)) continue;
        long long cw = w, ch = h, image = n;
        for (long long p = 0; p < t.pixels; ++p) {
            const long long iw = cw + s, ih = ch + r;
            for (long long k = 0; k < t.channels; ++k) {
                unsigned char* to = shared_pool[rank] + swizzled(dst + p * row_bytes + k * t.element_bytes);
                const long long channel = c + k;
                if (image < t.n && ih >= 0 && ih < t.h && iw >= 0 && iw < t.w && channel < t.c)
                    memcpy(to, t.base + (((image * t.h + ih) * t.w + iw) * t.c + channel) * t.element_bytes,
                           t.element_bytes);
                else
                    memset(to, 0, t.element_bytes);
            }
            if ((cw += t.stride_w) > last_w) {
                cw = t.lower_w;
                if ((ch += t.stride_h) > last_h) { ch = t.lower_h; ++image; }
            }
        }
        barrier_update(mbarrier_pool[rank][(bar / 8) % 64], 0, 0, t.pixels * row_bytes);
    }
}
// Into this block alone.
inline void tma_load_im2col(unsigned dst, const void* map, int c, int w, int h, int n, unsigned short s,
                            unsigned short r, unsigned bar) {
    tma_load_im2col_multicast(dst, map, c, w, h, n, s, r, bar,
                              (unsigned short)(1u << (dynamic_smem - shared_pool[0]) / sizeof shared_pool[0]));
}
inline void cluster_sync() { arrive_and_wait(*cluster_barrier); }
inline void wgmma_fence() {}
// wgmma: a thread's products wait in commit groups and run (reading shared memory then) when a
// wait_group retires them, so a stage overwritten while its group is in flight gives a wrong C.
inline void wgmma_commit() { self->wgmma_groups.push_back(std::move(self->wgmma_open)); self->wgmma_open.clear(); }
// .sync.aligned: the warp waits together, so once one lane passes, every lane's groups retired.
template <int PENDING> inline void wgmma_wait() {
    auto& groups = self->wgmma_groups;
    while (groups.size() > (size_t)PENDING) {
        for (auto& product : groups.front()) product();
        groups.erase(groups.begin());
    }
    warp_meet();
}
template <int COUNT> inline void registers_down() {}
template <int COUNT> inline void registers_up() {}
inline void hold(float&) {}
inline unsigned descriptor_field(unsigned long long d, int shift) { return (unsigned)((d >> shift) & 0x3FFF) << 4; }
template <Mma KIND> inline float operand(unsigned address) {
    unsigned short bits; memcpy(&bits, dynamic_smem + swizzled(address), 2);
    unsigned word = bits; return mma_value<KIND>(&word, 0);
}
// m64nNk16, A K-major (8-row groups SBO apart, a row's 16 k contiguous from the start address) or,
// A_MNMAJOR (imm-trans-a, the GEMM's swap_ab), as an N-major B is; B N-major (8-k groups SBO apart,
// 64-column panels LBO apart) or, B_KMAJOR, as A (8-column groups SBO apart, a column's 16 k contiguous);
// this thread's accumulators: warp w of the warpgroup, lane 4g + q: d[4j + i] at row 16w + g (+ 8 for
// i >= 2), column 8j + 2q + i % 2.
inline unsigned kmajor_at(unsigned start, unsigned stride, unsigned line, unsigned k) {
    return start + (line / 8) * stride + (line % 8) * 128 + 2 * k;
}
inline unsigned mnmajor_at(unsigned start, unsigned leading, unsigned stride, unsigned line, unsigned k) {
    return start + (line / 64) * leading + (k / 8) * stride + (k % 8) * 128 + 2 * (line % 64);
}
template <int N, Mma KIND, bool B_KMAJOR = false, bool A_MNMAJOR = false>
inline void wgmma_now(float* d, unsigned long long a, unsigned long long b) {
    const unsigned a_start = descriptor_field(a, 0), a_leading = descriptor_field(a, 16), a_stride = descriptor_field(a, 32);
    const unsigned b_start = descriptor_field(b, 0), b_leading = descriptor_field(b, 16), b_stride = descriptor_field(b, 32);
    const unsigned t = linear_thread() % 128, warp = t / 32, g = (t % 32) / 4, q = t % 4;
    for (int j = 0; j < N / 8; ++j)
        for (int i = 0; i < 4; ++i) {
            const unsigned row = 16 * warp + g + (i >= 2 ? 8 : 0), col = 8 * j + 2 * q + i % 2;
            float sum = d[4 * j + i];
            for (unsigned k = 0; k < 16; ++k)
                sum += operand<KIND>(A_MNMAJOR ? mnmajor_at(a_start, a_leading, a_stride, row, k)
                                               : kmajor_at(a_start, a_stride, row, k))
                     * operand<KIND>(B_KMAJOR ? kmajor_at(b_start, b_stride, col, k)
                                              : mnmajor_at(b_start, b_leading, b_stride, col, k));
            d[4 * j + i] = sum;
        }
}
template <int N, Mma KIND, bool B_KMAJOR = false, bool A_MNMAJOR = false>
inline void wgmma_lanes(float* d, unsigned long long a, unsigned long long b) {
    self->wgmma_open.push_back([=] { wgmma_now<N, KIND, B_KMAJOR, A_MNMAJOR>(d, a, b); });
}
#define WGMMA_SHAPE(P, KIND, N, SUFFIX, B_KMAJOR, A_MNMAJOR) \
    inline void wgmma_##P##_m64n##N##SUFFIX(float (&d)[N / 2], unsigned long long a, unsigned long long b) { \
        wgmma_lanes<N, KIND, B_KMAJOR, A_MNMAJOR>(d, a, b); }
#define WGMMA_SHAPES(P, KIND, SUFFIX, B_KMAJOR) \
    WGMMA_SHAPE(P, KIND, 64, SUFFIX, B_KMAJOR, false) WGMMA_SHAPE(P, KIND, 128, SUFFIX, B_KMAJOR, false) \
    WGMMA_SHAPE(P, KIND, 192, SUFFIX, B_KMAJOR, false) WGMMA_SHAPE(P, KIND, 256, SUFFIX, B_KMAJOR, false)
WGMMA_SHAPES(float16, Mma::f16, , false)
WGMMA_SHAPES(bfloat16, Mma::bf16, , false)
// A K-major B (engine.ops.conv2d_tc's KRSC weights: a row per column of C).
WGMMA_SHAPES(float16, Mma::f16, _b_kmajor, true)
WGMMA_SHAPES(bfloat16, Mma::bf16, _b_kmajor, true)
// ... and its swap_ab (out^T = W A^T): both K-major, N the block's pixels, 32 to 256.
#define WGMMA_KMAJOR_PIXELS(P, KIND) \
    WGMMA_SHAPE(P, KIND, 32, _b_kmajor, true, false) WGMMA_SHAPE(P, KIND, 96, _b_kmajor, true, false) \
    WGMMA_SHAPE(P, KIND, 160, _b_kmajor, true, false)
WGMMA_KMAJOR_PIXELS(float16, Mma::f16)
WGMMA_KMAJOR_PIXELS(bfloat16, Mma::bf16)
// swap_ab (C^T = B^T A^T): A N-major (B's panels), B K-major (A's rows), N the block's rows.
#define WGMMA_SWAPPED(P, KIND) \
    WGMMA_SHAPE(P, KIND, 16, _swap_ab, true, true) WGMMA_SHAPE(P, KIND, 32, _swap_ab, true, true) \
    WGMMA_SHAPE(P, KIND, 64, _swap_ab, true, true) WGMMA_SHAPE(P, KIND, 128, _swap_ab, true, true) \
    WGMMA_SHAPE(P, KIND, 256, _swap_ab, true, true)
WGMMA_SWAPPED(float16, Mma::f16)
WGMMA_SWAPPED(bfloat16, Mma::bf16)
// tf32 (engine.ops.gemm_tc.wgmma_tf32): A from registers, B K-major from shared memory.
// Named barriers (bar.sync / bar.arrive with a thread count), the block's by id.
static Barrier* named_barriers;
inline void turn_wait(unsigned id) { named_barriers[id].count = 256; arrive_and_wait(named_barriers[id]); }
inline void turn_arrive(unsigned id) {
    Barrier& b = named_barriers[id];
    b.count = 256;
    ++sync_events;
    if (++b.arrived == b.count) { b.arrived = 0; ++b.phase; }
}
// stream_k (engine.ops.gemm_tc.tma): named barrier 3 of the consumers, and a block's flag in global
// memory that another block of the grid waits on (cuda_on_cpu.run runs such a grid's blocks together).
inline void consumers_sync(unsigned count) { named_barriers[3].count = count; arrive_and_wait(named_barriers[3]); }
// The fp32 GEMM's TMA producer (engine.ops.gemm.tma): named barrier 1 of its `count` threads, and the
// bytes a stage's copies bring, expected without an arrival (the producer arrives once its stores are done).
inline void producers_sync(unsigned count) { named_barriers[1].count = count; arrive_and_wait(named_barriers[1]); }
inline void barrier_expect_tx(unsigned bar, unsigned bytes) { barrier_update(bar, 0, bytes, 0); }
inline void flag_release(unsigned* flag) { __atomic_store_n(flag, 1u, __ATOMIC_RELEASE); ++sync_events; }
inline void flag_wait(const unsigned* flag) {
    while (!__atomic_load_n(flag, __ATOMIC_ACQUIRE)) {
        self->spinning = true;
        yield_thread();
    }
    self->spinning = false;
}
// A grid barrier's monotonic counter in global memory (engine.ops.conv2d_winograd_nonfused): a block's
// arrival (atom.add.release.gpu) and its wait until the counter reaches a target (ld.relaxed.gpu, spinning
// with a back-off: here a yield), then its acquire (fence.acq_rel.gpu).
inline unsigned long long grid_arrive(unsigned long long* counter) {
    ++sync_events;
    return __atomic_fetch_add(counter, 1ull, __ATOMIC_RELEASE);
}
inline void grid_wait(const unsigned long long* counter, unsigned long long target) {
    while (__atomic_load_n(counter, __ATOMIC_RELAXED) < target) {
        self->spinning = true;
        yield_thread();
    }
    self->spinning = false;
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
}
inline unsigned load_shared_word(unsigned address) { unsigned w; memcpy(&w, dynamic_smem + address, 4); return w; }
inline unsigned round_tf32(unsigned bits) { float f; memcpy(&f, &bits, 4); return to_tf32(f); }
inline float operand_tf32(unsigned address) { float f; memcpy(&f, dynamic_smem + swizzled(address), 4); return f; }
// m64nNk8: the warp's A is 16 rows of 8 k over its lanes (lane 4g + q: a[0] row g, k q; a[1] row
// g + 8; a[2], a[3] k q + 4), so at issue each lane takes its warp's fragments (the warp meets);
// B K-major (8-column groups SBO apart, a column's 8 k contiguous from the start address).
template <int N> inline void wgmma_tf32_lanes(float* d, const unsigned* a, unsigned long long b) {
    const unsigned lane = linear_thread() % 32;
    WarpSlots& slots = warp_slots[linear_thread() / 32];
    memcpy(slots.a[lane], a, 4 * sizeof(unsigned));
    warp_meet();
    std::array<unsigned, 128> warp_a;
    memcpy(warp_a.data(), slots.a, sizeof warp_a);
    warp_meet();
    self->wgmma_open.push_back([=] {
        const unsigned b_start = descriptor_field(b, 0), b_stride = descriptor_field(b, 32);
        const unsigned g = lane / 4, q = lane % 4;
        for (int j = 0; j < N / 8; ++j)
            for (int i = 0; i < 4; ++i) {
                const unsigned row = g + (i >= 2 ? 8 : 0), col = 8 * j + 2 * q + i % 2;
                float sum = d[4 * j + i];
                for (unsigned k = 0; k < 8; ++k) {
                    const unsigned word = warp_a[4 * ((row % 8) * 4 + k % 4) + (row >= 8 ? 1 : 0) + (k >= 4 ? 2 : 0)];
                    float value; memcpy(&value, &word, 4);
                    sum += value * operand_tf32(b_start + (col / 8) * b_stride + (col % 8) * 128 + 4 * k);
                }
                d[4 * j + i] = sum;
            }
    });
}
#define WGMMA_TF32(N) \
    inline void wgmma_tf32_m64n##N(float (&d)[N / 2], const unsigned* a, unsigned long long b) { wgmma_tf32_lanes<N>(d, a, b); }
WGMMA_TF32(16) WGMMA_TF32(32) WGMMA_TF32(64) WGMMA_TF32(128) WGMMA_TF32(256)
"""

DRIVER = r"""
typedef void (*kernel_t)(%(params)s);
static void** launch_args;
// A fiber's first frame: run the kernel as CUDA thread `self`, then hand back for good.
static void fiber_main() {
    ((kernel_t)&%(entry)s)(%(call)s);
    self->done = true;
    fiber_switch(&self->sp, scheduler_sp);
}
constexpr size_t STACK_BYTES = 512 * 1024, GUARD_BYTES = 4096;
// A cluster's blocks (cx x cy x cz of them, the kernel's __cluster_dims__) run together;
// clusters run one after another. Returns 0, or 1 where the threads left all wait at barriers
// that no other thread will reach (a deadlock on the GPU too). `lag` > 0: the cluster's last block
// starts `lag` rounds late and is resumed one round in lag + 1, so it falls behind the others (as a
// block may on the GPU), and a cluster protocol that lets one block write into another's shared
// memory or barriers before that one set them up or read them shows; its threads from `lag_from` on
// (0: all of them), so where lag_from is 1 its thread 0 keeps pace and its others fall behind (as a
// block's warps may), and a thread that speaks for its block before the others are done shows.
struct Block {
    Barrier barrier;
    Barrier named[16];
    std::vector<Barrier> meetings;
    std::vector<WarpSlots> slots;
};
extern "C" int launch(void** args, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                      unsigned cx, unsigned cy, unsigned cz, unsigned lag, unsigned lag_from) {
    gridDim = {gx, gy, gz};
    blockDim = {bx, by, bz};
    launch_args = args;
    const unsigned block_threads = bx * by * bz, warps = (block_threads + 31) / 32, ranks = cx * cy * cz;
    const size_t fibers = (size_t)block_threads * ranks;
    // One stack a fiber, each above a page that faults on overflow; pages are taken as touched.
    unsigned char* stacks = (unsigned char*)mmap(nullptr, fibers * STACK_BYTES, PROT_READ | PROT_WRITE,
                                                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (stacks == MAP_FAILED) return 2;
    for (size_t f = 0; f < fibers; ++f) mprotect(stacks + f * STACK_BYTES, GUARD_BYTES, PROT_NONE);
    int status = 0;
    for (unsigned z0 = 0; z0 < gz && !status; z0 += cz) for (unsigned y0 = 0; y0 < gy && !status; y0 += cy)
    for (unsigned x0 = 0; x0 < gx && !status; x0 += cx) {
        std::vector<Block> blocks(ranks);
        for (Block& b : blocks) {
            b.barrier.count = block_threads;
            for (unsigned w = 0; w < warps; ++w) b.meetings.push_back({std::min(32u, block_threads - 32 * w)});
            b.slots.resize(warps);
        }
        Barrier cluster{block_threads * ranks};
        std::vector<CudaThread> threads(fibers);
        for (size_t f = 0; f < fibers; ++f) {
            CudaThread& t = threads[f];
            const unsigned rank = f / block_threads, tid = f %% block_threads;
            t.rank = rank;
            t.block = {x0 + rank %% cx, y0 + rank / cx %% cy, z0 + rank / (cx * cy)};
            t.index = {tid %% bx, tid / bx %% by, tid / (bx * by)};
            // fiber_switch pops six registers, then returns to fiber_main with the stack 16-byte
            // aligned as a call leaves it.
            void** top = (void**)(stacks + (f + 1) * STACK_BYTES - 16);
            *top = (void*)&fiber_main;
            t.sp = top - 6;
        }
        for (size_t left = fibers, round = 0; left && !status; ++round) {
            bool resumed = false, progressed = false;
            const unsigned long long events = sync_events;
            const bool everyone = round %% (lag + 1) == lag;  // a round that resumes the lagging block too
            for (CudaThread& t : threads) {
                if (t.done || (t.waits_on && *t.waits_on == t.waits_while)) continue;
                if (!everyone && t.rank == ranks - 1
                    && t.index.x + bx * (t.index.y + by * t.index.z) >= lag_from) continue;
                t.waits_on = nullptr;
                Block& b = blocks[t.rank];
                block_barrier = &b.barrier;
                warp_barriers = b.meetings.data();
                warp_slots = b.slots.data();
                named_barriers = b.named;
                dynamic_smem = shared_pool[t.rank];
                mbarriers = mbarrier_pool[t.rank];
                cluster_barrier = &cluster;
                self = &t;
                fiber_switch(&scheduler_sp, t.sp);
                resumed = true;
                progressed |= !t.spinning;
                left -= t.done;
            }
            if (everyone && (!resumed || (!progressed && events == sync_events))) status = 1;
        }
        // A kernel leaves no named barrier half arrived (bar.arrive with no bar.sync to meet it).
        for (const Block& b : blocks)
            for (const Barrier& named : b.named)
                if (!status && named.arrived) status = 3;
    }
    munmap(stacks, fibers * STACK_BYTES);
    return status;
}
"""
