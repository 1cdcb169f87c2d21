"""On a GPU: the implicit-GEMM tensor-core convolution (conv2d_nhwc_tensorcore: fp16, bf16, NHWC)
against its float64 reference at each precision's tolerance through the GPU measurer (stride 1
and 2, padding, 1x1 and 3x3, tails in pixels, channels and R·S·C; random configs, and random
wgmma configs, TMA-loader configs and transposed ones on their own), and cuDNN on channels-last
tensors in the same precision as its baseline, checked at that tolerance.

Marked `gpu`; skipped where CuPy or a CUDA GPU is missing (CI has neither).
"""
from __future__ import annotations

import numpy as np
import pytest

import engine
from engine.ops import DeviceLimits
from engine.workloads import PRESETS, conv2d_tc_args

from gpu_only import GPU_ONLY

pytestmark = GPU_ONLY

PRECISIONS = ["float16", "bfloat16"]
# (batch, H=W, C, K, kernel, stride, pad): tails everywhere, then a ResNet-50 layer at batch 8.
LAYERS = [(3, 9, 24, 40, 3, 1, 1), (4, 11, 40, 24, 3, 2, 1), (2, 10, 16, 72, 1, 1, 0), (3, 9, 32, 16, 1, 2, 0),
          (8, 14, 256, 256, 3, 1, 1)]


@pytest.fixture(scope="module")
def measurer():
    from engine.gpu.measurer import GpuMeasurer

    with GpuMeasurer(run_timeout=3.0, build_timeout=60.0) as m:
        yield m


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("layer", LAYERS, ids=["x".join(map(str, layer)) for layer in LAYERS])
def test_random_configs_compute_the_convolution(measurer, precision, layer):
    task = engine.create_task("conv2d_nhwc_tensorcore", conv2d_tc_args(*layer, precision),
                              DeviceLimits.for_device(measurer.device))
    configs = [task.default_config(), *task.config_space.sample(np.random.default_rng(5), 8)]
    results = measurer.measure(task, configs)
    assert [(c.values(), r.error_msg) for c, r in zip(configs, results) if not r.ok] == []


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("layer", LAYERS, ids=["x".join(map(str, layer)) for layer in LAYERS])
def test_random_wgmma_configs_compute_the_convolution(measurer, precision, layer):
    """The wgmma mainloop (a few percent of random draws) on its own: its K-major B and gathered A."""
    from test_conv2d_tensorcore import random_valid_configs

    task = engine.create_task("conv2d_nhwc_tensorcore", conv2d_tc_args(*layer, precision),
                              DeviceLimits.for_device(measurer.device))
    configs = random_valid_configs(task, 6, 5)
    results = measurer.measure(task, configs)
    assert len(configs) == 6
    assert [(c.values(), r.error_msg) for c, r in zip(configs, results) if not r.ok] == []


def unequal_layer(precision: str) -> list:
    """9x13 input, stride (1, 2), padding top 1, left 0, bottom 1, right 2: 9x7 outputs. The im2col
    map's corners, dimensions and strides each in their own order, where a square layer would hide one."""
    return [["TENSOR", [2, 9, 13, 64], precision], ["TENSOR", [64, 3, 3, 64], precision], [1, 2], [1, 0, 1, 2],
            [1, 1], precision]


# The TMA loader's layers (C a multiple of 64): tails in pixels and output channels, stride 2, 1x1, unequal.
TMA_LAYERS = {"9-64-40-k3s1": lambda p: conv2d_tc_args(3, 9, 64, 40, 3, 1, 1, p),
              "11-128-24-k3s2": lambda p: conv2d_tc_args(4, 11, 128, 24, 3, 2, 1, p),
              "10-64-72-k1s2": lambda p: conv2d_tc_args(2, 10, 64, 72, 1, 2, 0, p),
              "9x13-unequal": unequal_layer,
              "14-256-256-k3s1": lambda p: conv2d_tc_args(8, 14, 256, 256, 3, 1, 1, p)}


def drawn_tma_configs(task) -> list:
    from test_conv2d_tc_tma import tma_configs

    return tma_configs(task, 6, 5)


def drawn_transposed_configs(task) -> list:
    from test_conv2d_tc_swap_ab import swapped_configs

    return swapped_configs(task, 6, 5)


@pytest.mark.parametrize("draw", [drawn_tma_configs, drawn_transposed_configs], ids=["tma", "transposed"])
@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("layer", TMA_LAYERS)
def test_random_tma_configs_compute_the_convolution(measurer, precision, layer, draw):
    """The TMA loader on its own (A gathered by the im2col tensor map, B's rows by boxes), and its transposed
    product (swap_ab, out^T = W A^T: the weights' rows the instruction's A, the pixels its N; 96 to 192-pixel
    tiles and clusters sharing the pixel rows among them)."""
    task = engine.create_task("conv2d_nhwc_tensorcore", TMA_LAYERS[layer](precision),
                              DeviceLimits.for_device(measurer.device))
    configs = draw(task)
    results = measurer.measure(task, configs)
    assert len(configs) == 6
    assert [(c.values(), r.error_msg) for c, r in zip(configs, results) if not r.ok] == []


# Layers with enough channel tiles (sharing A) and pixel tiles (sharing B) for clusters of 4 and 8: tails in
# pixels and channels, stride 2, and the 7x7 512->512 layer (at batch 8) whose cuDNN pick runs 8-block clusters.
WIDE_CLUSTER_LAYERS = {"9-64-320-k3s1": lambda p: conv2d_tc_args(3, 9, 64, 320, 3, 1, 1, p),
                       "12-128-256-k3s2": lambda p: conv2d_tc_args(8, 12, 128, 256, 3, 2, 1, p),
                       "7-512-512-k3s1": lambda p: conv2d_tc_args(8, 7, 512, 512, 3, 1, 1, p)}


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("layer", WIDE_CLUSTER_LAYERS)
def test_wide_cluster_configs_compute_the_convolution(measurer, precision, layer):
    """Clusters of 4 and 8 blocks (wide_cluster), each block multicasting its quarter or eighth of the shared
    rows: the pixels (A) among neighbouring channel tiles, or the weights' rows among neighbouring pixel tiles."""
    from test_conv2d_tc_wide_cluster import wide_cluster_configs

    task = engine.create_task("conv2d_nhwc_tensorcore", WIDE_CLUSTER_LAYERS[layer](precision),
                              DeviceLimits.for_device(measurer.device))
    configs = [config for shares in ("a", "b") for blocks in (4, 8)
               for config in wide_cluster_configs(task, 2, 5, shares, blocks)]
    results = measurer.measure(task, configs)
    assert len(configs) >= 6 and {c["wide_cluster"].val for c in configs} == {4, 8}  # not every layer has all four
    assert [(c.values(), r.error_msg) for c, r in zip(configs, results) if not r.ok] == []


@pytest.mark.parametrize("preset", ["TCC-14-256-256-k3-f16", "TCC-14-1024-256-k1-bf16"])
def test_cudnn_on_channels_last_tensors_is_the_baseline_in_the_same_precision(preset):
    from engine.gpu.baselines import vendor_baseline

    task = engine.create_task(PRESETS[preset].task_name, PRESETS[preset].args)
    result = vendor_baseline(task, "cudnn")(task)
    assert result.ok, result.error_msg
    assert 0 < result.mean_cost < 1e-3


def test_the_confirmations_cudnn_call_gives_the_nhwc_output_in_the_same_precision():
    """engine.gpu.fair_vendor's call, which confirmations time beside ours: NHWC, not NCHW."""
    import torch

    from engine.gpu.fair_vendor import vendor_op
    from engine.gpu.runner import relative_l2_error

    task = engine.create_task("conv2d_nhwc_tensorcore", conv2d_tc_args(4, 11, 40, 24, 3, 2, 1, "bfloat16"))
    inputs = task.template.make_inputs(task.params, np.random.default_rng(0))
    op = vendor_op(task, "cudnn", inputs, time_call=lambda call: 0.0)
    got = op.call()
    assert got.dtype == torch.bfloat16 and tuple(got.shape) == task.params.out_shape
    assert relative_l2_error(got.double().cpu().numpy(), task.template.reference(task.params, inputs)) \
        < task.template.tolerance(task.params)
    assert op.details["memory_format"] == "channels_last" and op.details["algorithm"]


def test_the_logged_best_kernel_comes_back_with_a_16_bit_output(measurer, tmp_path):
    """engine.gpu.apply_best (the downloads' kernel): the output keeps the template's dtype (bf16 bits)."""
    from engine.callbacks import log_to_file
    from engine.gpu.apply_best import check_and_time, load_best_kernel
    from engine.tune import tune
    from engine.tuners import get_tuner

    task = engine.create_task("conv2d_nhwc_tensorcore", conv2d_tc_args(4, 11, 40, 24, 3, 2, 1, "bfloat16"),
                              DeviceLimits.for_device(measurer.device))
    log = tmp_path / "conv.log"
    tune(task, get_tuner("random", task, seed=5), measurer, 8, callbacks=[log_to_file(str(log))], batch_size=8)
    kernel = load_best_kernel(str(log), task)
    assert kernel.output_dtype == "uint16"
    assert check_and_time(kernel).relative_error < task.template.tolerance(task.params)


def test_stream_k_sums_afresh_at_every_launch_and_leaves_its_flags_clear(tmp_path):
    """stream_k: three launches of one module on new inputs each are each right, and the flags the
    tiles' first shares waited on are clear after them (a module's __device__ memory starts zeroed)."""
    import cupy as cp

    from engine.gpu.nvrtc import compile_to_cubin
    from engine.gpu.runner import opt_in_shared_memory, poison, relative_l2_error
    from engine.gpu.tensor_map import fill_tensor_maps
    from engine.ops.gemm_tc.tma import STREAM_FLAGS
    from test_conv2d_tc_tma import tma_config

    task = engine.create_task("conv2d_nhwc_tensorcore", conv2d_tc_args(32, 7, 512, 512, 3, 1, 1, "float16"))
    source = task.template.kernel(task.params, tma_config(task, block_m=128, block_n=128, consumers=2,
                                                          persistent=1, stream_k=1))
    cubin, _ = compile_to_cubin(source.code, f"sm_{cp.cuda.Device().compute_capability}")
    (tmp_path / "k.cubin").write_bytes(cubin)
    module = cp.RawModule(path=str(tmp_path / "k.cubin"))
    arrays = [cp.asarray(a) for a in task.template.make_inputs(task.params, np.random.default_rng(0))]
    fill_tensor_maps(module, source, arrays)
    function = module.get_function(source.name)
    opt_in_shared_memory(function, source)
    errors = []
    for seed in range(3):
        inputs = task.template.make_inputs(task.params, np.random.default_rng(seed))
        for array, values in zip(arrays[:2], inputs[:2]):
            array.set(values)
        poison(arrays[2])
        function(source.grid, source.block, tuple(arrays), shared_mem=source.shared_bytes)
        errors.append(relative_l2_error(arrays[2].get(), task.template.reference(task.params, inputs)))
    assert all(error < task.template.tolerance(task.params) for error in errors), errors  # NaN fails
    flags = cp.ndarray((source.grid[0],), cp.uint32, module.get_global(STREAM_FLAGS))
    assert int(flags.sum()) == 0
