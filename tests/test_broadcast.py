"""The broadcast_nchw template: CINN's general and tile_broadcast tactics."""
import numpy as np
import pytest

import cuda_on_cpu
import engine
from engine.gpu.builder import Builder
from engine.ops import BadArgs
from engine.ops.broadcast.tiling import OPS, broadcast_layout
from engine.workloads import BROADCAST, BROADCAST_FP16, broadcast_args


def config(task, tactic="tile_broadcast", threads=256, per_thread=1, vector=4):
    return task.config_space.from_entity([["tactic", "ot", tactic], ["threads", "ot", threads],
                                          ["elems_per_thread", "ot", per_thread], ["vector", "ot", vector]])


def test_tile_broadcast_does_not_apply_when_hw_is_not_a_multiple_of_32():
    task = engine.create_task("broadcast_nchw", broadcast_args([64, 512, 7, 7], "exp"))
    assert task.why_invalid(config(task)) == (
        "tile_broadcast needs H*W to be a multiple of 32 (CINN's condition); H*W = 7*7 = 49")
    valid = task.config_space.sample(np.random.default_rng(0), len(task.config_space))
    assert valid and {c["tactic"].val for c in valid} == {"general"}


def test_the_seed_example_gives_each_block_one_plane_to_loop_over():
    # [128, 256, 32, 32] exp, 256 threads, 1024 / 256 = 4 elements each: the PR's example.
    task = engine.create_task("broadcast_nchw", broadcast_args([128, 256, 32, 32], "exp"))
    layout = broadcast_layout(task.params, config(task, per_thread=4, vector=1))
    assert layout.block == (256, 1, 1) and layout.grid == (256, 128, 1)  # (C, N): blocks in memory order
    assert layout.broadcast_evaluations == 256 * 256 * 128  # once per thread, not per element


def test_a_chunk_of_a_channel_may_hold_part_of_a_plane_or_several_planes():
    task = engine.create_task("broadcast_nchw", broadcast_args([128, 256, 32, 32], "exp", "float16"))
    quarter = broadcast_layout(task.params, config(task, threads=256, per_thread=1, vector=1))
    assert quarter.grid == (128 * 4, 256, 1)
    eight = broadcast_layout(task.params, config(task, threads=128, per_thread=8, vector=8))  # planes of 128 vectors
    assert eight.grid == (256, 128 // 8, 1) and eight.broadcast_evaluations == 128 * 16 * 256


def test_small_planes_put_several_of_them_in_a_block():
    task = engine.create_task("broadcast_nchw", broadcast_args([8, 3, 8, 8], "div"))
    layout = broadcast_layout(task.params, config(task, threads=64, per_thread=2, vector=4))
    assert layout.block == (16, 4, 1) and layout.grid == (3, 1, 1)  # (C, N chunks): the seed's small binding


def test_more_elements_per_thread_than_n_needs_is_invalid():
    task = engine.create_task("broadcast_nchw", broadcast_args([4, 8, 32, 32], "exp"))
    assert task.why_invalid(config(task, threads=256, per_thread=4, vector=4)) is None  # the whole channel
    assert "more than a channel's N*H*W of 1024 vectors needs" in task.why_invalid(
        config(task, threads=256, per_thread=8, vector=4))
    assert "more planes than N = 4 needs" in task.why_invalid(config(task, threads=1024, per_thread=8, vector=4))


def test_flops_and_bytes_count_what_each_op_reads():
    div = engine.create_task("broadcast_nchw", broadcast_args([2, 3, 4, 8], "div"))
    exp = engine.create_task("broadcast_nchw", broadcast_args([2, 3, 4, 8], "exp"))
    fused = engine.create_task("broadcast_nchw", broadcast_args([2, 3, 4, 8], "mul_rsqrt"))
    assert (div.flops, exp.flops, fused.flops) == (192, 192, 576)
    assert div.template.bytes_moved(div.params) == 4 * (2 * 192 + 3)
    assert exp.template.bytes_moved(exp.params) == 4 * (192 + 3)
    half = engine.create_task("broadcast_nchw", broadcast_args([2, 3, 4, 8], "div", "float16"))
    assert half.flops == 192 and half.template.bytes_moved(half.params) == 2 * (2 * 192 + 3)


@pytest.mark.parametrize("args, message", [
    (broadcast_args([2, 3, 4, 8], "tanh"), "op 'tanh' is not one of div, mul_rsqrt, exp, rsqrt"),
    ([["TENSOR", [2, 3, 4], "float32"], "exp"], "is not 4-D"),
    ([["TENSOR", [2, 3, 4, 8], "float32"]], "broadcast_nchw args are"),
    (broadcast_args([2, 3, 4, 8], "exp", "bfloat16"), "dtype 'bfloat16' is not supported \\(only float32 and float16\\)"),
    (broadcast_args([2, 3, 4, 8], "exp", ["float16"]), r"dtype \['float16'\] is not supported"),
])
def test_it_rejects_bad_args(args, message):
    with pytest.raises(BadArgs, match=message):
        engine.create_task("broadcast_nchw", args)


def test_the_presets_cover_every_op_and_shape_in_both_dtypes():
    assert len(BROADCAST) == len(BROADCAST_FP16) == 12
    assert {p.args[1] for p in BROADCAST} == {p.args[1] for p in BROADCAST_FP16} == set(OPS)
    assert [p.args[0][1] for p in BROADCAST] == [p.args[0][1] for p in BROADCAST_FP16]
    assert {p.args[0][2] for p in BROADCAST_FP16} == {"float16"}


def test_fp16_vectors_reach_16_bytes_and_no_further():
    task = engine.create_task("broadcast_nchw", broadcast_args([8, 16, 8, 8], "exp", "float16"))
    assert task.why_invalid(config(task, vector=8)) is None
    assert task.default_config()["vector"].val == 8
    fp32 = engine.create_task("broadcast_nchw", broadcast_args([8, 16, 8, 8], "exp"))
    assert [k.options for k in fp32.config_space.knobs if k.name == "vector"] == [[1, 2, 4]]


def test_the_reference_is_the_elementwise_formula():
    shape = [2, 3, 2, 2]
    for op, formula in [("div", lambda x, v: x / v), ("mul_rsqrt", lambda x, v: x / np.sqrt(v + 1e-5)),
                        ("exp", lambda x, v: np.exp(v) + 0 * x), ("rsqrt", lambda x, v: 1 / np.sqrt(v) + 0 * x)]:
        task = engine.create_task("broadcast_nchw", broadcast_args(shape, op))
        inputs = task.template.make_inputs(task.params, np.random.default_rng(1))
        v = inputs[-2].astype(np.float64)
        x = inputs[0].astype(np.float64) if len(inputs) == 3 else np.zeros(shape)
        expected = np.array([[[[formula(x[n, c, h, w], v[c]) for w in range(2)] for h in range(2)]
                              for c in range(3)] for n in range(2)])
        np.testing.assert_allclose(task.template.reference(task.params, inputs), expected, rtol=1e-12)


@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_every_op_and_tactic_compiles(tmp_path, arch):
    sources = []
    for op in OPS:
        task = engine.create_task("broadcast_nchw", broadcast_args([8, 16, 8, 8], op))
        for cfg in (config(task), config(task, tactic="general", vector=2, per_thread=4),
                    config(task, threads=1024, vector=1)):
            sources.append(task.template.kernel(task.params, cfg))
        planes = engine.create_task("broadcast_nchw", broadcast_args([4, 16, 16, 16], op))  # planes of 256
        for threads, per_thread in ((64, 1), (64, 8)):  # chunks inside planes; chunks of several planes
            sources.append(planes.template.kernel(planes.params, config(planes, threads=threads, per_thread=per_thread, vector=1)))
        half = engine.create_task("broadcast_nchw", broadcast_args([8, 16, 8, 8], op, "float16"))
        for vector in (1, 2, 4, 8):
            for tactic in ("general", "tile_broadcast"):
                sources.append(half.template.kernel(half.params, config(half, tactic=tactic, vector=vector)))
    with Builder(arch, workers=2, cache_dir=tmp_path, timeout=120) as builder:
        assert [r.message[:300] for r in builder.build(sources) if not r.ok] == []


@pytest.mark.skipif(not cuda_on_cpu.available(), reason="needs g++ to run kernels on the CPU")
@pytest.mark.parametrize("op", OPS)
def test_both_tactics_and_every_binding_compute_the_reference(op):
    task = engine.create_task("broadcast_nchw", broadcast_args([5, 3, 16, 16], op))  # plane of 256
    cases = [
        config(task, tactic="general", threads=64, per_thread=2, vector=2),  # tail: 3840 is not 256-aligned
        config(task, threads=64, per_thread=2, vector=1),   # chunks of a plane over blocks
        config(task, threads=64, per_thread=1, vector=4),   # one block per plane
        config(task, threads=64, per_thread=4, vector=4),   # 4 planes a chunk, N tail
        config(task, threads=256, per_thread=2, vector=4),  # 4 planes a block, 2 per thread, N tail
    ]
    for cfg in cases:
        assert task.why_invalid(cfg) is None
        assert cuda_on_cpu.error_against_reference(task, cfg) < 1e-6, cfg
    odd = engine.create_task("broadcast_nchw", broadcast_args([3, 2, 8, 12], op))  # plane of 96
    straddling = config(odd, threads=64, per_thread=1, vector=1)  # chunks of 64 cross planes
    assert cuda_on_cpu.error_against_reference(odd, straddling) < 1e-6


@pytest.mark.skipif(not cuda_on_cpu.available(), reason="needs g++ to run kernels on the CPU")
@pytest.mark.parametrize("op", OPS)
def test_fp16_kernels_store_the_reference_rounded_once(op):
    task = engine.create_task("broadcast_nchw", broadcast_args([5, 3, 16, 16], op, "float16"))
    inputs = task.template.make_inputs(task.params, np.random.default_rng(0))
    assert {a.dtype for a in inputs} == {np.dtype(np.float16)}
    expected = task.template.reference(task.params, inputs)
    assert np.array_equal(expected, expected.astype(np.float16))  # representable in fp16
    for cfg in (config(task, tactic="general", threads=64, per_thread=2, vector=8),
                config(task, threads=64, per_thread=1, vector=4),
                config(task, threads=256, per_thread=2, vector=2)):
        assert task.why_invalid(cfg) is None
        source = task.template.kernel(task.params, cfg)
        out = inputs[source.output_index]
        out.fill(np.nan)
        cuda_on_cpu.run(source, inputs)
        # Rounded once from float: equal to the rounded exact value but where float's own
        # error tips a tie (rare), then one fp16 ulp off.
        mismatched = np.count_nonzero(out.astype(np.float64) != expected)
        assert mismatched <= out.size // 1000, (cfg, mismatched)
        assert np.abs(out.astype(np.float64) - expected).max() <= 2.0 ** -10 * np.abs(expected).max()
