"""The implicit-GEMM conv's transposed product (`swap_ab` 1: out^T = W A^T, so a tile's pixels are the
wgmma instruction's N) and its 96, 160 and 192-pixel tiles (`block_m_extra`), without a GPU: the rules,
the old configs' indexes, the instruction's operands in the text, the answers on the CPU (tests/cuda_on_cpu.py
reads both K-major operands from the descriptors), and NVRTC's sm_90a compile."""
from __future__ import annotations

import pytest

import cuda_on_cpu
from gemm_tc_configs import assert_appended_knobs_keep_indexes
from engine.ops.conv2d_tc.tiling import BLOCK_M_EXTRAS, conv_tc_tiling
from test_conv2d_tc_tma import tma_config
from test_conv2d_tensorcore import (KNOBS, OUTPUT_ROUNDING, PRECISIONS, random_valid_configs, sm_90_build_failures,
                                    task_of, wgmma_config)

RESNET_14_1X1 = (32, 14, 1024, 256, 1, 1, 0)  # 6272 pixels: 66 tiles of 96


def test_the_new_knobs_come_last_so_earlier_configs_keep_their_index():
    task = task_of(*RESNET_14_1X1)
    names = task.config_space.knob_names
    assert names[names.index("stream_k") + 1:][:2] == ["swap_ab", "block_m_extra"]
    assert task.config_space.knobs[names.index("block_m_extra")].options == list(BLOCK_M_EXTRAS) == [0, 32, 64]
    assert_appended_knobs_keep_indexes(task, "swap_ab", seed=12)


def test_a_96_pixel_tile_covers_the_14x14_layer_in_one_tile_per_sm():
    """cuDNN's tile there (its profile at d0a386d): 132 blocks of 96 pixels by 128 channels."""
    task = task_of(*RESNET_14_1X1)
    config = tma_config(task, block_m=64, block_m_extra=32, block_n=128, consumers=2, stages=5, ring=2, swap_ab=1)
    assert task.why_invalid(config) is None
    tiling = conv_tc_tiling(task.params, config)
    assert (tiling.block_m, tiling.tiles_m, tiling.tiles_n, tiling.grid) == (96, 66, 2, (132, 1, 1))
    assert tiling.accumulator_tiles == (1, 48)  # each consumer one m64 instruction of its 64 channels, N = 96
    code = task.template.kernel(task.params, config).code
    # both operands K-major (neither transpose bit): W's rows the instruction's A, the pixels its B
    assert "wgmma.mma_async.sync.aligned.m64n96k16.f32.f16.f16" in code and "p, 1, 1, 0, 0;" in code
    assert "b_rows_base = stage + 12288 + consumer * 8192" in code  # past 96 rows of A; 64 rows of W a consumer


@pytest.mark.parametrize("block_m, extra, message", [
    (32, 32, "not from block_m 32"),     # 64: block_m's own
    (64, 64, "not from block_m 64"),     # 128: block_m's own
    (256, 32, "not from block_m 256"),   # 288: past wgmma's N
])
def test_each_tile_height_has_one_config(block_m, extra, message):
    task = task_of(*RESNET_14_1X1)
    assert message in task.why_invalid(tma_config(task, block_m=block_m, block_m_extra=extra, swap_ab=1))


def test_a_96_pixel_tile_unswapped_says_why():
    """Without swap_ab the pixels are the instruction's M, 64 rows a consumer: 192 for one consumer, not 96."""
    task = task_of(*RESNET_14_1X1)
    assert "block_m 96 is not a multiple of 64" in task.why_invalid(tma_config(task, block_m=64, block_m_extra=32))
    assert task.why_invalid(tma_config(task, block_m=128, block_m_extra=64, stages=3)) is None
    assert "swap_ab takes loader tma" in task.why_invalid(wgmma_config(task, producer=1, swap_ab=1))


SWAP_KNOBS = ("block_m", "block_m_extra", "block_n", "stages", "consumers", "ring", "split_k", "cluster", "persistent")
SWAP_CPU_CASES = [  # (batch, H=W, C, K, kernel, stride, pad, knob values of SWAP_KNOBS)
    (2, 7, 64, 128, 1, 1, 0, (64, 32, 128, 3, 2, 0, 1, 1, 0)),     # 98 pixels in a 96-pixel tile and a 2-pixel one
    (2, 8, 64, 64, 3, 1, 1, (64, 32, 64, 3, 1, 2, 1, 1, 0)),       # 3x3, a tile crossing images, a ring of 5
    (3, 9, 64, 40, 3, 2, 1, (128, 32, 64, 3, 1, 0, 1, 1, 0)),      # stride 2, 75 pixels of a 160 tile, N tail
    (2, 10, 64, 128, 3, 1, 1, (128, 64, 128, 3, 2, 0, 1, 1, 1)),   # 192 pixels, two consumers, persistent
    (2, 8, 64, 128, 3, 1, 1, (64, 0, 128, 3, 1, 0, 1, 2, 0)),      # a cluster of 2 multicasting W's rows
    (1, 6, 64, 64, 3, 1, 1, (64, 32, 64, 3, 1, 0, 2, 1, 0)),       # split K: 9 steps over 2, the partial transposed
]


@pytest.mark.skipif(not cuda_on_cpu.available(), reason="needs g++ to run kernels on the CPU")
@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("case", SWAP_CPU_CASES,
                         ids=[f"{c[1]}x{c[2]}-{c[3]}-k{c[4]}s{c[5]}-{c[7][0] + c[7][1]}x{c[7][2]}-c{c[7][4]}"
                              f"r{c[7][5]}s{c[7][6]}cl{c[7][7]}p{c[7][8]}" for c in SWAP_CPU_CASES])
def test_the_transposed_kernel_computes_the_reference_on_the_cpu(case, precision):
    *layer, values = case
    task = task_of(*layer, precision)
    config = tma_config(task, swap_ab=1, **dict(zip(SWAP_KNOBS, values)))
    assert task.why_invalid(config) is None
    launches = 2 if config["split_k"].val > 1 else 1  # the output poisoned before each: the sum leaves nothing behind
    assert cuda_on_cpu.error_against_reference(task, config, launches) < OUTPUT_ROUNDING[precision] + 1e-5


@pytest.mark.skipif(not cuda_on_cpu.available(), reason="needs g++ to run kernels on the CPU")
def test_the_mma_sync_kernel_takes_the_new_heights_too():
    """96 pixels over three 32-row warps (sm_80's mainloop has no instruction N to fit)."""
    task = task_of(2, 7, 16, 24, 3, 1, 1)
    values = (64, 32, 32, 32, 16, 3, 1, "shared", 1)
    config = task.config_space.from_entity([[n, "ot", v] for n, v in zip(KNOBS, values)] + [["block_m_extra", "ot", 32]])
    assert task.why_invalid(config) is None and conv_tc_tiling(task.params, config).block_m == 96
    assert cuda_on_cpu.error_against_reference(task, config) < OUTPUT_ROUNDING["float16"] + 1e-5


RANDOM_SWAP_KNOBS = ("block_m", "block_m_extra", "block_n", "stages", "raster", "consumers", "ring", "split_k",
                     "cluster", "persistent", "cluster_shares")


def swapped_configs(task, count: int, seed: int) -> list:
    """`count` of the task's valid transposed configs, drawn at random from all of them."""
    return random_valid_configs(task, count, seed, RANDOM_SWAP_KNOBS,
                                lambda task, **values: tma_config(task, swap_ab=1, **values))


def test_random_valid_transposed_configs_compile_for_sm_90(tmp_path):
    picked = []
    for precision, layer in [("float16", RESNET_14_1X1), ("bfloat16", (32, 7, 512, 512, 3, 1, 1)),
                             ("float16", (32, 28, 128, 128, 3, 1, 1))]:
        task = task_of(*layer, precision)
        picked += [(task, config) for config in swapped_configs(task, 4, 92)]
    assert len(picked) == 12 and any(conv_tc_tiling(t.params, c).block_m % 64 for t, c in picked)
    assert any(c["cluster_shares"].val == "a" for _, c in picked)
    assert sm_90_build_failures(picked, tmp_path) == []


@pytest.mark.parametrize("values", [dict(block_m=64, block_m_extra=32, block_n=128, consumers=2, stages=5, ring=2),
                                    dict(block_m=64, block_m_extra=32, block_n=128, consumers=1, stages=5, ring=2),
                                    dict(block_m=128, block_m_extra=64, block_n=128, consumers=2, stages=4)],
                         ids=["96x128-2c", "96x128-1c", "192x128-2c"])
def test_the_benchmarks_transposed_tiles_compile_without_spills(values):
    from engine.gpu.nvrtc import compile_to_cubin

    task = task_of(*RESNET_14_1X1)
    source = task.template.kernel(task.params, tma_config(task, swap_ab=1, **values))
    _, log = compile_to_cubin(source.code, "sm_90", ("-Xptxas=-v",))
    assert "for 'sm_90a'" in log and " 0 bytes spill stores, 0 bytes spill loads" in log, log
    assert "serialized" not in log, log
