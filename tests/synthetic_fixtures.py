"""A replayable synthetic recording of C12 (conv2d_nchw.cuda, 7x7 512->512 K3), shared by the
tuner, loop, replay and CLI tests. Built once per test session; deterministic."""
from __future__ import annotations

from functools import lru_cache

import engine
from engine.logfile import write_records
from engine.replay import ReplayMeasurer, restrict_to_recording
from engine.synthetic import synthetic_recording
from engine.workloads import get_preset

RECORDED_CONFIGS = 1500


@lru_cache(maxsize=None)
def c12_task():
    preset = get_preset("C12")
    return engine.create_task(preset.task_name, preset.args)


@lru_cache(maxsize=None)
def c12_recording() -> tuple:
    return tuple(synthetic_recording(c12_task(), RECORDED_CONFIGS, seed=0))


def replayed_c12():
    """(task restricted to the recording, a fresh replay measurer)."""
    records = c12_recording()
    return restrict_to_recording(c12_task(), records), ReplayMeasurer(records)


def write_recording(path) -> str:
    with open(path, "w", encoding="utf-8") as stream:
        write_records(stream, c12_recording())
    return str(path)


class CountingReplayMeasurer(ReplayMeasurer):
    """A replay measurer that remembers every config it was asked to measure."""

    def __init__(self, records, device=None):
        super().__init__(records, device)
        self.measured: list[int] = []

    def measure(self, task, configs):
        self.measured += [config.index for config in configs]
        return super().measure(task, configs)
