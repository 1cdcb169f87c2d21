"""On a GPU: real kernels of both conv2d templates against the numpy reference, faults
that cost one record each, wrong answers caught, baselines and the apply-best round trip.

Marked `gpu`; skipped where CuPy or a CUDA GPU is missing (CI has neither).
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import engine
from engine.ops.base import KernelSource
from engine.logfile import ErrorNo, format_record, read_records
from engine.workloads import PRESETS

from gpu_only import GPU_ONLY

pytestmark = GPU_ONLY

ARGS = ("data", "kernel", "output")
SIGNATURE = "(const float* d, const float* w, float* out)"
HANG = f'extern "C" __global__ void hang{SIGNATURE} {{ volatile float* o = out; while (o[0] != 12345.0f) {{ }} }}'
FAULT = f'extern "C" __global__ void fault{SIGNATURE} {{ float* p = (float*)0x10; p[threadIdx.x] = 1.0f; }}'
ZEROS = f'extern "C" __global__ void zeros{SIGNATURE} {{ for (int i = 0; i < 25088; ++i) out[i] = 0.0f; }}'
NOTHING = f'extern "C" __global__ void nothing{SIGNATURE} {{ }}'


@pytest.fixture(scope="module")
def measurer():
    from engine.gpu.measurer import GpuMeasurer

    with GpuMeasurer(run_timeout=3.0) as m:
        yield m


def c12():
    return engine.create_task(PRESETS["C12"].task_name, PRESETS["C12"].args)


def raw(name: str, code: str, block=(1, 1, 1)) -> KernelSource:
    return KernelSource(name, code, (1, 1, 1), block, 0, ARGS, 2)


def test_it_reports_the_gpu_it_measures_on(measurer):
    assert measurer.device.model != "unknown"
    assert measurer.device.target == f"cuda -model={measurer.device.model}"
    assert measurer.device.sm_count > 0 and measurer.device.compute_capability


@pytest.mark.parametrize("layer", ["C1", "C4", "C8", "C12"])
def test_random_conv2d_nchw_configs_compute_the_reference(measurer, layer):
    task = engine.create_task(PRESETS[layer].task_name, PRESETS[layer].args)
    configs = task.config_space.sample(np.random.default_rng(int(layer[1:])), 12)
    results = measurer.measure(task, configs)
    assert [r.error_msg for r in results if not r.ok] == []
    assert all(r.mean_cost > 0 for r in results)


def test_random_seed_template_configs_compute_the_reference(measurer):
    task = engine.create_task("conv2d_no_batching", [1, 7, 7, 512, 512, 3, 3, [1, 1], [1, 1]])
    results = measurer.measure(task, task.config_space.sample(np.random.default_rng(3), 12))
    assert [r.error_msg for r in results if not r.ok] == []


def test_a_hanging_kernel_costs_one_record_and_the_runner_restarts(measurer):
    task = c12()
    good = task.template.kernel(task.params, task.default_config())
    restarts = measurer.runner_restarts
    results = measurer.measure_sources(task, [good, raw("hang", HANG), good])
    assert [r.error_no for r in results] == [ErrorNo.NO_ERROR, ErrorNo.RUN_TIMEOUT, ErrorNo.NO_ERROR]
    assert measurer.runner_restarts == restarts + 1


def test_an_illegal_address_costs_one_record_and_the_runner_restarts(measurer):
    task = c12()
    good = task.template.kernel(task.params, task.default_config())
    restarts = measurer.runner_restarts
    results = measurer.measure_sources(task, [good, raw("fault", FAULT, (32, 1, 1)), good])
    assert [r.error_no for r in results] == [ErrorNo.NO_ERROR, ErrorNo.RUNTIME_DEVICE, ErrorNo.NO_ERROR]
    assert "illegal" in results[1].error_msg.lower()
    assert measurer.runner_restarts == restarts + 1


def unfused_winograd_kernels(measurer):
    """The unfused Winograd conv's task and default kernel, and that kernel with its grid widened past what any SM
    holds (2048 threads of its blocks) times the SMs: its blocks would wait at the grid barrier for blocks that
    never start."""
    task = engine.create_task(PRESETS["WN-28-128-128-k3-b32"].task_name, PRESETS["WN-28-128-128-k3-b32"].args)
    good = task.template.kernel(task.params, task.default_config())
    return task, good, dataclasses.replace(good, grid=(measurer.device.sm_count * (2048 // good.block[0] + 1), 1, 1))


def test_an_unfused_winograd_kernel_whose_grid_cannot_be_resident_at_once_fails_instead_of_hanging(measurer):
    task, good, too_wide = unfused_winograd_kernels(measurer)
    restarts = measurer.runner_restarts
    results = measurer.measure_sources(task, [good, too_wide, good])
    assert [r.error_no for r in results] == [ErrorNo.NO_ERROR, ErrorNo.INSTANTIATION_ERROR, ErrorNo.NO_ERROR]
    assert "wait on one another, so all must be resident at once" in results[1].error_msg
    assert measurer.runner_restarts == restarts


def test_loading_an_unfused_winograd_kernel_whose_grid_cannot_be_resident_at_once_is_refused(measurer):
    """Confirmation and apply-best load kernels with `load_kernel`: it refuses the widened grid before any launch."""
    import cupy as cp

    from engine.gpu.builder import Builder
    from engine.gpu.device import arch_of
    from engine.gpu.runner import NotResidentAtOnce, load_kernel

    _, good, too_wide = unfused_winograd_kernels(measurer)
    with Builder(arch_of(measurer.device), workers=1) as builder:
        (build,) = builder.build([good])
    assert build.ok, build.message
    assert load_kernel(cp, build.cubin_path, good) is not None
    with pytest.raises(NotResidentAtOnce, match="wait on one another, so all must be resident at once"):
        load_kernel(cp, build.cubin_path, too_wide)


def test_wrong_and_unwritten_outputs_are_wrong_answers(measurer):
    results = measurer.measure_sources(c12(), [raw("zeros", ZEROS), raw("nothing", NOTHING)])
    assert [r.error_no for r in results] == [ErrorNo.WRONG_ANSWER, ErrorNo.WRONG_ANSWER]
    assert "relative L2 error" in results[0].error_msg


def test_a_kernel_that_does_not_compile_keeps_its_log(measurer):
    broken = raw("broken", f'extern "C" __global__ void broken{SIGNATURE} {{ out[0] = no_such_name; }}')
    (result,) = measurer.measure_sources(c12(), [broken])
    assert result.error_no == ErrorNo.COMPILE_DEVICE
    assert "no_such_name" in result.error_msg


def test_the_default_config_baseline_is_a_baseline_record(measurer):
    from engine.gpu.baselines import measure_baseline

    record = measure_baseline(c12(), "default-config", measurer)
    assert record.ok and record.entity == [] and record.tvm_version == "baseline:default-config"
    assert read_records([format_record(record)])[0].tvm_version == "baseline:default-config"


def test_the_cudnn_baseline_is_checked_and_timed(measurer):
    pytest.importorskip("torch")
    from engine.gpu.baselines import measure_baseline

    record = measure_baseline(c12(), "cudnn", measurer)
    assert record.ok, record.error_msg
    assert record.tvm_version == "baseline:cudnn" and 1e-6 < record.mean_cost < 1e-2


def test_apply_best_gives_the_logged_best_kernel_back(measurer, tmp_path):
    from engine.gpu.apply_best import check_and_time, load_best_kernel
    from engine.callbacks import log_to_file
    from engine.tune import tune
    from engine.tuners import get_tuner

    task = c12()
    log = tmp_path / "c12.log"
    result = tune(task, get_tuner("random", task, seed=5), measurer, 24, callbacks=[log_to_file(str(log))], batch_size=12)
    kernel = load_best_kernel(str(log), task)
    assert kernel.record.config_index == result.best.config_index
    checked = check_and_time(kernel)
    assert checked.relative_error < 1e-4
    # Timed the same way as during tuning: within 20 % of the logged time.
    assert abs(checked.median - result.best.mean_cost) < 0.2 * result.best.mean_cost
