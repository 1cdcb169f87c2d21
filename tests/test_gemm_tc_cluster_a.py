"""The tensor-core GEMM's clusters that share A (`cluster_shares` a): a cluster's blocks take neighbouring tile
columns of one tile row, each copies its share of A's rows and the copy is multicast into all of them, each
loading all of its own B; with split K the cluster is those columns times the splits (a decode step's one tile
row then reads A once a cluster and still streams B from every SM). Without a GPU: the rules, the old configs'
indexes, the cluster's ranks in the text, the answers on the CPU (tests/cuda_on_cpu.py, the cluster's last
block lagging too) and NVRTC's sm_90a compile."""
from __future__ import annotations

import numpy as np
import pytest

import cuda_on_cpu
from gemm_tc_configs import assert_appended_knobs_keep_indexes, task_of, tma_config
from engine.gpu.builder import Builder
from engine.ops.gemm_tc.kernel import TOLERANCE
from engine.ops.gemm_tc.tiling import CLUSTER_SHARES, gemm_tc_tiling


def test_the_knob_comes_last_so_earlier_configs_keep_their_index():
    task = task_of(64, 4096, 4096)
    assert task.config_space.knob_names[-1] == "cluster_shares"
    assert task.config_space.knobs[-1].options == list(CLUSTER_SHARES) == ["b", "a"]
    assert_appended_knobs_keep_indexes(task, "cluster_shares", seed=14)


def test_a_decode_step_splits_k_over_clusters_of_two_tile_columns():
    """M = 64: 64 tiles of 64 columns, 2 splits: 128 blocks in clusters of 2 columns x 2 splits."""
    task = task_of(64, 4096, 4096)
    config = tma_config(task, block_m=64, block_n=64, stages=4, ring=4, split_k=2, cluster=2, cluster_shares="a")
    assert task.why_invalid(config) is None
    tiling = gemm_tc_tiling(task.params, config)
    assert (tiling.grid, tiling.a_box_rows, tiling.tma_stage_bytes) == ((64, 1, 2), 32, 16384)
    source = task.template.kernel(task.params, config)
    assert "__cluster_dims__(2, 1, 2)" in source.code
    # A's 32-row share into the blocks of this split (ranks 2z, 2z + 1); B's one panel its own
    assert "tma_load_2d_multicast(stage + rank * 4096, &a_tensor_map, (k_first + kt) * 64, row0 + rank * 32, bar, " \
           "3 << (2 * blockIdx.z))" in source.code
    assert "tma_load_2d(stage + 8192 + p * 8192, &b_tensor_map" in source.code
    assert "barrier_arrive_remote(empty + 8 * ((step - 1) % 8), r + 2 * blockIdx.z)" in source.code
    assert "load_shared_cluster4(partial_address + (w * 4096 + e) * 4, rank + 2 * s)" in source.code
    assert source.tensor_maps[0].box_rows == 32 and source.tensor_maps[1].box_rows == 64


@pytest.mark.parametrize("values, message", [
    (dict(cluster_shares="a"), "with cluster 1 (or tf32) it is b's kernel"),
    (dict(cluster=2, cluster_shares="a", split_k=8), "2 tile columns x 8 splits cannot form one thread block cluster (at most 8 blocks)"),
    (dict(cluster=2, split_k=2), "it takes loader tma, cluster 1 or cluster_shares a, and persistent 0"),
])
def test_the_rules_say_why(values, message):
    task = task_of(64, 4096, 4096)
    assert message in task.why_invalid(tma_config(task, block_m=64, block_n=64, stages=4, **values))


def sharing_a_twins(task, count: int, seed: int) -> list:
    """Random draws keep cluster_shares at b (the template's pins): the valid a twins of drawn 2-block clusters."""
    drawn = task.config_space.sample(np.random.default_rng(seed), 400)
    twins = [task.config_space.along(c, "cluster_shares")[0] for c in drawn if c["cluster"].val == 2]
    return [c for c in twins if task.why_invalid(c) is None][:count]


def test_draws_keep_b_and_a_walk_reaches_a():
    """a is a cluster's alone: drawn freely it halved a tiny GEMM's valid draws (37x40x24 ran out of them)."""
    task = task_of(64, 4096, 4096)
    assert {c["cluster_shares"].val for c in task.config_space.sample(np.random.default_rng(5), 100)} == {"b"}
    twins = sharing_a_twins(task, 4, 4)
    assert len(twins) == 4 and {c["cluster_shares"].val for c in twins} == {"a"}
    task_of(37, 40, 24).config_space.sample(np.random.default_rng(0), 8)  # no SamplingError


KNOBS = ("block_m", "block_n", "stages", "ring", "consumers", "split_k", "persistent", "swap_ab", "l2_hint")
CPU_CASES = [  # (M, N, K, knob values of KNOBS)
    ((64, 256, 512), (64, 64, 4, 0, 1, 2, 0, 0, "normal")),      # a decode step's kind: 2 columns x 2 splits
    ((64, 192, 512), (64, 64, 4, 0, 1, 4, 0, 0, "normal")),      # 3 tile columns in 2 clusters: a spare past N
    ((48, 256, 520), (64, 128, 4, 0, 1, 2, 0, 0, "stream_b")),   # M and K tails, L2 hints
    ((16, 256, 512), (64, 64, 3, 4, 1, 2, 0, 0, "normal")),      # M = 16: the second share all past M, a ring of 7
    ((64, 256, 512), (32, 64, 4, 0, 1, 2, 0, 1, "normal")),      # swapped operands: A's rows the instruction's N
    ((200, 320, 256), (128, 128, 3, 0, 2, 1, 1, 0, "normal")),   # persistent clusters, 2 consumers, tails
]


@pytest.mark.skipif(not cuda_on_cpu.available(), reason="needs g++ to run kernels on the CPU")
@pytest.mark.parametrize("lag", [0, 2])
@pytest.mark.parametrize("case", CPU_CASES, ids=[f"{c[0][0]}x{c[0][1]}x{c[0][2]}-{c[1][0]}x{c[1][1]}-s{c[1][5]}"
                                                 f"p{c[1][6]}sw{c[1][7]}" for c in CPU_CASES])
def test_the_kernel_computes_the_product_on_the_cpu(case, lag):
    """lag 2: the cluster's last block runs behind the others, so a copy into a stage not yet released shows.
    Twice, C poisoned before each: the split sum leaves nothing behind."""
    shape, values = case
    task = task_of(*shape)
    config = tma_config(task, cluster=2, cluster_shares="a", **dict(zip(KNOBS, values)))
    assert task.why_invalid(config) is None
    assert cuda_on_cpu.error_against_reference(task, config, launches=2, lag=lag) < TOLERANCE["bfloat16"]


def test_random_valid_configs_sharing_a_compile_for_sm_90(tmp_path):
    picked = []
    for shape, c_dtype in (((64, 4096, 4096), "bfloat16"), ((16, 4096, 14336), "float32"), ((4096, 4096, 4096), "float32")):
        task = task_of(*shape, c_dtype=c_dtype)
        picked += [(task, c) for c in sharing_a_twins(task, 4, 7)]
    decode = task_of(64, 4096, 14336)
    picked += [(decode, tma_config(decode, block_m=64, block_n=128, stages=4, ring=4, split_k=split, cluster=2,
                                   cluster_shares="a", l2_hint="stream_b")) for split in (2, 4)]
    assert len(picked) == 14 and all(task.why_invalid(c) is None for task, c in picked)
    with Builder("sm_90", workers=2, cache_dir=tmp_path, timeout=120) as builder:
        results = builder.build([task.template.kernel(task.params, config) for task, config in picked])
    assert [(c.values(), r.message[:300]) for (_, c), r in zip(picked, results) if not r.ok] == []
