import math

import numpy as np
import pytest

import engine
from engine.describe import describe_workload
from engine.ops import TEMPLATES, BadArgs, DeviceLimits, get_template
from engine.ops.base import Template, reason_vector_width
from engine.ops.conv2d.tiling import conv2d_tiling
from engine.ops.depthwise.tiling import depthwise_tiling, input_channels_per_block
from engine.workloads import MOBILENET_DW, RESNET18, conv2d_args, depthwise_args

C12 = conv2d_args(7, 512, 512, 3, 1, 1)
C2 = conv2d_args(56, 64, 64, 3, 1, 1)


def config_of(task, **splits):
    """A config of `task` from knob values given as logged ([-1, ...] or plain)."""
    defaults = {name: value for name, _, value in task.config_space.get(0).to_entity()}
    defaults.update(splits)
    entity = [[k.name, k.kind, defaults[k.name]] for k in task.config_space.knobs]
    return task.config_space.from_entity(entity)


def test_the_registry_has_every_template():
    assert set(TEMPLATES) == {
        "conv2d_nchw.cuda", "conv2d_nchw_implicit_gemm", "conv2d_nchw_winograd_fused", "depthwise_conv2d_nchw.cuda",
        "conv2d_nchw_winograd_nonfused", "conv2d_no_batching",
        "conv2d_nhwc_tensorcore", "gemm",
        "gemm_tensorcore", "broadcast_nchw", "custom",
    }
    assert get_template("conv2d_nchw.cuda").name == "conv2d_nchw.cuda"


def test_conv2d_defines_tvms_knobs_in_tvms_order():
    space = engine.create_task("conv2d_nchw.cuda", C12).config_space
    assert space.knob_names == ["tile_f", "tile_y", "tile_x", "tile_rc", "tile_ry", "tile_rx",
                                "auto_unroll_max_step", "unroll_explicit"]
    assert [len(k) for k in space.knobs] == [220, 4, 4, 10, 2, 2, 3, 2]
    assert space.knobs[4].extent == 3 and space.knobs[6].options == [0, 512, 1500]


def test_depthwise_defines_tvms_knobs_in_tvms_order():
    space = engine.create_task("depthwise_conv2d_nchw.cuda", depthwise_args(112, 32, 1)).config_space
    assert space.knob_names == ["tile_f", "tile_y", "tile_x", "auto_unroll_max_step", "unroll_explicit"]
    assert [k.extent for k in space.knobs[:3]] == [32, 112, 112]
    assert space.knobs[3].options == [0, 256, 1500]


def test_depthwise_with_a_multiplier_splits_all_output_channels():
    args = [["TENSOR", [1, 8, 10, 10], "float32"], ["TENSOR", [8, 3, 3, 3], "float32"], [1, 1], [1, 1, 1, 1], [1, 1], "float32"]
    assert engine.create_task("depthwise_conv2d_nchw.cuda", args).config_space.knobs[0].extent == 24


def test_a_block_of_2048_threads_is_invalid_with_the_reason():
    task = engine.create_task("conv2d_nchw.cuda", C2)
    config = config_of(task, tile_f=[-1, 1, 64, 1], tile_y=[-1, 1, 4, 1], tile_x=[-1, 1, 8, 1])
    assert conv2d_tiling(task.params, config).threads == 2048
    assert task.why_invalid(config) == "2048 threads per block exceed the limit of 1024"


def test_more_than_64_threads_on_f_break_the_z_block_limit():
    task = engine.create_task("conv2d_nchw.cuda", C12)
    config = config_of(task, tile_f=[-1, 1, 128, 1])
    assert task.why_invalid(config) == "block dimension z of 128 threads exceeds the limit of 64"


def test_the_staged_tiles_follow_the_documented_formula():
    args = conv2d_args(56, 64, 128, 3, 2, 1)  # C4: stride 2, OH = OW = 28
    task = engine.create_task("conv2d_nchw.cuda", args)
    config = config_of(task, tile_f=[-1, 2, 8, 2], tile_y=[-1, 1, 7, 1], tile_x=[-1, 2, 7, 1],
                       tile_rc=[-1, 8], tile_ry=[-1, 3], tile_rx=[-1, 1])
    tiling = conv2d_tiling(task.params, config)
    assert tiling.block_tile == (32, 7, 14)
    # input: 8 channels x ((7-1)*2 + 3) rows x ((14-1)*2 + 1) columns; weights: 32 x 8 x 3 x 1
    assert tiling.input_tile == (8, 15, 27)
    assert tiling.weight_tile == (32, 8, 3, 1)
    assert tiling.shared_bytes == 4 * (8 * 15 * 27 + 32 * 8 * 3)
    assert tiling.accumulators == (2 * 2) * 1 * 2
    assert tiling.block == (7, 7, 8) and tiling.grid == (2, 4, 4)
    assert tiling.outer_steps == 8 * 1 * 3


def test_a_config_over_the_shared_memory_limit_is_invalid_with_the_tiles_named():
    task = engine.create_task("conv2d_nchw.cuda", C12)
    config = config_of(task, tile_f=[-1, 1, 8, 1], tile_y=[-1, 1, 7, 1], tile_x=[-1, 1, 7, 1],
                       tile_rc=[-1, 512], tile_ry=[-1, 3], tile_rx=[-1, 3])
    # 4 bytes x (512 x 9 x 9 input floats + 8 x 512 x 3 x 3 weight floats) = 313344 bytes
    assert task.why_invalid(config) == (
        "shared memory of 313344 bytes per block exceeds the limit of 49152 "
        "(input tile 512x9x9 + weight tile 8x512x3x3 floats)"
    )


def test_too_many_accumulators_per_thread_are_invalid():
    task = engine.create_task("conv2d_nchw.cuda", C12)
    config = config_of(task, tile_f=[-1, 4, 1, 16], tile_y=[-1, 1, 1, 7], tile_x=[-1, 1, 1, 7], tile_rc=[-1, 1])
    assert conv2d_tiling(task.params, config).accumulators == 64 * 49
    assert task.why_invalid(config).startswith("about 3273 registers per thread exceed the limit of 255")


def test_registers_times_threads_may_not_exceed_a_block_s_registers():
    task = engine.create_task("conv2d_nchw.cuda", C12)
    config = config_of(task, tile_f=[-1, 2, 16, 16], tile_y=[-1, 1, 7, 1], tile_x=[-1, 1, 7, 1], tile_rc=[-1, 1])
    # 32 accumulators + 32 weights + 1 input + 24 overhead = 89 registers x 784 threads > 65536
    assert task.why_invalid(config) == "about 89 registers x 784 threads exceed the 65536 registers of a block"


def test_the_limits_come_from_the_device():
    tight = DeviceLimits(max_threads_per_block=64)
    task = engine.create_task("conv2d_nchw.cuda", C12, limits=tight)
    config = config_of(task, tile_f=[-1, 1, 2, 1], tile_y=[-1, 1, 7, 1], tile_x=[-1, 1, 7, 1])
    assert task.why_invalid(config) == "98 threads per block exceed the limit of 64"
    assert engine.create_task("conv2d_nchw.cuda", C12).why_invalid(config) is None


def test_depthwise_stages_the_input_window_of_its_block():
    task = engine.create_task("depthwise_conv2d_nchw.cuda", depthwise_args(112, 64, 2))  # OH = OW = 56
    config = config_of(task, tile_f=[-1, 1, 4, 2], tile_y=[-1, 1, 4, 1], tile_x=[-1, 2, 4, 1])
    tiling = depthwise_tiling(task.params, config)
    assert tiling.input_tile == (8, (4 - 1) * 2 + 3, (8 - 1) * 2 + 3)
    assert tiling.weight_tile == (8, 1, 3, 3)
    assert tiling.shared_bytes == 4 * (8 * 9 * 17 + 8 * 9)
    assert tiling.threads == 64 and tiling.accumulators == 4


def test_a_depthwise_block_reads_the_input_channels_its_outputs_map_to():
    assert input_channels_per_block(8, 1, 4) == 8
    assert input_channels_per_block(4, 2, 6) == 2  # aligned: 4 outputs read channels 2b, 2b+1
    assert input_channels_per_block(3, 2, 8) == 2  # outputs 3..5 read channels 1 and 2
    assert input_channels_per_block(1, 3, 9) == 1


def test_vector_width_rule():
    assert reason_vector_width(4, 4, DeviceLimits()) is None
    assert reason_vector_width(8, 4, DeviceLimits()) == "vector of 32 bytes exceeds the 16-byte maximum"
    assert reason_vector_width(3, 4, DeviceLimits()) == "vector width 3 is not a power of two"


@pytest.mark.parametrize("preset", RESNET18 + MOBILENET_DW, ids=lambda p: p.name)
def test_the_default_config_is_valid_deterministic_and_has_64_to_256_threads(preset):
    task = engine.create_task(preset.task_name, preset.args)
    config = task.default_config()
    assert task.why_invalid(config) is None
    assert config == task.default_config()
    assert 64 <= task.features(config)["threads_per_block"] <= 256


def test_the_seed_tasks_default_config_is_valid():
    task = engine.create_task("conv2d_no_batching", [1, 7, 7, 512, 512, 3, 3, [1, 1], [1, 1]])
    assert task.why_invalid(task.default_config()) is None


@pytest.mark.parametrize("task_name, args", [
    ("conv2d_nchw.cuda", C12),
    ("conv2d_no_batching", [1, 7, 7, 512, 512, 3, 3, [1, 1], [1, 1]]),
    ("depthwise_conv2d_nchw.cuda", depthwise_args(56, 128, 2)),
])
def test_features_have_the_same_names_in_the_same_order_for_every_config(task_name, args):
    task = engine.create_task(task_name, args)
    configs = task.config_space.sample(np.random.default_rng(0), 30)
    names = [list(task.features(c)) for c in configs]
    assert all(n == names[0] for n in names)
    values = np.array([list(task.features(c).values()) for c in configs], dtype=float)
    assert np.isfinite(values).all()
    for required in ("threads_per_block", "vthreads", "work_per_thread", "shared_bytes", "blocks",
                     "unroll_step", "unroll_explicit", "arithmetic_intensity", "warp_fill"):
        assert required in names[0]
    assert names[0][0] == "tile_f.0"


def test_features_describe_the_config():
    task = engine.create_task("conv2d_nchw.cuda", C12)
    config = config_of(task, tile_f=[-1, 2, 16, 2], tile_y=[-1, 1, 7, 1], tile_x=[-1, 7, 1, 1],
                       tile_rc=[-1, 4], auto_unroll_max_step=1500, unroll_explicit=1)
    features = task.features(config)
    assert features["tile_f.2"] == 4.0 and features["tile_f.0"] == math.log2(8)
    assert features["threads_per_block"] == 16 * 7
    assert features["vthreads"] == 2 * 7
    assert features["work_per_thread"] == 2 * 2 * 7
    assert features["blocks"] == 8
    assert features["unroll_step"] == 1500 and features["unroll_explicit"] == 1
    assert features["reduction_step_rc"] == 4 and features["outer_steps"] == 128 * 3 * 3
    tiling = conv2d_tiling(task.params, config)
    assert features["shared_bytes"] == tiling.shared_bytes
    assert features["arithmetic_intensity"] == pytest.approx(
        task.flops / (8 * 128 * 9 * tiling.shared_bytes / 4))


def test_a_template_without_its_gpu_half_cannot_be_made():
    class Halfway(Template):  # the space and rules, but no kernel, inputs or reference
        name = "halfway"
        parse_args = define_space = why_invalid = features = default_config = flops = staticmethod(lambda *a: None)

    with pytest.raises(TypeError, match="abstract methods.*kernel"):
        Halfway()


@pytest.mark.parametrize("task_name, args, message", [
    ("conv2d_nchw.cuda", C12[:5], "conv2d_nchw.cuda args are \\[data, kernel, strides, padding, dilation, out_dtype\\]"),
    ("conv2d_nchw.cuda", [["TENSOR", [1, 0, 7, 7], "float32"]] + C12[1:], "non-positive"),
    ("conv2d_nchw.cuda", [["TENSOR", [1, 512, 7], "float32"]] + C12[1:], "not 4-D"),
    ("conv2d_nchw.cuda", [C12[0], ["TENSOR", [512, 256, 3, 3], "float32"]] + C12[2:], "kernel has 256 input channels, data has 512"),
    ("conv2d_nchw.cuda", [["TENSOR", [1, 512, 7, 7], "float16"]] + C12[1:], "dtype 'float16' is not supported"),
    ("conv2d_nchw.cuda", [["TENSOR", [64, 1024, 256, 256], "float32"]] + [["TENSOR", [512, 1024, 3, 3], "float32"]] + C12[2:],
     "data would have 4294967296 elements, more than 2\\^31 - 1"),
    ("conv2d_nchw.cuda", [["TENSOR", [1, 512, 2, 2], "float32"]] + C12[1:3] + [[0, 0, 0, 0]] + C12[4:],
     "kernel 3x3 is larger than the padded input 2x2"),
    ("conv2d_nchw.cuda", C12[:4] + [[2, 2], "float32"], "dilation \\[2, 2\\] is not supported"),
    ("conv2d_nchw.cuda", C12[:2] + [[0, 1]] + C12[3:], "strides \\[0, 1\\] must be positive"),
    ("conv2d_nchw.cuda", C12[:3] + [[-1, 0, 0, 0]] + C12[4:], "must not be negative"),
    ("conv2d_no_batching", [2, 7, 7, 512, 512, 3, 3, [1, 1], [1, 1]], "batch size N = 1 only"),
    ("conv2d_no_batching", [1, 7, 7, 512, 512, 3, 3, [1, 1]], "args are \\[N, H, W, CO, CI, KH, KW"),
    ("conv2d_no_batching", [1, 7, 7, -512, 512, 3, 3, [1, 1], [1, 1]], "must be positive integers"),
    ("depthwise_conv2d_nchw.cuda", [["TENSOR", [1, 32, 7, 7], "float32"], ["TENSOR", [16, 1, 3, 3], "float32"]] + C12[2:],
     "kernel has 16 channels, data has 32"),
])
def test_bad_args_raise_a_one_line_reason(task_name, args, message):
    with pytest.raises(BadArgs, match=message) as caught:
        engine.create_task(task_name, args)
    assert "\n" not in str(caught.value)


def test_a_space_without_a_valid_config_has_no_default_and_says_so():
    spec = {
        "kernel_name": "copy", "source": 'extern "C" __global__ void copy(const float* a, float* c) {}',
        "sizes": {"N": 256}, "tune_params": [["block_size_x", [32, 64]]],
        "restrictions": ["block_size_x > 4096"],  # rejects every config
        "block": ["block_size_x"], "grid": ["ceil_div(N, block_size_x)"],
        "arguments": [{"name": "a", "shape": ["N"], "dtype": "float32"},
                      {"name": "c", "shape": ["N"], "dtype": "float32", "output": True}],
        "reference": {"numpy": "a"},
    }
    task = engine.create_task("custom", [spec])
    with pytest.raises(BadArgs, match="no valid config"):
        task.default_config()


def test_features_read_the_convolutions_flops_from_its_params():
    task = engine.create_task("conv2d_nchw.cuda", C2)
    for config in task.config_space.sample(np.random.default_rng(0), 5):
        features = task.template.features(task.params, config)
        assert features["arithmetic_intensity"] > 0
    assert task.params.flops == task.flops == 2 * 64 * 56 * 56 * 64 * 3 * 3


ODD_ARGS = [None, [], [1], "x", [["TENSOR", [1, 2], ["float32"]]],
            [["TENSOR", [2, 3], {}], ["TENSOR", [3, 4], "float32"]], [["TENSOR", [1, 2, 3, 4], []], "exp"],
            [{"kernel_name": 3}], [["TENSOR", [0, 2], "float32"], ["TENSOR", [2, 2], "float32"]]]


@pytest.mark.parametrize("task_name", sorted(TEMPLATES))
def test_byte_counts_of_args_a_log_may_hold_are_a_number_or_none(task_name):
    # Imports call this for every new workload: odd args must not stop an import.
    assert all(describe_workload(task_name, args).bytes_moved is None for args in ODD_ARGS)
    assert describe_workload("gemm", [["TENSOR", [2, 3], "float32"], ["TENSOR", [3, 4], "float32"]]).bytes_moved == 4 * (6 + 12 + 8)
