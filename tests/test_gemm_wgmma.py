"""The tensor-core GEMM's wgmma mainloop (engine.ops.gemm_tc.wgmma) without a GPU: the knobs
that came with it keep every mma_sync config's index, the validity rules of each mainloop,
the sm_90a target NVRTC compiles it for, and NVRTC compiles of random valid wgmma configs
(ptxas's own report: no spills), and the kernels' answers on the CPU, where tests/cuda_on_cpu.py
reads each wgmma operand where the descriptors and the 128-byte swizzle put it by the PTX ISA's
layouts (that model against the hardware: the GPU tests and
`benchmarks/tensor_core_gemm.py check --only wgmma`)."""
from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import cuda_on_cpu
import engine
from engine.gpu.builder import Builder
from engine.measure import DeviceInfo
from engine.gpu.nvrtc import CompileError, compile_to_cubin, target_arch
from engine.ops.base import ARCH_SPECIFIC_MARK
from engine.ops import DeviceLimits
from engine.space import ConfigSpace
from engine.workloads import gemm_tc_args

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import tensor_core_gemm  # noqa: E402  (the benchmark's tune lists)

MMA_SYNC_KNOBS = 8  # the knobs before wgmma came: block_m .. raster


def task_of(m, n, k, precision, limits=None):
    return engine.create_task("gemm_tensorcore", gemm_tc_args(m, n, k, precision), limits)


def config_of(task, **values):
    base = dict(warp_m=16, warp_n=16, warps_k=1, raster=1, block_k=64, mainloop="wgmma")
    return task.config_space.from_entity([[name, "ot", v] for name, v in {**base, **values}.items()])


def test_every_mma_sync_config_keeps_the_index_it_had_before_wgmma():
    task = task_of(4096, 4096, 4096, "bfloat16")
    old = ConfigSpace(task.config_space.knobs[:MMA_SYNC_KNOBS])
    assert task.config_space.total == old.total * 2 * 3 * 2 * 4 * 2 * 2 * 2 * 2 * 2 * 4 * 2 * 4 * 2 * 2
    for index in np.random.default_rng(0).integers(0, old.total, 50).tolist() + [0, old.total - 1]:
        new = task.config_space.get(index).values()
        assert (new.pop("mainloop"), new.pop("consumers"), new.pop("producer"), new.pop("split_k"),
                new.pop("loader"), new.pop("cluster"), new.pop("persistent"), new.pop("turns"), new.pop("pingpong"),
                new.pop("ring"), new.pop("l2_hint"), new.pop("stream_k"), new.pop("swap_ab"),
                new.pop("cluster_shares")) == ("mma_sync", 1, 0, 1, "cp_async", 1, 0, 0, 0, 0, "normal", 0, 0, "b")
        assert new == old.get(index).values()
    assert task.config_space.get(old.total)["mainloop"].val == "wgmma"


def test_an_old_log_entity_without_the_new_knobs_is_an_mma_sync_config():
    task = task_of(256, 256, 256, "float16")
    entity = [["block_m", "ot", 128], ["block_n", "ot", 128], ["block_k", "ot", 32], ["warp_m", "ot", 64],
              ["warp_n", "ot", 64], ["warps_k", "ot", 1], ["stages", "ot", 3], ["raster", "ot", 1]]
    config = task.config_space.from_entity(entity)
    assert config.index == task.default_config().index and config["mainloop"].val == "mma_sync"


def test_wgmma_configs_are_valid_on_hopper_only():
    hopper = task_of(4096, 4096, 4096, "bfloat16")
    ampere = task_of(4096, 4096, 4096, "bfloat16", DeviceLimits(wgmma=False))
    config = config_of(hopper, block_m=128, block_n=256, stages=4, consumers=2, producer=1)
    assert hopper.why_invalid(config) is None
    assert "needs an sm_90 GPU" in ampere.why_invalid(ampere.config_space.get(config.index))
    assert DeviceLimits.for_v100().wgmma is False

    def device(capability):
        return DeviceInfo(model="h200", compute_capability=capability)

    assert [DeviceLimits.for_device(device(c)).wgmma for c in ("9.0", "8.0", "10.0", "")] == [True, False, False, True]


TF32_BASE = dict(block_k=32, stages=4, producer=1, loader="tma")


def test_tf32_has_wgmma_configs_among_the_sampled_and_valid_ones():
    task = task_of(4096, 4096, 4096, "tf32")
    assert task.why_invalid(config_of(task, **TF32_BASE, block_m=256, block_n=128, consumers=2)) is None
    sampled = task.config_space.sample(np.random.default_rng(0), 400)
    wgmma = [c for c in sampled if c["mainloop"].val == "wgmma"]
    assert wgmma and all(c["block_k"].val == 32 and c["loader"].val == "tma" for c in wgmma)


@pytest.mark.parametrize("values, message", [
    (dict(TF32_BASE, block_m=128, block_n=128, loader="cp_async"), "takes loader tma and producer 1"),
    (dict(TF32_BASE, block_m=128, block_n=128, block_k=64), "stages K 32 tf32 elements"),
    (dict(TF32_BASE, block_m=128, block_n=64, consumers=2), "not a multiple of 64 columns for each of 2"),
    (dict(TF32_BASE, block_m=256, block_n=256, consumers=2, stages=2), "more than the 232 setmaxnreg gives it"),
    (dict(TF32_BASE, block_m=256, block_n=64, consumers=1, turns=1), "turns are taken by 2 consumer warpgroups"),
    (dict(TF32_BASE, block_m=128, block_n=128, consumers=2, persistent=1, pingpong=1), "pingpong is the 16-bit"),
])
def test_tf32_wgmma_rules_say_why(values, message):
    task = task_of(4096, 4096, 4096, "tf32")
    assert message in task.why_invalid(config_of(task, **values))


def test_tf32_wgmma_has_no_split_k():
    task = task_of(16, 4096, 4096, "tf32")
    assert "no split_k" in task.why_invalid(config_of(task, **TF32_BASE, block_m=64, block_n=64, split_k=2))


@pytest.mark.parametrize("values, message", [
    (dict(block_m=128, block_n=128, stages=3, warp_m=64), "wgmma configs leave them at 16, 16, 1"),
    (dict(block_m=128, block_n=128, stages=3, block_k=32), "stages K 64 float16 elements at a time"),
    (dict(block_m=128, block_n=32, stages=3), "block_n is a multiple of 64"),
    (dict(block_m=64, block_n=128, stages=3, consumers=2), "not a multiple of 64 rows for each of 2"),
    (dict(block_m=256, block_n=256, stages=4, consumers=1), "shared memory of"),
    (dict(block_m=256, block_n=256, stages=2, consumers=2), "registers"),
    (dict(block_m=128, block_n=128, stages=3, consumers=1, producer=0, loader="tma"), "it takes producer 1"),
    (dict(block_m=128, block_n=128, stages=3, consumers=1, producer=1, cluster=2), "it takes the tma loader"),
    (dict(block_m=128, block_n=128, stages=3, consumers=1, producer=1, persistent=1), "take the tma loader"),
    (dict(block_m=64, block_n=64, stages=3, consumers=1, producer=1, split_k=2), "it takes loader tma, cluster 1"),
    (dict(block_m=64, block_n=128, stages=3, consumers=1, producer=1, loader="tma", cluster=2, split_k=2),
     "it takes loader tma, cluster 1"),
    (dict(block_m=64, block_n=64, stages=3, consumers=1, producer=1, loader="tma", split_k=2), "few tiles of C"),
    (dict(block_m=128, block_n=128, stages=4, consumers=2, producer=1, loader="tma", pingpong=1),
     "it takes loader tma, persistent 1, consumers 2 and split_k 1"),
    (dict(block_m=128, block_n=128, stages=4, consumers=2, producer=1, loader="tma", persistent=1, turns=1),
     "turns are tf32's"),
])
def test_wgmma_rules_say_why(values, message):
    task = task_of(4096, 4096, 4096, "float16")
    assert message in task.why_invalid(config_of(task, **values))


def test_mma_sync_configs_leave_the_wgmma_knobs_at_their_first_value():
    task = task_of(4096, 4096, 4096, "float16")
    default = task.default_config().values()
    for extra in (dict(consumers=2), dict(producer=1), dict(loader="tma"), dict(cluster=2), dict(persistent=1),
                  dict(pingpong=1)):
        config = task.config_space.from_entity([[name, "ot", v] for name, v in {**default, **extra}.items()])
        assert "wgmma mainloop's knobs" in task.why_invalid(config)


def test_the_decode_and_square_shapes_have_wgmma_configs_among_the_sampled():
    for shape in [(16, 4096, 4096), (4096, 4096, 4096), (37, 40, 24)]:
        task = task_of(*shape, "bfloat16")
        sampled = task.config_space.sample(np.random.default_rng(5), 200)
        assert {c["mainloop"].val for c in sampled} == {"mma_sync", "wgmma"}, shape


def test_arch_specific_sources_are_compiled_for_sm_90a_and_nothing_else_is():
    marked = ARCH_SPECIFIC_MARK + "\n__global__ void k() {}"
    assert target_arch(marked, "sm_90") == "sm_90a"
    assert target_arch(marked, "sm_80") == "sm_80"
    assert target_arch("// other\n" + marked, "sm_90") == "sm_90"
    task = task_of(64, 64, 64, "bfloat16")
    assert task.template.kernel(task.params, config_of(task, block_m=64, block_n=64, stages=2)).code.startswith(
        ARCH_SPECIFIC_MARK)
    assert not task.template.kernel(task.params, task.default_config()).code.startswith(ARCH_SPECIFIC_MARK)


def test_an_sm_80_compile_of_a_wgmma_kernel_says_what_it_needs():
    task = task_of(64, 64, 64, "bfloat16")
    source = task.template.kernel(task.params, config_of(task, block_m=64, block_n=64, stages=2))
    with pytest.raises(CompileError, match="needs sm_90a"):
        compile_to_cubin(source.code, "sm_80")


def wgmma_sample(task, count, seed):
    """`count` random valid wgmma configs of a task, drawn from all of them (their knobs are few:
    random draws from the whole space rarely land on one)."""
    valid = [config for bm in (64, 128, 256) for bn in (64, 128, 256) for stages in (2, 3, 4)
             for raster in (1, 4, 8, 16) for consumers in (1, 2, 4) for producer in (0, 1) for loader in ("cp_async", "tma")
             for cluster in (1, 2) for persistent in (0, 1)
             if task.why_invalid(config := config_of(task, block_m=bm, block_n=bn, stages=stages, raster=raster,
                                                     consumers=consumers, producer=producer, loader=loader,
                                                     cluster=cluster, persistent=persistent)) is None]
    picks = np.random.default_rng(seed).choice(len(valid), size=min(count, len(valid)), replace=False)
    return [valid[int(i)] for i in picks]


def test_random_valid_wgmma_configs_compile_for_sm_90(tmp_path):
    """Through the engine's Builder asked for the device's plain sm_90, as the measurer asks."""
    picked = []
    for precision, shape in [("bfloat16", (4096, 4096, 4096)), ("float16", (4096, 4096, 4096)),
                             ("bfloat16", (200, 264, 136)), ("float16", (16, 4096, 4096))]:
        task = task_of(*shape, precision)
        configs = wgmma_sample(task, 6, seed=shape[0])
        assert len(configs) == 6
        picked += [(task, config) for config in configs]
    with Builder("sm_90", workers=2, cache_dir=tmp_path, timeout=120) as builder:
        results = builder.build([task.template.kernel(task.params, config) for task, config in picked])
    assert [(config.values(), r.message[:400]) for (task, config), r in zip(picked, results) if not r.ok] == []


@pytest.mark.parametrize("values", [
    dict(block_m=128, block_n=256, stages=4, consumers=2, producer=1),  # the 4096^3 candidate
    dict(block_m=128, block_n=128, stages=4, consumers=1, producer=0),
    dict(block_m=64, block_n=128, stages=4, consumers=1, producer=1),  # a decode candidate
    dict(block_m=128, block_n=256, stages=4, consumers=2, producer=1, loader="tma"),
    dict(block_m=256, block_n=128, stages=4, consumers=2, producer=1, loader="tma"),
    dict(block_m=128, block_n=256, stages=4, consumers=2, producer=1, loader="tma", cluster=2),
    dict(block_m=128, block_n=256, stages=4, consumers=2, producer=1, loader="tma", cluster=2, persistent=1),
], ids=["128x256-ws", "128x128", "64x128-ws", "128x256-tma", "256x128-tma", "128x256-tma-cluster",
        "128x256-tma-cluster-persistent"])
def test_the_benchmarks_wgmma_tiles_compile_without_spills(values):
    task = task_of(4096, 4096, 4096, "bfloat16")
    config = config_of(task, **values)
    assert task.why_invalid(config) is None
    source = task.template.kernel(task.params, config)
    _, log = compile_to_cubin(source.code, "sm_90", ("-Xptxas=-v",))
    assert "for 'sm_90a'" in log and " 0 bytes spill stores, 0 bytes spill loads" in log, log
    assert "serialized" not in log, log  # ptxas would serialise wgmmas whose accumulators it cannot keep in flight
    used = int(log.split("Used ")[1].split(" registers")[0])
    assert used * source.block[0] <= DeviceLimits().regs_per_block, log


def tf32_wgmma_sample(task, count, seed):
    """`count` random valid tf32 wgmma configs (tma, producer 1) of a task, drawn from all of them."""
    valid = [config for bm in (16, 32, 64, 128, 256) for bn in (64, 128, 256) for stages in (2, 3, 4)
             for raster in (1, 4, 8, 16) for consumers in (1, 2, 4) for cluster in (1, 2) for persistent in (0, 1)
             for turns in (0, 1)
             if task.why_invalid(config := config_of(task, **{**TF32_BASE, "stages": stages}, block_m=bm, block_n=bn,
                                                     raster=raster, consumers=consumers, cluster=cluster,
                                                     persistent=persistent, turns=turns)) is None]
    picks = np.random.default_rng(seed).choice(len(valid), size=min(count, len(valid)), replace=False)
    return [valid[int(i)] for i in picks]


def test_random_valid_tf32_wgmma_configs_compile_for_sm_90(tmp_path):
    picked = [(task, config) for shape in [(4096, 4096, 4096), (200, 264, 136)]
              for task in [task_of(*shape, "tf32")] for config in tf32_wgmma_sample(task, 6, seed=shape[0])]
    assert len(picked) == 12
    with Builder("sm_90", workers=2, cache_dir=tmp_path, timeout=120) as builder:
        results = builder.build([task.template.kernel(task.params, config) for task, config in picked])
    assert [(config.values(), r.message[:400]) for (task, config), r in zip(picked, results) if not r.ok] == []


@pytest.mark.parametrize("precision, tile", [("tf32", tile) for tile in tensor_core_gemm.TF32_SQUARE_PICKS]
                         + [("bfloat16", tile) for tile in tensor_core_gemm.PINGPONG_SQUARE_PICKS],
                         ids=lambda value: value if isinstance(value, str) else "-".join(map(str, value)))
def test_the_benchmarks_tf32_and_pingpong_tiles_compile_unserialised_without_spills(precision, tile):
    """ptxas serialises wgmmas whose register operands are written while a group is in flight (C7513):
    tf32's fragments are loaded only once the last stage's group retired. Pingpong's consumers each
    hold a whole tile's accumulators."""
    task = task_of(4096, 4096, 4096, precision)
    (config,) = tensor_core_gemm.wgmma_picked(task, [tile])
    source = task.template.kernel(task.params, config)
    _, log = compile_to_cubin(source.code, "sm_90", ("-Xptxas=-v",))
    assert "for 'sm_90a'" in log and " 0 bytes spill stores, 0 bytes spill loads" in log, log
    assert "serialized" not in log and "injected" not in log, log
    used = int(log.split("Used ")[1].split(" registers")[0])
    assert used * source.block[0] <= DeviceLimits().regs_per_block, log


DECODE_SHAPES = [(16, 4096, 4096), (64, 4096, 4096), (128, 4096, 4096), (16, 4096, 14336), (64, 4096, 14336),
                 (128, 4096, 14336)]


def test_every_split_k_pick_of_the_benchmark_compiles_for_sm_90a_without_spills(tmp_path):
    """The decode picks that are valid on each decode shape, each kernel once (NVRTC, ptxas -v)."""
    sources = {}
    for shape in DECODE_SHAPES:
        task = task_of(*shape, "bfloat16")
        picks = tensor_core_gemm.wgmma_picked(task, tensor_core_gemm.WGMMA_SPLIT_DECODE_PICKS)
        assert len(picks) >= 8, shape
        for config in picks:
            source = task.template.kernel(task.params, config)
            sources.setdefault(source.code, (shape, config.values()))
    # NVRTC is thread-safe and lets go of the GIL: the kernels compile a few at once.
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        logs = pool.map(lambda code: compile_to_cubin(code, "sm_90", ("-Xptxas=-v",))[1], sources)
    for (code, what), log in zip(sources.items(), logs):
        assert "for 'sm_90a'" in log and " 0 bytes spill stores, 0 bytes spill loads" in log, (what, log)
        assert "serialized" not in log, (what, log)


def test_the_decode_option_tunes_bf16_decode_steps_with_wgmma_split_k_configs(monkeypatch):
    monkeypatch.setattr(tensor_core_gemm, "ONLY", "wgmma")
    monkeypatch.setattr(tensor_core_gemm, "DECODE", True)
    tasks = tensor_core_gemm.tune_tasks()
    assert [(t.params.m, t.params.n, t.params.k, t.params.precision) for _, t in tasks] == [
        (*shape, "bfloat16") for shape in DECODE_SHAPES]
    for _, task in tasks:
        configs = tensor_core_gemm.tune_configs(task)
        assert all(c["mainloop"].val == "wgmma" for c in configs)
        assert sum(c["split_k"].val > 1 for c in configs) >= 8


def test_the_shapes_option_tunes_only_the_tags_named_and_refuses_an_unknown_one(monkeypatch):
    monkeypatch.setattr(tensor_core_gemm, "ONLY", "wgmma")
    monkeypatch.setattr(tensor_core_gemm, "DECODE", True)
    monkeypatch.setattr(tensor_core_gemm, "C16", True)
    monkeypatch.setattr(tensor_core_gemm, "SHAPES", ["128x4096x14336", "16x4096x4096"])
    tasks = tensor_core_gemm.tune_tasks()
    assert [name for name, _ in tasks] == ["bfloat16 16x4096x4096 → bfloat16", "bfloat16 128x4096x14336 → bfloat16"]
    monkeypatch.setattr(tensor_core_gemm, "SHAPES", ["64×4096×14336"])  # the docs' spelling, not a tag
    with pytest.raises(SystemExit, match="no workload tagged 64×4096×14336"):
        tensor_core_gemm.tune_tasks()


def test_split_k_wgmma_configs_are_drawn_on_a_decode_shape():
    task = task_of(16, 4096, 4096, "bfloat16")
    sampled = task.config_space.sample(np.random.default_rng(7), 400)
    assert any(c["mainloop"].val == "wgmma" and c["split_k"].val > 1 for c in sampled)


def test_split_k_wgmma_kernels_form_a_cluster_of_the_splits():
    task = task_of(16, 4096, 4096, "bfloat16")
    source = task.template.kernel(task.params, config_of(task, block_m=64, block_n=128, stages=4, consumers=1,
                                                          producer=1, loader="tma", split_k=4))
    assert source.grid == (32, 1, 4) and "__cluster_dims__(1, 1, 4)" in source.code
    assert source.shared_bytes == 4 * (64 + 128) * 128 + 1024 + 64 + 64 * 128 * 4


def test_tma_configs_describe_their_tensor_maps_and_copy_nothing_themselves():
    task = task_of(200, 264, 136, "bfloat16")
    source = task.template.kernel(task.params, config_of(task, block_m=128, block_n=256, stages=4, consumers=2,
                                                          producer=1, loader="tma"))
    a, b = source.tensor_maps
    assert (a.argument, a.rows, a.columns, a.box_rows, a.box_columns) == (0, 200, 136, 128, 64)
    assert (b.argument, b.rows, b.columns, b.box_rows, b.box_columns) == (1, 136, 264, 64, 64)
    assert f"__constant__ TensorMap {a.symbol}, {b.symbol};" in source.code
    assert "cp.async.bulk.tensor.2d" in source.code and "copy16(" not in source.code.split("#endif")[-1]
    assert "registers_down<40>" in source.code and "registers_up<232>" in source.code
    cp_async = task.template.kernel(task.params, config_of(task, block_m=128, block_n=256, stages=4, consumers=2,
                                                            producer=1))
    assert cp_async.tensor_maps == () and "TensorMap" not in cp_async.code


def test_persistent_blocks_are_at_most_one_wave_of_whole_clusters():
    # 130 x 264 has 3 x 3 tiles of 64 x 128: 2 rows of 2-block clusters, 12 blocks
    for shape, cluster, blocks in [((4096, 4096, 4096), 1, 132), ((4096, 4096, 4096), 2, 132), ((130, 264, 136), 2, 12)]:
        task = task_of(*shape, "bfloat16")
        config = config_of(task, block_m=64, block_n=128, stages=4, consumers=1, producer=1, loader="tma",
                           cluster=cluster, persistent=1)
        assert task.why_invalid(config) is None
        assert task.template.kernel(task.params, config).grid == (blocks, 1, 1)


def test_wgmma_feature_names_match_mma_syncs():
    task = task_of(4096, 4096, 4096, "bfloat16")
    wgmma = task.features(config_of(task, block_m=128, block_n=256, stages=4, consumers=2, producer=1))
    assert list(wgmma) == list(task.features(task.default_config()))
    assert wgmma["threads_per_block"] == 384 and wgmma["accumulators"] == 128
    assert wgmma["warp_intensity"] == pytest.approx(2 * 64 * 256 / (64 + 256))


CPU_CASES = [  # (M, N, K, precision, values): tails in M, N and K; both hand-overs; 1, 2, 4 consumers
    (37, 72, 24, "bfloat16", dict(block_m=64, block_n=64, stages=2, consumers=1, producer=0)),
    (70, 136, 200, "float16", dict(block_m=64, block_n=128, stages=3, consumers=1, producer=1)),
    (130, 64, 136, "bfloat16", dict(block_m=128, block_n=64, stages=2, consumers=2, producer=1)),
    (40, 256, 72, "float16", dict(block_m=64, block_n=256, stages=2, consumers=1, producer=0)),
    (200, 72, 328, "bfloat16", dict(block_m=64, block_n=64, stages=4, consumers=1, producer=1, raster=4)),
    (260, 64, 64, "float16", dict(block_m=256, block_n=64, stages=2, consumers=4, producer=0)),
    # A group left in flight (3 and 4 stages): the emulator runs copies and products as late as
    # their waits allow, so a stage reloaded while its group still reads it gives a wrong C.
    (70, 136, 456, "bfloat16", dict(block_m=64, block_n=128, stages=4, consumers=1, producer=0)),
    (130, 64, 264, "float16", dict(block_m=128, block_n=64, stages=3, consumers=2, producer=0)),
    (136, 200, 392, "bfloat16", dict(block_m=128, block_n=128, stages=4, consumers=2, producer=1)),  # setmaxnreg
    # TMA loads: boxes past M, N and K arrive as zeros; 1 and 2 consumers; 2 to 4 stages, so
    # a buffer is refilled while the ring wraps (the empty barriers' parities).
    (37, 72, 24, "bfloat16", dict(block_m=64, block_n=64, stages=2, consumers=1, producer=1, loader="tma")),
    (70, 136, 456, "float16", dict(block_m=64, block_n=128, stages=3, consumers=1, producer=1, loader="tma")),
    (136, 200, 392, "bfloat16", dict(block_m=128, block_n=128, stages=4, consumers=2, producer=1, loader="tma")),
    (260, 72, 136, "float16", dict(block_m=256, block_n=64, stages=3, consumers=2, producer=1, loader="tma")),
    (520, 136, 200, "bfloat16", dict(block_m=128, block_n=64, stages=3, consumers=2, producer=1, loader="tma", raster=4)),
    # 2-block clusters multicasting B: a spare tile past M (3 tile rows), 1 and 2 panels a block,
    # 1 and 2 consumers, raster groups of cluster rows.
    (130, 136, 200, "bfloat16", dict(block_m=64, block_n=128, stages=3, consumers=1, producer=1, loader="tma", cluster=2)),
    (136, 264, 392, "float16", dict(block_m=128, block_n=256, stages=4, consumers=2, producer=1, loader="tma", cluster=2)),
    (520, 200, 136, "bfloat16", dict(block_m=64, block_n=128, stages=4, consumers=1, producer=1, loader="tma", cluster=2,
                                     raster=4)),
    # Persistent blocks over more tiles than PERSISTENT_BLOCKS: some walk two, the ring and its
    # barriers' phases running on across tiles (2 and 3 stages over 3 k-steps a tile).
    (1100, 600, 136, "float16", dict(block_m=64, block_n=64, stages=2, consumers=1, producer=1, loader="tma",
                                     persistent=1, raster=4)),
    (1700, 1304, 136, "bfloat16", dict(block_m=128, block_n=128, stages=3, consumers=2, producer=1, loader="tma",
                                       persistent=1)),
    (1100, 1104, 136, "bfloat16", dict(block_m=64, block_n=128, stages=3, consumers=1, producer=1, loader="tma",
                                       cluster=2, persistent=1)),
    # pingpong: each consumer takes whole tiles in turn, the ring filled in tile order; blocks of 1, 2 and
    # 3 tiles (so the first consumer comes back after the second), clusters, the ring wrapping within a tile.
    (1100, 1104, 136, "float16", dict(block_m=64, block_n=64, stages=3, consumers=2, producer=1, loader="tma",
                                      persistent=1, pingpong=1, raster=4)),
    (1700, 1304, 200, "bfloat16", dict(block_m=128, block_n=128, stages=4, consumers=2, producer=1, loader="tma",
                                       persistent=1, pingpong=1)),
    (1100, 1104, 136, "bfloat16", dict(block_m=64, block_n=128, stages=2, consumers=2, producer=1, loader="tma",
                                       cluster=2, persistent=1, pingpong=1)),
    # split_k over a cluster (grid z): uneven splits (7 k-steps over 2 and 4, 5 over 4, 9 over 8),
    # a K tail, rows past M (decode's M = 16 in a 64-row tile), N tails, 1 and 2 consumers.
    (16, 200, 392, "bfloat16", dict(block_m=64, block_n=64, stages=3, consumers=1, producer=1, loader="tma", split_k=2)),
    (16, 136, 392, "float16", dict(block_m=64, block_n=128, stages=4, consumers=1, producer=1, loader="tma", split_k=4)),
    (70, 264, 264, "bfloat16", dict(block_m=64, block_n=256, stages=2, consumers=1, producer=1, loader="tma", split_k=4)),
    (130, 128, 520, "float16", dict(block_m=128, block_n=128, stages=3, consumers=2, producer=1, loader="tma", split_k=8)),
]


@pytest.mark.skipif(not cuda_on_cpu.available(), reason="needs g++ to run kernels on the CPU")
@pytest.mark.parametrize("m, n, k, precision, values", CPU_CASES, ids=[f"{c[0]}x{c[1]}x{c[2]}" for c in CPU_CASES])
def test_the_wgmma_kernel_computes_the_reference_on_the_cpu(m, n, k, precision, values):
    """The emulator reads each element where the descriptors and the swizzle say it is (its model
    of the PTX ISA's layouts, not the hardware): the loader, descriptors and epilogue must agree."""
    task = task_of(m, n, k, precision)
    config = config_of(task, **values)
    assert task.why_invalid(config) is None
    assert cuda_on_cpu.error_against_reference(task, config) < 1e-6  # fp16, bf16 products are exact in fp32


TF32_CPU_CASES = [  # (M, N, K, values): tails in M, N and K; 1, 2 and 4 consumers of 1 and 2 column tiles; narrow
    # and wide instructions (block_m 16 to 256); 2 to 4 stages; a cluster multicasting B; persistent blocks
    (37, 72, 40, dict(block_m=64, block_n=64, stages=2, consumers=1)),
    (70, 136, 200, dict(block_m=128, block_n=128, stages=3, consumers=2)),
    (40, 260, 136, dict(block_m=32, block_n=256, stages=4, consumers=2)),
    (20, 128, 72, dict(block_m=16, block_n=128, stages=2, consumers=1)),
    (70, 264, 136, dict(block_m=64, block_n=256, stages=2, consumers=4)),
    (260, 64, 100, dict(block_m=256, block_n=64, stages=3, consumers=1)),
    (130, 136, 200, dict(block_m=64, block_n=128, stages=3, consumers=1, cluster=2)),
    (1100, 600, 68, dict(block_m=64, block_n=64, stages=2, consumers=1, persistent=1, raster=4)),
    # turns: the two consumers issue each stage in turn, over tiles of one and of several K steps
    (70, 136, 200, dict(block_m=128, block_n=128, stages=3, consumers=2, turns=1)),
    (130, 264, 40, dict(block_m=64, block_n=128, stages=2, consumers=2, turns=1, cluster=2)),
    (1100, 600, 100, dict(block_m=64, block_n=128, stages=4, consumers=2, turns=1, persistent=1)),
]


def tf32(x: np.ndarray) -> np.ndarray:
    """float32 -> the nearest TF32 (ties away from zero, as cvt.rna), as float32."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    return ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)


@pytest.mark.skipif(not cuda_on_cpu.available(), reason="needs g++ to run kernels on the CPU")
@pytest.mark.parametrize("m, n, k, values", TF32_CPU_CASES, ids=[f"{c[0]}x{c[1]}x{c[2]}" for c in TF32_CPU_CASES])
def test_the_tf32_wgmma_kernel_computes_the_reference_on_the_cpu(m, n, k, values):
    """C = A · tf32(B): the emulator reads A's tile where the descriptors say, in full float32 (the
    tensor core drops its low bits; the tolerance covers that), and B^T's fragments as the
    registers the kernel loaded and rounded; so the sharp check is against A times B rounded."""
    task = task_of(m, n, k, "tf32")
    config = config_of(task, **{**TF32_BASE, **values})
    assert task.why_invalid(config) is None
    a, b, c = task.template.make_inputs(task.params, np.random.default_rng(1))
    c[:] = np.nan
    cuda_on_cpu.run(task.template.kernel(task.params, config), [a, b, c])
    rounded = a.astype(np.float64) @ tf32(b).astype(np.float64)
    assert np.linalg.norm(c - rounded) / np.linalg.norm(rounded) < 1e-6
    exact = a.astype(np.float64) @ b.astype(np.float64)
    assert np.linalg.norm(c - exact) / np.linalg.norm(exact) > 1e-5  # B was rounded to TF32
