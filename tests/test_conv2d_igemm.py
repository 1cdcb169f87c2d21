"""The implicit-GEMM NCHW conv: the direct conv's workloads over the GEMM's space, B gathered from
the input and C scattered to the output, checked by running its kernels here (tests/cuda_on_cpu)."""
import numpy as np
import pytest

import cuda_on_cpu
from knob_configs import batched, config_over
import engine
from engine.gpu.builder import Builder
from engine.ops.conv2d_igemm.tiling import conv_gemm_tiling
from engine.workloads import PRESETS, conv2d_args

BASE = {"block_m": 32, "block_n": 32, "block_k": 8, "warp_m": 16, "warp_n": 16, "thread_m": 2, "thread_n": 4,
        "warp_lanes_n": 4, "vector_a": 1, "vector_b": 1, "pipeline": "prefetch", "smem_pad": 4, "split_k": 1,
        "unroll_k": 32, "slice_k": 1, "split_reduce": "workspace", "loader": "threads", "step_channels": 0}
NAME = "conv2d_nchw_implicit_gemm"


def config(task, **knobs):
    return config_over(task, BASE, **knobs)


def test_it_reads_the_direct_convs_args_as_a_gemm_of_channels_by_pixels_by_taps():
    task = engine.create_task(NAME, PRESETS["C4"].args)  # 56² 64→128 3×3 stride 2
    assert (task.params.m, task.params.n, task.params.k) == (128, 28 * 28, 64 * 9)
    assert task.flops == engine.create_task("conv2d_nchw.cuda", PRESETS["C4"].args).flops
    assert task.template.baseline_provider == "cudnn"
    knobs = {knob.name: knob for knob in task.config_space.knobs}
    assert knobs["loader"].options == ["threads"] and knobs["split_k"].options == [1, 2, 4, 8]


def test_the_tma_loaders_are_not_offered_and_gathered_b_is_read_a_float_at_a_time():
    task = engine.create_task(NAME, PRESETS["C2"].args)  # 3×3 with padding
    assert "vector_b 4: B is gathered one float at a time" in task.why_invalid(config(task, vector_b=4))
    pointwise = engine.create_task(NAME, PRESETS["C3"].args)  # 1×1 stride 1: the input's planes are B's rows
    assert pointwise.why_invalid(config(pointwise, vector_b=4)) is None
    strided = engine.create_task(NAME, PRESETS["C5"].args)  # 1×1 stride 2: gathered
    assert strided.why_invalid(config(strided, vector_b=2)) is not None


@pytest.mark.parametrize("preset", ["C1", "C4", "C9", "C12"])
def test_every_resnet_layer_has_a_valid_default_and_valid_samples(preset):
    task = engine.create_task(NAME, PRESETS[preset].args)
    assert task.why_invalid(task.default_config()) is None
    assert len(task.config_space.sample(np.random.default_rng(1), 20)) == 20


def test_batch_one_writes_c_as_the_gemm_does_and_larger_batches_scatter_it():
    one = conv_gemm_tiling(engine.create_task(NAME, conv2d_args(7, 8, 8, 3, 1, 1)).params,
                           config(engine.create_task(NAME, conv2d_args(7, 8, 8, 3, 1, 1))))
    assert one.c_address("row", "col") is None and one.c_row_length == 49
    two_task = engine.create_task(NAME, batched(conv2d_args(7, 8, 8, 3, 1, 1), 2))
    two = conv_gemm_tiling(two_task.params, config(two_task))
    assert two.c_address("row", "col") == "C + ((size_t)(col) / 49 * 8 + row) * 49 + (col) % 49"


@pytest.mark.skipif(not cuda_on_cpu.available(), reason="needs g++ to run kernels on the CPU")
@pytest.mark.parametrize("args, knobs", [
    # 3×3 pad 1: the padding's zeros, tails on every side (CO 20, 81 pixels, K 54)
    (conv2d_args(9, 6, 20, 3, 1, 1), {}),
    (conv2d_args(9, 6, 20, 3, 1, 1), {"pipeline": "cp_async_3", "block_k": 16}),
    # stride 2 with padding, two images (the pixels cross an image's edge inside a tile), split K
    (batched(conv2d_args(10, 16, 12, 3, 2, 1), 2), {"split_k": 2, "pipeline": "sync", "vector_a": 4}),
    # 7×7 stride 2 pad 3 (C1's form): K = 3·49 = 147, no step divides it
    (conv2d_args(12, 3, 16, 7, 2, 3), {"block_k": 16, "pipeline": "cp_async_2"}),
    # 1×1 stride 1: B by vectors of one image's plane, three images, slices of K
    (batched(conv2d_args(8, 16, 24, 1, 1, 0), 3), {"vector_b": 4, "slice_k": 2, "block_k": 16}),
    # 1×1 stride 2 and 3×3 without padding: gathered without the padding test
    (conv2d_args(9, 128, 16, 1, 2, 0), {"split_k": 2}),
    (batched(conv2d_args(9, 4, 16, 3, 1, 0), 2), {"thread_n": 1, "warp_lanes_n": 16}),
    # split K's fix-up sums into scattered C one float at a time (49 pixels an image)
    (batched(conv2d_args(7, 16, 32, 3, 1, 1), 2), {"split_k": 2, "block_k": 16, "pipeline": "cp_async_4"}),
    # K steps of whole channels (step_channels): the loads' offsets and padding tests kept from step to step
    # 3×3 pad 1, K 54: steps of 2 channels (18) divide it, steps of 4 (36) leave a tail; tails on every side
    (conv2d_args(9, 6, 20, 3, 1, 1), {"step_channels": 2, "pipeline": "cp_async_3"}),
    (conv2d_args(9, 6, 20, 3, 1, 1), {"step_channels": 4, "pipeline": "prefetch", "vector_a": 2}),
    # stride 2, two images whose pixels meet inside a tile, split K through the workspace
    (batched(conv2d_args(10, 16, 12, 3, 2, 1), 2), {"step_channels": 1, "split_k": 2, "pipeline": "sync"}),
    # 7×7 stride 2 pad 3: a step is one channel's 49 taps; more rounds than threads cover at once
    (conv2d_args(12, 3, 16, 7, 2, 3), {"step_channels": 1, "pipeline": "cp_async_2", "block_n": 64, "warp_n": 32}),
    # no padding (no test of the taps), slices of K within a step of 18
    (batched(conv2d_args(9, 4, 16, 3, 1, 0), 2), {"step_channels": 2, "slice_k": 2, "thread_n": 1,
                                                  "warp_lanes_n": 16}),
    # split K's fix-up sums into scattered C; a split is whole steps of 36
    (batched(conv2d_args(7, 16, 32, 3, 1, 1), 2), {"step_channels": 4, "split_k": 2, "pipeline": "cp_async_4"}),
])
def test_configs_compute_the_convolution(args, knobs):
    task = engine.create_task(NAME, args)
    cfg = config(task, **knobs)
    assert task.why_invalid(cfg) is None, task.why_invalid(cfg)
    assert cuda_on_cpu.error_against_reference(task, cfg, launches=2 if cfg["split_k"].val > 1 else 1) < 1e-6


def test_whole_channel_steps_are_offered_where_a_channel_has_several_taps():
    options = {preset: engine.create_task(NAME, PRESETS[preset].args).config_space.knobs[-1].options
               for preset in ("IG-C2", "IG-C1", "IG-C3", "IG-C5")}  # 3×3, 7×7 (49 taps a channel), 1×1, 1×1 stride 2
    assert options == {"IG-C2": [0, 1, 2, 4], "IG-C1": [0, 1], "IG-C3": [0], "IG-C5": [0]}


def test_logs_from_before_whole_channel_steps_keep_their_indexes_and_their_kernels():
    from engine.ops.gemm.template import Gemm
    from engine.space import ConfigSpace

    task = engine.create_task(NAME, PRESETS["IG-C4"].args)
    before = ConfigSpace(Gemm.knobs(task.template, task.params))  # the space without the knob
    old = [[name, "ot", value] for name, value in BASE.items() if name != "step_channels"]
    assert task.config_space.index_of(old) == before.index_of(old)
    assert task.config_space.from_entity(old)["step_channels"].val == 0


def test_a_whole_channel_step_replaces_block_k_and_computes_no_division_in_the_k_loop():
    task = engine.create_task(NAME, PRESETS["IG-C4"].args)  # 56² 64→128 3×3 stride 2 pad 1: K 576
    stepped = config(task, step_channels=2, pipeline="cp_async_3")
    assert task.why_invalid(stepped) is None
    assert conv_gemm_tiling(task.params, stepped).block_k == 18
    assert "block_k stays at 8, not 16" in task.why_invalid(config(task, step_channels=2, block_k=16))
    assert "vector_a 4 does not divide the K step of 18" in task.why_invalid(config(task, step_channels=2, vector_a=4))
    code = task.template.kernel(task.params, stepped).code
    before_loop, loop = code.split("float acc[", 1)
    assert "gk / 9" in before_loop and "/ 9," not in loop and "% 9" not in loop
    assert "B + (b_offset[r] + k0 / 9 * 3136)" in loop and "b_inside[r]" in loop


@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_configs_compile_for_both_architectures_the_cluster_sum_into_scattered_c_too(tmp_path, arch):
    # (the CPU emulation runs no fp32 cluster kernels: the GPU tests run them)
    task = engine.create_task(NAME, batched(conv2d_args(7, 16, 32, 3, 1, 1), 2))
    pointwise = engine.create_task(NAME, batched(conv2d_args(8, 128, 32, 1, 1, 0), 2))
    kernels = [(task, config(task, split_k=2, split_reduce="cluster", block_k=16)),
               (pointwise, config(pointwise, split_k=2, split_reduce="cluster", vector_b=4)),
               (task, config(task, pipeline="cp_async_3", slice_k=2, block_k=16)),
               (task, config(task, step_channels=4, split_k=2, split_reduce="cluster", pipeline="cp_async_3")),
               (task, config(task, step_channels=1, pipeline="prefetch"))]
    assert [t.why_invalid(c) for t, c in kernels] == [None] * 5
    sources = [t.template.kernel(t.params, c) for t, c in kernels]
    assert "C + ((size_t)(col + 3) / 49 * 32 + row) * 49 + (col + 3) % 49" in sources[0].code
    with Builder(arch, workers=2, cache_dir=tmp_path, timeout=120) as builder:
        results = builder.build(sources)
    assert [r.message[:300] for r in results if not r.ok] == []
