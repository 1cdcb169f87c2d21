"""Replay: a measurer that answers from a recorded log, so tuning runs without a GPU.

`ReplayMeasurer(records)` answers each config with the first record of it in
the recording, error number and costs exactly as recorded. A config the
recording does not hold is answered as a failure with error 8 (unknown error)
and a message saying so: the config was never measured, so none of the
specific error numbers 1-7 describes it. `restrict_to_recording` limits a
task's space to the configs a recording holds, so a tuner never asks for one
that is not there and a whole tuning run can be replayed.

Configs are matched by their entity (knob values), not the logged index, so
old logs whose knob order differs from ours still match.

A Kernel Tuner cache file is a recording too (engine.kernel_tuner reads it): its
kernel is a `kernel_tuner` task whose space is the configs the cache holds.
"""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Sequence

from . import kernel_tuner
from .measure import DeviceInfo, MeasureResult, Measurer, result_of
from .logfile import ErrorNo, LogFileError, Record, read_log_file
from .space import EntityError

if TYPE_CHECKING:  # pragma: no cover
    from .space import ConfigEntity
    from .task import Task

NOT_RECORDED = ErrorNo.UNKNOWN_ERROR


class RecordingError(ValueError):
    """A recording that cannot be replayed as asked; the message says why."""


def load_recording(path: str | Path, device: str | None = None) -> list[Record]:
    """Every record of an AutoTVM log or a Kernel Tuner cache file, gzipped or not; OSError when
    it cannot be opened, RecordingError when it is neither or holds no record. `device` names
    the GPU model of a Kernel Tuner cache (needed when its device name is empty)."""
    try:
        if kernel_tuner.sniff_file(path) == kernel_tuner.CACHE:
            records = kernel_tuner.parse_cache(kernel_tuner.read_text(path), device).records
            what = "Kernel Tuner cache entries"
        elif device:
            raise RecordingError(f"{path} is an AutoTVM log, which names its GPU itself: leave out the device")
        else:
            records, what = read_log_file(path).records, "version 0.2 tuning records"
    except (LogFileError, kernel_tuner.KernelTunerFileError) as exc:
        raise RecordingError(str(exc)) from None
    if not records:
        raise RecordingError(f"{path} holds no {what}")
    return records


def recorded_configs(task: "Task", records: Iterable[Record]) -> dict[int, Record]:
    """Index in `task`'s space -> the first record of that config; records of other workloads are ignored."""
    found: dict[int, Record] = {}
    space = task.config_space
    key = task.workload_key  # computed once: a network's recording holds thousands of other tasks' records
    for record in records:
        if record.workload_key != key:
            continue
        try:
            index = space.index_of(record.entity)
        except EntityError:
            continue
        found.setdefault(index, record)
    return found


def restrict_to_recording(task: "Task", records: Iterable[Record]) -> "Task":
    """The task with its space limited to the configs the recording holds."""
    indices = recorded_configs(task, records)
    if not indices:
        raise RecordingError(f"the recording holds no config of {task.name} with args {task.args}")
    return dataclasses.replace(task, config_space=task.config_space.restrict(indices))


def recording_task(records: Sequence[Record], limits=None) -> "Task":
    """The one task a recording measured, its space restricted to the recorded configs."""
    from .task import create_task  # templates load only when a task is needed

    workloads = {record.workload_key: record for record in records}
    if len(workloads) != 1:
        names = ", ".join(f"{name} {args}" for name, args in list(workloads)[:5])
        raise RecordingError(f"the recording holds {len(workloads)} workloads ({names}); replay needs exactly one")
    first = next(iter(workloads.values()))
    return restrict_to_recording(create_task(first.task_name, first.args, limits=limits), records)


def recording_model(records: Iterable[Record]) -> str:
    models = sorted({record.model for record in records})
    if len(models) != 1:
        raise RecordingError(f"the recording holds records of {len(models)} GPU models ({', '.join(models)}); pick one")
    return models[0]


class ReplayMeasurer(Measurer):
    """Answers from a recording of one GPU model (the `device`'s, or the recording's only one)."""

    def __init__(self, records: Iterable[Record], device: DeviceInfo | None = None):
        records = list(records)
        if device is None:
            device = DeviceInfo(model=recording_model(records), is_replay=True)
        self.device = device
        self.records = [r for r in records if r.model == device.model]
        self._answers: dict[tuple, dict[int, Record]] = {}

    def measure(self, task: "Task", configs: Sequence["ConfigEntity"]) -> list[MeasureResult]:
        answers = self._answers.get(task.workload_key)
        if answers is None:
            answers = self._answers[task.workload_key] = recorded_configs(task, self.records)
        return [self._answer(task, config, answers.get(config.index)) for config in configs]

    def _answer(self, task: "Task", config: "ConfigEntity", record: Record | None) -> MeasureResult:
        if record is None:
            return MeasureResult.failure(
                NOT_RECORDED, f"config {config.index} of {task.name} is not in the recording ({self.device.model})"
            )
        return result_of(record)


class PacedReplayMeasurer(Measurer):
    """A replay measurer whose answers carry the time they were given, so every replayed
    trial is a new record; `pace` seconds per config make progress visible (a job page)."""

    def __init__(self, replay: ReplayMeasurer, pace: float = 0.0) -> None:
        self.replay = replay
        self.device = replay.device
        self.pace = pace

    @property
    def records(self) -> list[Record]:
        return self.replay.records

    def measure(self, task: "Task", configs: Sequence["ConfigEntity"]) -> list[MeasureResult]:
        if self.pace:
            time.sleep(self.pace * len(configs))
        now = time.time()
        return [dataclasses.replace(r, timestamp=now) for r in self.replay.measure(task, configs)]
