"""The implicit-GEMM tensor-core convolution (engine.ops.conv2d_tc) without a GPU: its args, its
float64 reference against a direct sum, NVRTC compiles of random valid configs for sm_80 and sm_90
with the engine's build options, and its kernels' answers on the CPU (tests/cuda_on_cpu.py
emulates cp.async, ldmatrix and mma.sync lane by lane, and wgmma from its descriptors): stride 1
and 2, padding, 1x1 and 3x3, tails in pixels (M), output channels (N) and R·S·C (K), on either
mainloop (mma.sync, or Hopper's wgmma with the K-major B)."""
from __future__ import annotations

import re

import numpy as np
import pytest

import cuda_on_cpu
import engine
from engine.gpu.builder import Builder
from engine.gpu.runner import output_values
from engine.ops import BadArgs, DeviceLimits
from engine.ops.gemm_tc.kernel import TOLERANCE, widen
from engine.workloads import CONV_TC, conv2d_tc_args

PRECISIONS = ["float16", "bfloat16"]
NAME = "conv2d_nhwc_tensorcore"
SM80_LIMITS = DeviceLimits(wgmma=False, max_cluster_size=1)
# Half an ulp of the 16-bit output: what its rounding alone adds to an exact sum's relative error.
OUTPUT_ROUNDING = {"float16": 2**-11, "bfloat16": 2**-8}


def task_of(batch, size, ci, co, kernel, stride, pad, precision="float16", limits=None):
    return engine.create_task(NAME, conv2d_tc_args(batch, size, ci, co, kernel, stride, pad, precision), limits)


def test_each_precision_is_its_own_workload_and_the_output_keeps_it():
    tasks = [task_of(2, 8, 16, 16, 3, 1, 1, p) for p in PRECISIONS]
    assert tasks[0].workload_key != tasks[1].workload_key
    outputs = [t.template.make_inputs(t.params, np.random.default_rng(0))[2] for t in tasks]
    assert [o.dtype for o in outputs] == [np.float16, np.uint16]  # bfloat16 as its bit patterns
    assert outputs[0].shape == (2, 8, 8, 16)


@pytest.mark.parametrize("args, message", [
    (conv2d_tc_args(1, 8, 12, 16, 3, 1, 1, "float16"), r"C \(input channels\) = 12 is not a multiple of 8"),
    (conv2d_tc_args(1, 8, 16, 20, 3, 1, 1, "float16"), r"K \(output channels\) = 20 is not a multiple of 8"),
    (conv2d_tc_args(1, 8, 16, 16, 3, 1, 1, "float32"), "'float32' is not supported"),
    ([["TENSOR", [1, 8, 8, 16], "float16"], ["TENSOR", [16, 3, 3, 16], "bfloat16"], [1, 1], [1, 1, 1, 1], [1, 1],
      "float16"], "must be one precision"),
    ([["TENSOR", [1, 8, 8, 16], "float16"], ["TENSOR", [16, 3, 3, 16], "float16"], [1, 1], [1, 1, 1, 1], [1, 1],
      "float32"], "must be one precision"),
    ([["TENSOR", [1, 8, 8, 16], "float16"], ["TENSOR", [16, 3, 3, 24], "float16"], [1, 1], [1, 1, 1, 1], [1, 1],
      "float16"], "kernel has 24 input channels, data has 16"),
    ([["TENSOR", [1, 8, 8, 16], "float16"], ["TENSOR", [16, 3, 3, 16], "float16"], [1, 1], [1, 1, 1, 1], [2, 2],
      "float16"], "dilation"),
    ([["TENSOR", [1, 8, 8, 16], "float16"]], "args are"),
])
def test_unusable_args_say_why(args, message):
    with pytest.raises(BadArgs, match=message):
        engine.create_task(NAME, args)


def test_the_gemm_view_of_a_layer():
    task = task_of(32, 56, 64, 64, 3, 1, 1)
    p = task.params
    assert (p.gemm_m, p.gemm_n, p.gemm_k) == (32 * 56 * 56, 64, 9 * 64)
    assert task.flops == 2 * p.gemm_m * p.gemm_n * p.gemm_k
    assert p.bytes_moved == 2 * (32 * 56 * 56 * 64 * 2 + 64 * 9 * 64)


def test_the_reference_is_the_direct_sum_in_float64():
    task = task_of(2, 5, 8, 8, 3, 2, 1, "bfloat16")
    data, weights, _ = task.template.make_inputs(task.params, np.random.default_rng(0))
    got = task.template.reference(task.params, [data, weights])
    x = np.pad(widen(data, "bfloat16").astype(np.float64), ((0, 0), (1, 1), (1, 1), (0, 0)))
    w = widen(weights, "bfloat16").astype(np.float64)
    expected = np.zeros((2, 3, 3, 8))
    for n, p, q, k in np.ndindex(*expected.shape):
        expected[n, p, q, k] = np.sum(x[n, 2 * p:2 * p + 3, 2 * q:2 * q + 3, :] * w[k])
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_every_preset_has_valid_configs_and_its_precision_in_the_name():
    assert len(CONV_TC) == 12
    for preset in CONV_TC:
        task = engine.create_task(preset.task_name, preset.args)
        assert task.why_invalid(task.default_config()) is None, preset.name
        assert len(task.config_space.sample(np.random.default_rng(0), 20)) == 20, preset.name
        assert task.params.precision in preset.description and task.params.conv.n == 32


def test_kernels_carry_their_precisions_tolerance():
    for precision in PRECISIONS:
        task = task_of(2, 8, 16, 16, 3, 1, 1, precision)
        source = task.template.kernel(task.params, task.default_config())
        assert source.tolerance == TOLERANCE[precision] == task.template.tolerance(task.params)
        assert source.arg_order == ("data", "kernel", "out") and source.output_index == 2


def test_split_k_is_for_layers_of_few_tiles_and_stores_its_own_sum():
    few = task_of(32, 7, 512, 512, 3, 1, 1)  # 1568 pixels x 512 channels: 200 tiles of 64x64
    values = dict(block_m=64, block_n=64, block_k=64, warp_m=32, warp_n=32, stages=4, raster=1)

    def config(task, epilogue, split_k):
        entity = [[n, "ot", v] for n, v in values.items()] + [["epilogue", "ot", epilogue], ["split_k", "ot", split_k]]
        return task.config_space.from_entity(entity)

    assert few.why_invalid(config(few, "registers", 4)) is None
    assert few.template.kernel(few.params, config(few, "registers", 4)).grid == (200, 1, 4)
    assert "epilogue \"shared\" is for split_k 1" in few.why_invalid(config(few, "shared", 4))
    many = task_of(32, 56, 64, 64, 3, 1, 1)  # 1568 tiles
    assert "fill the GPU without it" in many.why_invalid(config(many, "registers", 2))
    a100 = task_of(32, 7, 512, 512, 3, 1, 1, limits=SM80_LIMITS)
    assert "no clusters" in a100.why_invalid(config(a100, "registers", 2))


def test_the_shared_epilogue_has_room_for_the_output_tile():
    task = task_of(2, 8, 16, 256, 1, 1, 0)
    values = dict(block_m=128, block_n=256, block_k=16, warp_m=64, warp_n=64, stages=2, raster=1, split_k=1)
    entity = [[n, "ot", v] for n, v in values.items()]
    shared = task.template.kernel(task.params, task.config_space.from_entity(entity + [["epilogue", "ot", "shared"]]))
    direct = task.template.kernel(task.params, task.config_space.from_entity(entity + [["epilogue", "ot", "registers"]]))
    assert shared.shared_bytes == 128 * (256 + 8) * 2 > direct.shared_bytes


def test_an_unpadded_1x1_stride_1_layer_reads_pixels_as_they_lie():
    plain = task_of(2, 8, 16, 16, 1, 1, 0)
    strided = task_of(2, 8, 16, 16, 1, 2, 0)
    assert "ih" not in plain.template.kernel(plain.params, plain.default_config()).code
    assert "ih" in strided.template.kernel(strided.params, strided.default_config()).code


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_random_valid_configs_per_precision_compile_with_nvrtc(tmp_path, arch):
    """ResNet-50 layers (a 3x3 and a 1x1) through the GPU measurer's Builder, no GPU needed."""
    picked = []
    for precision, layer in [("float16", (32, 28, 128, 128, 3, 1, 1)), ("bfloat16", (32, 14, 1024, 256, 1, 1, 0))]:
        task = task_of(*layer, precision, SM80_LIMITS if arch == "sm_80" else None)
        configs = task.config_space.sample(np.random.default_rng(20 if arch == "sm_80" else 90), 10)
        assert len(configs) == 10
        picked += [(task, config) for config in configs]
    with Builder(arch, workers=2, cache_dir=tmp_path, timeout=120) as builder:
        results = builder.build([task.template.kernel(task.params, config) for task, config in picked])
    assert [(config.values(), r.message[:400]) for (task, config), r in zip(picked, results) if not r.ok] == []


# The benchmark's default tile on the largest 3x3 layer: ptxas keeps it in registers.
def test_the_default_tile_compiles_without_spills():
    from engine.gpu.nvrtc import compile_to_cubin

    task = task_of(32, 56, 64, 64, 3, 1, 1)
    _, log = compile_to_cubin(task.template.kernel(task.params, task.default_config()).code, "sm_90", ("-Xptxas=-v",))
    assert " 0 bytes spill stores, 0 bytes spill loads" in log, log
    assert int(re.search(r"Used (\d+) registers", log).group(1)) <= 255


KNOBS = ("block_m", "block_n", "block_k", "warp_m", "warp_n", "stages", "raster", "epilogue", "split_k")
R, S = "registers", "shared"
CPU_CASES = [  # (batch, H=W, C, K, kernel, stride, pad, knob values)
    (2, 7, 16, 24, 3, 1, 1, (32, 32, 16, 16, 16, 2, 1, R, 1)),   # pixel tail (98), N tail (24)
    (4, 9, 24, 40, 3, 2, 1, (32, 32, 32, 16, 16, 3, 4, S, 1)),   # stride 2, C 24 (K 216: a tail of 32s), N 40, raster 4
    (1, 8, 16, 16, 1, 1, 0, (32, 64, 16, 16, 32, 4, 1, S, 1)),   # 1x1 as a plain GEMM, N tail of a 64-wide tile
    (3, 7, 32, 24, 1, 2, 0, (32, 32, 32, 16, 16, 3, 1, R, 1)),   # 1x1 stride 2
    (1, 6, 8, 16, 3, 1, 0, (64, 32, 64, 32, 32, 2, 1, S, 1)),    # no padding, C 8 (one copy a tap), K 72 in one step
    (2, 5, 16, 32, 3, 2, 2, (32, 32, 32, 16, 32, 5, 1, R, 1)),   # padding 2, stride 2, five stages
    # split K over a cluster (the emulator runs a cluster's blocks together): uneven splits, tails
    (2, 7, 16, 24, 3, 1, 1, (32, 32, 16, 16, 16, 2, 1, R, 4)),   # 9 steps over 4 splits
    (1, 6, 24, 40, 3, 1, 1, (64, 64, 32, 32, 32, 3, 1, R, 2)),   # 7 steps over 2, N tail
    (1, 5, 32, 16, 3, 1, 1, (32, 32, 32, 16, 16, 2, 1, R, 8)),   # 9 steps over 8
]


@pytest.mark.skipif(not cuda_on_cpu.available(), reason="needs g++ to run kernels on the CPU")
@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("case", CPU_CASES, ids=[f"{c[1]}x{c[2]}-{c[3]}-k{c[4]}s{c[5]}p{c[6]}-{c[7][7]}-split{c[7][8]}" for c in CPU_CASES])
def test_the_kernel_computes_the_reference_on_the_cpu(case, precision):
    *layer, values = case
    task = task_of(*layer, precision)
    config = task.config_space.from_entity([[name, "ot", v] for name, v in zip(KNOBS, values)])
    assert task.why_invalid(config) is None
    # The emulator's products are exact and its sums fp32: what is left is the output's rounding.
    # Split K runs twice (the output poisoned before each): a cluster's sum leaves nothing behind.
    launches = 2 if config["split_k"].val > 1 else 1
    assert cuda_on_cpu.error_against_reference(task, config, launches) < OUTPUT_ROUNDING[precision] + 1e-5


@pytest.mark.skipif(not cuda_on_cpu.available(), reason="needs g++ to run kernels on the CPU")
def test_every_output_is_written():
    """The output is NaN-poisoned before the launch (bf16's NaN for its bit patterns): none left."""
    task = task_of(2, 9, 24, 40, 3, 2, 1, "bfloat16")
    inputs = task.template.make_inputs(task.params, np.random.default_rng(0))
    source = task.template.kernel(task.params, task.default_config())
    from engine.gpu.runner import poison

    poison(inputs[2])
    assert np.isnan(output_values(inputs[2])).all()
    cuda_on_cpu.run(source, inputs)
    assert np.isfinite(output_values(inputs[2])).all()


# wgmma: (block_m, block_n, stages, raster, consumers, producer) on the layers of CPU_CASES' kind.
WGMMA_KNOBS = ("block_m", "block_n", "stages", "raster", "consumers", "producer", "ring", "split_k")
WGMMA_CPU_CASES = [  # (batch, H=W, C, K, kernel, stride, pad, wgmma knob values)
    (2, 7, 16, 24, 3, 1, 1, (64, 64, 2, 1, 1, 0, 0, 1)),     # pixel tail (98), N tail (24), K 144 (a tail of 64s)
    (4, 9, 24, 40, 3, 2, 1, (64, 64, 3, 1, 1, 1, 0, 1)),     # stride 2, C 24 (a 64-wide K step crosses taps), a producer
    (1, 8, 16, 72, 1, 1, 0, (64, 128, 4, 1, 1, 0, 0, 1)),    # 1x1 as a plain GEMM, N tail of a 128-wide tile
    (3, 7, 32, 24, 1, 2, 0, (128, 64, 3, 1, 2, 1, 0, 1)),    # 1x1 stride 2, two consumers and a producer
    (2, 8, 64, 64, 3, 1, 1, (128, 64, 4, 1, 2, 0, 0, 1)),    # a ResNet-like 3x3: one tap a K step, two consumers
    (1, 6, 8, 16, 3, 1, 0, (64, 64, 2, 1, 1, 1, 0, 1)),      # no padding, C 8 (eight taps a step)
    (2, 8, 64, 64, 3, 1, 1, (64, 64, 2, 1, 1, 1, 4, 1)),     # a ring of 6 (2 + 4) with a producer: 9 steps wrap it
    # split K over a cluster (the emulator runs a cluster's blocks together), the partial tile in the ring
    (1, 6, 24, 40, 3, 1, 1, (64, 64, 3, 1, 1, 0, 0, 2)),     # 4 steps over 2 splits (a tail of K), N tail
    (2, 7, 16, 24, 3, 1, 1, (128, 64, 3, 1, 2, 1, 0, 2)),    # 3 steps over 2, pixel tail, two consumers and a producer
    (2, 8, 64, 64, 3, 1, 1, (64, 64, 3, 1, 1, 0, 2, 4)),     # 9 steps over 4 (uneven), a ring of 5
    (1, 5, 64, 64, 3, 1, 1, (64, 128, 3, 1, 1, 1, 0, 8)),    # 9 steps over 8, a producer
]


def wgmma_config(task, **values):
    """A wgmma config of `task` (the mainloop's pinned knobs at their values), `values` over the defaults."""
    values = {"block_m": 128, "block_n": 64, "block_k": 64, "warp_m": 16, "warp_n": 16, "stages": 4, "raster": 1,
              "epilogue": "registers", "split_k": 1, "mainloop": "wgmma", "consumers": 1, "producer": 0, **values}
    return task.config_space.from_entity([[name, "ot", v] for name, v in values.items()])


def options_of(task, name: str) -> list:
    space = task.config_space
    return space.knobs[space.knob_names.index(name)].options


def random_valid_configs(task, count: int, seed: int, knobs=WGMMA_KNOBS, build=wgmma_config,
                         only: dict | None = None) -> list:
    """`count` of the task's valid configs `build` makes from every combination of `knobs`' options
    (the wgmma ones by default; `only`: some of those knobs' options narrowed), drawn at random from all of them."""
    only = only or {}
    assert set(only) <= set(knobs) and all(only.values()), f"only narrows knobs of {knobs} to some options: {only}"
    options = [only.get(name) or options_of(task, name) for name in knobs]
    valid = [config for digits in np.ndindex(*map(len, options))
             if task.why_invalid(config := build(task, **{
                 name: choices[i] for name, choices, i in zip(knobs, options, digits)})) is None]
    picks = np.random.default_rng(seed).choice(len(valid), size=min(count, len(valid)), replace=False)
    return [valid[int(i)] for i in picks]


@pytest.mark.skipif(not cuda_on_cpu.available(), reason="needs g++ to run kernels on the CPU")
@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("case", WGMMA_CPU_CASES,
                         ids=[f"{c[1]}x{c[2]}-{c[3]}-k{c[4]}s{c[5]}p{c[6]}-{c[7][0]}x{c[7][1]}-c{c[7][4]}p{c[7][5]}"
                              f"r{c[7][6]}s{c[7][7]}"
                              for c in WGMMA_CPU_CASES])
def test_the_wgmma_kernel_computes_the_reference_on_the_cpu(case, precision):
    *layer, values = case
    task = task_of(*layer, precision)
    config = wgmma_config(task, **dict(zip(WGMMA_KNOBS, values)))
    assert task.why_invalid(config) is None
    assert "_b_kmajor" in task.template.kernel(task.params, config).code  # B's rows are the weights' (K-major)
    assert cuda_on_cpu.error_against_reference(task, config) < OUTPUT_ROUNDING[precision] + 1e-5


def test_wgmma_is_hopper_only_and_its_rules_say_why():
    task = task_of(32, 28, 128, 128, 3, 1, 1)
    assert task.why_invalid(wgmma_config(task)) is None
    a100 = task_of(32, 28, 128, 128, 3, 1, 1, limits=SM80_LIMITS)
    assert "needs an sm_90 GPU" in a100.why_invalid(wgmma_config(a100))
    assert "it takes epilogue \"registers\"" in task.why_invalid(wgmma_config(task, epilogue="shared"))
    few = task_of(32, 7, 512, 512, 3, 1, 1)  # 52 tiles of 128x128: split K over a cluster, the partial in the ring
    assert few.why_invalid(wgmma_config(few, block_n=128, split_k=2)) is None
    assert "is summed from the ring of stages (96 KB)" in few.why_invalid(
        wgmma_config(few, block_m=128, block_n=256, stages=2, split_k=2))
    assert few.why_invalid(wgmma_config(few, block_m=128, block_n=256, stages=3, consumers=2, split_k=2)) is None
    assert "fill the GPU without it" in task.why_invalid(wgmma_config(task, split_k=2))  # 28x28: 392 tiles
    mma_sync = dict(mainloop="mma_sync", block_k=32, warp_m=32, warp_n=32)
    assert task.why_invalid(wgmma_config(task, **mma_sync)) is None
    assert "are the wgmma mainloop's knobs" in task.why_invalid(wgmma_config(task, **mma_sync, ring=2))
    assert "multiple of 64" in task.why_invalid(wgmma_config(task, block_m=32))


def test_mma_sync_configs_keep_the_index_they_had_before_wgmma():
    """The new knobs are last and their first values the old kernel's: an old log's entity (nine knobs)
    is the mma.sync config of the same index, the old space's mixed radix over the nine."""
    task = task_of(32, 28, 128, 128, 3, 1, 1)
    old = [["block_m", "ot", 64], ["block_n", "ot", 128], ["block_k", "ot", 32], ["warp_m", "ot", 32],
           ["warp_n", "ot", 64], ["stages", "ot", 4], ["raster", "ot", 8], ["epilogue", "ot", "shared"],
           ["split_k", "ot", 1]]
    config = task.config_space.from_entity(old)
    index, radix = 0, 1
    for name, _, value in old:
        options = options_of(task, name)
        index += options.index(value) * radix
        radix *= len(options)
    assert config.index == index and config.values()["mainloop"] == "mma_sync"


def sm_90_build_failures(picked: list, build_dir) -> list:
    """The (config values, message) of each (task, config) of `picked` NVRTC does not build for sm_90."""
    with Builder("sm_90", workers=2, cache_dir=build_dir, timeout=120) as builder:
        results = builder.build([task.template.kernel(task.params, config) for task, config in picked])
    return [(config.values(), r.message[:400]) for (task, config), r in zip(picked, results) if not r.ok]


def test_random_valid_wgmma_configs_compile_for_sm_90(tmp_path):
    picked = []
    for precision, layer in [("float16", (32, 28, 128, 128, 3, 1, 1)), ("bfloat16", (32, 7, 512, 512, 3, 1, 1)),
                             ("float16", (32, 14, 1024, 256, 1, 1, 0))]:
        task = task_of(*layer, precision)
        picked += [(task, config) for config in random_valid_configs(task, 4, 90)]
    assert len(picked) == 12
    assert sm_90_build_failures(picked, tmp_path) == []


@pytest.mark.parametrize("values", [dict(block_m=128, block_n=128, consumers=2, producer=1),
                                    dict(block_m=128, block_n=256, stages=3, consumers=2, producer=1),
                                    dict(block_m=128, block_n=64, consumers=2),
                                    dict(block_m=64, block_n=256, consumers=1, producer=1)],
                         ids=["128x128-ws", "128x256-ws", "128x64", "64x256-ws"])
def test_the_benchmarks_wgmma_tiles_compile_without_spills(values):
    from engine.gpu.nvrtc import compile_to_cubin

    task = task_of(32, 56, 64, 64, 3, 1, 1)
    source = task.template.kernel(task.params, wgmma_config(task, **values))
    _, log = compile_to_cubin(source.code, "sm_90", ("-Xptxas=-v",))
    assert "for 'sm_90a'" in log and " 0 bytes spill stores, 0 bytes spill loads" in log, log
    assert "serialized" not in log, log
