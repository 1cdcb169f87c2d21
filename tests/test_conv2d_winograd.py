"""The fused Winograd conv, F(2x2, 3x3) and F(4x4, 3x3): the direct conv's 3x3 stride-1 workloads, checked by running its kernels
here (tests/cuda_on_cpu) against the float64 reference, and compiled for both architectures."""
import numpy as np
import pytest

import cuda_on_cpu
from knob_configs import batched, config_over
import engine
from engine.gpu.builder import Builder
from engine.ops import BadArgs
from engine.ops.conv2d_winograd.tiling import winograd_tiling
from engine.workloads import PRESETS, conv2d_args

NAME = "conv2d_nchw_winograd_fused"
BASE = {"tile": 2, "block_co": 32, "block_tiles": 32, "chunk": 8, "warp_co": 32, "warp_tiles": 32, "warp_positions": 2,
        "warp_lanes_n": 4, "pipeline": "prefetch"}


def config(task, **knobs):
    return config_over(task, BASE, **knobs)


@pytest.mark.parametrize("name", [NAME, "conv2d_nchw_winograd_nonfused"])  # the unfused template's too
def test_it_takes_the_direct_convs_args_for_3x3_stride_1_and_says_why_not_otherwise(name):
    task = engine.create_task(name, PRESETS["C12"].args)
    assert task.flops == engine.create_task("conv2d_nchw.cuda", PRESETS["C12"].args).flops
    assert task.template.baseline_provider == "cudnn"
    for preset in ("C4", "C3"):  # 3x3 stride 2; 1x1
        with pytest.raises(BadArgs, match=f"{name} computes 3x3 convolutions of stride 1"):
            engine.create_task(name, PRESETS[preset].args)


def test_a_7_by_7_output_is_4_by_4_tiles_of_2x2():
    task = engine.create_task(NAME, PRESETS["C12"].args)
    assert winograd_tiling(task.params, task.default_config()).tiles == 16


@pytest.mark.parametrize("name, preset", [
    *((NAME, preset) for preset in ("WG-C2", "WG-C12", "WG-28-128-128-k3-b32", "WG-7-512-512-k3-b16")),
    *(("conv2d_nchw_winograd_nonfused", preset)  # the unfused template's too
      for preset in ("WN-C2", "WN-C12", "WN-28-128-128-k3-b32", "WN-14-256-256-k3-b32", "WN-7-512-512-k3-b16"))])
def test_every_preset_has_a_valid_default_and_valid_samples(name, preset):
    task = engine.create_task(name, PRESETS[preset].args)
    assert task.why_invalid(task.default_config()) is None
    assert len(task.config_space.sample(np.random.default_rng(1), 20)) == 20


def test_a_block_of_nine_warps_is_held_to_twelve_warps_registers():
    task = engine.create_task(NAME, PRESETS["WG-C12"].args)
    # 36 positions, 4 a warp: 9 warps; 64 accumulators, and the filters of chunks of 16 in two rounds
    nine = config(task, tile=4, warp_positions=4, block_tiles=16, warp_tiles=16, chunk=16)
    assert "about 173 registers, more than the 168 a block of 288 threads leaves it" in task.why_invalid(nine)
    assert task.why_invalid(config(task, tile=4, warp_positions=4, block_tiles=16, warp_tiles=16, chunk=8)) is None


def test_a_block_whose_exchange_does_not_fit_shared_memory_is_refused():
    task = engine.create_task(NAME, PRESETS["WG-C12"].args)
    big = config(task, block_co=64, block_tiles=64, warp_co=64, warp_tiles=32, warp_positions=4, warp_lanes_n=4)
    assert "shared memory of 262144 bytes" in task.why_invalid(big)


@pytest.mark.skipif(not cuda_on_cpu.available(), reason="needs g++ to run kernels on the CPU")
@pytest.mark.parametrize("args, knobs", [
    # pad 1, odd outputs (9x9: the last tiles are half outside), channel tails on both sides
    (conv2d_args(9, 6, 20, 3, 1, 1), {}),
    (conv2d_args(9, 6, 20, 3, 1, 1), {"pipeline": "sync", "chunk": 4}),
    # no padding (7x7 out of 9x9), two images whose tiles meet inside a block
    (batched(conv2d_args(9, 8, 16, 3, 1, 0), 2), {"block_tiles": 16, "warp_tiles": 16, "warp_lanes_n": 2}),
    # pad 2 (a 9x9 output of 7x7), 16 input channels in chunks of 16 and of 4 (4 chunks, prefetched)
    (conv2d_args(7, 16, 32, 3, 1, 2), {"chunk": 16, "warp_positions": 4, "warp_co": 16, "warp_lanes_n": 4,
                                       "warp_tiles": 32}),
    (conv2d_args(7, 16, 32, 3, 1, 2), {"chunk": 4, "warp_positions": 1, "block_co": 16, "warp_co": 16, "block_tiles": 16,
                                       "warp_tiles": 16, "warp_lanes_n": 8}),
    # one-float register tiles, more patches than threads a chunk (several load rounds)
    (batched(conv2d_args(6, 12, 8, 3, 1, 1), 3), {"block_co": 16, "warp_co": 16, "block_tiles": 64,
                                                  "warp_tiles": 16, "warp_lanes_n": 16, "warp_positions": 4, "chunk": 16}),
    # 8x8 register tiles: 2 positions x 64 accumulators; 8x1 tiles, two warps a position's block tile each way
    (conv2d_args(8, 8, 64, 3, 1, 1), {"block_co": 64, "warp_co": 64, "warp_lanes_n": 4, "block_tiles": 32,
                                      "warp_tiles": 32}),
    (conv2d_args(8, 8, 64, 3, 1, 1), {"block_co": 64, "warp_co": 32, "warp_lanes_n": 8, "block_tiles": 16,
                                      "warp_tiles": 8, "warp_positions": 4, "pipeline": "sync"}),
    # F(4x4, 3x3): 36 positions, 6x6 patches; a 9x9 output's last tiles are a quarter inside
    (conv2d_args(9, 6, 20, 3, 1, 1), {"tile": 4, "warp_positions": 4, "block_co": 16, "warp_co": 16}),
    (batched(conv2d_args(9, 8, 16, 3, 1, 0), 2), {"tile": 4, "block_co": 16, "warp_co": 16, "block_tiles": 16,
                                                  "warp_tiles": 16, "chunk": 4, "warp_positions": 4,
                                                  "pipeline": "sync"}),
    (conv2d_args(7, 16, 32, 3, 1, 2), {"tile": 4, "chunk": 16, "warp_positions": 4, "block_co": 16, "warp_co": 16,
                                       "block_tiles": 16, "warp_tiles": 16, "warp_lanes_n": 4}),
    # F(4x4) in 4 warps of 9 positions each (144 accumulators a thread), and in 6 warps of 6
    (batched(conv2d_args(9, 6, 20, 3, 1, 1), 2), {"tile": 4, "warp_positions": 9, "block_tiles": 16, "warp_tiles": 16,
                                                  "pipeline": "sync"}),
    (conv2d_args(9, 6, 20, 3, 1, 1), {"tile": 4, "warp_positions": 6, "block_tiles": 16, "warp_tiles": 16}),
])
def test_configs_compute_the_convolution(args, knobs):
    task = engine.create_task(NAME, args)
    cfg = config(task, **knobs)
    assert task.why_invalid(cfg) is None, task.why_invalid(cfg)
    # F(4x4)'s transforms round more than F(2x2)'s (engine.ops.conv2d_winograd.tiling)
    assert cuda_on_cpu.error_against_reference(task, cfg) < (1e-6 if cfg["tile"].val == 2 else 2e-5)


@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_configs_compile_for_both_architectures(tmp_path, arch):
    task = engine.create_task(NAME, PRESETS["WG-28-128-128-k3-b32"].args)
    configs = [task.default_config(), config(task, pipeline="sync", chunk=16),
               config(task, block_co=64, warp_co=64, warp_lanes_n=4, warp_positions=2),
               config(task, tile=4, warp_positions=4, block_co=16, warp_co=16)]
    assert [task.why_invalid(c) for c in configs] == [None] * 4
    with Builder(arch, workers=2, cache_dir=tmp_path, timeout=120) as builder:
        results = builder.build([task.template.kernel(task.params, c) for c in configs])
    assert [r.message[:300] for r in results if not r.ok] == []
