"""The depthwise_conv2d_nchw.cuda kernel generator computes the reference (its compiles: the template contract)."""
import numpy as np
import pytest

import cuda_on_cpu
import engine
from engine.workloads import depthwise_args

# Multiplier 2, stride (2, 1), padding (top 1, left 0, bottom 1, right 1): every index rule at once.
ODD = [["TENSOR", [2, 6, 9, 10], "float32"], ["TENSOR", [6, 2, 3, 3], "float32"], [2, 1], [1, 0, 1, 1], [1, 1],
       "float32"]


def test_the_template_names_cudnn_as_its_baseline():
    assert engine.create_task("depthwise_conv2d_nchw.cuda", depthwise_args(7, 8, 1)).template.baseline_provider == "cudnn"


def test_the_reference_is_the_direct_depthwise_sum():
    task = engine.create_task("depthwise_conv2d_nchw.cuda", ODD)
    data, weight, out = task.template.make_inputs(task.params, np.random.default_rng(0))
    padded = np.pad(data.astype(np.float64), ((0, 0), (0, 0), (1, 1), (0, 1)))
    expected = np.zeros(out.shape)
    for n in range(2):
        for f in range(12):
            for y in range(out.shape[2]):
                for x in range(out.shape[3]):
                    window = padded[n, f // 2, 2 * y:2 * y + 3, x:x + 3]
                    expected[n, f, y, x] = (window * weight[f // 2, f % 2]).sum()
    np.testing.assert_allclose(task.template.reference(task.params, [data, weight, out]), expected, rtol=1e-12)


@pytest.mark.skipif(not cuda_on_cpu.available(), reason="needs g++ to run kernels on the CPU")
@pytest.mark.parametrize("args", [ODD, depthwise_args(14, 8, 1), depthwise_args(14, 8, 2)])
def test_random_configs_compute_the_reference(args):
    task = engine.create_task("depthwise_conv2d_nchw.cuda", args)
    for cfg in [task.default_config(), *task.config_space.sample(np.random.default_rng(3), 3)]:
        assert cuda_on_cpu.error_against_reference(task, cfg) < 1e-6, cfg
