"""ReplayMeasurer answers from a recording; a space restricted to it replays a whole run."""
from __future__ import annotations

import numpy as np
import pytest

import engine
from engine.measure import DeviceInfo
from engine.logfile import ErrorNo, read_records
from engine.replay import (RecordingError, ReplayMeasurer, load_recording, recording_task,
                           restrict_to_recording)

from synthetic_fixtures import c12_recording, c12_task, write_recording


def test_it_answers_exactly_what_was_recorded_errors_included():
    records = c12_recording()
    task = c12_task()
    failed = next(r for r in records if not r.ok)
    ran = [r for r in records if r.ok][:5]
    measurer = ReplayMeasurer(records)
    configs = [task.config_space.get(r.config_index) for r in [failed, *ran]]
    results = measurer.measure(task, configs)
    assert (results[0].error_no, results[0].costs, results[0].error_msg) == (failed.error_no, (), failed.error_msg)
    assert [r.costs for r in results[1:]] == [r.costs for r in ran]
    assert measurer.device == DeviceInfo(model="synthetic-h200", is_replay=True)


def test_a_config_not_in_the_recording_is_an_unknown_error_that_says_so():
    task = c12_task()
    recorded = {r.config_index for r in c12_recording()}
    missing = next(c for c in task.config_space.sample(np.random.default_rng(1), 50)
                   if c.index not in recorded)
    [result] = ReplayMeasurer(c12_recording()).measure(task, [missing])
    assert result.error_no == ErrorNo.UNKNOWN_ERROR
    assert result.error_msg == f"config {missing.index} of conv2d_nchw.cuda is not in the recording (synthetic-h200)"


def test_restricting_a_task_to_a_recording_keeps_exactly_its_configs():
    task = restrict_to_recording(c12_task(), c12_recording())
    assert list(task.config_space.iter_indexes()) == sorted(r.config_index for r in c12_recording())
    assert task.workload_key == c12_task().workload_key


def test_a_recording_of_several_gpus_needs_a_device_and_answers_for_that_one(tophub_log):
    records = load_recording(str(tophub_log))
    with pytest.raises(RecordingError, match=r"records of 5 GPU models \(1080ti, jetson-nano, titanx, tx2, v100\)"):
        ReplayMeasurer(records)
    measurer = ReplayMeasurer(records, device=DeviceInfo(model="titanx", is_replay=True))
    first = next(r for r in records if r.model == "titanx" and r.task_name == "conv2d_nchw.cuda")
    task = engine.create_task(first.task_name, first.args)
    # TopHub lists tile_rx before tile_ry; matching by entity finds the config all the same.
    [result] = measurer.measure(task, [task.config_space.from_entity(first.entity)])
    assert result.costs == first.costs


def test_recording_task_needs_a_recording_of_one_workload(tmp_path, tophub_log):
    task = recording_task(load_recording(write_recording(tmp_path / "c12.log")))
    assert task.workload_key == c12_task().workload_key and len(task.config_space) == len(c12_recording())
    with open(tophub_log, encoding="utf-8") as stream:
        with pytest.raises(RecordingError, match="replay needs exactly one"):
            recording_task(read_records(stream))


def test_loading_a_missing_or_empty_recording_fails_clearly(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_recording(str(tmp_path / "absent.log"))
    (tmp_path / "junk.log").write_text("not a record\n")
    with pytest.raises(RecordingError, match="holds no version 0.2 tuning records"):
        load_recording(str(tmp_path / "junk.log"))
