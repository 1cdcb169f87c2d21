"""On a GPU: tensor-core GEMM kernels (gemm_tensorcore: fp16, bf16, tf32; the mma_sync mainloop
and, on sm_90, the wgmma one) against their float64 references at each precision's tolerance
through the GPU measurer, and cuBLAS on tensor cores in the same precision as their baseline.

Marked `gpu`; skipped where CuPy or a CUDA GPU is missing (CI has neither).
"""
from __future__ import annotations

import numpy as np
import pytest

import engine
from engine.ops import DeviceLimits
from engine.ops.gemm_tc.tiling import WGMMA_BLOCK_K
from engine.workloads import PRESETS, gemm_tc_args

from gpu_only import GPU_ONLY

pytestmark = GPU_ONLY

PRECISIONS = ["float16", "bfloat16", "tf32"]


@pytest.fixture(scope="module")
def measurer():
    from engine.gpu.measurer import GpuMeasurer

    with GpuMeasurer(run_timeout=3.0, build_timeout=60.0) as m:
        yield m


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("shape", [(200, 264, 136), (16, 512, 1024), (256, 256, 256)])
def test_random_tensor_core_configs_compute_the_product(measurer, precision, shape):
    task = engine.create_task("gemm_tensorcore", gemm_tc_args(*shape, precision),
                              DeviceLimits.for_device(measurer.device))
    configs = [task.default_config(), *task.config_space.sample(np.random.default_rng(3), 12)]
    results = measurer.measure(task, configs)
    assert [(c.values(), r.error_msg) for c, r in zip(configs, results) if not r.ok] == []


# wgmma (sm_90 only): (block_m, block_n, stages, raster, consumers, producer[, loader]), each knob
# value at least once; the mma_sync-only knobs at their first values.
WGMMA_TILES = [(64, 64, 2, 1, 1, 0), (64, 64, 2, 1, 1, 1), (64, 128, 3, 4, 1, 1), (128, 256, 4, 1, 2, 1),
               (128, 256, 4, 1, 2, 0), (256, 128, 3, 1, 4, 0), (128, 128, 4, 1, 1, 0), (64, 256, 3, 1, 1, 1)]
# TMA loads: boxes past M, N and K edges (zeros), 1 and 2 consumers, 2 to 4 stages; 2-block
# clusters multicasting B (a spare tile row past M where the tile rows are odd); persistent blocks
# (more tiles than blocks on the largest shape: some walk two).
TMA_TILES = [(64, 64, 2, 1, 1, 1, "tma"), (64, 128, 3, 4, 1, 1, "tma"), (128, 256, 4, 1, 2, 1, "tma"),
             (256, 128, 3, 1, 2, 1, "tma"), (128, 128, 4, 1, 1, 1, "tma"), (64, 128, 3, 1, 1, 1, "tma", 2),
             (128, 256, 4, 1, 2, 1, "tma", 2), (64, 256, 4, 4, 1, 1, "tma", 2), (64, 64, 2, 4, 1, 1, "tma", 1, 1),
             (64, 128, 3, 1, 1, 1, "tma", 2, 1)]


def wgmma_configs(task, tiles):
    names = ("block_m", "block_n", "stages", "raster", "consumers", "producer", "loader", "cluster", "persistent",
             "split_k", "turns", "pingpong", "ring", "l2_hint", "stream_k", "swap_ab", "cluster_shares")
    fixed = [["block_k", "ot", WGMMA_BLOCK_K[task.params.precision]], ["warp_m", "ot", 16], ["warp_n", "ot", 16],
             ["warps_k", "ot", 1], ["mainloop", "ot", "wgmma"]]
    configs = [task.config_space.from_entity([[n, "ot", v] for n, v in zip(names, t)] + fixed) for t in tiles]
    return [c for c in configs if task.why_invalid(c) is None]


@pytest.mark.parametrize("precision", ["float16", "bfloat16"])
@pytest.mark.parametrize("shape", [(200, 264, 136), (16, 512, 1024), (130, 64, 520), (16, 4096, 4096)])
def test_wgmma_configs_compute_the_product(measurer, precision, shape):
    if not measurer.device.compute_capability.startswith("9."):
        pytest.skip("wgmma runs on sm_90 only")
    task = engine.create_task("gemm_tensorcore", gemm_tc_args(*shape, precision),
                              DeviceLimits.for_device(measurer.device))
    configs = wgmma_configs(task, WGMMA_TILES)
    assert len(configs) >= 5
    results = measurer.measure(task, configs)
    assert [(c.values(), r.error_msg) for c, r in zip(configs, results) if not r.ok] == []


@pytest.mark.parametrize("precision", ["float16", "bfloat16"])
@pytest.mark.parametrize("shape", [(200, 264, 136), (16, 512, 1024), (130, 64, 520), (520, 136, 200),
                                   (1100, 1104, 136)])
def test_tma_configs_compute_the_product(measurer, precision, shape):
    """The runner encodes each kernel's tensor maps for its arrays; the boxes land swizzled as
    the wgmma descriptors read them, zeros past the edges (C is NaN-filled before each check)."""
    if not measurer.device.compute_capability.startswith("9."):
        pytest.skip("TMA and wgmma run on sm_90 only")
    task = engine.create_task("gemm_tensorcore", gemm_tc_args(*shape, precision),
                              DeviceLimits.for_device(measurer.device))
    configs = wgmma_configs(task, TMA_TILES)
    assert len(configs) >= 3 and all(c["loader"].val == "tma" for c in configs)
    results = measurer.measure(task, configs)
    assert [(c.values(), r.error_msg) for c, r in zip(configs, results) if not r.ok] == []


# wgmma split_k (TMA loads): a tile's K over a cluster of 2 to 8 blocks, uneven splits, 1 and 2
# consumers, rows past M (M = 16 in a 64-row tile); those valid on each shape run.
WGMMA_SPLIT_TILES = [(64, 64, 3, 1, 1, 1, "tma", 1, 0, 2), (64, 128, 4, 1, 1, 1, "tma", 1, 0, 4),
                     (64, 256, 3, 1, 1, 1, "tma", 1, 0, 4), (128, 128, 3, 1, 2, 1, "tma", 1, 0, 8),
                     (64, 128, 4, 1, 1, 1, "tma", 1, 0, 8)]


@pytest.mark.parametrize("precision", ["float16", "bfloat16"])
@pytest.mark.parametrize("shape", [(16, 512, 1000), (130, 264, 520), (16, 4096, 4096), (128, 4096, 14336)])
def test_wgmma_split_k_configs_sum_their_cluster_into_c(measurer, precision, shape):
    if not measurer.device.compute_capability.startswith("9."):
        pytest.skip("TMA and wgmma run on sm_90 only")
    task = engine.create_task("gemm_tensorcore", gemm_tc_args(*shape, precision),
                              DeviceLimits.for_device(measurer.device))
    configs = wgmma_configs(task, WGMMA_SPLIT_TILES)
    assert len(configs) >= 3 and all(c["split_k"].val > 1 for c in configs)
    results = measurer.measure(task, configs)
    assert [(c.values(), r.error_msg) for c, r in zip(configs, results) if not r.ok] == []


# tf32 on wgmma (C's transpose, B^T's fragments from registers): 1 and 2 consumers of 64 and 128
# columns, turns, narrow (16) to wide (256) instructions over A's rows, clusters, persistent blocks.
TF32_TILES = [(64, 64, 2, 1, 1, 1, "tma"), (128, 128, 3, 4, 2, 1, "tma", 1, 0, 1, 1), (16, 128, 2, 1, 1, 1, "tma"),
              (256, 128, 4, 1, 2, 1, "tma", 1, 0, 1, 1), (128, 256, 4, 1, 2, 1, "tma", 1, 1, 1, 1),
              (64, 128, 3, 1, 2, 1, "tma", 2, 0, 1, 1), (256, 128, 4, 1, 2, 1, "tma", 2, 1, 1, 0),
              (256, 64, 4, 1, 1, 1, "tma")]


@pytest.mark.parametrize("shape", [(200, 264, 136), (16, 512, 1024), (130, 64, 520), (1100, 1104, 136),
                                   (4096, 4096, 4096)])
def test_tf32_wgmma_configs_compute_the_product(measurer, shape):
    if not measurer.device.compute_capability.startswith("9."):
        pytest.skip("TMA and wgmma run on sm_90 only")
    task = engine.create_task("gemm_tensorcore", gemm_tc_args(*shape, "tf32"), DeviceLimits.for_device(measurer.device))
    configs = wgmma_configs(task, TF32_TILES)
    assert len(configs) >= 4 and all(c["mainloop"].val == "wgmma" for c in configs)
    results = measurer.measure(task, configs)
    assert [(c.values(), r.error_msg) for c, r in zip(configs, results) if not r.ok] == []


# pingpong (16-bit, persistent): each consumer whole tiles in turn; shapes of more tiles than blocks, so
# blocks walk 2 and 3 tiles (tails in M, N and K there), 2-block clusters, 3 and 4 stages.
PINGPONG_TILES = [(128, 128, 4, 1, 2, 1, "tma", 1, 1, 1, 0, 1), (64, 256, 3, 4, 2, 1, "tma", 1, 1, 1, 0, 1),
                  (128, 128, 3, 1, 2, 1, "tma", 2, 1, 1, 0, 1), (64, 128, 4, 1, 2, 1, "tma", 2, 1, 1, 0, 1)]


@pytest.mark.parametrize("precision", ["float16", "bfloat16"])
@pytest.mark.parametrize("shape", [(200, 264, 136), (2048, 2048, 136), (2100, 2056, 200), (4096, 4096, 4096)])
def test_pingpong_configs_compute_the_product(measurer, precision, shape):
    if not measurer.device.compute_capability.startswith("9."):
        pytest.skip("TMA and wgmma run on sm_90 only")
    task = engine.create_task("gemm_tensorcore", gemm_tc_args(*shape, precision), DeviceLimits.for_device(measurer.device))
    configs = wgmma_configs(task, PINGPONG_TILES)
    assert len(configs) == len(PINGPONG_TILES) and all(c["pingpong"].val == 1 for c in configs)
    results = measurer.measure(task, configs)
    assert [(c.values(), r.error_msg) for c, r in zip(configs, results) if not r.ok] == []


@pytest.mark.parametrize("precision", ["float16", "bfloat16"])
@pytest.mark.parametrize("shape", [(200, 264, 136), (16, 512, 1000), (2100, 2056, 200), (4096, 4096, 4096)])
def test_a_16_bit_c_is_the_product_rounded_on_every_store_path(measurer, precision, shape):
    """C in the inputs' precision (the workload's third argument): the default and random configs
    (mma_sync, sliced K, split K) and, on sm_90, wgmma's tiles of every kind, checked at the
    precision's tolerance with C NaN-filled first."""
    task = engine.create_task("gemm_tensorcore", gemm_tc_args(*shape, precision, precision),
                              DeviceLimits.for_device(measurer.device))
    configs = [task.default_config(), *task.config_space.sample(np.random.default_rng(5), 6)]
    if measurer.device.compute_capability.startswith("9."):
        configs += wgmma_configs(task, WGMMA_TILES[:4] + TMA_TILES + PINGPONG_TILES + WGMMA_SPLIT_TILES)
    results = measurer.measure(task, configs)
    assert [(c.values(), r.error_msg) for c, r in zip(configs, results) if not r.ok] == []


# Deep rings (8 to 14 stages): unsplit and split over K, 1 and 2 consumers, the ring wrapping many times.
RING_TILES = [(64, 64, 2, 1, 1, 1, "tma", 1, 0, 1, 0, 0, 12), (64, 64, 4, 1, 1, 1, "tma", 1, 0, 2, 0, 0, 8),
              (64, 128, 4, 1, 1, 1, "tma", 1, 0, 4, 0, 0, 4), (128, 64, 4, 1, 2, 1, "tma", 1, 0, 1, 0, 0, 4)]


def tiles_measured(measurer, args, tiles) -> tuple[list, list]:
    """The ones of `tiles` valid on the workload `args` (TMA loaders: sm_90 only), each measured against
    the reference, and the (values, error) of those that failed."""
    if not measurer.device.compute_capability.startswith("9."):
        pytest.skip("TMA and wgmma run on sm_90 only")
    task = engine.create_task("gemm_tensorcore", args, DeviceLimits.for_device(measurer.device))
    configs = wgmma_configs(task, tiles)
    results = measurer.measure(task, configs)
    return configs, [(c.values(), r.error_msg) for c, r in zip(configs, results) if not r.ok]


@pytest.mark.parametrize("shape", [(16, 512, 1000), (130, 264, 2056), (16, 4096, 4096), (128, 4096, 14336)])
def test_deep_ring_configs_compute_the_product(measurer, shape):
    configs, failed = tiles_measured(measurer, gemm_tc_args(*shape, "bfloat16"), RING_TILES)
    assert len(configs) >= 3 and all(c["ring"].val for c in configs) and failed == []


# L2 hints (B evict-first, A evict-last): split K, a multicast cluster, a deep ring, 2 consumers.
HINTED_TILES = [(64, 64, 4, 1, 1, 1, "tma", 1, 0, 2, 0, 0, 4, "stream_b"),
                (128, 128, 3, 1, 2, 1, "tma", 2, 0, 1, 0, 0, 0, "stream_b"),
                (128, 64, 4, 1, 2, 1, "tma", 1, 0, 1, 0, 0, 4, "stream_b")]


@pytest.mark.parametrize("precision", ["float16", "bfloat16"])
@pytest.mark.parametrize("shape", [(130, 264, 2056), (16, 4096, 4096), (2100, 2056, 200)])
def test_l2_hinted_configs_compute_the_product(measurer, precision, shape):
    configs, failed = tiles_measured(measurer, gemm_tc_args(*shape, precision), HINTED_TILES)
    assert len(configs) >= 2 and all(c["l2_hint"].val == "stream_b" for c in configs) and failed == []


# Stream-K: blocks sharing all tiles' K steps (1) or each tile's in 2 or 4 shares, partials in global memory;
# 1 and 2 consumers.
STREAM_K_TILES = [(64, 64, 4, 1, 1, 1, "tma", 1, 1, 1, 0, 0, 4, "normal", 1),
                  (64, 128, 4, 1, 1, 1, "tma", 1, 1, 1, 0, 0, 4, "stream_b", 4),
                  (128, 64, 4, 1, 2, 1, "tma", 1, 1, 1, 0, 0, 0, "normal", 2)]


@pytest.mark.parametrize("c_dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("shape", [(130, 264, 2056), (16, 4096, 4096), (64, 4096, 14336)])
def test_stream_k_configs_compute_the_product(measurer, c_dtype, shape):
    configs, failed = tiles_measured(measurer, gemm_tc_args(*shape, "bfloat16", c_dtype), STREAM_K_TILES)
    assert len(configs) == 3 and all(c["stream_k"].val for c in configs) and failed == []


# Swapped operands (C^T = B^T A^T): narrow tiles of A's rows (16, 32), a cluster sharing one panel of B by
# rows, split K over a cluster and in global memory, 2 consumers sharing out B's columns.
SWAP_AB_TILES = [(32, 64, 4, 1, 1, 1, "tma", 2, 0, 1, 0, 0, 12, "normal", 0, 1),
                 (16, 128, 4, 1, 1, 1, "tma", 1, 0, 2, 0, 0, 4, "stream_b", 0, 1),
                 (64, 64, 4, 1, 1, 1, "tma", 1, 1, 1, 0, 0, 4, "stream_b", 2, 1),
                 (128, 128, 3, 1, 2, 1, "tma", 1, 0, 1, 0, 0, 0, "normal", 0, 1)]


@pytest.mark.parametrize("c_dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("shape", [(130, 264, 2056), (16, 4096, 4096), (64, 4096, 14336)])
def test_swap_ab_configs_compute_the_product(measurer, c_dtype, shape):
    configs, failed = tiles_measured(measurer, gemm_tc_args(*shape, "bfloat16", c_dtype), SWAP_AB_TILES)
    assert len(configs) >= 3 and all(c["swap_ab"].val for c in configs) and failed == []


# Clusters of tile columns sharing A: with split K 2 and 4 (clusters of 2 columns x the splits), a deep ring, L2
# hints, swapped operands, and persistent 2-consumer tiles.
SHARED_A_TILES = [(64, 64, 4, 1, 1, 1, "tma", 2, 0, 2, 0, 0, 4, "normal", 0, 0, "a"),
                  (64, 64, 4, 1, 1, 1, "tma", 2, 0, 4, 0, 0, 4, "stream_b", 0, 0, "a"),
                  (32, 64, 4, 1, 1, 1, "tma", 2, 0, 2, 0, 0, 4, "normal", 0, 1, "a"),
                  (128, 128, 3, 1, 2, 1, "tma", 2, 1, 1, 0, 0, 0, "normal", 0, 0, "a")]


@pytest.mark.parametrize("c_dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("shape", [(130, 264, 2056), (16, 4096, 4096), (64, 4096, 14336)])
def test_clusters_sharing_a_compute_the_product(measurer, c_dtype, shape):
    configs, failed = tiles_measured(measurer, gemm_tc_args(*shape, "bfloat16", c_dtype), SHARED_A_TILES)
    assert len(configs) >= 3 and all(c["cluster_shares"].val == "a" for c in configs) and failed == []


@pytest.mark.parametrize("loader, cluster, persistent", [("cp_async", 1, 0), ("tma", 1, 0), ("tma", 2, 1)])
def test_a_wgmma_config_computes_a_4096_cube(measurer, loader, cluster, persistent):
    if not measurer.device.compute_capability.startswith("9."):
        pytest.skip("wgmma runs on sm_90 only")
    task = engine.create_task("gemm_tensorcore", gemm_tc_args(4096, 4096, 4096, "bfloat16"),
                              DeviceLimits.for_device(measurer.device))
    configs = wgmma_configs(task, [(128, 256, 4, 8, 2, 1, loader, cluster, persistent)])
    (result,) = measurer.measure(task, configs)
    assert result.ok, result.error_msg


def test_apply_best_loads_a_tma_kernel_for_the_arrays_it_is_called_with(measurer, tmp_path):
    """A TMA kernel's tensor maps hold its arrays' addresses: the best kernel of a log is loaded
    again for new arrays, so a second call on other inputs computes their product."""
    if not measurer.device.compute_capability.startswith("9."):
        pytest.skip("TMA and wgmma run on sm_90 only")
    from engine.gpu.apply_best import check_and_time, load_best_kernel
    from engine.logfile import format_record
    from engine.measure import to_record

    task = engine.create_task("gemm_tensorcore", gemm_tc_args(200, 264, 136, "bfloat16"),
                              DeviceLimits.for_device(measurer.device))
    configs = wgmma_configs(task, [(64, 128, 3, 1, 1, 1, "tma", 2)])
    (result,) = measurer.measure(task, configs)
    assert result.ok, result.error_msg
    log = tmp_path / "tma.log"
    log.write_text(format_record(to_record(task, configs[0], result, measurer.device.target)) + "\n")
    kernel = load_best_kernel(str(log), task)
    assert kernel.source.tensor_maps
    for seed in (1, 2):  # fresh arrays each time
        assert check_and_time(kernel, seed=seed).relative_error < kernel.source.tolerance


# split_k (sm_90 clusters): (block_m, block_n, block_k, warp_m, warp_n, warps_k, stages, split_k);
# uneven splits, sliced K, 2 to 8 blocks a cluster; those valid on each shape run.
SPLIT_TILES = [(16, 32, 32, 16, 16, 1, 3, 2), (32, 64, 32, 16, 32, 2, 3, 4), (16, 16, 64, 16, 16, 4, 4, 8),
               (64, 64, 32, 32, 32, 1, 2, 2), (16, 32, 32, 16, 16, 2, 4, 8), (16, 32, 128, 16, 32, 4, 4, 4),
               (64, 64, 64, 32, 32, 1, 4, 4)]


@pytest.mark.parametrize("precision", ["bfloat16", "tf32"])
@pytest.mark.parametrize("shape", [(200, 264, 136), (16, 512, 1000), (130, 64, 520), (16, 4096, 4096)])
def test_split_k_configs_sum_their_cluster_into_c(measurer, precision, shape):
    """Tails in M, N and K; the runner fills C with NaN before each check, so every element of
    C must be written (once: the splits' partial tiles meet in the cluster's shared memory)."""
    if int(measurer.device.compute_capability.split(".")[0] or 0) < 9:
        pytest.skip("clusters need sm_90 or newer")
    task = engine.create_task("gemm_tensorcore", gemm_tc_args(*shape, precision),
                              DeviceLimits.for_device(measurer.device))
    names = ("block_m", "block_n", "block_k", "warp_m", "warp_n", "warps_k", "stages", "split_k")
    configs = [task.config_space.from_entity([[n, "ot", v] for n, v in zip(names, t)] + [["raster", "ot", 1]])
               for t in SPLIT_TILES]
    configs = [c for c in configs if task.why_invalid(c) is None]
    assert len(configs) >= 3
    results = measurer.measure(task, configs)
    assert [(c.values(), r.error_msg) for c, r in zip(configs, results) if not r.ok] == []


def test_tf32_rounds_its_inputs_so_an_fp32_tolerance_would_refuse_it(measurer):
    """The tf32 kernel's error against the exact product is TF32's, well above fp32's 1e-4 check."""
    import cupy as cp

    from engine.gpu.builder import Builder
    from engine.gpu.device import arch_of
    from engine.gpu.runner import load_kernel, relative_l2_error

    task = engine.create_task("gemm_tensorcore", gemm_tc_args(128, 128, 1024, "tf32"))
    source = task.template.kernel(task.params, task.default_config())
    inputs = task.template.make_inputs(task.params, np.random.default_rng(0))
    expected = task.template.reference(task.params, inputs)
    with Builder(arch_of(measurer.device), workers=1) as builder:
        (build,) = builder.build([source])
    assert build.ok, build.message
    kernel = load_kernel(cp, build.cubin_path, source)
    arrays = [cp.asarray(x) for x in inputs]
    kernel(source.grid, source.block, tuple(arrays), shared_mem=source.shared_bytes)
    error = relative_l2_error(cp.asnumpy(arrays[2]), expected)
    assert 1e-4 < error < source.tolerance


@pytest.mark.parametrize("preset", ["TC-d16x4096-bf16", "TC-d16x4096-f16", "TC-d16x4096-tf32", "TC-d16x4096-bf16c",
                                    "TC-d16x4096-f16c"])
def test_cublas_on_tensor_cores_is_the_baseline_in_the_same_precision(preset):
    from engine.gpu.baselines import vendor_baseline

    task = engine.create_task(PRESETS[preset].task_name, PRESETS[preset].args)
    measure = vendor_baseline(task, "cublas")
    result = measure(task)
    assert result.ok, result.error_msg
    assert result.mean_cost > 0


@pytest.mark.parametrize("preset, c_dtype", [("TC-d16x4096-bf16", "float32"), ("TC-d16x4096-bf16c", "bfloat16"),
                                             ("TC-d16x4096-f16", "float32"), ("TC-d16x4096-tf32", "float32")])
def test_cublas_writes_c_in_the_workloads_dtype(preset, c_dtype):
    from engine.gpu.baselines import cublas_matmul, fp32_torch, tensor_core_c_dtype, tensor_core_operands

    torch = fp32_torch()
    task = engine.create_task(PRESETS[preset].task_name, PRESETS[preset].args)
    inputs = task.template.make_inputs(task.params, np.random.default_rng(0))
    a, b, tf32 = tensor_core_operands(torch, task, inputs)
    c = cublas_matmul(torch, a, b, tf32, tensor_core_c_dtype(torch, task))
    assert str(c.dtype) == f"torch.{c_dtype}"
