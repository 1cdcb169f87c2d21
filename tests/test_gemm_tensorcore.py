"""The tensor-core GEMM (engine.ops.gemm_tc) without a GPU: precision as part of the workload,
the validity rules, NVRTC compiles of random valid configs for sm_80 and sm_90 with the
engine's own build options, and the kernels' answers on the CPU (tests/cuda_on_cpu.py
emulates ldmatrix and mma.sync lane by lane)."""
from __future__ import annotations

import numpy as np
import pytest

import cuda_on_cpu
import engine
from engine.gpu.builder import Builder
from engine.gpu.nvrtc import target_arch
from engine.ops.base import ARCH_SPECIFIC_MARK
from engine.ops import BadArgs, DeviceLimits
from engine.ops.gemm_tc.kernel import TOLERANCE, bfloat16_bits, widen
from engine.workloads import GEMM_TC, gemm_args, gemm_tc_args

PRECISIONS = ["float16", "bfloat16", "tf32"]


# An sm_80 GPU's limits for the configs it may run: no wgmma (Hopper's only).
SM80_LIMITS = DeviceLimits(wgmma=False, max_cluster_size=1)  # what for_device gives an A100


def task_of(m, n, k, precision, limits=None):
    return engine.create_task("gemm_tensorcore", gemm_tc_args(m, n, k, precision), limits)


def test_each_precision_is_its_own_workload():
    keys = {task_of(64, 64, 64, p).workload_key for p in PRECISIONS}
    keys.add(engine.create_task("gemm", gemm_args(64, 64, 64)).workload_key)
    assert len(keys) == 4
    assert [task_of(64, 64, 64, p).params.precision for p in PRECISIONS] == PRECISIONS


@pytest.mark.parametrize("args, message", [
    ([["TENSOR", [64, 64], "float32"], ["TENSOR", [64, 64], "float32"]], 'add "tf32"'),
    ([["TENSOR", [64, 64], "float16"], ["TENSOR", [64, 64], "bfloat16"]], "both tensors take one precision"),
    ([["TENSOR", [64, 64], "int8"], ["TENSOR", [64, 64], "int8"]], "'int8' is not supported"),
    ([["TENSOR", [64, 64], "float16"], ["TENSOR", [64, 64], "float16"], "tf32"], "the third argument of float16 tensors is C's dtype"),
    ([["TENSOR", [64, 32], "float16"], ["TENSOR", [64, 64], "float16"]], "do not multiply"),
    ([["TENSOR", [64, 64], "float16"]], "gemm_tensorcore args are"),
])
def test_unusable_args_say_why(args, message):
    with pytest.raises(BadArgs, match=message):
        engine.create_task("gemm_tensorcore", args)


def test_the_fp32_gemm_still_refuses_half_precision():
    with pytest.raises(BadArgs, match="only float32"):
        engine.create_task("gemm", [["TENSOR", [64, 64], "float16"], ["TENSOR", [64, 64], "float16"]])


def test_rows_that_16_byte_copies_would_straddle_are_refused_with_the_rule():
    with pytest.raises(BadArgs, match="K = 60 is not a multiple of 8 float16 elements"):
        task_of(64, 64, 60, "float16")
    with pytest.raises(BadArgs, match="N = 36 is not a multiple of 8 bfloat16"):
        task_of(64, 36, 64, "bfloat16")
    tf32 = task_of(63, 60, 60, "tf32")  # four floats are 16 bytes: 60 is fine for tf32, M is free
    assert tf32.why_invalid(tf32.default_config()) is None


def test_every_preset_has_valid_configs_and_its_precision_in_the_name():
    assert len(GEMM_TC) == 24
    for preset in GEMM_TC:
        task = engine.create_task(preset.task_name, preset.args)
        assert task.why_invalid(task.default_config()) is None, preset.name
        assert len(task.config_space.sample(np.random.default_rng(0), 20)) == 20, preset.name
        assert task.params.precision in preset.description


def test_a_decode_step_can_be_spread_over_every_sm():
    """M = 16 against 4096x4096 weights: configs with at least 128 blocks and sliced K exist."""
    task = task_of(16, 4096, 4096, "bfloat16")
    wide = [c for c in task.config_space.sample(np.random.default_rng(1), 300)
            if task.template.kernel(task.params, c).grid[0] >= 128 and c["warps_k"].val > 1]
    assert wide


def test_bfloat16_bits_round_to_nearest_even_and_widen_exactly():
    x = np.array([1.0, 1.0 + 2**-8, 1.0 + 3 * 2**-8, -2.5, 3.0e38], dtype=np.float32)
    bits = bfloat16_bits(x)
    assert bits.dtype == np.uint16
    assert widen(bits, "bfloat16").tolist() == [1.0, 1.0, 1.0 + 2**-6, -2.5, pytest.approx(3.0e38, rel=2**-8)]


def test_the_reference_uses_the_inputs_as_stored():
    task = task_of(24, 16, 32, "bfloat16")
    a, b, c = task.template.make_inputs(task.params, np.random.default_rng(0))
    assert a.dtype == np.uint16 and c.dtype == np.float32 and c.shape == (24, 16)
    expected = widen(a, "bfloat16").astype(np.float64) @ widen(b, "bfloat16").astype(np.float64)
    assert np.array_equal(task.template.reference(task.params, [a, b, c]), expected)


def test_kernels_carry_their_precisions_tolerance():
    for precision in PRECISIONS:
        task = task_of(64, 64, 64, precision)
        source = task.template.kernel(task.params, task.default_config())
        assert source.tolerance == TOLERANCE[precision] == task.template.tolerance(task.params)
    assert TOLERANCE["bfloat16"] > TOLERANCE["tf32"] > TOLERANCE["float16"] > 1e-4


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_twenty_random_valid_configs_per_precision_compile_with_nvrtc(tmp_path, arch):
    """With the engine's build options (the GPU measurer's Builder), no GPU needed."""
    picked = []
    for precision in PRECISIONS:
        task = task_of(4096, 4096, 4096, precision, SM80_LIMITS if arch == "sm_80" else None)
        configs = task.config_space.sample(np.random.default_rng(20 if arch == "sm_80" else 90), 20)
        assert len(configs) == 20
        picked += [(task, config) for config in configs]
    with Builder(arch, workers=2, cache_dir=tmp_path, timeout=120) as builder:
        results = builder.build([task.template.kernel(task.params, config) for task, config in picked])
    failed = [(task.params.precision, config.values(), r.message[:400]) for (task, config), r in zip(picked, results)
              if not r.ok]
    assert failed == []


def test_random_valid_split_k_configs_compile_for_sm_90(tmp_path):
    """Decode shapes, where split_k is allowed: clusters and the partial tiles' sum through the
    engine's Builder for the device's sm_90, and refused on an A100 (no clusters)."""
    picked = []
    for precision, shape in [("bfloat16", (16, 4096, 4096)), ("float16", (64, 4096, 4096)), ("tf32", (16, 512, 1000))]:
        task = task_of(*shape, precision)
        configs = [c for c in task.config_space.sample(np.random.default_rng(7), 300)
                   if c["split_k"].val > 1 and c["mainloop"].val == "mma_sync"][:4]
        assert len(configs) == 4
        a100 = task_of(*shape, precision, SM80_LIMITS)
        assert "no clusters" in a100.why_invalid(a100.config_space.get(configs[0].index))
        picked += [(task, config) for config in configs]
    sources = [task.template.kernel(task.params, config) for task, config in picked]
    assert all(s.grid[2] == c["split_k"].val and "__cluster_dims__(1, 1, " in s.code
               for s, (_, c) in zip(sources, picked))
    with Builder("sm_90", workers=2, cache_dir=tmp_path, timeout=120) as builder:
        results = builder.build(sources)
    assert [(config.values(), r.message[:400]) for (_, config), r in zip(picked, results) if not r.ok] == []


# The benchmark's split-K decode candidates: (M, precision, block_m, block_n, block_k, warp_m, warp_n, warps_k,
# stages, split_k) at N = K = 4096.
SPLIT_DECODE_TILES = [(16, "bfloat16", 16, 32, 128, 16, 32, 4, 4, 4), (16, "bfloat16", 16, 64, 128, 16, 32, 4, 4, 4),
                      (16, "float16", 16, 64, 64, 16, 32, 2, 4, 8), (64, "bfloat16", 64, 64, 64, 32, 32, 1, 4, 4),
                      (128, "bfloat16", 128, 64, 64, 64, 32, 1, 4, 4), (16, "tf32", 16, 32, 128, 16, 32, 4, 4, 4)]


@pytest.mark.parametrize("tile", SPLIT_DECODE_TILES, ids=[f"{t[0]}-{'x'.join(map(str, t[2:]))}" for t in SPLIT_DECODE_TILES])
def test_the_benchmarks_split_k_tiles_compile_without_spills(tile):
    from engine.gpu.nvrtc import compile_to_cubin

    m, precision, *values = tile
    task = task_of(m, 4096, 4096, precision)
    names = ("block_m", "block_n", "block_k", "warp_m", "warp_n", "warps_k", "stages", "split_k")
    config = task.config_space.from_entity([[n, "ot", v] for n, v in zip(names, values)] + [["raster", "ot", 1]])
    assert task.why_invalid(config) is None
    _, log = compile_to_cubin(task.template.kernel(task.params, config).code, "sm_90", ("-Xptxas=-v",))
    assert " 0 bytes spill stores, 0 bytes spill loads" in log, log


def test_sm_75_gets_a_clear_compile_error(tmp_path):
    task = task_of(64, 64, 64, "float16")
    with Builder("sm_75", workers=1, cache_dir=tmp_path, timeout=120) as builder:
        (result,) = builder.build([task.template.kernel(task.params, task.default_config())])
    assert not result.ok and "needs sm_80 or newer" in result.message


CPU_CASES = [  # (M, N, K, config values): tails in M, N and K; sliced K; raster groups; 2-4 stages
    (37, 40, 24, dict(block_m=32, block_n=32, block_k=16, warp_m=16, warp_n=16, warps_k=1, stages=2, raster=1)),
    (70, 48, 88, dict(block_m=16, block_n=16, block_k=32, warp_m=16, warp_n=16, warps_k=2, stages=3, raster=4)),
    (16, 64, 136, dict(block_m=16, block_n=32, block_k=64, warp_m=16, warp_n=16, warps_k=4, stages=4, raster=1)),
    (50, 72, 40, dict(block_m=64, block_n=64, block_k=16, warp_m=32, warp_n=32, warps_k=1, stages=3, raster=1)),
    # split_k: a tile's K over a cluster (the emulator runs a cluster's blocks together), the
    # partial tiles summed over the cluster's shared memory; uneven splits, tails, sliced K
    (16, 64, 200, dict(block_m=16, block_n=32, block_k=32, warp_m=16, warp_n=16, warps_k=2, stages=3, raster=1,
                       split_k=4)),
    (37, 40, 264, dict(block_m=32, block_n=16, block_k=32, warp_m=16, warp_n=16, warps_k=1, stages=2, raster=1,
                       split_k=8)),
    (20, 48, 96, dict(block_m=16, block_n=16, block_k=16, warp_m=16, warp_n=16, warps_k=1, stages=4, raster=1,
                      split_k=2)),
]


@pytest.mark.skipif(not cuda_on_cpu.available(), reason="needs g++ to run kernels on the CPU")
@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("m, n, k, values", CPU_CASES, ids=[f"{m}x{n}x{k}" for m, n, k, _ in CPU_CASES])
def test_the_kernel_computes_the_reference_on_the_cpu(precision, m, n, k, values):
    task = task_of(m, n, k, precision)
    config = task.config_space.from_entity([[name, "ot", v] for name, v in values.items()])
    assert task.why_invalid(config) is None
    error = cuda_on_cpu.error_against_reference(task, config)
    # fp16 and bf16 products are exact in fp32: only the order of summation differs. TF32 rounds
    # both inputs to 10 mantissa bits: an error that must show (the rounding happens) and stay small.
    if precision == "tf32":
        assert 1e-5 < error < TOLERANCE["tf32"]
    else:
        assert error < 1e-6
