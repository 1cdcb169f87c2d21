"""On a GPU: confirmations of real kernels interleaved with cuDNN / cuBLAS and the default
config in a fresh measuring process, warm and cold; and a generator change detected.

Marked `gpu`; skipped where CuPy or a CUDA GPU is missing (CI has neither).
"""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

import engine
from engine.codehash import config_code_hash
from engine.confirm import MIN_ROUNDS, Role, confirm_contenders, contenders_for
from engine.logfile import pick_best, read_log_file
from engine.workloads import PRESETS

from gpu_only import GPU_ONLY

pytestmark = GPU_ONLY

LOGS = Path(__file__).resolve().parent.parent / "docs" / "benchmarks"


@pytest.fixture(scope="module")
def stopwatch():
    from engine.gpu.confirming import FreshProcessStopwatch

    with FreshProcessStopwatch() as watch:
        yield watch


def committed_best(task, log: Path):
    best = [r for key, r in pick_best(read_log_file(log).records).items() if (key[1], key[2]) == task.workload_key]
    return min(best, key=lambda r: r.mean_cost)


def confirmed(stopwatch, preset: str, log: Path, rounds: int = MIN_ROUNDS):
    task = engine.create_task(PRESETS[preset].task_name, PRESETS[preset].args)
    best = committed_best(task, log)
    contenders = contenders_for(task, [(best.config_index, best.entity)])
    return task, best, confirm_contenders(task, contenders, stopwatch, rounds)


def test_c12_is_confirmed_beside_cudnn_and_its_default_in_a_fresh_process(stopwatch):
    task, best, result = confirmed(stopwatch, "C12", LOGS / "conv2d-h200-logs" / "c12.log.gz")

    assert [t.contender.role for t in result.timings] == [Role.TUNED, Role.VENDOR, Role.DEFAULT]
    assert [(t.error, len(t.warm), len(t.cold)) for t in result.timings] == [("", MIN_ROUNDS, MIN_ROUNDS)] * 3
    ours, cudnn, default = result.timings
    assert result.environment["pid"] != os.getpid()  # measured in a process of its own
    assert result.environment["gpu_uuid"].startswith("GPU-") and result.environment["nvrtc"]
    # Inputs of C12 fit in L2: with L2 flushed before each launch it cannot be faster.
    assert ours.cold_spread.median >= 0.95 * ours.warm_spread.median
    # Logged within 10 % and the rounds within 10 % of each other (the H200 reproduces itself).
    assert ours.warm_spread.median == pytest.approx(best.mean_cost, rel=0.10)
    assert ours.warm_spread.max / ours.warm_spread.min < 1.10
    assert cudnn.details["library"] == "cuDNN" and not cudnn.details["algorithm"].startswith("unknown"), cudnn.details["algorithm"]
    assert "exhaustive" in cudnn.details["search"] and cudnn.details["relative_error"] < 1e-4  # no TF32
    assert default.warm_spread.median > ours.warm_spread.median
    config = task.config_space.from_entity(best.entity)
    assert ours.details["code_hash"] == config_code_hash(task, config, "sm_90")


def test_gemm_is_confirmed_against_the_faster_cublas_back_end(stopwatch):
    _, _, result = confirmed(stopwatch, "G5", LOGS / "operators-h200-logs" / "2026-12-01" / "session4" / "s10-skinny.log.gz")

    ours, cublas, _default = result.timings
    assert ours.ok and cublas.ok, (ours.error, cublas.error)
    assert cublas.details["blas_backend"] in ("cublas", "cublaslt")
    assert not cublas.details["algorithm"].startswith("unknown"), cublas.details["algorithm"]
    assert set(cublas.details["backend_times_us"]) >= {"cublas"}


def test_a_config_whose_generator_changed_is_detected_as_changed(stopwatch, monkeypatch):
    task, best, result = confirmed(stopwatch, "C12", LOGS / "conv2d-h200-logs" / "c12.log.gz")
    measured_hash = result.timings[0].details["code_hash"]
    config = task.config_space.from_entity(best.entity)
    assert config_code_hash(task, config, "sm_90") == measured_hash

    template = type(task.template)
    generate = template.kernel

    def changed_generator(self, params, config):  # the same kernel with one more line
        source = generate(self, params, config)
        return dataclasses.replace(source, code="// generator changed\n" + source.code)

    monkeypatch.setattr(template, "kernel", changed_generator)
    assert config_code_hash(task, config, "sm_90") != measured_hash


def test_tuning_records_carry_the_code_hash_of_what_ran():
    from engine.gpu.measurer import GpuMeasurer
    from engine.measure import to_record

    task = engine.create_task(PRESETS["C12"].task_name, PRESETS["C12"].args)
    config = task.default_config()
    with GpuMeasurer(build_workers=2) as measurer:
        result = measurer.measure(task, [config])[0]
    assert result.ok, result.error_msg
    record = to_record(task, config, result, measurer.device.target)
    assert record.code_hash == config_code_hash(task, config, "sm_90")


def test_a_custom_kernel_with_constant_memory_is_confirmed_with_its_constants_filled(stopwatch):
    from test_gpu_operators import constant_memory_task

    task = constant_memory_task()
    config = task.config_space.get(1)
    contenders = contenders_for(task, [(config.index, config.to_entity())])

    result = confirm_contenders(task, contenders, stopwatch)

    tuned = result.of_role(Role.TUNED)[0]
    assert tuned.ok, tuned.error  # an unfilled __constant__ gives zeros: a wrong answer
