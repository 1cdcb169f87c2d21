"""The contract every measurer keeps (engine.measure.Measurer), one suite over all of them:
the replay measurer, the paced replay a replay worker serves, and, on a GPU, the GPU
measurer (marked `gpu`; skipped where CuPy or a GPU is missing).

- one result per config, in order; a success has positive costs, a failure an error
  number, a message and no costs;
- a config it cannot answer is a failure it reports, never an exception;
- its device names a model, and results logged as records read back as the same results;
- closing it (twice, or by leaving a `with`) is harmless.
"""
from __future__ import annotations

import numpy as np
import pytest

from engine.logfile import ErrorNo, format_record, parse_line
from engine.measure import MeasureResult, result_of, to_record
from engine.replay import PacedReplayMeasurer, ReplayMeasurer, restrict_to_recording

from synthetic_fixtures import c12_recording, c12_task


def _has_gpu() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no CuPy, no driver or no device
        return False


GPU = [pytest.mark.gpu, pytest.mark.skipif(not _has_gpu(), reason="needs CuPy and a CUDA GPU")]


def replay():
    return ReplayMeasurer(c12_recording()), restrict_to_recording(c12_task(), c12_recording())


def paced():
    return PacedReplayMeasurer(ReplayMeasurer(c12_recording()), pace=0.001), restrict_to_recording(
        c12_task(), c12_recording())


def gpu():
    from engine.gpu.measurer import GpuMeasurer

    return GpuMeasurer(run_timeout=5.0), c12_task()


@pytest.fixture(params=[replay, paced, pytest.param(gpu, marks=GPU)], ids=["replay", "paced-replay", "gpu"])
def measurer_and_task(request):
    measurer, task = request.param()
    with measurer:
        yield measurer, task


def unanswerable(measurer):
    """A config of C12 the measurer cannot time: not in the recording, or too many threads."""
    space = c12_task().config_space
    if measurer.device.is_replay:
        recorded = {record.config_index for record in c12_recording()}
        return space.get(next(i for i in range(len(space)) if i not in recorded))
    entity = c12_task().default_config().to_entity()
    entity[0] = ["tile_f", "sp", [-1, 1, 512, 1]]  # 512 x 7 x 7 threads: more than a block holds
    return space.from_entity(entity)


def test_it_answers_each_config_in_order(measurer_and_task):
    measurer, task = measurer_and_task
    configs = task.config_space.sample(np.random.default_rng(0), 6)
    results = measurer.measure(task, configs)
    assert len(results) == len(configs) and all(isinstance(r, MeasureResult) for r in results)
    for result in results:
        if result.ok:
            assert result.error_no == ErrorNo.NO_ERROR and all(c > 0 for c in result.costs)
        else:
            assert result.costs == () and result.error_msg
    assert any(r.ok for r in results)


def test_a_config_it_cannot_answer_is_a_failure_it_reports(measurer_and_task):
    measurer, _ = measurer_and_task
    [result] = measurer.measure(c12_task(), [unanswerable(measurer)])
    assert not result.ok and result.error_no != ErrorNo.NO_ERROR and result.error_msg


def test_its_results_log_and_read_back_as_the_same_measurements(measurer_and_task):
    measurer, task = measurer_and_task
    assert measurer.device.model and measurer.device.target == f"cuda -model={measurer.device.model}"
    configs = task.config_space.sample(np.random.default_rng(1), 3)
    for config, result in zip(configs, measurer.measure(task, configs)):
        record = parse_line(format_record(to_record(task, config, result, measurer.device.target)))
        again = result_of(record)
        assert (again.error_no, again.costs, again.timestamp) == (result.error_no, result.costs, result.timestamp)
        assert record.config_index == config.index and record.model == measurer.device.model


def test_closing_twice_is_harmless(measurer_and_task):
    measurer, _ = measurer_and_task
    measurer.close()
    measurer.close()
