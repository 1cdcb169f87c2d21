"""Generated conv2d kernels: launch geometry and shared memory agree with the templates'
validity rules, the unroll knobs set the pragmas, and the numpy reference is the convolution
(that random valid configs compile is the template contract's, tests/test_template_contract.py)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import engine
from engine.ops.conv2d.tiling import conv2d_tiling
from engine.workloads import PRESETS

SEED_C12 = [1, 7, 7, 512, 512, 3, 3, [1, 1], [1, 1]]


def tasks():
    yield from (engine.create_task(PRESETS[n].task_name, PRESETS[n].args) for n in ("C1", "C4", "C8", "C12"))
    yield engine.create_task("conv2d_no_batching", SEED_C12)


def sources(per_task: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    for task in tasks():
        for config in task.config_space.sample(rng, per_task):
            yield task, config, task.template.kernel(task.params, config)


def test_kernels_launch_what_the_validity_rules_counted():
    for task, config, source in sources(per_task=40):
        tiling = conv2d_tiling(task.params, config)
        assert source.grid == tiling.grid and source.block == tiling.block, config
        stages = 1 if tiling.outer_steps == 1 else 2  # double-buffered when there is a next step to prefetch
        assert source.shared_bytes == stages * tiling.shared_bytes, config


def conv2d_args(n, ci, size, co, k, stride, pad):
    return [["TENSOR", [n, ci, size, size], "float32"], ["TENSOR", [co, ci, k, k], "float32"], [stride, stride],
            [pad, pad, pad, pad], [1, 1], "float32"]


def test_unroll_knobs_change_the_pragmas_within_the_step_budget():
    task = engine.create_task("conv2d_nchw.cuda", conv2d_args(1, 64, 7, 64, 3, 1, 1))
    base = [["tile_f", "sp", [-1, 1, 8, 1]], ["tile_y", "sp", [-1, 1, 7, 1]], ["tile_x", "sp", [-1, 1, 7, 1]],
            ["tile_rc", "sp", [-1, 8]], ["tile_ry", "sp", [-1, 3]], ["tile_rx", "sp", [-1, 3]]]

    def code(step):
        config = task.config_space.from_entity(base + [["auto_unroll_max_step", "ot", step], ["unroll_explicit", "ot", 1]])
        return task.template.kernel(task.params, config).code

    assert "#pragma unroll 1\n    for (int rcm" in code(0)
    # 8 x 3 x 3 = 72 reduction steps of one output fit in 1500: the whole nest unrolls.
    assert "#pragma unroll\n    for (int rcm" in code(1500)


def naive_conv(data, weight, stride, pad):
    n, ci, h, w = data.shape
    co, _, kh, kw = weight.shape
    padded = np.pad(data.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (w + 2 * pad - kw) // stride + 1
    out = np.zeros((n, co, oh, ow))
    for b, f, y, x in itertools.product(range(n), range(co), range(oh), range(ow)):
        window = padded[b, :, y * stride:y * stride + kh, x * stride:x * stride + kw]
        out[b, f, y, x] = np.sum(window * weight[f])
    return out


@pytest.mark.parametrize("stride,pad,k", [(1, 1, 3), (2, 3, 7), (2, 0, 1)])
def test_the_numpy_reference_is_the_convolution(stride, pad, k):
    rng = np.random.default_rng(stride * 10 + k)
    task = engine.create_task("conv2d_nchw.cuda", conv2d_args(2, 3, 9, 4, k, stride, pad))
    data = rng.uniform(-1, 1, task.params.data_shape).astype(np.float32)
    weight = rng.uniform(-1, 1, task.params.kernel_shape).astype(np.float32)
    got = task.template.reference(task.params, [data, weight, None])
    assert got.shape == task.params.out_shape
    np.testing.assert_allclose(got, naive_conv(data, weight, stride, pad), rtol=1e-12, atol=1e-12)


def test_templates_make_inputs_and_reference_for_the_gpu_half():
    task = engine.create_task("conv2d_no_batching", SEED_C12)
    inputs = task.template.make_inputs(task.params, np.random.default_rng(0))
    assert [a.shape for a in inputs] == [(1, 512, 7, 7), (512, 512, 3, 3), (1, 512, 7, 7)]
    assert np.count_nonzero(inputs[0]) == inputs[0].size  # random data, never zeros
    assert task.template.reference(task.params, inputs).shape == (1, 512, 7, 7)
