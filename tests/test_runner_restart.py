"""The runner's parent side without a GPU: a child that hangs, crashes or reports a
poisoned context costs exactly one record, and a fresh child gets the task and every
job still queued. The child here speaks the runner's messages but measures nothing."""
from __future__ import annotations

import os
import time

import pytest

from engine.gpu.runner import RunResult, Runner
from engine.ops.base import KernelSource
from engine.measure import DeviceInfo
from engine.logfile import ErrorNo

SOURCE = KernelSource("k", "", (1, 1, 1), (1, 1, 1), 0, ("data", "kernel", "output"), 2)


def scripted_child(conn, device_id, settings):
    """Runs 'ok', hangs on 'hang', exits on 'crash', reports a fatal fault on 'fault'."""
    tasks = set()
    conn.send(("ready", DeviceInfo(model="scripted")))
    while True:
        message = conn.recv()
        if message is None:
            return
        if message[0] == "task":
            tasks.add(message[1])
            continue
        _, job_id, task_key, behaviour, _ = message
        if task_key not in tasks:
            conn.send(("result", job_id, RunResult(ErrorNo.UNKNOWN_ERROR, message="task never sent"), False))
        elif behaviour == "hang":
            time.sleep(3600)
        elif behaviour == "crash":
            os._exit(3)
        elif behaviour == "fault":
            conn.send(("result", job_id, RunResult(ErrorNo.RUNTIME_DEVICE, message="illegal address"), True))
            return
        else:
            conn.send(("result", job_id, RunResult(ErrorNo.NO_ERROR, costs=(1e-5,)), False))


def run(behaviours, timeout=2.0):
    with Runner(timeout=timeout, child_main=scripted_child) as runner:
        assert runner.start().model == "scripted"
        runner.add_task("t", [], None)
        results = runner.run("t", [(b, SOURCE) for b in behaviours])
        return [r.error_no for r in results], runner.restarts


def test_jobs_run_in_one_child_when_nothing_fails():
    assert run(["ok", "ok", "ok"]) == ([ErrorNo.NO_ERROR] * 3, 0)


def test_a_hanging_kernel_times_out_and_the_jobs_after_it_still_run():
    errors, restarts = run(["ok", "hang", "ok", "ok"], timeout=1.0)
    assert errors == [ErrorNo.NO_ERROR, ErrorNo.RUN_TIMEOUT, ErrorNo.NO_ERROR, ErrorNo.NO_ERROR]
    assert restarts == 1


def test_a_child_that_dies_costs_one_runtime_device_error():
    errors, restarts = run(["crash", "ok"])
    assert errors == [ErrorNo.RUNTIME_DEVICE, ErrorNo.NO_ERROR]
    assert restarts == 1


def test_a_poisoned_context_restarts_the_child_with_the_task_sent_again():
    errors, restarts = run(["fault", "ok", "fault", "ok"])
    assert errors == [ErrorNo.RUNTIME_DEVICE, ErrorNo.NO_ERROR, ErrorNo.RUNTIME_DEVICE, ErrorNo.NO_ERROR]
    assert restarts == 2


def child_without_gpu(conn, device_id, settings):
    raise SystemExit(1)  # as a child does when CuPy or the driver is missing


def test_a_runner_that_cannot_start_says_so_instead_of_hanging():
    from engine.gpu.runner import GpuUnavailable
    from engine.measure import MeasurerUnavailable

    runner = Runner(child_main=child_without_gpu)
    with pytest.raises(GpuUnavailable, match="could not start") as caught:
        runner.start()
    assert isinstance(caught.value, MeasurerUnavailable)  # the CLI prints it as one error line
