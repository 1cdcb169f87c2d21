"""The tensor-core GEMM's L2 eviction priorities (the `l2_hint` knob: cache hints on the TMA loader's
copies), without a GPU: the rule, the old configs' indexes and sources, the hinted copies in the
text, their answers on the CPU (tests/cuda_on_cpu.py: the hint is no-op there), and NVRTC's sm_90a
compile of them."""
from __future__ import annotations

import numpy as np
import pytest

import cuda_on_cpu
from gemm_tc_configs import assert_appended_knobs_keep_indexes, task_of, tma_config
from engine.gpu.builder import Builder
from engine.ops.gemm_tc.kernel import TOLERANCE
from engine.ops.gemm_tc.tiling import L2_HINTS


def test_normal_keeps_every_index_from_before_the_hint():
    """l2_hint came after ring, its first value normal (stream_k, swap_ab and cluster_shares after it, first
    values 0, 0, b)."""
    task = task_of(64, 4096, 4096)
    assert task.config_space.knob_names[-4:] == ["l2_hint", "stream_k", "swap_ab", "cluster_shares"]
    assert task.config_space.knobs[-4].options == list(L2_HINTS) == ["normal", "stream_b"]
    assert_appended_knobs_keep_indexes(task, "l2_hint", seed=7)


def test_normal_leaves_the_source_without_hints_and_stream_b_hints_every_copy():
    task = task_of(64, 4096, 4096)
    values = dict(block_m=64, block_n=128, stages=4, ring=4, split_k=2)
    plain = task.template.kernel(task.params, tma_config(task, **values)).code
    hinted = task.template.kernel(task.params, tma_config(task, l2_hint="stream_b", **values)).code
    assert "cache_hint" not in plain and "l2_evict" not in plain and "_hinted(" not in plain
    assert "createpolicy.fractional.L2::evict_first" in hinted and "L2 hints stream_b" in hinted
    assert "tma_load_2d_hinted(stage, &a_tensor_map" in hinted and hinted.count("a_policy)") == 1
    assert "b_policy)" in hinted and "tma_load_2d(" not in hinted.split("extern \"C\"")[1]


def test_a_cluster_multicasts_b_under_its_policy():
    task = task_of(256, 512, 1024)
    code = task.template.kernel(task.params, tma_config(task, block_m=128, block_n=128, stages=4, consumers=2,
                                                       cluster=2, l2_hint="stream_b")).code
    assert "tma_load_2d_multicast_hinted(" in code and ", 3, b_policy)" in code


@pytest.mark.parametrize("values, message", [
    (dict(loader="cp_async", l2_hint="stream_b"), "it takes loader tma"),
    (dict(mainloop="mma_sync", loader="cp_async", producer=0, block_k=32, warp_m=32, warp_n=32, l2_hint="stream_b"),
     "l2_hint and swap_ab are the wgmma mainloop's knobs"),
])
def test_the_hint_is_the_tma_loaders(values, message):
    task = task_of(64, 4096, 4096)
    config = tma_config(task, **{"block_m": 64, "block_n": 64, "stages": 4, **values})
    assert message in task.why_invalid(config)


def test_random_draws_find_hinted_configs():
    task = task_of(64, 4096, 4096)
    drawn = [c for c in task.config_space.sample(np.random.default_rng(3), 400) if task.why_invalid(c) is None]
    assert {c["l2_hint"].val for c in drawn if c["loader"].val == "tma"} == set(L2_HINTS)


CPU_CASES = [  # (M, N, K, precision, values): split K over a cluster, 2-block multicast clusters, tf32, tails
    (20, 136, 1304, "bfloat16", dict(block_m=64, block_n=64, stages=4, ring=4, split_k=2)),
    (130, 200, 520, "float16", dict(block_m=64, block_n=128, stages=3, cluster=2)),
    (70, 72, 264, "tf32", dict(block_m=64, block_n=64, stages=3)),
]


@pytest.mark.skipif(not cuda_on_cpu.available(), reason="needs g++ to run kernels on the CPU")
@pytest.mark.parametrize("m, n, k, precision, values", CPU_CASES,
                         ids=[f"{c[0]}x{c[1]}x{c[2]}-{c[3]}" for c in CPU_CASES])
def test_a_hinted_kernel_computes_what_the_plain_one_does_on_the_cpu(m, n, k, precision, values):
    """The same sums in the same order (16-bit inputs: exact to float32's rounding; tf32's rounding of
    the inputs is the emulator's, the same for both)."""
    task = task_of(m, n, k, precision)
    hinted, plain = tma_config(task, l2_hint="stream_b", **values), tma_config(task, **values)
    assert task.why_invalid(hinted) is None
    error = cuda_on_cpu.error_against_reference(task, hinted)
    assert error == cuda_on_cpu.error_against_reference(task, plain)
    assert error < (TOLERANCE["tf32"] / 4 if precision == "tf32" else 1e-6)


def test_hinted_kernels_compile_for_sm_90a(tmp_path):
    """NVRTC checks the copies' PTX (the qualifiers' order, the policy's 64-bit operand)."""
    cases = [(task_of(64, 4096, 4096), dict(block_m=64, block_n=64, stages=4, ring=4, split_k=2)),
             (task_of(256, 512, 1024, "float16"), dict(block_m=128, block_n=128, stages=4, consumers=2, cluster=2)),
             (task_of(256, 256, 512, "tf32"), dict(block_m=64, block_n=64, stages=3))]
    sources = [task.template.kernel(task.params, tma_config(task, l2_hint="stream_b", **values))
               for task, values in cases]
    with Builder("sm_90", workers=2, cache_dir=tmp_path, timeout=120) as builder:
        results = builder.build(sources)
    assert [r.message for r in results if not r.ok] == []
