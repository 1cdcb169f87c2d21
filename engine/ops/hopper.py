"""CUDA text of Hopper's that several operators' kernels share: a shared-memory address, mbarriers,
setmaxnreg's register moves, the tensor memory accelerator's 2-D box copies (plain and multicast into a
cluster; with L2 eviction priorities or without), and the `__constant__` tensor maps the runner encodes
(engine.gpu.tensor_map), and the arrival on a barrier in each block of a cluster. Pure text. TMA_HELPERS and L2_HINTED_COPIES put themselves behind `__CUDA_ARCH__`;
the others go inside the caller's `#ifdef __CUDA_ARCH__`.
Without it tests/cuda_on_cpu.py supplies the same functions on the CPU."""
from __future__ import annotations

# The two tensor maps a kernel of two input matrices reads: A's and B's.
A_TENSOR_MAP, B_TENSOR_MAP = "a_tensor_map", "b_tensor_map"

# A generic pointer into shared memory as the 32-bit shared address PTX takes.
SHARED_ADDRESS = r"""__device__ __forceinline__ unsigned shared_address(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}
"""

# mbarriers: init (with its arrival count), the fence that publishes inits, an arrival, and a
# wait for the phase of a parity to complete.
MBARRIERS = r"""__device__ __forceinline__ void barrier_init(unsigned bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" :: "r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void barrier_init_fence() {
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
__device__ __forceinline__ void barrier_arrive(unsigned bar) {
    asm volatile("{\n.reg .b64 state;\nmbarrier.arrive.shared::cta.b64 state, [%0];\n}\n" :: "r"(bar) : "memory");
}
__device__ __forceinline__ void barrier_wait(unsigned bar, unsigned parity) {
    unsigned done;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    } while (!done);
}
"""

# setmaxnreg, a warpgroup at a time.
REGISTER_MOVES = r"""// Warp specialisation: the producer warpgroup gives registers back, the consumers take them.
template <int COUNT>
__device__ __forceinline__ void registers_down() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" :: "n"(COUNT)); }
template <int COUNT>
__device__ __forceinline__ void registers_up() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" :: "n"(COUNT)); }
"""

TMA_HELPERS = r"""
#ifdef __CUDA_ARCH__
// loader tma: one box of the tensor map at `map` (a generic address: here a __constant__'s) whose
// first element is column x, row y, into shared memory at `dst`; its bytes count on `bar`.
__device__ __forceinline__ void tma_load_2d(unsigned dst, const void* map, int x, int y, unsigned bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
                 :: "r"(dst), "l"(map), "r"(x), "r"(y), "r"(bar) : "memory");
}
// One arrival on `bar` that also expects `bytes` more of copies before its phase completes.
__device__ __forceinline__ void barrier_arrive_expect_tx(unsigned bar, unsigned bytes) {
    asm volatile("{\n.reg .b64 state;\nmbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\n}\n"
                 :: "r"(bar), "r"(bytes) : "memory");
}
// cluster > 1: the box lands at `dst` in every block of `mask` (cluster ranks), each block's
// barrier at `bar` counting its bytes; an arrival on block `rank`'s barrier at `bar`; a barrier
// of every thread of the cluster (not .aligned: the producer's and consumers' paths reach it apart).
__device__ __forceinline__ void tma_load_2d_multicast(unsigned dst, const void* map, int x, int y, unsigned bar,
                                                      unsigned short mask) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%2, %3}], [%4], %5;\n"
                 :: "r"(dst), "l"(map), "r"(x), "r"(y), "r"(bar), "h"(mask) : "memory");
}
// The arrival's default semantics (.release.cta), as CUTLASS's ClusterBarrier::arrive(cta_id): with a
// .release.cluster here (3820b12) the cluster kernels kept the tensor pipe half as busy as the same
// tile alone (Nsight); the default is not measured yet.
__device__ __forceinline__ void barrier_arrive_remote(unsigned bar, unsigned rank) {
    asm volatile("{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, %0, %1;\n"
                 "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n" :: "r"(bar), "r"(rank) : "memory");
}
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive;\nbarrier.cluster.wait;\n" ::: "memory");
}
#endif
"""
# A float4 at a shared address (an offset in the shared window) of the cluster's block `rank`: a split-K
# sum's read of another split's partial tile. Inside its kernel's `#ifdef __CUDA_ARCH__` (tests/cuda_on_cpu.py
# supplies it without).
LOAD_SHARED_CLUSTER4 = r"""__device__ __forceinline__ float4 load_shared_cluster4(unsigned address, unsigned rank) {
    unsigned remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(address), "r"(rank));
    float4 v;
    asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(remote) : "memory");
    return v;
}
"""
# L2 eviction priorities on the box copies (the GEMM's l2_hint): a policy made by createpolicy (the
# whole of each access at that priority) and the copies that carry one as their cache hint.
# Behind __CUDA_ARCH__ like TMA_HELPERS, apart from it so that kernels without hints keep their text.
L2_HINTED_COPIES = r"""
#ifdef __CUDA_ARCH__
__device__ __forceinline__ unsigned long long l2_evict_first() {
    unsigned long long policy;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
    return policy;
}
__device__ __forceinline__ unsigned long long l2_evict_last() {
    unsigned long long policy;
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(policy));
    return policy;
}
__device__ __forceinline__ void tma_load_2d_hinted(unsigned dst, const void* map, int x, int y, unsigned bar,
                                                   unsigned long long policy) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
                 " [%0], [%1, {%2, %3}], [%4], %5;\n"
                 :: "r"(dst), "l"(map), "r"(x), "r"(y), "r"(bar), "l"(policy) : "memory");
}
__device__ __forceinline__ void tma_load_2d_multicast_hinted(unsigned dst, const void* map, int x, int y, unsigned bar,
                                                             unsigned short mask, unsigned long long policy) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 ".L2::cache_hint [%0], [%1, {%2, %3}], [%4], %5, %6;\n"
                 :: "r"(dst), "l"(map), "r"(x), "r"(y), "r"(bar), "h"(mask), "l"(policy) : "memory");
}
#endif
"""
# The CUtensorMaps (128 bytes, 64-byte aligned), filled by the runner before launch.
TENSOR_MAP_DECLARATIONS = f"""struct __align__(64) TensorMap {{ unsigned long long opaque[16]; }};
__constant__ TensorMap {A_TENSOR_MAP}, {B_TENSOR_MAP};
"""


def arrive_in_every_block(bar: str, blocks: int, remote_rank: str = "r") -> str:
    """A statement: an arrival on the mbarrier at shared address `bar` in each of `blocks` blocks of the cluster,
    block r of them at cluster rank `remote_rank` (this one's, `rank`, arrives locally)."""
    return (f"for (int r = 0; r < {blocks}; ++r) "
            f"if (r == rank) barrier_arrive({bar}); else barrier_arrive_remote({bar}, {remote_rank});")
