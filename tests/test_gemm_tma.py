"""The fp32 GEMM's TMA loaders (engine.ops.gemm.tma): their rules, what their kernels compute on the CPU
emulator (tails on every side, two launches so the barriers' phases start over), that they compile
for sm_90a, and that the knob they came with left every earlier config as it was."""
from __future__ import annotations

import numpy as np
import pytest

import cuda_on_cpu
import engine
from engine.gpu.builder import Builder
from engine.ops import DeviceLimits
from engine.ops.gemm.tiling import gemm_tiling
from engine.workloads import PRESETS, gemm_args
from test_gemm import config as gemm_config

# test_gemm's config with the knobs the TMA loaders fix, and a tile they take
TMA = {"block_m": 64, "block_n": 128, "block_k": 32, "warp_m": 32, "warp_n": 64, "thread_m": 4, "thread_n": 8,
       "warp_lanes_n": 4, "vector_a": 4, "vector_b": 4, "pipeline": "cp_async_3", "smem_pad": 0, "loader": "tma"}


def config(task, **knobs):
    return gemm_config(task, **{**TMA, **knobs})


needs_gxx = pytest.mark.skipif(not cuda_on_cpu.available(), reason="needs g++")


@pytest.mark.parametrize("knobs, reason", [
    ({"pipeline": "prefetch"}, "loader tma fills a ring of 3 or 4 stages (pipeline cp_async_3 or cp_async_4), not prefetch"),
    ({"pipeline": "cp_async_2", "loader": "tma_rows"}, "loader tma_rows fills a ring of 3 or 4 stages"),
    ({"block_k": 16}, "block_k must be 32, not 16"),
    ({"thread_n": 2, "warp_lanes_n": 16}, "thread_n must be a multiple of 4, not 2"),
    ({"warp_n": 16, "block_n": 64, "thread_n": 4}, "warp_n must be a multiple, not 16"),
    ({"vector_a": 1, "smem_pad": 4}, "(not vector_a 1, smem_pad 4)"),
    ({"split_k": 2, "split_reduce": "cluster", "block_m": 256, "block_n": 256, "warp_m": 128, "warp_n": 128,
      "thread_m": 8}, "leaves the 256 KB partial tile over loader tma's ring of 192 KB"),
    ({"block_m": 256, "block_n": 256, "warp_m": 128, "warp_n": 128, "thread_m": 8, "thread_n": 8, "warp_lanes_n": 4},
     "needs about 592 registers (accumulators and fragments), more than the 255 it gets beside the producer"),
])
def test_configs_the_loader_cannot_build_are_invalid_with_the_reason(knobs, reason):
    task = engine.create_task("gemm", gemm_args(256, 256, 256))
    assert reason in task.why_invalid(config(task, **knobs))


def test_rows_of_a_tensor_map_must_be_16_byte_multiples():
    task = engine.create_task("gemm", PRESETS["G4"].args)  # N = 49: its fixed vector_b 4 says so
    assert "vector_b 4 does not divide N = 49" in task.why_invalid(config(task))


def test_only_hopper_runs_it():
    task = engine.create_task("gemm", gemm_args(256, 256, 256), DeviceLimits(wgmma=False, max_cluster_size=1))
    assert "sm_90a" in task.why_invalid(config(task))


def test_eight_consumer_warps_get_a_producer_warpgroup_and_its_registers_four_a_producer_warp():
    task = engine.create_task("gemm", PRESETS["G1"].args)
    big = gemm_tiling(task.params, config(task, block_m=128, block_n=256, warp_m=64, warp_n=64, thread_m=8))
    small = gemm_tiling(task.params, config(task))
    assert (big.consumer_threads, big.producer_threads, big.producer_registers, big.consumer_registers) == (256, 128, 40, 232)
    assert (small.consumer_threads, small.producer_threads, small.producer_registers, small.consumer_registers) == (128, 32, 0, 255)
    # 4 stages of B's 32 x 256 floats and A's transpose, A's two staging buffers, 10 barriers, the alignment's 1024
    four = dict(block_m=128, block_n=256, warp_m=64, warp_n=64, thread_m=8, pipeline="cp_async_4")
    assert gemm_tiling(task.params, config(task, **four)).shared_bytes == (
        1024 + 4 * (32 * 256 * 4 + 128 * 128) + 2 * 128 * 128 + 10 * 8)
    # tma_rows stages nothing: A's box lands in the stage
    assert gemm_tiling(task.params, config(task, loader="tma_rows", **four)).shared_bytes == (
        1024 + 4 * (32 * 256 * 4 + 128 * 128) + 10 * 8)


@needs_gxx
@pytest.mark.parametrize("loader", ["tma", "tma_rows"])
@pytest.mark.parametrize("shape, knobs", [
    ((70, 68, 100), {}),  # a producer warp, tails on M, N and K
    ((130, 264, 72), {"block_m": 128, "block_n": 256, "warp_m": 64, "warp_n": 64, "thread_m": 8, "pipeline": "cp_async_4"}),
    ((40, 100, 36), {"block_m": 32, "block_n": 64, "warp_m": 16, "warp_n": 32, "thread_m": 1, "warp_lanes_n": 2}),
    ((48, 96, 200), {"block_m": 32, "warp_lanes_n": 16, "thread_m": 2, "thread_n": 4, "pipeline": "cp_async_4"}),
    ((70, 68, 300), {"block_n": 64, "warp_n": 32, "thread_n": 4, "warp_lanes_n": 8, "split_k": 2}),  # split K, a tail on K
    ((128, 200, 576), {"block_n": 64, "warp_n": 32, "thread_n": 4, "warp_lanes_n": 8, "split_k": 4}),
    # split K over a cluster: the partial tiles over the ring, tails on every side, a producer warpgroup
    ((70, 68, 300), {"block_n": 64, "warp_n": 32, "thread_n": 4, "warp_lanes_n": 8, "split_k": 2,
                     "split_reduce": "cluster"}),
    ((130, 264, 520), {"block_m": 128, "block_n": 256, "warp_m": 64, "warp_n": 64, "thread_m": 8, "split_k": 4,
                       "pipeline": "cp_async_4", "split_reduce": "cluster"}),
])
def test_the_kernel_computes_the_product_on_the_cpu(shape, knobs, loader):
    task = engine.create_task("gemm", gemm_args(*shape))
    cfg = config(task, loader=loader, **knobs)
    assert task.why_invalid(cfg) is None
    assert cuda_on_cpu.error_against_reference(task, cfg, launches=2) < 1e-6


def test_its_kernels_compile_for_sm_90a(tmp_path):
    task = engine.create_task("gemm", PRESETS["G1"].args)
    configs = [config(task), config(task, block_m=128, block_n=256, warp_m=64, warp_n=64, thread_m=8),
               config(task, loader="tma_rows", block_m=64, block_n=64, warp_m=32, warp_n=32, thread_n=4, warp_lanes_n=8)]
    skinny = engine.create_task("gemm", PRESETS["G5"].args)  # split K over a cluster, both loaders
    clustered = [config(skinny, loader=loader, block_m=32, block_n=64, warp_m=16, warp_n=32, thread_m=1, warp_lanes_n=2,
                        split_k=2, split_reduce="cluster") for loader in ("tma", "tma_rows")]
    sources = [task.template.kernel(task.params, c) for c in configs]
    sources += [skinny.template.kernel(skinny.params, c) for c in clustered]
    with Builder("sm_90", workers=2, cache_dir=tmp_path, timeout=120) as builder:
        results = builder.build(sources)
    assert [r.message for r in results if not r.ok] == []
    assert all(s.tensor_maps and s.block[0] == gemm_tiling(task.params, c).threads for s, c in zip(sources, configs))
    assert all("__cluster_dims__(1, 1, 2)" in s.code and s.grid[2] == 2 for s in sources[len(configs):])


def test_earlier_configs_keep_their_index_and_the_loader_came_last_with_threads_first():
    task = engine.create_task("gemm", PRESETS["G1"].args)
    # only multicast came after it (tests/test_gemm_tma_multicast.py), its first value the kernels before it
    assert task.config_space.knob_names[-2:] == ["loader", "multicast"]
    assert task.config_space.knobs[-2].options == ["threads", "tma", "tma_rows"]
    # Mixed radix, the last knob most significant: the threads' loader (digit 0) without multicast keeps every
    # index below the product of the other knobs' radixes, which is the space's size before the loader came.
    before = len(task.config_space) // 3 // 3
    for cfg in task.config_space.sample(np.random.default_rng(5), 50):
        if cfg["multicast"].val == 1:
            assert (cfg.index < before) == (cfg["loader"].val == "threads")
            assert cfg.values() | {"loader": "threads"} == task.config_space.get(cfg.index % before).values()
