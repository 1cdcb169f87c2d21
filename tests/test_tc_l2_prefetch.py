"""The `l2_prefetch` knob of the tensor-core GEMM and the implicit-GEMM conv (their TMA producer asks L2 for a
tile's later K steps when the tile starts), without a GPU: the old configs' indexes and sources, the rule, and
the kernels on the CPU, where tests/cuda_on_cpu.py fails a launch in which a block asked L2 for a box it never
copied (so a prefetch at wrong coordinates shows, though it would change no answer on the GPU), and NVRTC's
sm_90a compile of the prefetch instructions."""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

import cuda_on_cpu
from gemm_tc_configs import assert_appended_knobs_keep_indexes, task_of, tma_config
from engine.gpu.builder import Builder
from engine.ops.gemm_tc.kernel import TOLERANCE
from engine.ops.gemm_tc.tiling import L2_PREFETCH
from test_conv2d_tc_tma import tma_config as conv_tma_config
from test_conv2d_tensorcore import OUTPUT_ROUNDING
from test_conv2d_tensorcore import task_of as conv_task_of

PREFETCH_2D = "cp.async.bulk.prefetch.tensor.2d.L2.global.tile"
PREFETCH_IM2COL = "cp.async.bulk.prefetch.tensor.4d.L2.global.im2col"


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
    config = tma_config(task, block_m=64, block_n=64, stages=4, loader="cp_async", l2_prefetch=1)
    assert "l2_prefetch asks the tensor memory accelerator" in task.why_invalid(config)
    mma_sync = tma_config(task, mainloop="mma_sync", loader="cp_async", producer=0, block_k=32, warp_m=32,
                          warp_n=32, block_m=64, block_n=64, stages=3, l2_prefetch=1)
    assert "l2_prefetch are the wgmma mainloop's knobs" in task.why_invalid(mma_sync)


def test_the_producer_asks_for_the_steps_past_the_first_fill_at_each_tile_start():
    task = task_of(256, 512, 4096)
    config = tma_config(task, block_m=128, block_n=128, stages=4, ring=4, consumers=2, persistent=1, l2_prefetch=1)
    code = task.template.kernel(task.params, config).code
    assert code.count(PREFETCH_2D) == 1  # the helper, once
    assert "for (int kt = 8; kt < 64; ++kt) {" in code  # 8 stages, 64 K steps of 64
    assert "tma_prefetch_2d(&a_tensor_map, kt * 64, row0);" in code
    assert "tma_prefetch_2d(&b_tensor_map, col0 + p * 64, kt * 64);" in code
    # ahead of the tile's copies, after its origin
    assert code.index("const int row0 = tile_m") < code.index("tma_prefetch_2d(&a") < code.index("tma_load_2d(stage")


GEMM_CASES = [  # (M, N, K, precision, C, values): each schedule the producer runs
    (130, 200, 1304, "bfloat16", "float32", dict(block_m=64, block_n=64, stages=3)),
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
@pytest.mark.parametrize("m, n, k, precision, c_dtype, values", GEMM_CASES,
                         ids=[f"{c[0]}x{c[1]}x{c[2]}-{c[3]}-{'-'.join(f'{k}{v}' for k, v in c[5].items())}"
                              for c in GEMM_CASES])
def test_a_prefetching_gemm_computes_the_product_and_copies_every_box_it_asked_for(m, n, k, precision, c_dtype,
                                                                                    values):
    task = task_of(m, n, k, precision, c_dtype)
    config = tma_config(task, l2_prefetch=1, **values)
    assert task.why_invalid(config) is None
    assert PREFETCH_2D in task.template.kernel(task.params, config).code
    error = cuda_on_cpu.error_against_reference(task, config, launches=2)
    assert error < (2**-8 if c_dtype == "bfloat16" else 2**-11 if c_dtype == "float16" else TOLERANCE[precision])


CONV_CASES = [  # (batch, H=W, C, K, kernel, stride, pad, values)
    (2, 8, 128, 64, 1, 1, 0, dict(block_m=64, block_n=64, stages=2)),          # 1x1: two channel steps
    (2, 8, 64, 128, 3, 1, 1, dict(block_m=64, block_n=128, stages=3, cluster=2)),  # 9 taps, B's rows multicast
    (1, 6, 64, 40, 3, 1, 1, dict(block_m=64, block_n=64, stages=2, split_k=2)),
    (2, 8, 64, 64, 3, 1, 1, dict(block_m=64, block_n=64, stages=2, persistent=1)),
]


@pytest.mark.skipif(not cuda_on_cpu.available(), reason="needs g++ to run kernels on the CPU")
@pytest.mark.parametrize("case", CONV_CASES, ids=[f"{c[1]}x{c[2]}-{c[3]}-k{c[4]}-{'-'.join(f'{k}{v}' for k, v in c[7].items())}"
                                                  for c in CONV_CASES])
def test_a_prefetching_conv_computes_the_reference_and_copies_every_box_it_asked_for(case):
    *layer, values = case
    task = conv_task_of(*layer, "float16")
    config = conv_tma_config(task, l2_prefetch=1, **values)
    assert task.why_invalid(config) is None
    code = task.template.kernel(task.params, config).code
    assert PREFETCH_IM2COL in code and PREFETCH_2D in code
    launches = 2 if values.get("split_k", 1) > 1 else 1
    assert cuda_on_cpu.error_against_reference(task, config, launches) < OUTPUT_ROUNDING["float16"] + 1e-5


@pytest.mark.skipif(not cuda_on_cpu.available(), reason="needs g++ to run kernels on the CPU")
def test_the_emulator_fails_a_launch_that_prefetches_a_box_it_never_copies():
    """The same kernel with A's prefetch one K step ahead of where it should be: every answer right, the
    last step's prefetch a box past K that no copy takes."""
    task = task_of(130, 200, 1304, "bfloat16")
    config = tma_config(task, block_m=64, block_n=64, stages=3, l2_prefetch=1)
    source = task.template.kernel(task.params, config)
    wrong = source.code.replace("tma_prefetch_2d(&a_tensor_map, kt * 64, row0);",
                                "tma_prefetch_2d(&a_tensor_map, (kt + 1) * 64, row0);")
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
    sources = [task.template.kernel(task.params, tma_config(task, l2_prefetch=1, **values)) for task, values in gemm]
    sources += [conv.template.kernel(conv.params, conv_tma_config(conv, block_m=64, block_n=128, stages=4,
                                                                  l2_prefetch=1)),
                conv3.template.kernel(conv3.params, conv_tma_config(conv3, block_m=64, block_n=128, stages=5,
                                                                    ring=4, cluster=2, l2_prefetch=1))]
    with Builder("sm_90", workers=2, cache_dir=tmp_path, timeout=180) as builder:
        results = builder.build(sources)
    assert [r.message for r in results if not r.ok] == []


def test_the_conv_benchmark_lists_prefetching_tiles_and_checks_and_tunes_only_the_layers_named(monkeypatch):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    import tensor_core_conv

    monkeypatch.setattr(tensor_core_conv, "LAYERS", ["TCC-14-1024-256-k1-f16", "TCC-7-512-512-k3-bf16"])
    tasks = tensor_core_conv.layer_tasks(["float16", "bfloat16"])
    assert [name for name, _ in tasks] == ["14² 1024→256 K1 s1 p0 batch 32 NHWC float16",
                                           "7² 512→512 K3 s1 p1 batch 32 NHWC bfloat16"]
    for _, task in tasks:
        assert sum(c["l2_prefetch"].val for c in tensor_core_conv.tune_configs(task)) >= 4
    monkeypatch.setattr(tensor_core_conv, "LAYERS", ["TCC-7-512-512-k3"])
    with pytest.raises(SystemExit, match="no preset TCC-7-512-512-k3; the layers are TCC-56-64-64-k3-f16"):
        tensor_core_conv.layer_tasks(["float16"])
