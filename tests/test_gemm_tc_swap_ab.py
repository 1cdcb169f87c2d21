"""The tensor-core GEMM's swapped operands (the `swap_ab` knob: the 16-bit wgmma kernel computes
C^T = B^T A^T, so a tile's rows of A are the instruction's N, 16 to 256), without a GPU: the rules,
the old configs' indexes, the instruction's operand layouts in the text, the answers on the CPU
(tests/cuda_on_cpu.py emulates the N-major A operand from the descriptors), and NVRTC's sm_90a compile."""
from __future__ import annotations

import numpy as np
import pytest

import cuda_on_cpu
import engine
from gemm_tc_configs import assert_appended_knobs_keep_indexes, task_of, tma_config
from engine.gpu.builder import Builder
from engine.ops import DeviceLimits
from engine.ops.gemm_tc.kernel import TOLERANCE
from engine.ops.gemm_tc.tiling import SWAP_AB, gemm_tc_tiling
from engine.workloads import gemm_tc_args


def test_swap_ab_0_keeps_every_earlier_index():
    task = task_of(64, 4096, 4096)
    names = task.config_space.knob_names
    assert names[names.index("stream_k") + 1] == "swap_ab"  # after the knobs before it, before those after it
    assert task.config_space.knobs[names.index("swap_ab")].options == list(SWAP_AB) == [0, 1]
    assert_appended_knobs_keep_indexes(task, "swap_ab", seed=11)


def test_a_swapped_decode_tile_is_narrow_and_mostly_weights():
    """M = 64 in two 32-row tiles whose cluster reads each of B's boxes once: half a panel's rows a block."""
    task = task_of(64, 4096, 4096)
    config = tma_config(task, block_m=32, block_n=64, stages=4, ring=12, cluster=2, swap_ab=1)
    assert task.why_invalid(config) is None
    tiling = gemm_tc_tiling(task.params, config)
    assert tiling.accumulator_tiles == (1, 16) and tiling.warp_tile == (32, 64) and tiling.b_box_rows == 32
    assert tiling.grid == (128, 1, 1) and tiling.wgmma_stage_bytes == (32 + 64) * 128
    code = task.template.kernel(task.params, config).code
    assert "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16" in code and "p, 1, 1, 1, 0;" in code
    assert "tma_load_2d_multicast(" in code and "(p % 2) * 4096" in code and "swap_ab (C^T = B^T A^T)" in code


@pytest.mark.parametrize("values, message", [
    (dict(loader="cp_async", producer=1), "swap_ab takes loader tma"),
    (dict(consumers=2, block_n=64), "is not a multiple of 64 columns for each of 2 consumer"),
    (dict(mainloop="mma_sync", loader="cp_async", producer=0, block_k=32, warp_m=32, warp_n=32),
     "swap_ab are the wgmma mainloop's knobs"),
])
def test_the_rules_of_swap_ab(values, message):
    task = task_of(64, 4096, 4096)
    config = tma_config(task, **{"block_m": 32, "block_n": 64, "stages": 4, "swap_ab": 1, **values})
    assert message in task.why_invalid(config)


def test_tf32_pins_swap_ab_at_0_and_random_draws_find_swapped_configs():
    tf32 = task_of(256, 256, 512, "tf32")
    drawn = tf32.config_space.sample(np.random.default_rng(5), 60)
    assert {c["swap_ab"].val for c in drawn} == {0}
    task = task_of(64, 4096, 4096)
    drawn = [c for c in task.config_space.sample(np.random.default_rng(3), 200) if task.why_invalid(c) is None]
    assert {c["swap_ab"].val for c in drawn} == set(SWAP_AB)
    assert {c["block_m"].val for c in drawn if c["swap_ab"].val} >= {16, 32}


def test_a_device_without_wgmma_draws_mma_sync_configs_only():
    """sm_80 keeps every knob and index, and its draws skip the wgmma configs it cannot run."""
    sm_80 = engine.create_task("gemm_tensorcore", gemm_tc_args(16, 4096, 4096, "float16"),
                               DeviceLimits(wgmma=False, max_cluster_size=1))
    drawn = sm_80.config_space.sample(np.random.default_rng(16), 40)
    assert len(drawn) == 40 and {c["mainloop"].val for c in drawn} == {"mma_sync"}
    assert len(sm_80.config_space) == len(task_of(16, 4096, 4096, "float16").config_space)


CPU_CASES = [  # (M, N, K, precision, C, values): tails in M, N and K; every block_m; consumers, clusters, splits
    (64, 128, 256, "bfloat16", "float32", dict(block_m=32, block_n=64, stages=3)),
    (20, 136, 264, "float16", "float32", dict(block_m=16, block_n=128, stages=4, consumers=2)),
    (40, 200, 520, "bfloat16", "bfloat16", dict(block_m=32, block_n=64, stages=4, cluster=2)),
    (130, 200, 520, "float16", "float16", dict(block_m=32, block_n=64, stages=4, cluster=2, persistent=1)),
    (64, 136, 1304, "bfloat16", "bfloat16", dict(block_m=64, block_n=64, stages=4, ring=4, split_k=2)),
    (20, 136, 1304, "bfloat16", "float32", dict(block_m=32, block_n=128, stages=4, split_k=2, consumers=2)),
    (40, 128, 1024, "bfloat16", "bfloat16", dict(block_m=32, block_n=64, stages=4, ring=4, persistent=1,
                                                 stream_k=2, l2_hint="stream_b")),
    (136, 72, 200, "float16", "float32", dict(block_m=128, block_n=128, stages=2, consumers=2)),
    (200, 64, 136, "bfloat16", "bfloat16", dict(block_m=256, block_n=64, stages=3)),
]


@pytest.mark.skipif(not cuda_on_cpu.available(), reason="needs g++ to run kernels on the CPU")
@pytest.mark.parametrize("m, n, k, precision, c_dtype, values", CPU_CASES,
                         ids=[f"{c[0]}x{c[1]}x{c[2]}-{c[3]}-{c[4]}" for c in CPU_CASES])
def test_a_swapped_kernel_computes_the_product_on_the_cpu(m, n, k, precision, c_dtype, values):
    """Twice, C NaN-filled before each launch (a launch that leaves a flag or a slot behind fails the second);
    a 16-bit C to its rounding, as the plain kernel's."""
    task = task_of(m, n, k, precision, c_dtype)
    config = tma_config(task, swap_ab=1, **values)
    assert task.why_invalid(config) is None
    error = cuda_on_cpu.error_against_reference(task, config, launches=2)
    assert error < (2**-8 if c_dtype == "bfloat16" else 2**-11 if c_dtype == "float16" else 1e-6)
    assert error < TOLERANCE[precision]


@pytest.mark.skipif(not cuda_on_cpu.available(), reason="needs g++ to run kernels on the CPU")
def test_a_cluster_shares_one_panel_of_b_by_rows_without_swap_ab_too():
    """Two 64-row tiles of the plain kernel over a 64-column B: each block multicasts half the panel's rows."""
    task = task_of(130, 200, 520, "bfloat16")
    config = tma_config(task, block_m=64, block_n=64, stages=4, cluster=2)
    assert task.why_invalid(config) is None and gemm_tc_tiling(task.params, config).b_box_rows == 32
    assert cuda_on_cpu.error_against_reference(task, config) < 1e-6


def test_swapped_kernels_compile_for_sm_90a(tmp_path):
    """NVRTC checks the instructions of every N (16 to 256), the transposed stores and the split sums."""
    cases = [(task_of(64, 4096, 4096), dict(block_m=32, block_n=64, stages=4, ring=12, cluster=2)),
             (task_of(16, 4096, 4096, "float16", "float16"), dict(block_m=16, block_n=128, stages=4, split_k=2)),
             (task_of(64, 4096, 14336, "bfloat16", "bfloat16"), dict(block_m=64, block_n=64, stages=4, ring=4,
                                                                     persistent=1, stream_k=2, l2_hint="stream_b")),
             (task_of(256, 512, 1024), dict(block_m=128, block_n=128, stages=3, consumers=2)),
             (task_of(512, 512, 1024, "bfloat16", "bfloat16"), dict(block_m=256, block_n=128, stages=3, consumers=2))]
    sources = [task.template.kernel(task.params, tma_config(task, swap_ab=1, **values)) for task, values in cases]
    with Builder("sm_90", workers=2, cache_dir=tmp_path, timeout=180) as builder:
        results = builder.build(sources)
    assert [r.message for r in results if not r.ok] == []
