"""The gemm template: args, space and validity rules, CUDA that compiles, and what it computes."""
import dataclasses

import numpy as np
import pytest

import cuda_on_cpu
from knob_configs import config_over
import engine
from engine.describe import describe_workload
from engine.gpu.builder import Builder
from engine.space import ConfigSpace
from engine.ops import BadArgs, DeviceLimits
from engine.ops.gemm.tiling import gemm_tiling
from engine.workloads import GEMM, PRESETS, gemm_args

BASE = {"block_m": 64, "block_n": 64, "block_k": 8, "warp_m": 32, "warp_n": 32, "thread_m": 4, "thread_n": 8,
        "warp_lanes_n": 4, "vector_a": 1, "vector_b": 1, "pipeline": "prefetch", "smem_pad": 4, "split_k": 1,
        "unroll_k": 32, "slice_k": 1, "split_reduce": "workspace", "loader": "threads",
        "multicast": 1}


def config(task, **knobs):
    return config_over(task, BASE, **knobs)


def test_it_counts_two_flops_per_multiply_add_and_the_least_bytes():
    task = engine.create_task("gemm", gemm_args(512, 49, 4608))
    assert task.flops == describe_workload("gemm", gemm_args(512, 49, 4608)).flops == 2 * 512 * 49 * 4608
    assert task.template.bytes_moved(task.params) == 4 * (512 * 4608 + 4608 * 49 + 512 * 49)


@pytest.mark.parametrize("args, message", [
    (gemm_args(4, 5, 6)[:1], "gemm args are"),
    ([["TENSOR", [4, 6], "float32"], ["TENSOR", [7, 5], "float32"]], "do not multiply: A is [M, K], B is [K, N]"),
    ([["TENSOR", [4, 6], "float16"], ["TENSOR", [6, 5], "float32"]], "dtype 'float16' is not supported"),
    ([["TENSOR", [4, 6, 1], "float32"], ["TENSOR", [6, 5], "float32"]], "must both be 2-D"),
])
def test_it_rejects_args_that_are_not_an_fp32_product(args, message):
    with pytest.raises(BadArgs, match=message.replace("[", r"\[").replace("]", r"\]")):
        engine.create_task("gemm", args)


def test_the_presets_read_m_by_n_by_k():
    assert PRESETS["G4"].args == [["TENSOR", [512, 4608], "float32"], ["TENSOR", [4608, 49], "float32"]]
    assert [p.name for p in GEMM] == ["G1", "G2", "G3", "G4", "G5"]


@pytest.mark.parametrize("preset", ["G1", "G2", "G3", "G4", "G5"])
def test_every_preset_has_a_valid_default_and_many_valid_configs(preset):
    task = engine.create_task("gemm", PRESETS[preset].args)
    assert task.why_invalid(task.default_config()) is None
    assert len(task.config_space.sample(np.random.default_rng(0), 200)) == 200


def test_split_k_is_offered_only_where_its_workspace_fits():
    assert engine.create_task("gemm", PRESETS["G1"].args).config_space.knobs[12].options == [1]
    assert engine.create_task("gemm", PRESETS["G4"].args).config_space.knobs[12].options == [1, 2, 4, 8, 16]
    assert engine.create_task("gemm", gemm_args(64, 64, 200)).config_space.knobs[12].options == [1, 2]


@pytest.mark.parametrize("knobs, reason", [
    ({"warp_m": 128}, "warp tile 128x32 does not divide block tile 64x64"),
    ({"thread_m": 8, "warp_lanes_n": 2}, "cover 128x16, which does not divide the warp tile 32x32"),
    ({"vector_b": 4}, "vector_b 4 does not divide N = 49"),
    ({"pipeline": "cp_async_3", "vector_a": 4}, "vector_a must be 1, not 4"),
    ({"block_m": 256, "block_n": 256, "warp_m": 128, "warp_n": 128},
     "about 680 registers per thread exceed the limit of 255"),
])
def test_configs_that_cannot_work_are_invalid_with_the_reason(knobs, reason):
    task = engine.create_task("gemm", PRESETS["G4"].args)
    assert reason in task.why_invalid(config(task, **knobs))


def test_k_slices_multiply_the_threads_and_share_the_stages_memory_for_their_exchange():
    task = engine.create_task("gemm", PRESETS["G4"].args)
    one, four = (gemm_tiling(task.params, config(task, block_k=16, slice_k=s)) for s in (1, 4))
    assert (one.threads, four.threads) == (128, 512) and four.slice_steps == 4
    # 2 stages of 16 x (68 + 68) floats; the exchange of 3 slices x 64 x 64 floats is larger.
    assert one.shared_bytes == 4 * 2 * 16 * 136 and four.shared_bytes == 4 * 3 * 64 * 64
    assert dataclasses.replace(four, slice_k=3).why_not_tiled() == "slice_k 3 does not divide block_k 16"


def test_an_entity_logged_before_slice_k_and_split_reduce_existed_loads_with_its_old_index():
    task = engine.create_task("gemm", PRESETS["G4"].args)
    old = [[name, "ot", BASE[name]] for name in task.config_space.knob_names[:-2]]
    cfg = task.config_space.from_entity(old)
    assert (cfg["slice_k"].val, cfg["split_reduce"].val) == (1, "workspace") and cfg == config(task)
    assert cfg.index == ConfigSpace(task.config_space.knobs[:-2]).index_of(old)


@pytest.mark.parametrize("knobs, limits, reason", [
    ({"split_reduce": "cluster"}, DeviceLimits.for_h200(), "split_reduce cluster needs split_k > 1"),
    ({"split_reduce": "cluster", "split_k": 16, "block_k": 16}, DeviceLimits.for_h200(),
     "split_k 16 splits cannot form one thread block cluster (at most 8 blocks)"),
    ({"split_reduce": "cluster", "split_k": 2}, DeviceLimits.for_v100(),
     "split_k 2 splits cannot form one thread block cluster (this GPU has no clusters)"),
])
def test_a_split_k_cluster_needs_splits_and_a_gpu_with_clusters_of_that_size(knobs, limits, reason):
    task = engine.create_task("gemm", PRESETS["G4"].args, limits)
    assert task.why_invalid(config(task, **knobs)).startswith(reason)


def test_a_gpu_below_compute_capability_9_gets_no_clusters_whatever_its_model():
    from engine.measure import DeviceInfo

    a100 = DeviceLimits.for_device(DeviceInfo(model="a100", compute_capability="8.0"))
    assert a100.max_cluster_size == 1 and a100.max_shared_memory_optin == DeviceLimits.for_h200().max_shared_memory_optin
    assert DeviceLimits.for_device(DeviceInfo(model="h200", compute_capability="9.0")) == DeviceLimits.for_h200()
    assert DeviceLimits.for_device(DeviceInfo(model="synthetic-h200", is_replay=True)) == DeviceLimits.for_h200()
    task = engine.create_task("gemm", PRESETS["G4"].args, a100)
    assert "this GPU has no clusters" in task.why_invalid(config(task, split_k=2, split_reduce="cluster"))


def test_a_cluster_split_shares_its_partial_tile_in_shared_memory_and_needs_no_flag():
    task = engine.create_task("gemm", PRESETS["G4"].args)
    cfg = config(task, split_k=8, split_reduce="cluster", pipeline="sync")
    assert task.why_invalid(cfg) is None
    # one stage of 8 x (68 + 68) floats is smaller than the 64 x 64 partial tile
    assert gemm_tiling(task.params, cfg).shared_bytes == 4 * 64 * 64
    code = task.template.kernel(task.params, cfg).code
    assert "__cluster_dims__(1, 1, 8)" in code and "atomicAdd" not in code and "workspace +" not in code


@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_cluster_split_configs_compile_for_both_architectures(tmp_path, arch):
    task = engine.create_task("gemm", gemm_args(70, 36, 1000))
    configs = [config(task, split_k=4, split_reduce="cluster", pipeline="cp_async_3", slice_k=2, block_k=16),
               config(task, split_k=2, split_reduce="cluster", vector_b=4, thread_n=4)]
    assert [task.why_invalid(c) for c in configs] == [None, None]
    with Builder(arch, workers=2, cache_dir=tmp_path, timeout=120) as builder:
        results = builder.build([task.template.kernel(task.params, c) for c in configs])
    assert [r.message[:300] for r in results if not r.ok] == []


def test_a_split_that_would_get_no_k_is_invalid():
    task = engine.create_task("gemm", gemm_args(64, 64, 544))  # 17 steps of 32 over 8 splits of 3
    assert task.why_invalid(config(task, split_k=8, block_k=32)) == (
        "split_k 8 with block_k 32 leaves the last split of K = 544 empty")


def test_shared_memory_may_use_the_opt_in_limit_but_not_more():
    task = engine.create_task("gemm", gemm_args(1024, 1024, 1024))
    big = config(task, block_m=256, block_n=128, block_k=16, warp_m=64, warp_n=64, pipeline="cp_async_4")
    assert gemm_tiling(task.params, big).shared_bytes == 4 * 4 * 16 * (260 + 132) > 48 * 1024
    assert task.why_invalid(big) is None
    v100 = engine.create_task("gemm", gemm_args(1024, 1024, 1024), DeviceLimits.for_v100())
    assert "exceeds the limit of 98304" in v100.why_invalid(v100.config_space.get(big.index))


def test_features_have_the_same_names_for_every_config():
    task = engine.create_task("gemm", PRESETS["G5"].args)
    names = {tuple(task.features(c)) for c in task.config_space.sample(np.random.default_rng(1), 30)}
    assert len(names) == 1 and "registers_estimate" in next(iter(names))


def test_the_reference_is_the_matrix_product():
    task = engine.create_task("gemm", gemm_args(7, 5, 3))
    a, b, c, workspace, counters = task.template.make_inputs(task.params, np.random.default_rng(0))
    expected = np.einsum("mk,kn->mn", a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(task.template.reference(task.params, [a, b, c]), expected, rtol=1e-12)
    assert c.shape == (7, 5) and counters.dtype == np.int32


@pytest.mark.skipif(not cuda_on_cpu.available(), reason="needs g++ to run kernels on the CPU")
@pytest.mark.parametrize("knobs", [
    {},
    {"vector_a": 4, "vector_b": 4, "pipeline": "sync", "thread_n": 4, "unroll_k": 4},
    {"pipeline": "cp_async_3", "block_m": 32, "warp_m": 16, "thread_m": 2, "vector_b": 2, "smem_pad": 0},
    {"split_k": 4, "block_k": 16, "vector_a": 2, "block_n": 32, "warp_n": 16, "thread_n": 4},
    {"split_k": 8, "pipeline": "cp_async_2", "thread_m": 1, "thread_n": 1, "warp_lanes_n": 8},
    {"slice_k": 2, "block_k": 16, "pipeline": "sync", "vector_a": 4},
    {"slice_k": 4, "block_k": 16, "pipeline": "cp_async_3", "split_k": 4, "thread_n": 4, "warp_lanes_n": 8},
    {"slice_k": 4, "block_k": 8, "split_k": 2, "vector_b": 2, "unroll_k": 1},
])
def test_configs_compute_the_product_with_tails_on_every_side(knobs):
    # 70 x 36 x 1000: no tile divides M, N or K, so every edge takes the predicated path.
    task = engine.create_task("gemm", gemm_args(70, 36, 1000))
    cfg = config(task, **knobs)
    assert task.why_invalid(cfg) is None
    assert cuda_on_cpu.error_against_reference(task, cfg, launches=2 if cfg["split_k"].val > 1 else 1) < 1e-6


@pytest.mark.skipif(not cuda_on_cpu.available(), reason="needs g++ to run kernels on the CPU")
@pytest.mark.parametrize("knobs", [{}, {"pipeline": "cp_async_2", "block_k": 16}, {"split_k": 2, "pipeline": "sync"},
                                   {"slice_k": 2, "split_k": 2}])
def test_where_tiles_divide_the_shape_no_bounds_are_tested_and_the_product_holds(knobs):
    task = engine.create_task("gemm", gemm_args(128, 64, 256))
    cfg = config(task, **knobs)
    code = task.template.kernel(task.params, cfg).code
    assert "k0 + kk < k_end" not in code and "< 128" not in code and "< 64)" not in code
    assert ("const int k_begin = 0, k_end = 256;" in code) == (cfg["split_k"].val == 1)
    assert cuda_on_cpu.error_against_reference(task, cfg, launches=2 if cfg["split_k"].val > 1 else 1) < 1e-6


@pytest.mark.skipif(not cuda_on_cpu.available(), reason="needs g++ to run kernels on the CPU")
def test_the_split_k_fix_up_sums_scalar_columns_when_rows_do_not_align():
    # N = 49 (the skinny G4 shape's): the fix-up cannot read the partials 16 bytes at a time.
    task = engine.create_task("gemm", gemm_args(40, 49, 700))
    cfg = config(task, split_k=4, block_n=32, warp_n=16, thread_n=4, block_k=16)
    assert task.why_invalid(cfg) is None
    assert "float4 part" not in task.template.kernel(task.params, cfg).code
    assert cuda_on_cpu.error_against_reference(task, cfg, launches=2) < 1e-6
