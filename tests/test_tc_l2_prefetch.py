"""The `l2_prefetch` knob of the tensor-core GEMM and the implicit-GEMM conv (their TMA producer keeps L2 D K
steps ahead of its copies), without a GPU: the old configs' indexes and sources, the rule, and the kernels on
the CPU, where tests/cuda_on_cpu.py fails a launch in which a block asked L2 for a box it never copied and counts
the copies that found theirs (so prefetches at wrong coordinates, or missing, show, though neither would change
an answer on the GPU), and NVRTC's sm_90a compile of the prefetch instructions."""
from __future__ import annotations

import dataclasses

import pytest

import cuda_on_cpu
from gemm_tc_configs import assert_appended_knobs_keep_indexes, task_of, tma_config
from engine.gpu.builder import Builder
from engine.ops.gemm_tc.kernel import TOLERANCE
from engine.ops.conv2d_tc.tiling import conv_tc_tiling
from engine.ops.gemm_tc.tiling import L2_PREFETCH, gemm_tc_tiling
from test_conv2d_tc_tma import tma_config as conv_tma_config
from test_conv2d_tensorcore import OUTPUT_ROUNDING
from test_conv2d_tensorcore import task_of as conv_task_of

PREFETCH_2D = "cp.async.bulk.prefetch.tensor.2d.L2.global.tile"


def test_the_knob_comes_last_and_0_keeps_every_earlier_config_and_its_source():
    task = task_of(64, 4096, 4096)
    assert task.config_space.knob_names[-1] == "l2_prefetch" and task.config_space.knobs[-1].options == list(L2_PREFETCH)
    assert_appended_knobs_keep_indexes(task, "l2_prefetch", seed=23)
    conv = conv_task_of(32, 14, 1024, 256, 1, 1, 0, "float16")
    assert conv.config_space.knob_names[-1] == "l2_prefetch"
    assert_appended_knobs_keep_indexes(conv, "l2_prefetch", seed=29)
    values = dict(block_m=64, block_n=128, stages=4, ring=4, cluster=2)
    plain = task.template.kernel(task.params, tma_config(task, **values)).code
    assert "prefetch" not in plain
    plain_conv = conv.template.kernel(conv.params, conv_tma_config(conv, block_m=128, block_n=128, stages=4)).code
    assert "prefetch" not in plain_conv


def test_it_takes_the_tma_loader():
    task = task_of(64, 4096, 4096)
    config = tma_config(task, block_m=64, block_n=64, stages=4, loader="cp_async", l2_prefetch=16)
    assert "l2_prefetch asks the tensor memory accelerator" in task.why_invalid(config)
    mma_sync = tma_config(task, mainloop="mma_sync", loader="cp_async", producer=0, block_k=32, warp_m=32,
                          warp_n=32, block_m=64, block_n=64, stages=3, l2_prefetch=16)
    assert "l2_prefetch are the wgmma mainloop's knobs" in task.why_invalid(mma_sync)


def test_the_producer_keeps_l2_sixteen_steps_past_the_ring():
    task = task_of(256, 512, 4096)
    config = tma_config(task, block_m=128, block_n=128, stages=4, ring=4, consumers=2, persistent=1, l2_prefetch=16)
    code = task.template.kernel(task.params, config).code
    assert code.count(PREFETCH_2D) == 1  # the helper, once
    # 8 stages, 64 K steps of 64: at a tile's start steps 8 to 23, then with step kt's copies step kt + 24
    assert "for (int kt = 8; kt < min(64, 24); ++kt) {" in code and "const int ahead = kt + 24;" in code
    assert "tma_prefetch_2d(&a_tensor_map, kt * 64, row0);" in code
    assert "tma_prefetch_2d(&b_tensor_map, col0 + p * 64, ahead * 64);" in code
    # the window after the tile's origin and before its copies; each step's after its copies
    origin, window, copy = (code.index(text) for text in ("const int row0 = tile_m", "tma_prefetch_2d(&a",
                                                         "tma_load_2d(stage"))
    assert origin < window < copy < code.index("tma_prefetch_2d(&a_tensor_map, ahead * 64, row0);")


def expected_copies_prefetched(tiling, b_boxes: int) -> int:
    """One tile a block, unsplit: each block's steps past the ring's first fill, its A box and `b_boxes` of B's."""
    blocks = tiling.grid[0] * tiling.grid[1] * tiling.grid[2]
    return blocks * max(0, tiling.k_tiles - tiling.stages) * (1 + b_boxes)


GEMM_CASES = [  # (M, N, K, precision, C, values): each schedule the producer runs; the first three one tile a block
    (130, 200, 1304, "bfloat16", "float32", dict(block_m=64, block_n=64, stages=3)),  # a window past K's end
    (130, 264, 1304, "float16", "float16", dict(block_m=64, block_n=128, stages=2, ring=4, cluster=2)),
    (130, 200, 1304, "bfloat16", "float32", dict(block_m=64, block_n=64, stages=2, cluster=2)),  # b_box_rows 32
    (200, 136, 1304, "bfloat16", "bfloat16", dict(block_m=64, block_n=64, stages=2, persistent=1)),
    (64, 136, 1304, "bfloat16", "float32", dict(block_m=64, block_n=64, stages=2, ring=4, split_k=2)),
    (40, 128, 1024, "bfloat16", "bfloat16", dict(block_m=32, block_n=64, stages=2, persistent=1, stream_k=2,
                                                 swap_ab=1, l2_hint="stream_b")),
    (40, 200, 1304, "float16", "float32", dict(block_m=32, block_n=64, stages=2, cluster=2, swap_ab=1)),
    (96, 136, 520, "tf32", "float32", dict(block_m=32, block_n=64, stages=2)),
]


@pytest.mark.skipif(not cuda_on_cpu.available(), reason="needs g++ to run kernels on the CPU")
@pytest.mark.parametrize("case", range(len(GEMM_CASES)),
                         ids=[f"{c[0]}x{c[1]}x{c[2]}-{c[3]}-{'-'.join(f'{k}{v}' for k, v in c[5].items())}"
                              for c in GEMM_CASES])
def test_a_prefetching_gemm_computes_the_product_and_copies_every_box_it_asked_for(case):
    m, n, k, precision, c_dtype, values = GEMM_CASES[case]
    task = task_of(m, n, k, precision, c_dtype)
    config = tma_config(task, l2_prefetch=16, **values)
    assert task.why_invalid(config) is None
    error, prefetched = cuda_on_cpu.launch_against_reference(task, config, launches=2)
    assert error < (2**-8 if c_dtype == "bfloat16" else 2**-11 if c_dtype == "float16" else TOLERANCE[precision])
    tiling = gemm_tc_tiling(task.params, config)
    b_boxes = tiling.b_panels * (tiling.block_k // tiling.b_box_rows) // tiling.cluster
    assert (prefetched == expected_copies_prefetched(tiling, b_boxes) if case < 3 else prefetched > 0)


CONV_CASES = [  # (batch, H=W, C, K, kernel, stride, pad, values); the first two one tile a block
    (1, 6, 256, 40, 3, 1, 1, dict(block_m=64, block_n=64, stages=2)),            # 36 steps: the window, then ahead
    (2, 8, 64, 128, 3, 1, 1, dict(block_m=64, block_n=128, stages=3, cluster=2)),  # 9 steps; B's rows multicast
    (2, 8, 128, 64, 1, 1, 0, dict(block_m=64, block_n=64, stages=2)),            # 1x1: two steps, none past the ring
    (1, 6, 64, 40, 3, 1, 1, dict(block_m=64, block_n=64, stages=2, split_k=2)),
    (2, 8, 64, 64, 3, 1, 1, dict(block_m=64, block_n=64, stages=2, persistent=1)),
    (2, 8, 64, 64, 3, 1, 1, dict(block_m=64, block_n=64, stages=2, persistent=1, stream_k=1)),
]


@pytest.mark.skipif(not cuda_on_cpu.available(), reason="needs g++ to run kernels on the CPU")
@pytest.mark.parametrize("case", range(len(CONV_CASES)),
                         ids=[f"{c[1]}x{c[2]}-{c[3]}-k{c[4]}-{'-'.join(f'{k}{v}' for k, v in c[7].items())}"
                              for c in CONV_CASES])
def test_a_prefetching_conv_computes_the_reference_and_copies_every_box_it_asked_for(case):
    *layer, values = CONV_CASES[case]
    task = conv_task_of(*layer, "float16")
    config = conv_tma_config(task, l2_prefetch=16, **values)
    assert task.why_invalid(config) is None
    code = task.template.kernel(task.params, config).code
    assert "tma_prefetch_im2col(&a_tensor_map" in code and "tma_prefetch_2d(&b_tensor_map" in code
    launches = 2 if values.get("split_k", 1) > 1 else 1
    error, prefetched = cuda_on_cpu.launch_against_reference(task, config, launches)
    assert error < OUTPUT_ROUNDING["float16"] + 1e-5
    tiling = conv_tc_tiling(task.params, config)
    assert prefetched == expected_copies_prefetched(tiling, 1) if case < 3 else prefetched > 0


@pytest.mark.skipif(not cuda_on_cpu.available(), reason="needs g++ to run kernels on the CPU")
def test_the_emulator_fails_a_launch_that_prefetches_a_box_it_never_copies():
    """The same kernel with A's prefetches after the window one K step ahead of where they should be: every
    answer right, the last of them a box past K that no copy takes."""
    task = task_of(130, 200, 1304, "bfloat16")
    config = tma_config(task, block_m=64, block_n=64, stages=3, l2_prefetch=16)
    source = task.template.kernel(task.params, config)
    wrong = source.code.replace("tma_prefetch_2d(&a_tensor_map, ahead * 64, row0);",
                                "tma_prefetch_2d(&a_tensor_map, (ahead + 1) * 64, row0);")
    assert wrong != source.code
    with pytest.raises(RuntimeError, match="asked L2 for a box it never copied"):
        cuda_on_cpu.error_against_reference(task, config, source=dataclasses.replace(source, code=wrong))


def test_prefetching_kernels_compile_for_sm_90a(tmp_path):
    gemm = [(task_of(64, 4096, 4096), dict(block_m=32, block_n=64, stages=4, ring=12, cluster=2, swap_ab=1)),
            (task_of(64, 4096, 14336, "bfloat16", "bfloat16"), dict(block_m=64, block_n=64, stages=4, ring=8,
                                                                    split_k=2, l2_hint="stream_b")),
            (task_of(4096, 4096, 4096, "float16"), dict(block_m=128, block_n=256, stages=4, consumers=2,
                                                        persistent=1, cluster=2)),
            (task_of(256, 512, 1024, "tf32"), dict(block_m=64, block_n=128, stages=3))]
    conv = conv_task_of(32, 14, 1024, 256, 1, 1, 0, "float16")
    conv3 = conv_task_of(32, 7, 512, 512, 3, 1, 1, "bfloat16")
    sources = [task.template.kernel(task.params, tma_config(task, l2_prefetch=16, **values)) for task, values in gemm]
    sources += [conv.template.kernel(conv.params, conv_tma_config(conv, block_m=64, block_n=128, stages=4,
                                                                  l2_prefetch=16)),
                conv3.template.kernel(conv3.params, conv_tma_config(conv3, block_m=64, block_n=128, stages=5,
                                                                    ring=4, cluster=2, l2_prefetch=16))]
    with Builder("sm_90", workers=2, cache_dir=tmp_path, timeout=180) as builder:
        results = builder.build(sources)
    assert [r.message for r in results if not r.ok] == []

