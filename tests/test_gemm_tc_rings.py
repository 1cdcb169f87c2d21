"""The tensor-core GEMM's deep rings (the `ring` knob: stages added to the `stages` knob's, for the
TMA loader), without a GPU: the rule, the old configs' indexes, shared memory bounding them, and
the kernels' answers on the CPU with the ring wrapping many times (tests/cuda_on_cpu.py)."""
from __future__ import annotations

import numpy as np
import pytest

import cuda_on_cpu
from gemm_tc_configs import space_before, task_of, tma_config
from engine.ops.gemm_tc.tiling import gemm_tc_tiling


def test_a_ring_adds_its_stages_to_the_stages_knobs():
    task = task_of(64, 4096, 4096)
    config = tma_config(task, block_m=64, block_n=64, stages=2, ring=12)
    assert task.why_invalid(config) is None
    tiling = gemm_tc_tiling(task.params, config)
    assert tiling.stages == 14 and tiling.wgmma_lag == 12
    assert "14 stages" in task.template.kernel(task.params, config).code


def test_configs_without_a_ring_keep_their_index():
    """ring came after pingpong, its first value 0 (and the knobs after it, theirs): a config of every
    earlier knob keeps its index below the space's size before ring (its source is pinned by
    tests/test_kernel_sources.py)."""
    task = task_of(16, 4096, 4096)
    config = tma_config(task, block_m=64, block_n=256, stages=3, split_k=4)
    assert config["ring"].val == 0 and config.index < space_before(task.config_space, "ring")
    assert task.config_space.get(config.index).values() == config.values()


@pytest.mark.parametrize("values, message", [
    (dict(loader="cp_async", producer=1, ring=4), "is the tma loader's"),
    (dict(mainloop="mma_sync", loader="cp_async", producer=0, block_k=32, warp_m=32, warp_n=32, ring=4),
     "stream_k, l2_hint and swap_ab are the wgmma mainloop's knobs"),
])
def test_a_ring_is_the_tma_loaders(values, message):
    task = task_of(64, 4096, 4096)
    config = tma_config(task, block_m=64, block_n=64, stages=4, **values)
    assert message in task.why_invalid(config)


def test_shared_memory_bounds_the_ring():
    task = task_of(64, 4096, 4096)
    assert task.why_invalid(tma_config(task, block_m=64, block_n=128, stages=4, ring=4)) is None  # 8 x 24 KB
    assert "shared memory" in task.why_invalid(tma_config(task, block_m=64, block_n=128, stages=4, ring=8))


def test_random_draws_find_rings():
    task = task_of(64, 4096, 4096)
    drawn = task.config_space.sample(np.random.default_rng(4), 400)
    assert {c["ring"].val for c in drawn if c["mainloop"].val == "wgmma"} > {0}


CPU_CASES = [  # (M, N, K, values): the ring wrapping over 20 to 40 k-steps, tails, split K, 2 consumers
    (16, 136, 2056, dict(block_m=64, block_n=64, stages=2, ring=12)),
    (70, 200, 1304, dict(block_m=64, block_n=128, stages=4, ring=4)),
    (16, 128, 2568, dict(block_m=64, block_n=64, stages=3, ring=8, split_k=4)),
    (130, 72, 1096, dict(block_m=128, block_n=64, stages=4, ring=4, consumers=2)),
    # a tile taller than M whose M is no multiple of 8: A's box of 24 rows, 4 of them past M (zeros)
    (20, 136, 1304, dict(block_m=64, block_n=64, stages=4, ring=4, split_k=2)),
    (37, 72, 520, dict(block_m=128, block_n=64, stages=3, consumers=2)),
]


@pytest.mark.skipif(not cuda_on_cpu.available(), reason="needs g++ to run kernels on the CPU")
@pytest.mark.parametrize("m, n, k, values", CPU_CASES, ids=[f"{m}x{n}x{k}" for m, n, k, _ in CPU_CASES])
def test_a_deep_ring_computes_the_reference_on_the_cpu(m, n, k, values):
    task = task_of(m, n, k)
    config = tma_config(task, **values)
    assert task.why_invalid(config) is None
    assert cuda_on_cpu.error_against_reference(task, config) < 1e-6


def test_a_tile_taller_than_m_loads_only_ms_rows_of_a():
    """A decode step's 16 tokens in a 64-row tile: A's box is 16 rows (M rounded up to 8) and the
    full barrier expects those bytes; a tile row of its own height, or a cluster, loads whole boxes."""
    decode = task_of(20, 4096, 4096)
    config = tma_config(decode, block_m=64, block_n=64, stages=4, ring=4, split_k=2)
    source = decode.template.kernel(decode.params, config)
    a_map = source.tensor_maps[0]
    assert (a_map.rows, a_map.box_rows) == (20, 24)
    tiling = gemm_tc_tiling(decode.params, config)
    assert tiling.tma_stage_bytes == tiling.wgmma_stage_bytes - 40 * 128
    assert f"barrier_arrive_expect_tx(bar, {tiling.tma_stage_bytes})" in source.code
    square = task_of(256, 256, 256)
    whole = square.template.kernel(square.params, tma_config(square, block_m=64, block_n=64, stages=4))
    assert whole.tensor_maps[0].box_rows == 64
