"""Which function measures each template's vendor baseline (engine.gpu.baselines), checked without a GPU."""
import numpy as np
import pytest

import engine
from engine.gpu.baselines import (PROVIDERS, VENDOR_BASELINES, BaselineUnavailable, cublas_gemm, cudnn_conv2d,
                                  cudnn_depthwise, default_providers, vendor_baseline)
from engine.gpu.runner import relative_l2_error
from engine.ops import TEMPLATES
from engine.baselines import DEFAULT_CONFIG_BASELINE
from engine.workloads import get_preset


def preset_task(name):
    preset = get_preset(name)
    return engine.create_task(preset.task_name, preset.args)


@pytest.mark.parametrize("preset, provider, function", [
    ("C12", "cudnn", cudnn_conv2d),
    ("D3", "cudnn", cudnn_depthwise),
    ("G3", "cublas", cublas_gemm),
])
def test_each_template_is_held_against_its_own_vendor_library(preset, provider, function):
    task = preset_task(preset)
    assert task.template.baseline_provider == provider
    assert vendor_baseline(task, provider) is function
    assert default_providers(task) == [provider, DEFAULT_CONFIG_BASELINE]


def test_broadcast_has_only_its_default_config_as_baseline():
    task = preset_task("B-exp-a")
    assert vendor_baseline(task, DEFAULT_CONFIG_BASELINE) is None
    assert default_providers(task) == [DEFAULT_CONFIG_BASELINE]
    with pytest.raises(BaselineUnavailable, match="broadcast_nchw has no cudnn baseline"):
        vendor_baseline(task, "cudnn")


def test_a_depthwise_task_is_not_timed_as_a_dense_convolution():
    with pytest.raises(BaselineUnavailable, match="has no cublas baseline"):
        vendor_baseline(preset_task("D3"), "cublas")


def test_every_template_with_a_vendor_library_has_its_function_and_no_other_has_one():
    vendor_templates = {name for name, cls in TEMPLATES.items() if cls.baseline_provider != DEFAULT_CONFIG_BASELINE}
    assert vendor_templates == set(VENDOR_BASELINES)
    assert {cls.baseline_provider for cls in TEMPLATES.values()} <= set(PROVIDERS)


def test_the_relative_error_is_zero_for_an_exact_answer_and_scale_free():
    reference = np.arange(1.0, 7.0).reshape(2, 3)
    assert relative_l2_error(reference.astype(np.float32), reference) == 0.0
    got = reference * 1.01
    assert relative_l2_error(got, reference) == pytest.approx(0.01)
    assert relative_l2_error(got * 1e6, reference * 1e6) == pytest.approx(0.01)


def test_the_relative_error_of_an_all_zero_reference_is_the_answers_norm_and_nan_fails():
    zeros = np.zeros(4)
    assert relative_l2_error(np.array([3.0, 4.0, 0.0, 0.0]), zeros) == pytest.approx(5.0)
    error = relative_l2_error(np.array([np.nan, 0.0, 0.0, 0.0]), zeros)
    assert not error < 1e-4
