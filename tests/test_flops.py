"""FLOP counts: a template's own (`Template.flops`), engine.flops' for TVM tasks without a
template, both reached through `describe_workload`."""
import pytest

from engine.describe import describe_workload
from engine.flops import FlopCountError, flop_count, known_tasks
from engine.ops import TEMPLATES


def count(task_name, args):
    return describe_workload(task_name, args).flops


def tensor(*shape):
    return ["TENSOR", list(shape), "float32"]


# Each count below is worked out by hand: 2 operations per multiply-add.


@pytest.mark.parametrize("task", ["conv2d_nchw.cuda", "conv2d_nchw", "conv2d_nchw_winograd.cuda"])
def test_resnet_c12_conv2d(task):
    # out 1x512x7x7 (stride 1, pad 1); each output sums 512*3*3 products
    args = [tensor(1, 512, 7, 7), tensor(512, 512, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], "float32"]
    assert count(task, args) == 2 * (512 * 7 * 7) * (512 * 3 * 3) == 231_211_008


def test_resnet_c1_conv2d_with_stride_2_and_pad_3():
    # (224 + 3 + 3 - 7) // 2 + 1 = 112; out 64x112x112, 3*7*7 products each
    args = [tensor(1, 3, 224, 224), tensor(64, 3, 7, 7), [2, 2], [3, 3, 3, 3], [1, 1], "float32"]
    assert count("conv2d_nchw.cuda", args) == 2 * 64 * 112 * 112 * 3 * 7 * 7 == 236_027_904


def test_conv2d_with_asymmetric_padding_and_dilation():
    # height: (8 + 0 + 1 - (3-1)*2 - 1) // 1 + 1 = 5; width: (8 + 1 + 1 - (2-1)*1 - 1) // 1 + 1 = 9
    args = [tensor(2, 4, 8, 8), tensor(6, 4, 3, 2), [1, 1], [0, 1, 1, 1], [2, 1], "float32"]
    assert flop_count("conv2d_nchw", args) == 2 * 2 * 6 * 5 * 9 * 4 * 3 * 2 == 25_920


def test_mobilenet_d2_depthwise_conv2d():
    # 112 -> (112 + 2 - 3) // 2 + 1 = 56; 64 channels, 3*3 products each
    args = [tensor(1, 64, 112, 112), tensor(64, 1, 3, 3), [2, 2], [1, 1, 1, 1], [1, 1], "float32"]
    assert count("depthwise_conv2d_nchw.cuda", args) == 2 * 64 * 56 * 56 * 9 == 3_612_672


def test_depthwise_conv2d_with_a_channel_multiplier():
    args = [tensor(1, 8, 10, 10), tensor(8, 2, 3, 3), [1, 1], [0, 0], [1, 1], "float32"]
    assert flop_count("depthwise_conv2d_nchw", args) == 2 * 8 * 2 * 8 * 8 * 9 == 18_432


def test_conv2d_transpose_scatters_each_input_over_a_kernel_patch():
    args = [tensor(1, 32, 8, 8), tensor(32, 16, 4, 4), [2, 2], [1, 1, 1, 1], "float32"]
    assert flop_count("conv2d_transpose_nchw.cuda", args) == 2 * 32 * 8 * 8 * 16 * 4 * 4 == 1_048_576


def test_batch_matmul_with_y_as_batch_n_k():
    args = [tensor(4, 64, 32), tensor(4, 128, 32)]
    assert flop_count("batch_matmul.cuda", args) == 2 * 4 * 64 * 128 * 32 == 2_097_152
    broadcast = [tensor(4, 64, 32), tensor(1, 128, 32)]
    assert flop_count("batch_matmul.cuda", broadcast) == 2_097_152


@pytest.mark.parametrize("task", ["dense", "dense.cuda", "dense_small_batch.cuda", "dense_large_batch.cuda"])
def test_dense_is_m_by_n_by_k(task):
    assert flop_count(task, [tensor(16, 512), tensor(1000, 512), None, "float32"]) == 2 * 16 * 1000 * 512 == 16_384_000


def test_the_seed_tutorials_conv2d_no_batching():
    # N=1 H=W=7 CO=CI=512 K=3 stride 1 pad 1: same as ResNet C12
    assert count("conv2d_no_batching", [1, 7, 7, 512, 512, 3, 3, [1, 1], [1, 1]]) == 231_211_008
    assert count("conv2d_no_batching", [1, 14, 14, 256, 128, 1, 1, 2, 0]) == 2 * 256 * 7 * 7 * 128 == 3_211_264


def test_every_known_task_is_counted_once():
    counted = {
        "conv2d_nchw", "conv2d_nchw_winograd.cuda", "depthwise_conv2d_nchw", "conv2d_transpose_nchw.cuda",
        "batch_matmul.cuda", "dense", "dense.cuda", "dense_small_batch.cuda", "dense_large_batch.cuda",
    }
    assert counted == set(known_tasks())
    assert not counted & set(TEMPLATES)  # a template counts its own task


def test_an_unknown_task_has_no_count_and_a_note_saying_so():
    facts = describe_workload("my_op.cuda", [1, 2, 3])
    assert facts.flops is None and facts.note == "no FLOP counter for task my_op.cuda"


@pytest.mark.parametrize(
    "task, args, message",
    [
        ("conv2d_nchw_winograd.cuda", [tensor(1, 3, 8, 8)], "conv2d args are"),
        ("conv2d_nchw", [tensor(1, 3, 8, 8), tensor(4, 5, 3, 3), 1, 0, 1], "kernel has 5 input channels, data has 3"),
        ("conv2d_nchw", [[1, 3, 8, 8], tensor(4, 3, 3, 3), 1, 0, 1], "data is not a"),
        ("conv2d_nchw", [tensor(1, 3, 8), tensor(4, 3, 3, 3), 1, 0, 1], "is not 4-D"),
        ("conv2d_nchw", [tensor(1, 3, 0, 8), tensor(4, 3, 3, 3), 1, 0, 1], "non-positive"),
        ("conv2d_nchw", [tensor(1, 3, 2, 2), tensor(4, 3, 3, 3), 1, 0, 1], "the output would be empty"),
        ("conv2d_nchw", [tensor(1, 3, 8, 8), tensor(4, 3, 3, 3), "1", 0, 1], "strides"),
        ("conv2d_nchw", [tensor(1, 3, 8, 8), tensor(4, 3, 3, 3), 1, [0, 0, 0], 1], "padding"),
        ("depthwise_conv2d_nchw", [tensor(1, 8, 8, 8), tensor(4, 1, 3, 3), 1, 1, 1], "kernel has 4 channels, data has 8"),
        ("batch_matmul.cuda", [tensor(2, 4, 8), tensor(2, 4, 9)], "do not multiply"),
        ("dense", [tensor(4, 8), tensor(4, 9)], "are not [M, K] and [N, K]"),
    ],
)
def test_malformed_args_of_a_counted_task_raise(task, args, message):
    with pytest.raises(FlopCountError, match=message.replace("[", r"\[").replace("]", r"\]")):
        flop_count(task, args)


@pytest.mark.parametrize("task, args, message", [
    ("conv2d_nchw.cuda", [tensor(1, 3, 8, 8)], "conv2d_nchw.cuda args are"),
    ("conv2d_nchw.cuda", [tensor(1, 3, 8, 8), tensor(4, 5, 3, 3), 1, 0, 1, "float32"], "kernel has 5 input channels, data has 3"),
    ("depthwise_conv2d_nchw.cuda", [tensor(1, 8, 8, 8), tensor(4, 1, 3, 3), 1, 1, 1, "float32"], "kernel has 4 channels, data has 8"),
    ("conv2d_no_batching", [1, 7, 7], "conv2d_no_batching args are"),
    ("conv2d_no_batching", [1, 7, 7, 0, 512, 3, 3, 1, 1], "must be positive integers"),
])
def test_args_a_template_refuses_have_no_count_and_the_templates_reason(task, args, message):
    facts = describe_workload(task, args)
    assert facts.flops is None and facts.note.startswith(f"no FLOP count for {task} (") and message in facts.note


@pytest.mark.parametrize("task, args, expected", [
    ("gemm", [tensor(64, 32), tensor(32, 16)], 2 * 64 * 16 * 32),
    ("broadcast_nchw", [tensor(1, 2, 3, 4), "exp"], 1 * 2 * 3 * 4),
    ("broadcast_nchw", [tensor(1, 2, 3, 4), "mul_rsqrt"], 3 * 1 * 2 * 3 * 4),
])
def test_the_operator_templates_count_their_own_tasks(task, args, expected):
    assert count(task, args) == expected
