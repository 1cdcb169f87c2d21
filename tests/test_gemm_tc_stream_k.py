"""Stream-K in the tensor-core GEMM (the `stream_k` knob, the implicit-GEMM conv's schedule in
engine/ops/gemm_tc/tma.py), without a GPU: the knob is last and 0 keeps every earlier config; 1 shares
all tiles' K steps among 132 blocks, 2 and 4 cut each tile's K steps in that many shares, a block each
(split K without a cluster); the rules, the grid and shares, and the shares adding up to the reference
on the CPU (tests/cuda_on_cpu.py) over two launches (the flags clear themselves)."""
from __future__ import annotations

import dataclasses

import pytest

import cuda_on_cpu
import engine
from gemm_tc_configs import assert_appended_knobs_keep_indexes, task_of, tma_config
from engine.gpu.builder import Builder
from engine.ops import DeviceLimits
from engine.ops.gemm_tc.tiling import PERSISTENT_BLOCKS, STREAM_K_SHARES, gemm_tc_tiling
from engine.workloads import gemm_tc_args



def stream_k_config(task, **values):
    return tma_config(task, **{"persistent": 1, "stream_k": 1, **values})

def test_stream_k_0_keeps_every_earlier_index():
    task = task_of(64, 4096, 14336)
    assert task.config_space.knob_names[-4:] == ["l2_hint", "stream_k", "swap_ab", "cluster_shares"]
    assert task.config_space.knobs[-3].options == list(STREAM_K_SHARES) == [0, 1, 2, 4]
    assert_appended_knobs_keep_indexes(task, "stream_k", seed=9)


def test_a_decode_step_shares_its_steps_over_every_sm():
    task = task_of(64, 4096, 14336)
    config = stream_k_config(task, block_m=64, block_n=128, stages=4, ring=4)
    assert task.why_invalid(config) is None
    tiling = gemm_tc_tiling(task.params, config)
    assert tiling.stream_steps == 32 * 224 and tiling.grid == (PERSISTENT_BLOCKS, 1, 1)
    source = task.template.kernel(task.params, config)
    assert source.co_resident and "stream_partials" in source.code and source.grid == (PERSISTENT_BLOCKS, 1, 1)


def test_stream_k_4_cuts_each_tile_in_four_shares_that_start_together():
    """32 tiles of 64x128, each a block per quarter of its 224 steps: 128 blocks, no cluster."""
    task = task_of(64, 4096, 14336)
    tiling = gemm_tc_tiling(task.params, stream_k_config(task, block_m=64, block_n=128, stages=4, ring=4, stream_k=4))
    assert tiling.stream_blocks == 128 and tiling.grid == (128, 1, 1) and tiling.cluster == 1
    source = task.template.kernel(task.params, stream_k_config(task, block_m=64, block_n=128, stages=4, ring=4, stream_k=4))
    assert "__cluster_dims__" not in source.code and source.co_resident


@pytest.mark.parametrize("values, message", [
    (dict(persistent=0), "it takes a 16-bit precision, loader tma, persistent 1"),
    (dict(split_k=2, persistent=1), "split_k 1"),
    (dict(stream_k=4, k=960), "its 15 K steps are too few"),
])
def test_stream_k_rules_say_why(values, message):
    task = task_of(64, 4096, values.pop("k", 4096))
    assert message in task.why_invalid(stream_k_config(task, block_m=64, block_n=64, stages=4, **values))


def test_stream_k_needs_every_block_resident():
    fewer_sms = dataclasses.replace(DeviceLimits.for_h200(), multiprocessors=100)
    task = engine.create_task("gemm_tensorcore", gemm_tc_args(64, 4096, 4096, "bfloat16", "float32"), fewer_sms)
    assert "must be resident at once" in task.why_invalid(stream_k_config(task, block_m=64, block_n=64, stages=4))


# (M, N, K, C, values): tiles split over blocks at odd places, tails in M, N and K, 2 consumers; at most
# 35 steps, so at most 8 blocks (the emulator holds 8 at once, and stream-K's must all be resident)
CPU_CASES = [
    (20, 136, 520, "bfloat16", dict(block_m=64, block_n=64, stages=4, ring=4)),
    (70, 200, 264, "float32", dict(block_m=64, block_n=128, stages=3)),
    (130, 72, 264, "bfloat16", dict(block_m=128, block_n=64, stages=4, consumers=2, l2_hint="stream_b")),
    # a tile's steps in 2 or 4 shares (9 steps: 4 + 5; 21: 5 + 5 + 5 + 6), tails in M, N and K
    (20, 136, 520, "bfloat16", dict(block_m=64, block_n=64, stages=4, stream_k=2)),
    (37, 128, 1304, "float32", dict(block_m=64, block_n=64, stages=3, ring=4, stream_k=4)),
]


@pytest.mark.skipif(not cuda_on_cpu.available(), reason="needs g++ to run kernels on the CPU")
@pytest.mark.parametrize("m, n, k, c_dtype, values", CPU_CASES, ids=[f"{c[0]}x{c[1]}x{c[2]}" for c in CPU_CASES])
def test_stream_k_shares_add_up_to_the_reference_on_the_cpu(m, n, k, c_dtype, values):
    task = task_of(m, n, k, c_dtype=c_dtype)
    config = stream_k_config(task, **values)
    assert task.why_invalid(config) is None
    tiling = gemm_tc_tiling(task.params, config)
    assert tiling.stream_blocks > tiling.tile_blocks  # some tile's steps lie in more than one block's share
    assert values.get("stream_k", 1) == 1 or tiling.stream_blocks == tiling.tile_blocks * values["stream_k"]
    tolerance = 1e-6 if c_dtype == "float32" else 2 ** -8
    assert cuda_on_cpu.error_against_reference(task, config, launches=2) < tolerance


def test_stream_k_kernels_compile_for_sm_90a(tmp_path):
    task = task_of(64, 4096, 14336, c_dtype="bfloat16")
    sources = [task.template.kernel(task.params, stream_k_config(task, block_m=64, block_n=128, stages=4, ring=4, **extra))
               for extra in ({}, {"l2_hint": "stream_b", "stream_k": 4})]
    with Builder("sm_90", workers=2, cache_dir=tmp_path, timeout=120) as builder:
        results = builder.build(sources)
    assert [r.message for r in results if not r.ok] == []
