"""The unfused Winograd conv, one persistent kernel of transforms, products and output transform between two
grid barriers: the direct conv's 3x3 stride-1 workloads, the persistent grid and its rules, its kernels run
here (tests/cuda_on_cpu, every block of the grid at once) against the float64 reference over repeated
launches of new inputs each, broken barriers caught by a lagging block or its lagging threads, and compiles
for both architectures."""
import dataclasses
import re

import numpy as np
import pytest

import cuda_on_cpu
from knob_configs import batched, config_over
import engine
from engine.gpu.builder import Builder
from engine.ops import DeviceLimits
from engine.ops.conv2d_winograd_nonfused.kernel import generate
from engine.ops.conv2d_winograd_nonfused.tiling import PERSISTENT_SMS, nonfused_tiling
from engine.ops.gemm.tiling import GemmTiling
from engine.workloads import PRESETS, conv2d_args

NAME = "conv2d_nchw_winograd_nonfused"
BASE = {"tile": 4, "block_co": 64, "block_tiles": 64, "block_k": 8, "warp_co": 32, "warp_tiles": 32, "thread_co": 4,
        "thread_tiles": 8, "warp_lanes_n": 4, "vector_u": 4, "vector_v": 4, "pipeline": "prefetch", "smem_pad": 4,
        "unroll_k": 32, "blocks_per_sm": 2}
# A block of 32 channels by 32 tiles: one warp of 4x8 registers, so the emulated layers get several blocks.
SMALL = {"block_co": 32, "block_tiles": 32, "warp_co": 32, "warp_tiles": 32}
needs_gxx = pytest.mark.skipif(not cuda_on_cpu.available(), reason="needs g++ to run kernels on the CPU")


def config(task, **knobs):
    return config_over(task, BASE, **knobs)


def test_the_grid_fills_every_sm_with_blocks_per_sm_blocks():
    task = engine.create_task(NAME, PRESETS["WN-28-128-128-k3-b32"].args)
    for blocks_per_sm in (1, 2):
        tiling = nonfused_tiling(task.params, config(task, blocks_per_sm=blocks_per_sm))
        assert tiling.grid == (blocks_per_sm * PERSISTENT_SMS, 1, 1)
    # 32 images of 7 x 7 tiles of 4x4: 36 positions' GEMMs of 128 channels by 1568 tiles, in 64x64 units
    assert (tiling.tiles, tiling.units) == (1568, 36 * 2 * 25)
    source = task.template.kernel(task.params, task.default_config())
    assert source.co_resident and source.arg_order == ("data", "kernel", "output")
    assert "__launch_bounds__(128, 2)" in source.code


def test_every_presets_grid_fills_every_sm_at_either_tile():
    for name in (name for name in PRESETS if name.startswith("WN-")):
        task = engine.create_task(NAME, PRESETS[name].args)
        for tile in (2, 4):
            assert nonfused_tiling(task.params, config(task, tile=tile)).blocks == 2 * PERSISTENT_SMS, (name, tile)


def test_a_tiny_layer_gets_a_block_for_each_2_to_the_16_multiply_adds():
    task = engine.create_task(NAME, conv2d_args(9, 12, 20, 3, 1, 1, batch=2))  # 2 x 9 tiles of 4x4
    assert nonfused_tiling(task.params, task.default_config()).grid == (36 * 20 * 12 * 18 // 2**16, 1, 1)


@pytest.mark.parametrize("knobs, limits, message", [
    # 8x8 registers in 128x128x32 tiles, prefetched: 256 threads, and two blocks leave each 128 registers (the
    # blocks would be resident, but spill)
    ({"block_co": 128, "block_tiles": 128, "warp_co": 64, "warp_tiles": 32, "thread_co": 8, "thread_tiles": 8,
      "block_k": 32}, DeviceLimits(), "about 160 registers, more than the 128 that 2 block(s) of 256 threads an SM leave it: "
     "__launch_bounds__(256, 2) would hold it to those and spill the rest"),
    # one warp copying a 4-stage ring of 64x32 and 32x16 tiles a float at a time: 64 + 16 rounds a stage, whose
    # addresses and guards ptxas keeps (it used 255 registers and spilled 4336 bytes); without them the estimate was 74
    ({"block_co": 64, "block_tiles": 16, "block_k": 32, "warp_co": 64, "warp_tiles": 16, "thread_co": 1,
      "thread_tiles": 1, "warp_lanes_n": 8, "vector_u": 1, "vector_v": 1, "pipeline": "cp_async_4",
      "blocks_per_sm": 1}, DeviceLimits(), "about 314 registers per thread exceed the limit of 255"),
    # a 4-stage ring of 64x64x32 tiles: 68 KB a block, one fits an SM of 100 KB (an sm_86 GPU's) and two do not
    ({"block_k": 32, "pipeline": "cp_async_4", "vector_u": 1}, DeviceLimits(max_shared_memory_optin=99 * 1024),
     "2 blocks of 69632 bytes of shared memory (and 1024 the driver keeps for each) exceed an SM's 102400"),
    ({"blocks_per_sm": 1}, DeviceLimits(multiprocessors=114),
     "the persistent grid's 132 blocks wait on one another, so all must be resident at once"),
])
def test_configs_that_cannot_be_resident_together_or_would_spill_are_refused(knobs, limits, message):
    task = engine.create_task(NAME, PRESETS["WN-28-128-128-k3-b32"].args, limits)
    assert message in task.why_invalid(config(task, **knobs))


def test_the_products_gemm_rules_say_so():
    task = engine.create_task(NAME, conv2d_args(28, 126, 128, 3, 1, 1, 32))
    assert task.why_invalid(config(task)).startswith("the products' GEMM (M = CO 128, N = 1568 tiles, K = CI 126): "
                                                     "vector_a 4 does not divide K = 126")


def test_a_module_of_2_gib_of_workspace_or_more_is_refused_and_one_just_under_is_not():
    # 56² 512→64 at batch 128 in F(4x4): V is 36 x 512 x 25088 floats, the module 1.94 GiB in all
    large = engine.create_task(NAME, conv2d_args(56, 512, 64, 3, 1, 1, 128))
    assert nonfused_tiling(large.params, config(large)).module_bytes == 4 * (1179648 + 462422016 + 57802752) + 16
    assert large.why_invalid(config(large)) is None
    # F(2x2) of it is 3.45 GiB: ptxas would lay it out right, but past a signed 32-bit offset
    assert "would take 3701473296 bytes, not under 2147483648 (2 GiB)" in large.why_invalid(config(large, tile=2))
    # batch 512 in F(4x4), 7.76 GiB: ptxas's 32-bit offsets wrap, and the counter would land inside V
    huge = engine.create_task(NAME, conv2d_args(56, 512, 64, 3, 1, 1, 512))
    assert ("the module's __device__ memory (the workspace's U 1179648, V 1849688064, M 231211008 floats, and the "
            "barrier's counter) would take 8328314896 bytes") in huge.why_invalid(config(huge))


class GatheredGemmTiling(GemmTiling):
    def load_invariants(self, operand: str) -> tuple[str, str]:
        return ("int offset[1];", "offset[r] = kk;") if operand == "B" else ("", "")


def test_products_that_would_need_the_gemms_k_slice_sum_or_load_invariants_are_not_generated():
    task = engine.create_task(NAME, PRESETS["WN-28-128-128-k3-b32"].args)
    tiling = nonfused_tiling(task.params, task.default_config())
    sliced = dataclasses.replace(tiling, gemm=dataclasses.replace(tiling.gemm, slice_k=2))
    gathered = dataclasses.replace(tiling, gemm=GatheredGemmTiling(**vars(tiling.gemm)))
    for unsupported in (sliced, gathered):
        assert unsupported.why_not_tiled() is None
        with pytest.raises(ValueError, match="without its K slices' sum or its loads' loop invariants"):
            generate(unsupported)


# Emulated layers of 2 to 7 blocks, each more products' units than blocks.
CASES = [
    # F(2x2), pad 1, odd outputs (9x9: the last tiles half outside), channel tails on both sides of the products
    (batched(conv2d_args(9, 20, 24, 3, 1, 1), 2), {"tile": 2, **SMALL}),
    # F(4x4): the last tiles a quarter inside; K steps of 16 with a tail, cp.async ring of 3, A a float at a time
    (batched(conv2d_args(9, 20, 24, 3, 1, 1), 3), {**SMALL, "block_k": 16, "pipeline": "cp_async_3", "vector_u": 1,
                                                   "blocks_per_sm": 1}),
    # no padding (12x12 out of 14x14), images whose tiles meet inside a block; loads then compute, 2-wide vectors
    (batched(conv2d_args(14, 12, 20, 3, 1, 0), 3), {**SMALL, "pipeline": "sync", "vector_u": 2, "vector_v": 2,
                                                    "smem_pad": 0, "unroll_k": 4}),
    # pad 2 (a 9x9 output of 7x7), two warps of 16x16 tiles a block, a 4-stage ring, 2x2 registers
    (batched(conv2d_args(7, 16, 32, 3, 1, 2), 2), {"tile": 2, "block_co": 32, "block_tiles": 32, "warp_co": 16,
                                                   "warp_tiles": 32, "thread_co": 2, "thread_tiles": 2,
                                                   "warp_lanes_n": 8, "pipeline": "cp_async_4", "vector_u": 1}),
    # the default 64x64 tile of 4 warps over 40 channels and 50 tiles (52 padded)
    (batched(conv2d_args(10, 16, 40, 3, 1, 1), 2), {"tile": 2}),
]


def case_id(case) -> str:
    args, knobs = case
    return f"{args[0][1][0]}x{args[0][1][2]}-ci{args[0][1][1]}-co{args[1][1][0]}-p{args[3][0]}-m{knobs.get('tile', 4)}"


@needs_gxx
@pytest.mark.parametrize("args, knobs", CASES, ids=[case_id(c) for c in CASES])
def test_configs_compute_the_convolution_over_repeated_launches(args, knobs):
    task = engine.create_task(NAME, args)
    cfg = config(task, **knobs)
    assert task.why_invalid(cfg) is None, task.why_invalid(cfg)
    tiling = nonfused_tiling(task.params, cfg)
    assert 2 <= tiling.blocks <= 8 and tiling.units > tiling.blocks
    # each launch on new inputs, so one that read U, V or M as an earlier launch left them would be wrong;
    # F(4x4)'s transforms round more than F(2x2)'s (engine.ops.conv2d_winograd.tiling)
    errors = cuda_on_cpu.errors_over_launches(task, task.template.kernel(task.params, cfg), launches=3)
    assert all(error < (1e-6 if tiling.tile == 2 else 2e-5) for error in errors), errors  # NaN fails


def barrier_task():
    return engine.create_task(NAME, CASES[0][0])


def lagging_errors(source, lag_from: int = 0) -> list[float]:
    """Each of 3 launches' errors (new inputs each) of `barrier_task`'s `source`, in which the grid's last block
    lags behind the others (its threads from `lag_from` on: 1 keeps its thread 0 in pace)."""
    return cuda_on_cpu.errors_over_launches(barrier_task(), source, launches=3, lag=2, lag_from=lag_from)


def barrier_source():
    task = barrier_task()
    return task.template.kernel(task.params, config(task, **CASES[0][1]))


def broken(source, pattern: str, replacement: str):
    code, found = re.subn(pattern, replacement, source.code)
    assert found == 1
    return dataclasses.replace(source, code=code)


@needs_gxx
@pytest.mark.parametrize("lag_from", [0, 1])
def test_the_grid_barrier_holds_a_lagging_block_or_its_lagging_threads_back_launch_after_launch(lag_from):
    errors = lagging_errors(barrier_source(), lag_from)
    assert all(error < 1e-6 for error in errors), errors


@needs_gxx
def test_a_lagging_block_shows_a_grid_barrier_that_does_not_wait():
    errors = lagging_errors(broken(barrier_source(), r"grid_wait\(&grid_arrivals, [^;]*\);", ""))
    assert not any(error < 1e-2 for error in errors), errors  # every launch wrong (NaN counts)


@needs_gxx
def test_a_lagging_block_shows_a_barrier_that_counts_as_if_each_launch_began_at_zero():
    """Targets of grid and twice the grid are right in the first launch only: the counter runs on."""
    errors = lagging_errors(broken(barrier_source(), r"\(before / (\d+) \+ 1\) \* \d+", r"(before < \1 ? \1 : 2 * \1)"))
    assert errors[0] < 1e-6 and not any(error < 1e-2 for error in errors[1:]), errors


@needs_gxx
def test_lagging_threads_show_a_block_that_arrives_before_its_writes_are_done():
    """Thread 0's arrival ordered after the block's writes by the first __syncthreads: without it, only a
    block whose thread 0 runs ahead of its others shows (a whole block lagging keeps its threads together)."""
    source = broken(barrier_source(), r"__syncthreads\(\);  // this block's writes[^\n]*", "")
    in_pace, lagging = lagging_errors(source, lag_from=0), lagging_errors(source, lag_from=1)
    assert all(error < 1e-6 for error in in_pace), in_pace
    assert not any(error < 1e-2 for error in lagging), lagging


@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_configs_compile_for_both_architectures(tmp_path, arch):
    configs = []
    for preset in ("WN-28-128-128-k3-b32", "WN-14-256-256-k3-b32"):
        task = engine.create_task(NAME, PRESETS[preset].args)
        configs += [(task, task.default_config()), (task, config(task, pipeline="cp_async_3", vector_u=1, block_k=16)),
                    (task, config(task, tile=2, block_co=128, block_tiles=128, warp_co=64, warp_tiles=64,
                                  blocks_per_sm=1)),
                    *((task, c) for c in task.config_space.sample(np.random.default_rng(2), 3))]
    assert [task.why_invalid(c) for task, c in configs] == [None] * len(configs)
    with Builder(arch, workers=2, cache_dir=tmp_path, timeout=120) as builder:
        results = builder.build([task.template.kernel(task.params, c) for task, c in configs])
    assert [r.message[:300] for r in results if not r.ok] == []


@pytest.mark.parametrize("preset", ["WN-28-128-128-k3-b32", "WN-14-256-256-k3-b32"])
def test_the_default_config_compiles_without_spills(preset):
    from engine.gpu.nvrtc import compile_to_cubin

    task = engine.create_task(NAME, PRESETS[preset].args)
    _, log = compile_to_cubin(task.template.kernel(task.params, task.default_config()).code, "sm_90", ("-Xptxas=-v",))
    assert " 0 bytes spill stores, 0 bytes spill loads" in log, log
