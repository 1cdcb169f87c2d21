"""A tensor-core GEMM whose C is in its 16-bit inputs' precision (engine.ops.gemm_tc: the
workload's third argument), without a GPU: the args, the inputs, how pages name it, the
cuBLAS baseline's C, NVRTC compiles for sm_80 and sm_90, and every store path's answers on
the CPU (tests/cuda_on_cpu.py), rounded to nearest even from the fp32 accumulators."""
from __future__ import annotations

import types

import numpy as np
import pytest

import cuda_on_cpu
import engine
from engine.gpu.baselines import tensor_core_c_dtype
from engine.gpu.builder import Builder
from engine.gpu.runner import output_values, poison
from engine.ops import BadArgs
from engine.ops.gemm_tc.kernel import bfloat16_bits
from engine.ops.gemm_tc.tiling import WGMMA_BLOCK_K
from engine.workloads import GEMM_TC_16BIT_C, PRESETS, gemm_tc_args

PRECISIONS = ["float16", "bfloat16"]
UNIT_ROUNDOFF = {"float16": 2**-11, "bfloat16": 2**-8}


def task_of(m, n, k, precision, c_dtype=None):
    return engine.create_task("gemm_tensorcore", gemm_tc_args(m, n, k, precision, c_dtype or precision))


def config_of(task, **values):
    wgmma = values.get("mainloop") == "wgmma"
    base = dict(warp_m=16, warp_n=16, warps_k=1, block_k=WGMMA_BLOCK_K[task.params.precision]) if wgmma else {}
    return task.config_space.from_entity([[name, "ot", v] for name, v in {"raster": 1, **base, **values}.items()])


def test_c_dtype_is_part_of_the_workload():
    for precision in PRECISIONS:
        wide, narrow = task_of(64, 64, 64, precision, "float32"), task_of(64, 64, 64, precision)
        assert wide.workload_key != narrow.workload_key
        assert (wide.params.c_dtype, narrow.params.c_dtype) == ("float32", precision)
        assert wide.params.bytes_moved - narrow.params.bytes_moved == 64 * 64 * 2  # C's 4 bytes an element against 2
    assert task_of(64, 64, 64, "bfloat16", "float32").args == gemm_tc_args(64, 64, 64, "bfloat16")


@pytest.mark.parametrize("third, message", [
    ("float32", "the only one to name is 'bfloat16'"),
    ("float16", "not 'float16'"),
    ("tf32", "is C's dtype"),
])
def test_only_the_inputs_own_dtype_may_be_named(third, message):
    args = gemm_tc_args(64, 64, 64, "bfloat16") + [third]
    with pytest.raises(BadArgs, match=message):
        engine.create_task("gemm_tensorcore", args)


def test_inputs_give_c_in_its_dtype():
    for precision, dtype in [("float16", np.float16), ("bfloat16", np.uint16)]:
        task = task_of(24, 16, 32, precision)
        *_, c = task.template.make_inputs(task.params, np.random.default_rng(0))
        assert c.dtype == dtype and c.shape == (24, 16)


def test_presets_offer_a_16_bit_c_beside_every_16_bit_workload():
    assert len(GEMM_TC_16BIT_C) == 16
    for preset in GEMM_TC_16BIT_C:
        task = engine.create_task(preset.task_name, preset.args)
        assert task.params.c_dtype == task.params.precision != "tf32"
        assert f"{task.params.precision} → {task.params.precision}" in preset.description
        assert task.why_invalid(task.default_config()) is None
        twin = PRESETS[preset.name.removesuffix("c")]
        assert twin.args + [task.params.precision] == preset.args


def test_cublas_writes_c_as_the_workload_does():
    """float32 from 16-bit inputs (torch.mm's out_dtype); a 16-bit C, and tf32's, as PyTorch's default."""
    torch = types.SimpleNamespace(float32="torch.float32")  # the one attribute the rule reads
    assert tensor_core_c_dtype(torch, task_of(16, 64, 64, "bfloat16", "float32")) == "torch.float32"
    assert tensor_core_c_dtype(torch, task_of(16, 64, 64, "bfloat16")) is None
    assert tensor_core_c_dtype(torch, engine.create_task("gemm_tensorcore", gemm_tc_args(16, 64, 64, "tf32"))) is None


# Every store of C: mma_sync's registers (sliced K summed first) and its split-K cluster sum; wgmma's
# consumers with either loader, clusters, persistent blocks, pingpong, and its split-K sum. Tails in M and N.
CPU_CASES = [
    (37, 40, 24, dict(block_m=32, block_n=32, block_k=16, warp_m=16, warp_n=16, warps_k=1, stages=2)),
    (70, 48, 88, dict(block_m=16, block_n=16, block_k=32, warp_m=16, warp_n=16, warps_k=2, stages=3, raster=4)),
    (37, 40, 264, dict(block_m=32, block_n=16, block_k=32, warp_m=16, warp_n=16, warps_k=1, stages=2, split_k=8)),
    (37, 72, 24, dict(mainloop="wgmma", block_m=64, block_n=64, stages=2, consumers=1, producer=0)),
    (130, 64, 136, dict(mainloop="wgmma", block_m=128, block_n=64, stages=2, consumers=2, producer=1)),
    (136, 200, 392, dict(mainloop="wgmma", block_m=128, block_n=128, stages=4, consumers=2, producer=1, loader="tma")),
    (130, 136, 200, dict(mainloop="wgmma", block_m=64, block_n=128, stages=3, consumers=1, producer=1, loader="tma",
                         cluster=2)),
    (1100, 600, 136, dict(mainloop="wgmma", block_m=64, block_n=64, stages=2, consumers=1, producer=1, loader="tma",
                          persistent=1, raster=4)),
    (1100, 1104, 136, dict(mainloop="wgmma", block_m=64, block_n=64, stages=3, consumers=2, producer=1, loader="tma",
                           persistent=1, pingpong=1, raster=4)),
    (16, 136, 392, dict(mainloop="wgmma", block_m=64, block_n=128, stages=4, consumers=1, producer=1, loader="tma",
                        split_k=4)),
]


def rounded(x: np.ndarray, precision: str) -> np.ndarray:
    """float64 values rounded once, to nearest even, into `precision` (as float64 again)."""
    if precision == "float16":
        return x.astype(np.float32).astype(np.float16).astype(np.float64)
    return output_values(bfloat16_bits(x.astype(np.float32)))


@pytest.mark.skipif(not cuda_on_cpu.available(), reason="needs g++ to run kernels on the CPU")
@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("m, n, k, values", CPU_CASES, ids=[f"{m}x{n}x{k}-{v.get('mainloop', 'mma_sync')}"
                                                            for m, n, k, v in CPU_CASES])
def test_c_is_the_fp32_sum_rounded_once(precision, m, n, k, values):
    """The products are exact in fp32, so C must be the reference rounded to nearest even, an element
    off only where fp32's order of summation lands it across a rounding boundary: then by at most
    two units of C's precision, and the fp32 sum's own error (K terms of at most 1)."""
    task = task_of(m, n, k, precision)
    config = config_of(task, **values)
    assert task.why_invalid(config) is None
    inputs = task.template.make_inputs(task.params, np.random.default_rng(0))
    expected = task.template.reference(task.params, inputs)
    poison(inputs[2])
    cuda_on_cpu.run(task.template.kernel(task.params, config), inputs)
    got = output_values(inputs[2])
    assert np.isfinite(got).all()  # every element written (C was NaN)
    off = np.abs(got - rounded(expected, precision)) > 0
    assert off.mean() < 0.002
    bound = 2 * UNIT_ROUNDOFF[precision] * np.abs(expected) + k * 2**-24
    assert np.all(np.abs(got - expected)[off] <= bound[off])


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_random_valid_configs_with_a_16_bit_c_compile_with_nvrtc(tmp_path, arch):
    from engine.ops import DeviceLimits

    limits = DeviceLimits(wgmma=False, max_cluster_size=1) if arch == "sm_80" else None
    picked = []
    for precision, shape in [("bfloat16", (4096, 4096, 4096)), ("float16", (16, 4096, 4096))]:
        task = engine.create_task("gemm_tensorcore", gemm_tc_args(*shape, precision, precision), limits)
        picked += [(task, c) for c in task.config_space.sample(np.random.default_rng(16), 8)]
    if arch == "sm_90":  # the square shapes' wgmma candidates, and a wgmma split-K decode one
        task = task_of(4096, 4096, 4096, "bfloat16")
        picked += [(task, config_of(task, mainloop="wgmma", block_m=128, block_n=256, stages=4, consumers=2,
                                    producer=1, loader="tma", cluster=2, persistent=1, raster=8)),
                   (task, config_of(task, mainloop="wgmma", block_m=128, block_n=128, stages=4, consumers=2,
                                    producer=1, loader="tma", persistent=1, pingpong=1, raster=8))]
        decode = task_of(16, 4096, 4096, "float16")
        picked.append((decode, config_of(decode, mainloop="wgmma", block_m=64, block_n=256, stages=3, consumers=1,
                                         producer=1, loader="tma", split_k=4)))
    assert all(task.why_invalid(c) is None for task, c in picked)
    sources = [task.template.kernel(task.params, c) for task, c in picked]
    assert all("pack_" in s.code and "float* __restrict__ C" not in s.code for s in sources)
    with Builder(arch, workers=2, cache_dir=tmp_path, timeout=120) as builder:
        results = builder.build(sources)
    assert [(c.values(), r.message[:400]) for (_, c), r in zip(picked, results) if not r.ok] == []
