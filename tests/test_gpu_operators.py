"""On a GPU: random configs of gemm, the implicit-GEMM and Winograd (fused and unfused) convs, depthwise, broadcast and custom kernels against their
references through the GPU measurer, and the operators' vendor baselines.

Marked `gpu`; skipped where CuPy or a CUDA GPU is missing (CI has neither).
"""
from __future__ import annotations

import numpy as np
import pytest

import engine
from engine.workloads import PRESETS, broadcast_args, conv2d_args, gemm_args

from gpu_only import GPU_ONLY
from test_conv2d_igemm import config as conv_config
from test_conv2d_winograd import config as winograd_config
from test_conv2d_winograd_nonfused import config as unfused_winograd_config

pytestmark = GPU_ONLY

TRUSTED = r"""
extern "C" __global__ void reference_add(const float* a, const float* b, float* c) {
    const int i = blockIdx.x * 256 + threadIdx.x;
    if (i < N) c[i] = SCALE * a[i] + b[i];
}
"""


@pytest.fixture(scope="module")
def measurer():
    from engine.gpu.measurer import GpuMeasurer

    with GpuMeasurer(run_timeout=3.0) as m:
        yield m


def assert_all_correct(measurer, task, configs):
    results = measurer.measure(task, configs)
    assert [(c.index, r.error_msg) for c, r in zip(configs, results) if not r.ok] == []
    assert all(r.mean_cost > 0 for r in results)


@pytest.mark.parametrize("args", [PRESETS["G4"].args, PRESETS["G5"].args, gemm_args(70, 36, 1000), gemm_args(256, 256, 256)])
def test_random_gemm_configs_compute_the_product(measurer, args):
    task = engine.create_task("gemm", args)
    assert_all_correct(measurer, task, [task.default_config(), *task.config_space.sample(np.random.default_rng(2), 24)])


# The tuned bests of 512x49x4608 and 128x3136x576 (session 4, s5-skinny), and cp.async ones on a shape
# with tails on every side: K slices summed in shared memory, with and without split-K, and
# split-K summed over a thread block cluster (only sm_90 runs those; the CPU cannot).
SLICED_AND_CLUSTERED = [
    (PRESETS["G4"].args, (32, 64, 16, 16, 64, 2, 2, 16, 2, 1, "prefetch", 4, 16, 32, 4, "workspace")),
    (PRESETS["G5"].args, (32, 32, 16, 32, 32, 8, 4, 8, 4, 2, "prefetch", 4, 1, 32, 4, "workspace")),
    (gemm_args(70, 36, 1000), (64, 64, 32, 32, 32, 8, 4, 8, 1, 1, "cp_async_4", 4, 4, 32, 4, "workspace")),
    (PRESETS["G4"].args, (32, 64, 16, 16, 64, 2, 2, 16, 2, 1, "prefetch", 4, 8, 32, 4, "cluster")),
    (gemm_args(70, 36, 1000), (64, 64, 32, 32, 32, 8, 4, 8, 1, 1, "cp_async_4", 4, 4, 32, 4, "cluster")),
    (gemm_args(256, 256, 256), (64, 64, 16, 32, 32, 4, 4, 8, 4, 4, "sync", 4, 2, 32, 1, "cluster")),
]


@pytest.mark.parametrize("args, values", SLICED_AND_CLUSTERED)
def test_sliced_k_and_cluster_split_configs_compute_the_product(measurer, args, values):
    task = engine.create_task("gemm", args)
    config = task.config_space.from_entity([[n, "ot", v] for n, v in zip(task.config_space.knob_names, values)])
    assert task.why_invalid(config) is None
    assert_all_correct(measurer, task, [config])


# The TMA loaders (sm_90a): a producer warpgroup that moves registers (8 consumer warps), a producer warp
# beside 4 consumer warps and beside 2, A transposed by the producers (tma) or read as it lands (tma_rows),
# on shapes with tails on every side and on 1024³; the measurer's launches reuse the barriers.
TMA_TILES = [(128, 256, 64, 64, 8, 8, 4, "cp_async_4", "tma"), (128, 128, 64, 64, 8, 8, 4, "cp_async_3", "tma"),
             (64, 128, 64, 64, 8, 8, 4, "cp_async_3", "tma"), (64, 64, 32, 32, 4, 4, 8, "cp_async_4", "tma"),
             (128, 256, 64, 64, 4, 8, 4, "cp_async_4", "tma_rows"), (64, 64, 32, 32, 4, 4, 8, "cp_async_3", "tma_rows"),
             (64, 128, 32, 64, 4, 8, 4, "cp_async_3", "tma_rows")]
# and split K through the workspace (the consumers meet at a named barrier: the producers have left) and over
# a cluster (the partial tiles over the ring; the producers stay for the cluster's barriers)
TMA_SPLITS = [((64, 64, 32, 32, 4, 4, 8, "cp_async_4", "tma_rows"), 4, "workspace"),
              ((64, 64, 32, 32, 4, 4, 8, "cp_async_3", "tma"), 2, "workspace"),
              ((64, 64, 32, 32, 4, 4, 8, "cp_async_4", "tma_rows"), 4, "cluster"),
              ((32, 64, 32, 32, 4, 4, 8, "cp_async_3", "tma"), 2, "cluster")]


# and multicast (A's box shared by a cluster of tile columns): both loaders, clusters of 2 and 4, blocks past N's
# last tile (264 is 3 columns of 128 or 5 of 64; 3136 is 49 of 64), a producer warpgroup, split K through the workspace
TMA_MULTICASTS = [((64, 128, 32, 64, 4, 8, 4, "cp_async_3", "tma"), 1, 2),
                  ((64, 128, 32, 64, 4, 8, 4, "cp_async_3", "tma_rows"), 1, 2),
                  ((64, 64, 32, 32, 4, 4, 8, "cp_async_4", "tma_rows"), 1, 4),
                  ((64, 64, 32, 32, 4, 4, 8, "cp_async_3", "tma"), 1, 4),
                  ((128, 256, 64, 64, 8, 8, 4, "cp_async_4", "tma"), 1, 2),
                  ((64, 64, 32, 32, 4, 4, 8, "cp_async_4", "tma_rows"), 2, 2),
                  ((64, 64, 32, 32, 4, 4, 8, "cp_async_3", "tma"), 4, 4)]


def tma_config(task, tile, split=1, reduce="workspace", multicast=1):
    """A TMA loader's config: its tile (TMA_TILES' knobs), the knobs the loaders fix, its split K and multicast."""
    knobs = ("block_m", "block_n", "warp_m", "warp_n", "thread_m", "thread_n", "warp_lanes_n", "pipeline", "loader")
    fixed = [["block_k", "ot", 32], ["vector_a", "ot", 4], ["vector_b", "ot", 4], ["smem_pad", "ot", 0],
             ["unroll_k", "ot", 32], ["slice_k", "ot", 1]]
    return task.config_space.from_entity([[n, "ot", v] for n, v in zip(knobs, tile)] + fixed + [
        ["split_k", "ot", split], ["split_reduce", "ot", reduce], ["multicast", "ot", multicast]])


@pytest.mark.parametrize("args", [gemm_args(200, 264, 136), gemm_args(130, 300, 580), PRESETS["G3"].args,
                                  PRESETS["G1"].args])  # 4096³: where a stage released right after its reads was overwritten too soon
def test_tma_loader_configs_compute_the_product(measurer, args):
    task = engine.create_task("gemm", args)
    splits = [(tile, split, reduce) for tile, split, reduce in TMA_SPLITS if split in task.params.split_k_choices]
    configs = [tma_config(task, tile, split, reduce)
               for tile, split, reduce in [(tile, 1, "workspace") for tile in TMA_TILES] + splits]
    assert [task.why_invalid(c) for c in configs] == [None] * len(configs)
    assert_all_correct(measurer, task, configs)


@pytest.mark.parametrize("args", [gemm_args(200, 264, 136), gemm_args(130, 300, 580), PRESETS["G5"].args,
                                  PRESETS["G1"].args])
def test_tma_multicast_configs_compute_the_product(measurer, args):
    task = engine.create_task("gemm", args)
    configs = [tma_config(task, tile, split, multicast=multicast) for tile, split, multicast in TMA_MULTICASTS
               if split in task.params.split_k_choices]
    assert [task.why_invalid(c) for c in configs] == [None] * len(configs)
    assert_all_correct(measurer, task, configs)


# The implicit-GEMM conv: random configs (split K through the workspace and over clusters among them) on
# ResNet-18 layers with padding, stride 2, 7x7 and 1x1, and on batched layers whose tiles cross images.
@pytest.mark.parametrize("layer", ["IG-C1", "IG-C4", "IG-C8", "IG-C12", "IG-7-512-512-k3-b16", "IG-56-64-256-k1-b16"])
def test_random_implicit_gemm_conv_configs_compute_the_convolution(measurer, layer):
    task = engine.create_task(PRESETS[layer].task_name, PRESETS[layer].args)
    assert_all_correct(measurer, task, [task.default_config(), *task.config_space.sample(np.random.default_rng(4), 12)])


# Split K summed over a cluster straight into the scattered NCHW output: 4 floats at a time where an image's
# plane allows (28² = 784 pixels), one at a time where it does not (7² = 49); the CPU emulation runs no fp32
# cluster kernel, and random samples need not draw one.
@pytest.mark.parametrize("args, knobs", [
    (conv2d_args(7, 16, 32, 3, 1, 1, batch=2), {"block_k": 16}),
    (conv2d_args(28, 64, 32, 3, 1, 1, batch=2), {"block_n": 64, "warp_n": 32}),
])
def test_implicit_gemm_conv_split_k_over_a_cluster_sums_into_the_scattered_output(measurer, args, knobs):
    task = engine.create_task("conv2d_nchw_implicit_gemm", args)
    config = conv_config(task, split_k=2, split_reduce="cluster", **knobs)
    assert task.why_invalid(config) is None
    assert_all_correct(measurer, task, [config])


# K steps of whole channels: the loads' offsets and padding tests worked out before the K loop, over every
# pipeline, split K through the workspace and over a cluster, stride 2 and 7x7 (a step of 49 taps).
@pytest.mark.parametrize("layer, knobs", [
    ("IG-C2", {"step_channels": 1, "pipeline": "prefetch"}),
    ("IG-C4", {"step_channels": 2, "pipeline": "cp_async_3", "block_m": 64, "warp_m": 32}),
    ("IG-C1", {"step_channels": 1, "pipeline": "cp_async_2", "block_n": 64, "warp_n": 32}),
    ("IG-28-128-128-k3-b16", {"step_channels": 4, "pipeline": "cp_async_4", "split_k": 2}),
    ("IG-56-64-64-k3-b16", {"step_channels": 2, "pipeline": "cp_async_3", "split_k": 2, "split_reduce": "cluster"}),
    ("IG-7-512-512-k3-b32", {"step_channels": 1, "pipeline": "sync", "split_k": 8}),
])
def test_implicit_gemm_conv_whole_channel_steps_compute_the_convolution(measurer, layer, knobs):
    task = engine.create_task(PRESETS[layer].task_name, PRESETS[layer].args)
    config = conv_config(task, **knobs)
    assert task.why_invalid(config) is None, task.why_invalid(config)
    assert_all_correct(measurer, task, [config])


@pytest.mark.parametrize("preset", ["IG-C9", "WG-C9", "WN-C9"], ids=["implicit_gemm", "winograd", "unfused_winograd"])  # -k selects each
def test_the_conv_templates_cudnn_baseline_passes_the_reference_check(measurer, preset):
    from engine.gpu.baselines import VENDOR_BASELINES

    task = engine.create_task(PRESETS[preset].task_name, PRESETS[preset].args)
    result = VENDOR_BASELINES[task.name](task, settings=measurer.timing)
    assert result.ok, result.error_msg


# The fused Winograd conv: random configs on ResNet-18's stride-1 3x3 layers and on batched ones (7² and 14²
# outputs leave half tiles at the edges); its cuDNN baseline is tested with the implicit GEMM's above.
@pytest.mark.parametrize("layer", ["WG-C2", "WG-C12", "WG-28-128-128-k3-b16", "WG-7-512-512-k3-b32"])
def test_random_winograd_conv_configs_compute_the_convolution(measurer, layer):
    task = engine.create_task(PRESETS[layer].task_name, PRESETS[layer].args)
    assert_all_correct(measurer, task, [task.default_config(), *task.config_space.sample(np.random.default_rng(4), 12)])


# F(4x4, 3x3) is rarer among random draws (its 36 positions leave fewer valid blocks): chosen configs of each
# pipeline, on 7² (half tiles), 28² batch 32 and 14² batch 32 outputs.
@pytest.mark.parametrize("layer, knobs", [
    ("WG-C12", {"pipeline": "prefetch"}),
    ("WG-28-128-128-k3-b32", {"pipeline": "sync", "chunk": 16, "block_tiles": 16, "warp_tiles": 16}),
    ("WG-14-256-256-k3-b32", {"pipeline": "prefetch", "chunk": 4, "block_tiles": 16, "warp_tiles": 16}),
    ("WG-28-128-128-k3-b16", {"pipeline": "sync", "warp_positions": 9, "block_co": 32, "warp_co": 32,
                              "block_tiles": 16, "warp_tiles": 16}),
])
def test_winograd_conv_f4x4_configs_compute_the_convolution(measurer, layer, knobs):
    task = engine.create_task(PRESETS[layer].task_name, PRESETS[layer].args)
    config = winograd_config(task, **{"tile": 4, "warp_positions": 4, "block_co": 16, "warp_co": 16, **knobs})
    assert task.why_invalid(config) is None, task.why_invalid(config)
    assert_all_correct(measurer, task, [config])


# The unfused Winograd conv, one persistent kernel with grid barriers between its phases: random configs on
# ResNet-18's stride-1 3x3 layers and on the batched ones it is built for (each measured, so launched many times:
# the barrier's counter runs on from launch to launch), and chosen configs of each pipeline and blocks_per_sm.
@pytest.mark.parametrize("layer", ["WN-C2", "WN-C12", "WN-28-128-128-k3-b32", "WN-14-256-256-k3-b32"])
def test_random_unfused_winograd_conv_configs_compute_the_convolution(measurer, layer):
    task = engine.create_task(PRESETS[layer].task_name, PRESETS[layer].args)
    assert_all_correct(measurer, task, [task.default_config(), *task.config_space.sample(np.random.default_rng(4), 12)])


@pytest.mark.parametrize("layer, knobs", [
    ("WN-28-128-128-k3-b32", {"block_co": 128, "block_tiles": 128, "warp_co": 64, "warp_tiles": 32, "thread_co": 8,
                              "thread_tiles": 8, "block_k": 8, "blocks_per_sm": 1}),
    ("WN-28-128-128-k3-b32", {"block_co": 128, "block_tiles": 64, "warp_co": 64, "warp_tiles": 32, "block_k": 16,
                              "pipeline": "cp_async_3", "vector_u": 1}),
    ("WN-14-256-256-k3-b32", {"block_k": 16, "pipeline": "cp_async_4", "vector_u": 1, "blocks_per_sm": 1}),
    ("WN-14-256-256-k3-b32", {"tile": 2, "pipeline": "sync", "block_tiles": 128, "warp_tiles": 64}),
    ("WN-7-512-512-k3-b16", {"block_co": 128, "warp_co": 64, "block_k": 32}),
])
def test_unfused_winograd_conv_configs_compute_the_convolution(measurer, layer, knobs):
    task = engine.create_task(PRESETS[layer].task_name, PRESETS[layer].args)
    config = unfused_winograd_config(task, **knobs)
    assert task.why_invalid(config) is None, task.why_invalid(config)
    assert_all_correct(measurer, task, [config])


@pytest.mark.parametrize("layer", ["D1", "D4", "D9"])
def test_random_depthwise_configs_compute_the_reference(measurer, layer):
    task = engine.create_task(PRESETS[layer].task_name, PRESETS[layer].args)
    assert_all_correct(measurer, task, [task.default_config(), *task.config_space.sample(np.random.default_rng(3), 12)])


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("op", ["exp", "div", "rsqrt", "mul_rsqrt"])
@pytest.mark.parametrize("shape", [[8, 32, 32, 32], [4, 64, 7, 7], [3, 5, 8, 8]])
def test_random_broadcast_configs_compute_the_reference(measurer, op, shape, dtype):
    task = engine.create_task("broadcast_nchw", broadcast_args(shape, op, dtype))
    assert_all_correct(measurer, task, task.config_space.sample(np.random.default_rng(4), 16))


@pytest.mark.parametrize("reference", [{"numpy": "SCALE * a + b"},
                                       {"kernel": {"source": TRUSTED, "kernel_name": "reference_add",
                                                   "grid": ["ceil_div(N, 256)"], "block": [256]}}])
def test_custom_kernels_are_checked_against_either_reference(measurer, reference):
    from test_custom_kernel import SPEC

    task = engine.create_task("custom", [{**SPEC, "sizes": {"N": 100_000, "SCALE": 3}, "reference": reference}])
    configs = [c for c in task.config_space.sample(np.random.default_rng(0), 12)]
    assert_all_correct(measurer, task, configs)


CONSTANT_SOURCE = r"""
__constant__ float coefficients[4];
extern "C" __global__ void weighted(const float* a, const float* weights, float* c) {
    const int i = blockIdx.x * block_size_x + threadIdx.x;
    if (i < N) c[i] = coefficients[i % 4] * a[i];
}
"""


def constant_memory_task():
    """A custom kernel whose `weights` argument is copied into its `__constant__ coefficients`."""
    spec = {"kernel_name": "weighted", "source": CONSTANT_SOURCE, "sizes": {"N": 4096},
            "tune_params": [["block_size_x", [64, 256]]], "block": ["block_size_x"], "grid": ["ceil_div(N, block_size_x)"],
            "arguments": [{"name": "a", "shape": ["N"], "dtype": "float32"},
                          {"name": "weights", "shape": [4], "dtype": "float32", "range": [1, 2]},
                          {"name": "c", "shape": ["N"], "dtype": "float32", "output": True}],
            "constants": {"coefficients": "weights"},
            "reference": {"kernel": {"source": TRUSTED_WEIGHTED, "kernel_name": "reference_weighted",
                                     "grid": ["ceil_div(N, 256)"], "block": [256]}}}
    return engine.create_task("custom", [spec])


def test_a_custom_kernel_reads_its_constant_memory_filled_from_an_argument(measurer):
    task = constant_memory_task()
    assert_all_correct(measurer, task, [task.config_space.get(0), task.config_space.get(1)])


TRUSTED_WEIGHTED = r"""
extern "C" __global__ void reference_weighted(const float* a, const float* weights, float* c) {
    const int i = blockIdx.x * 256 + threadIdx.x;
    if (i < N) c[i] = weights[i % 4] * a[i];
}
"""


def test_the_cublas_and_cudnn_baselines_pass_the_reference_check(measurer):
    from engine.gpu.baselines import copy_bandwidth, cublas_gemm, cudnn_depthwise

    gemm = engine.create_task("gemm", PRESETS["G3"].args)
    assert cublas_gemm(gemm, settings=measurer.timing).ok
    depthwise = engine.create_task(PRESETS["D3"].task_name, PRESETS["D3"].args)
    assert cudnn_depthwise(depthwise, settings=measurer.timing).ok
    seconds, bandwidth = copy_bandwidth(256 * 2**20, measurer.timing)
    assert seconds > 0 and bandwidth > 1e11
