import subprocess
import sys

import numpy as np
import pytest

import engine
from engine.logfile import read_records
from engine.ops import BadArgs, DeviceLimits, UnknownTemplate
from engine.workloads import conv2d_args, depthwise_args

SEED_ARGS = [1, 7, 7, 512, 512, 3, 3, [1, 1], [1, 1]]


def test_the_seed_task_has_the_tutorials_space():
    task = engine.create_task("conv2d_no_batching", SEED_ARGS)
    assert len(task.config_space) == 10454400
    assert str(task.config_space).splitlines()[1] == "   0 tile_f: Split(policy=factors, product=512, num_outputs=4) len=220"
    assert task.flops == 2 * 512 * 7 * 7 * 512 * 3 * 3


def test_a_task_keeps_the_log_args_and_the_records_workload_key(tophub_log):
    with open(tophub_log) as stream:
        record = next(r for r in read_records(stream) if r.task_name == "conv2d_nchw.cuda")
    task = engine.create_task(record.task_name, record.args)
    assert task.args == record.args
    assert task.workload_key == record.workload_key
    assert task.config_space.get(record.config_index).index == record.config_index


def test_a_task_uses_the_limits_it_is_given():
    limits = DeviceLimits(max_shared_memory_per_block=1024)
    task = engine.create_task("conv2d_nchw.cuda", conv2d_args(7, 512, 512, 3, 1, 1), limits=limits)
    assert task.limits is limits
    assert any("shared memory" in (task.why_invalid(c) or "") for c in map(task.config_space.get, range(0, 10**6, 997)))


def test_configs_sampled_from_a_task_are_valid_under_its_limits():
    task = engine.create_task("depthwise_conv2d_nchw.cuda", depthwise_args(112, 32, 1))
    picks = task.config_space.sample(np.random.default_rng(4), 200)
    assert all(task.why_invalid(c) is None for c in picks)


def test_an_unknown_template_lists_the_known_ones():
    with pytest.raises(UnknownTemplate) as caught:
        engine.create_task("conv3d.cuda", [])
    assert str(caught.value) == (
        "unknown template 'conv3d.cuda'; known templates: "
        "broadcast_nchw, conv2d_nchw.cuda, conv2d_nchw_implicit_gemm, conv2d_nchw_winograd_fused, conv2d_nchw_winograd_nonfused, "
        "conv2d_nhwc_tensorcore, "
        "conv2d_no_batching, custom, "
        "depthwise_conv2d_nchw.cuda, gemm, "
        "gemm_tensorcore, kernel_tuner"
    )


def test_bad_args_are_a_value_error_with_a_clear_message():
    with pytest.raises(ValueError, match="conv2d_no_batching takes batch size N = 1 only, not 4"):
        engine.create_task("conv2d_no_batching", [4, *SEED_ARGS[1:]])
    assert issubclass(BadArgs, ValueError)


def test_importing_engine_does_not_load_the_templates():
    code = "import sys, engine, engine.logfile; print('engine.ops' in sys.modules, 'engine.space' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
