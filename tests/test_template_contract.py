"""The contract every registered template keeps, in the manner of Optuna's storage tests:
one suite, parametrised over `engine.TEMPLATES`, so a new operator is held to the same rules
by registering it (and naming a small workload for it below).

- its args parse, and print back as the same workload;
- its default config is valid, and the same every time;
- its features have the same names in the same order for every config, all numbers;
- random valid configs compile with NVRTC for sm_80 and sm_90 (no GPU needed; for sm_80 those
  an sm_80 GPU may run: no wgmma, no clusters);
- its inputs and reference have the shapes the kernel's arguments say;
- the kernel computes the reference, run on the CPU by tests/cuda_on_cpu.py (which emulates
  the tensor-core PTX, ldmatrix, mma.sync and wgmma, that gemm_tensorcore's kernels are made of),
  within the kernel's own tolerance where its precision sets one (wgmma's too, by the
  emulator's model of its shared-memory layouts: tests/test_gemm_wgmma.py).
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

import cuda_on_cpu
import engine
from engine.gpu.builder import Builder
from engine.ops import DeviceLimits
from engine.workloads import conv2d_args, conv2d_tc_args, depthwise_args, gemm_args, gemm_tc_args, transpose_spec

# A small workload of each template: small enough for the CPU emulator, with tails where
# the template has them (GEMM's M, N, K are not multiples of any tile).
SMALL_WORKLOADS = {
    "conv2d_nchw.cuda": conv2d_args(9, 8, 8, 3, 1, 1),
    "conv2d_nchw_implicit_gemm": conv2d_args(9, 8, 12, 3, 2, 1, batch=2),  # 2 x 25 pixels, 12 channels, K 72: tails
    "conv2d_nchw_winograd_fused": conv2d_args(9, 12, 20, 3, 1, 1, batch=2),  # 2 x 25 tiles, 20 channels: tails
    "conv2d_nchw_winograd_nonfused": conv2d_args(9, 12, 20, 3, 1, 1, batch=2),  # its persistent grid: 2 blocks
    "conv2d_no_batching": [1, 9, 9, 8, 8, 3, 3, [1, 1], [1, 1]],
    "depthwise_conv2d_nchw.cuda": depthwise_args(10, 8, 2),
    "gemm": gemm_args(37, 20, 24),
    "gemm_tensorcore": gemm_tc_args(37, 40, 24, "bfloat16"),
    "conv2d_nhwc_tensorcore": conv2d_tc_args(2, 7, 16, 24, 3, 1, 1, "float16"),  # 98 pixels, K 144: tails
    "broadcast_nchw": [["TENSOR", [2, 16, 8, 8], "float32"], "mul_rsqrt"],
    "custom": [transpose_spec(70, 45)],
}
TEMPLATE_NAMES = sorted(engine.TEMPLATES)
# What an sm_80 GPU may run: no wgmma, no thread block clusters (what for_device gives an A100).
WITHOUT_WGMMA = DeviceLimits(wgmma=False, max_cluster_size=1)


@pytest.fixture(params=TEMPLATE_NAMES)
def task(request):
    name = request.param
    assert name in SMALL_WORKLOADS, f"give the template {name!r} a small workload in SMALL_WORKLOADS"
    return engine.create_task(name, SMALL_WORKLOADS[name])


def configs_of(task, count: int, seed: int = 0):
    """The default config, then `count` random valid ones."""
    return [task.default_config(), *task.config_space.sample(np.random.default_rng(seed), count)]


def test_every_template_has_a_small_workload():
    assert set(SMALL_WORKLOADS) == set(engine.TEMPLATES)


def test_args_parse_and_print_back_as_the_same_workload(task):
    printed = json.loads(engine.canonical_args(task.args))
    again = engine.create_task(task.name, printed)
    assert again.workload_key == task.workload_key
    assert again.flops == task.flops >= 0  # a transpose does no arithmetic
    assert len(again.config_space) == len(task.config_space)
    default = task.default_config()
    assert again.template.kernel(again.params, default) == task.template.kernel(task.params, default)


def test_the_default_config_is_valid_and_the_same_every_time(task):
    default = task.default_config()
    assert task.why_invalid(default) is None
    assert default.index == engine.create_task(task.name, task.args).default_config().index


def test_feature_names_are_the_same_for_every_config(task):
    names = None
    for config in configs_of(task, 8):
        features = task.features(config)
        assert all(isinstance(v, (int, float)) and math.isfinite(v) for v in features.values()), features
        assert names is None or list(features) == names
        names = list(features)


@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_random_valid_configs_of_every_template_compile(tmp_path, arch):
    picked = []
    for name in TEMPLATE_NAMES:
        task = engine.create_task(name, SMALL_WORKLOADS[name], None if arch == "sm_90" else WITHOUT_WGMMA)
        picked += [(task, config) for config in configs_of(task, 2, seed=1 if arch == "sm_90" else 2)]
    with Builder(arch, workers=2, cache_dir=tmp_path, timeout=120) as builder:
        results = builder.build([task.template.kernel(task.params, config) for task, config in picked])
    failed = [(task.name, config.index, r.message[:300]) for (task, config), r in zip(picked, results) if not r.ok]
    assert failed == []


def test_inputs_and_reference_have_the_kernels_shapes(task):
    source = task.template.kernel(task.params, task.default_config())
    inputs = task.template.make_inputs(task.params, np.random.default_rng(0))
    assert len(inputs) == len(source.arg_order)
    expected = task.template.reference(task.params, inputs)
    assert expected.shape == inputs[source.output_index].shape
    assert np.all(np.isfinite(expected))


# Half an ulp: what rounding each value of a 16-bit output alone may add to its relative error
# (bfloat16 travels as uint16 bit patterns).
OUTPUT_ROUNDING = {np.dtype(np.float16): 2**-11, np.dtype(np.uint16): 2**-8}


@pytest.mark.skipif(not cuda_on_cpu.available(), reason="needs g++ to run kernels on the CPU")
def test_the_kernel_computes_the_reference_on_the_cpu(task):
    source = task.template.kernel(task.params, task.default_config())
    output = task.template.make_inputs(task.params, np.random.default_rng(0))[source.output_index]
    for config in configs_of(task, 1, seed=3):
        launches = 2 if "split_k" in config.values() and config["split_k"].val > 1 else 1  # counters reset
        tolerance = min(1e-5 + OUTPUT_ROUNDING.get(output.dtype, 0.0), task.template.tolerance(task.params) or 1.0)
        assert cuda_on_cpu.error_against_reference(task, config, launches=launches) < tolerance, config.index
