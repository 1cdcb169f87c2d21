"""The implicit-GEMM conv's TMA loader (wgmma, `loader` tma) without a GPU: A gathered by an
im2col tensor map, B's rows by a tiled one. Its rules, its maps (the filter corners' box of
each layer), NVRTC compiles of random valid configs for sm_90, and its kernels' answers on the
CPU (tests/cuda_on_cpu.py walks the im2col copy's pixels as the PTX ISA defines it: W, then H,
then N, by the strides, within the box): stride 1 and 2, 1x1 and 3x3, tails in pixels and output
channels, a pixel tile crossing images, clusters multicasting B's rows, split K, deeper rings and
stream-K's shares of the steps (the emulator runs such a grid's blocks together, as the GPU holds them)."""
from __future__ import annotations

import numpy as np
import pytest

import cuda_on_cpu
import engine
from engine.ops import DeviceLimits
from engine.ops.base import Im2colTensorMap, TensorMap
from engine.ops.conv2d_tc.tiling import conv_tc_tiling
from test_conv2d_tensorcore import (OUTPUT_ROUNDING, PRECISIONS, options_of, random_valid_configs,
                                    sm_90_build_failures, task_of, wgmma_config)

TMA = {"loader": "tma", "producer": 1}
TMA_KNOBS = ("block_m", "block_n", "stages", "consumers", "ring", "split_k", "cluster")
TMA_CPU_CASES = [  # (batch, H=W, C, K, kernel, stride, pad, knob values of TMA_KNOBS)
    (2, 8, 64, 64, 3, 1, 1, (64, 64, 3, 1, 0, 1, 1)),      # ResNet-like 3x3: 9 taps, one a step; a tile crosses images
    (2, 7, 64, 24, 3, 1, 1, (128, 64, 4, 2, 0, 1, 1)),     # 98 pixels in a 128-row tile (zeros past the last image), N tail
    (3, 9, 64, 40, 3, 2, 1, (64, 64, 2, 1, 0, 1, 1)),      # stride 2: the corners walk by 2, 75 pixels over 2 tiles
    (2, 8, 128, 72, 1, 2, 0, (64, 128, 3, 1, 0, 1, 1)),    # 1x1 stride 2, two channel steps a tap, N tail of 128
    (2, 8, 64, 128, 3, 1, 1, (64, 128, 3, 1, 0, 1, 2)),    # a cluster of 2: each block multicasts 64 of B's rows
    (1, 6, 64, 40, 3, 1, 1, (64, 64, 3, 1, 0, 2, 1)),      # split K: 9 steps over 2, the partial past the ring
    (2, 8, 64, 64, 3, 1, 1, (64, 64, 2, 1, 2, 1, 1)),      # a ring of 4 (2 + 2): 9 steps wrap it twice
    (2, 8, 64, 64, 3, 1, 1, (64, 64, 3, 1, 0, 1, 2)),      # a cluster of 2 parting a 64-channel tile: 32 rows each
]


def tma_config(task, **values):
    return wgmma_config(task, **TMA, **values)


@pytest.mark.skipif(not cuda_on_cpu.available(), reason="needs g++ to run kernels on the CPU")
@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("case", TMA_CPU_CASES, ids=[f"{c[1]}x{c[2]}-{c[3]}-k{c[4]}s{c[5]}p{c[6]}-{c[7][0]}x{c[7][1]}"
                                                     f"-c{c[7][3]}r{c[7][4]}s{c[7][5]}cl{c[7][6]}" for c in TMA_CPU_CASES])
def test_the_tma_kernel_computes_the_reference_on_the_cpu(case, precision):
    *layer, values = case
    task = task_of(*layer, precision)
    config = tma_config(task, **dict(zip(TMA_KNOBS, values)))
    assert task.why_invalid(config) is None
    source = task.template.kernel(task.params, config)
    assert "load_stage" not in source.code and "tma_load_im2col(stage" in source.code  # no thread gathers A
    # Split K runs twice (the output poisoned before each): a cluster's sum leaves nothing behind.
    launches = 2 if config["split_k"].val > 1 else 1
    assert cuda_on_cpu.error_against_reference(task, config, launches) < OUTPUT_ROUNDING[precision] + 1e-5


STREAM_K_CASES = [  # (batch, H=W, C, K, kernel, stride, pad, block_m, consumers): the blocks' shares of the steps
    (2, 8, 64, 64, 3, 1, 1, 64, 1),    # 2 tiles of 9 steps over 4 blocks: each tile a first piece and a later one
    (1, 6, 128, 40, 3, 1, 1, 64, 1),   # 1 tile of 18 steps over 4 blocks: two later pieces between; N tail
    (5, 8, 128, 64, 1, 1, 0, 64, 1),   # 5 tiles of 2 steps over 2 blocks: whole tiles, and one tile in two pieces
    (2, 8, 64, 64, 3, 1, 1, 128, 2),   # 1 tile of 9 steps over 2 blocks, two consumers' partials
    (3, 8, 640, 64, 1, 1, 0, 64, 1),   # 3 tiles of 10 steps over 7 blocks: shares that both leave a partial
                                       # and add others' (the usual share on a GPU)
]


@pytest.mark.skipif(not cuda_on_cpu.available(), reason="needs g++ to run kernels on the CPU")
@pytest.mark.parametrize("case", STREAM_K_CASES, ids=[f"{c[1]}x{c[2]}-{c[3]}-k{c[4]}-{c[7]}c{c[8]}" for c in STREAM_K_CASES])
def test_stream_k_shares_add_up_to_the_reference_on_the_cpu(case):
    *layer, block_m, consumers = case
    task = task_of(*layer)
    config = tma_config(task, block_m=block_m, block_n=64, stages=3, consumers=consumers, persistent=1, stream_k=1)
    assert task.why_invalid(config) is None
    tiling = conv_tc_tiling(task.params, config)
    assert tiling.grid[0] == tiling.stream_steps // 4 <= 8
    # Twice, the output poisoned before each: the second launch finds every flag cleared by the first.
    assert cuda_on_cpu.error_against_reference(task, config, launches=2) < OUTPUT_ROUNDING["float16"] + 1e-5


def test_stream_k_rules_say_why():
    task = task_of(32, 7, 512, 512, 3, 1, 1)
    assert task.why_invalid(tma_config(task, block_m=128, block_n=128, consumers=2, persistent=1, stream_k=1)) is None
    assert "it takes a 16-bit precision, loader tma, persistent 1" in task.why_invalid(
        tma_config(task, block_n=128, stream_k=1))
    assert "split_k 1" in task.why_invalid(tma_config(task, block_n=128, persistent=1, split_k=2, stream_k=1))
    tiny = task_of(1, 4, 64, 64, 1, 1, 0)  # 1 tile of 1 step
    assert "are too few to share" in tiny.why_invalid(tma_config(tiny, block_m=64, persistent=1, stream_k=1))
    streamed = dict(block_m=128, block_n=128, consumers=2, persistent=1, stream_k=1)
    source = task.template.kernel(task.params, tma_config(task, **streamed))
    assert source.grid == (132, 1, 1) and source.co_resident  # 52 tiles of 72 steps: 28 or 29 steps a block
    fewer = task_of(32, 7, 512, 512, 3, 1, 1, limits=DeviceLimits(multiprocessors=114))
    assert "more than this GPU's 114 SMs" in fewer.why_invalid(tma_config(fewer, **streamed))
    large = task_of(64, 112, 1024, 1024, 3, 1, 1)  # 64x64 tiles: 28.9 million steps, 131 x that past 2^31
    code = large.template.kernel(large.params, tma_config(large, block_n=64, block_m=64, persistent=1,
                                                          stream_k=1)).code
    assert "(int)((long long)(blockIdx.x) * 28901376 / 132)" in code


@pytest.mark.skipif(not cuda_on_cpu.available(), reason="needs g++ to run kernels on the CPU")
def test_unequal_height_width_strides_and_padding_each_walk_their_own_dimension():
    """9x13 input, stride (1, 2), padding top 1, left 0, bottom 1, right 2: 9x7 outputs."""
    args = [["TENSOR", [2, 9, 13, 64], "float16"], ["TENSOR", [64, 3, 3, 64], "float16"], [1, 2], [1, 0, 1, 2],
            [1, 1], "float16"]
    task = engine.create_task("conv2d_nhwc_tensorcore", args)
    config = tma_config(task, block_m=64, block_n=64, stages=3)
    a_map = task.template.kernel(task.params, config).tensor_maps[0]
    assert (a_map.lower, a_map.upper, a_map.strides) == ((-1, 0), (-1, 0), (1, 2))
    assert cuda_on_cpu.error_against_reference(task, config) < OUTPUT_ROUNDING["float16"] + 1e-5


@pytest.mark.parametrize("layer, lower, upper", [
    ((32, 56, 64, 64, 3, 1, 1), (-1, -1), (-1, -1)),   # the corners run from -1 to 54 of 56: the last output's
    ((32, 56, 64, 128, 3, 2, 1), (-1, -1), (-2, -2)),  # stride 2: 28 corners, -1 to 53
    ((32, 14, 1024, 256, 1, 1, 0), (0, 0), (0, 0)),    # 1x1: every pixel its own corner
    ((32, 56, 256, 512, 1, 2, 0), (0, 0), (-1, -1)),   # 1x1 stride 2: 0 to 54
])
def test_the_maps_describe_the_input_walk_and_the_weights_rows(layer, lower, upper):
    task = task_of(*layer)
    source = task.template.kernel(task.params, tma_config(task, block_m=128, block_n=128, consumers=2))
    a, b = source.tensor_maps
    batch, size, ci, co, kernel = layer[:5]
    assert isinstance(a, Im2colTensorMap) and isinstance(b, TensorMap)
    assert (a.shape, a.lower, a.upper, a.strides) == ((batch, size, size, ci), lower, upper, (layer[5],) * 2)
    assert (a.channels, a.pixels, a.argument) == (64, 128, 0)
    assert (b.rows, b.columns, b.box_rows, b.box_columns, b.argument) == (co, kernel * kernel * ci, 128, 64, 1)
    clustered = task.template.kernel(task.params, tma_config(task, block_m=128, block_n=128, consumers=2, cluster=2))
    assert clustered.tensor_maps[1].box_rows == 64  # each block of the cluster loads half of B's rows


def test_the_tma_loaders_rules_say_why():
    task = task_of(32, 28, 128, 128, 3, 1, 1)
    assert task.why_invalid(tma_config(task)) is None
    narrow = task_of(32, 28, 96, 128, 3, 1, 1)  # a 64-channel step would cross a tap
    assert "C = 96 is not a multiple of 64" in narrow.why_invalid(tma_config(narrow))
    assert narrow.why_invalid(wgmma_config(narrow, producer=1)) is None  # its cp_async loader gathers any C
    assert "it takes producer 1" in task.why_invalid(wgmma_config(task, loader="tma"))
    assert "loader tma, cluster 1 or cluster_shares a, and persistent 0" in task_of(32, 7, 512, 512, 3, 1, 1).why_invalid(
        tma_config(task_of(32, 7, 512, 512, 3, 1, 1), block_n=128, split_k=2, cluster=2))
    assert "are the wgmma mainloop's knobs" in task.why_invalid(
        wgmma_config(task, mainloop="mma_sync", block_k=32, warp_m=32, warp_n=32, loader="tma"))


@pytest.mark.parametrize("args, message", [
    # 1x1 stride 9 (20x20 -> 3x3): TMA walks by at most 8
    ([["TENSOR", [2, 20, 20, 64], "float16"], ["TENSOR", [64, 1, 1, 64], "float16"], [9, 9], [0, 0, 0, 0],
      [1, 1], "float16"], "strides of at most 8"),
    # padding 130: the box's lower corner, -130, lies past 4-D maps' reach of 128
    ([["TENSOR", [1, 8, 8, 64], "float16"], ["TENSOR", [64, 3, 3, 64], "float16"], [1, 1], [130, 130, 130, 130],
      [1, 1], "float16"], "within 128 pixels of the input's edges"),
])
def test_layers_no_im2col_map_walks_say_why(args, message):
    task = engine.create_task("conv2d_nhwc_tensorcore", args)
    assert message in task.why_invalid(tma_config(task, block_m=64, block_n=64))
    assert task.why_invalid(wgmma_config(task, block_m=64, block_n=64, producer=1)) is None  # cp_async gathers them


def test_the_tma_knobs_come_last_so_earlier_configs_keep_their_index():
    task = task_of(32, 28, 128, 128, 3, 1, 1)
    names = task.config_space.knob_names
    at = names.index("loader")
    assert names[at - 1:at + 4] == ["ring", "loader", "cluster", "persistent", "stream_k"]  # after ring, the knob before them
    assert [options_of(task, n)[0] for n in names[at:]] == ["cp_async", 1, 0, 0, 0, 0, "b", 0]  # and the knobs after them
    earlier = wgmma_config(task, producer=1)
    assert earlier.index < np.prod([len(options_of(task, n)) for n in names[:at]])


RANDOM_TMA_KNOBS = ("block_m", "block_n", "stages", "raster", "consumers", "ring", "split_k", "cluster", "persistent",
                    "stream_k", "cluster_shares")


def tma_configs(task, count: int, seed: int) -> list:
    """`count` of the task's valid TMA configs, drawn at random from all of them."""
    return random_valid_configs(task, count, seed, RANDOM_TMA_KNOBS, tma_config)


def test_random_valid_tma_configs_compile_for_sm_90(tmp_path):
    picked = []
    for precision, layer in [("float16", (32, 56, 64, 64, 3, 1, 1)), ("bfloat16", (32, 7, 512, 512, 3, 1, 1)),
                             ("float16", (32, 56, 256, 512, 1, 2, 0))]:
        task = task_of(*layer, precision)
        picked += [(task, config) for config in tma_configs(task, 4, 90)]
    assert len(picked) == 12
    assert sm_90_build_failures(picked, tmp_path) == []
