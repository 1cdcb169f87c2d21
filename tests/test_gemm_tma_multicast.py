"""The fp32 GEMM's TMA loaders with `multicast` (engine.ops.gemm.tma): a cluster of tile columns sharing A's
box. Their rules and reasons, the knob's place (last, so every earlier config keeps its index), the launch it
makes, what its kernels compute on the CPU emulator with one block of each cluster held back (so a block that
overwrote another's shared memory before that one read it would show), and that they compile for sm_90a."""
from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

import cuda_on_cpu
import engine
from engine.gpu.builder import Builder
from engine.ops import DeviceLimits
from engine.ops.gemm.tiling import gemm_tiling
from engine.space import ConfigSpace
from engine.workloads import PRESETS, gemm_args
from test_gemm_tma import config

needs_gxx = pytest.mark.skipif(not cuda_on_cpu.available(), reason="needs g++")
# test_gemm_tma's 64x128 tile (4 consumer warps and a producer warp) at 32x64 and 128x256 (a producer warpgroup)
SMALL = {"block_m": 32, "block_n": 64, "warp_m": 16, "warp_n": 32, "thread_m": 1, "warp_lanes_n": 2}
LARGE = {"block_m": 128, "block_n": 256, "warp_m": 64, "warp_n": 64, "thread_m": 8, "pipeline": "cp_async_4"}
LAGGING = 2  # the emulator's lag: each cluster's last block runs one scheduler round in three


@pytest.mark.parametrize("shape, knobs, reason", [
    ((256, 256, 256), {"multicast": 2, "loader": "threads", "block_k": 8, "vector_a": 1, "smem_pad": 4,
                       "pipeline": "prefetch"},
     "multicast 2 shares A's TMA box: it takes loader tma or tma_rows, not threads"),
    ((256, 256, 256), {"multicast": 2, "split_k": 2, "split_reduce": "cluster"},
     "multicast 2's cluster is 2 tile columns, split_reduce cluster's a tile's splits: a kernel has one cluster shape"),
    ((256, 256, 256), {"multicast": 4, **SMALL, "block_m": 16, "warp_m": 16},
     "block_m must be a multiple of 32, not 16"),
    ((256, 100, 256), {"multicast": 2}, "shares A's box among 2 tile columns, and N = 100 has 1 of block_n 128"),
])
def test_configs_multicast_cannot_build_are_invalid_with_the_reason(shape, knobs, reason):
    task = engine.create_task("gemm", gemm_args(*shape))
    assert reason in task.why_invalid(config(task, **knobs))


def test_a_cluster_larger_than_the_device_forms_is_invalid():
    args = gemm_args(256, 512, 256)
    small = engine.create_task("gemm", args, DeviceLimits(max_cluster_size=2))
    assert small.why_invalid(config(small, multicast=2)) is None
    assert ("multicast 4 tile columns cannot form one thread block cluster (at most 2 blocks)"
            in small.why_invalid(config(small, multicast=4)))


def test_the_knob_is_last_and_earlier_configs_and_logs_keep_their_index():
    task = engine.create_task("gemm", PRESETS["G5"].args)
    space = task.config_space
    assert space.knob_names[-1] == "multicast" and space.knobs[-1].options == [1, 2, 4]
    before = ConfigSpace(space.knobs[:-1])  # the space as it was
    for cfg in space.sample(np.random.default_rng(11), 60):
        entity = [item for item in cfg.to_entity() if item[0] != "multicast"]  # as a log from before wrote it
        assert space.index_of(entity) == before.index_of(entity)
        assert (cfg.index < len(before)) == (cfg["multicast"].val == 1)
    # the implicit-GEMM conv (the threads' loader only) has no multicast knob: its logs are as they were
    conv = engine.create_task(PRESETS["IG-C4"].task_name, PRESETS["IG-C4"].args)
    assert "multicast" not in conv.config_space.knob_names


def test_the_grid_is_whole_clusters_and_each_block_copies_its_share_of_a():
    task = engine.create_task("gemm", PRESETS["G5"].args)  # 128x3136x576: 49 tile columns of 64
    tile = {"block_n": 64, "warp_n": 32, "thread_n": 4, "warp_lanes_n": 8}
    for loader in ("tma", "tma_rows"):
        plain, shared = (config(task, loader=loader, multicast=c, **tile) for c in (1, 2))
        assert task.why_invalid(shared) is None
        source = task.template.kernel(task.params, shared)
        assert source.grid == (50, 2, 1) and task.template.kernel(task.params, plain).grid == (49, 2, 1)
        assert "__cluster_dims__(2, 1, 1)" in source.code and "if (block_col >= 3136) return;" in source.code
        assert source.tensor_maps[0].box_rows == 32  # half of A's 64 rows a block
        assert source.code.count("tma_load_2d_multicast(") == (2 if loader == "tma" else 1) + 1  # and its helper
    # tma's two `freed` barriers: 16 bytes more shared memory; tma_rows' barriers are the same ones
    extra = {loader: gemm_tiling(task.params, config(task, loader=loader, multicast=2, **tile)).shared_bytes
             - gemm_tiling(task.params, config(task, loader=loader, **tile)).shared_bytes for loader in ("tma", "tma_rows")}
    assert extra == {"tma": 16, "tma_rows": 0}


@needs_gxx
@pytest.mark.parametrize("lag", [0, LAGGING])
@pytest.mark.parametrize("loader", ["tma", "tma_rows"])
@pytest.mark.parametrize("shape, knobs", [
    ((64, 256, 128), {"multicast": 2}),  # whole tiles, no block past N
    ((70, 300, 300), {"multicast": 2}),  # tails on M, N and K; one block past N's last tile
    ((70, 520, 300), {"multicast": 4}),  # 5 tile columns in 2 clusters of 4: three blocks past N
    ((70, 300, 300), {"multicast": 2, "split_k": 2}),  # split K through the workspace, a tail on K
    ((40, 260, 100), {"multicast": 4, **SMALL}),  # shares of 8 rows, one swizzle atom
    ((130, 520, 72), {"multicast": 2, **LARGE}),  # a producer warpgroup, 4 stages
])
def test_the_kernel_computes_the_product_on_the_cpu(shape, knobs, loader, lag):
    task = engine.create_task("gemm", gemm_args(*shape))
    cfg = config(task, loader=loader, **knobs)
    assert task.why_invalid(cfg) is None
    assert cuda_on_cpu.error_against_reference(task, cfg, launches=2, lag=lag) < 1e-6


@needs_gxx
def test_a_lagging_block_shows_a_stage_released_to_its_own_producer_alone():
    """The emulator's lag catches the protocol it is there for: tma_rows' consumers releasing a stage only
    to their own block's producer, which then multicasts into a stage another block still reads."""
    task = engine.create_task("gemm", gemm_args(70, 300, 300))
    cfg = config(task, loader="tma_rows", multicast=2)
    source = task.template.kernel(task.params, cfg)
    code, releases = re.subn(r"for \(int r = 0; r < 2; \+\+r\) if \(r == rank\) (barrier_arrive\([^;]*\);) else [^;]*;",
                             r"\1", source.code)
    code, inits = re.subn(r"barrier_init\(empty \+ 8 \* s, 8\)", "barrier_init(empty + 8 * s, 4)", code)
    assert (releases, inits) == (1, 1)
    local = dataclasses.replace(source, code=code)
    inputs = task.template.make_inputs(task.params, np.random.default_rng(0))
    expected = task.template.reference(task.params, inputs)
    cuda_on_cpu.run(local, inputs)  # in step, the blocks never overtake one another
    assert np.allclose(inputs[2], expected, atol=1e-4)
    cuda_on_cpu.run(local, inputs, lag=LAGGING)
    assert not np.allclose(inputs[2], expected, atol=1e-4)


def multicast_configs(task, rng, count: int) -> list:
    """`count` random valid configs with a TMA loader and multicast 2 or 4 (the rules fix the other knobs
    the loaders do not read)."""
    names, found = task.config_space.knob_names, []
    fixed = {"block_k": 32, "vector_a": 4, "vector_b": 4, "smem_pad": 0, "unroll_k": 32, "slice_k": 1,
             "split_reduce": "workspace"}
    while len(found) < count:
        values = task.config_space.sample(rng, 1)[0].values() | fixed | {
            "loader": ("tma", "tma_rows")[rng.integers(2)], "multicast": (2, 4)[rng.integers(2)],
            "pipeline": ("cp_async_3", "cp_async_4")[rng.integers(2)]}
        cfg = task.config_space.from_entity([[name, "ot", values[name]] for name in names])
        if task.why_invalid(cfg) is None:
            found.append(cfg)
    return found


def test_random_multicast_kernels_compile_for_sm_90a(tmp_path):
    rng = np.random.default_rng(3)
    tasks = [engine.create_task("gemm", PRESETS[name].args) for name in ("G5", "G1")]
    configs = [(task, cfg) for task in tasks for cfg in multicast_configs(task, rng, 4)]
    skinny = tasks[0]  # and G5's split K through the workspace with a producer warpgroup
    configs.append((skinny, config(skinny, loader="tma", multicast=2, split_k=2, **LARGE)))
    assert {cfg["loader"].val for _, cfg in configs} == {"tma", "tma_rows"}
    assert {cfg["multicast"].val for _, cfg in configs} == {2, 4}
    sources = [task.template.kernel(task.params, cfg) for task, cfg in configs]
    with Builder("sm_90", workers=2, cache_dir=tmp_path, timeout=120) as builder:
        results = builder.build(sources)
    assert [r.message for r in results if not r.ok] == []
    for source, (_, cfg) in zip(sources, configs):
        clustered = cfg["multicast"].val
        assert f"__cluster_dims__({clustered}, 1, 1)" in source.code and source.grid[0] % clustered == 0
