"""What a measurement is, and the one interface every measurer implements.

A measurer turns configs of a task into results. The GPU measurer (compile with
NVRTC, time in a child process) and the replay measurer (answer from a recorded
log) are two implementations; the tuning loop knows only this interface.
"""
from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Sequence

from .records import ErrorNo, Record, make_target

if TYPE_CHECKING:  # pragma: no cover
    from .space import ConfigEntity
    from .task import Task


@dataclass(frozen=True)
class DeviceInfo:
    """The GPU a measurer times on; `model` is the target's `-model=` slug."""

    model: str
    name: str = ""
    compute_capability: str = ""
    sm_count: int | None = None
    memory_bytes: int | None = None
    clock_mhz: int | None = None
    memory_clock_mhz: int | None = None
    driver_version: str = ""
    cuda_version: str = ""
    is_replay: bool = False

    @property
    def target(self) -> str:
        return make_target(self.model)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class MeasureResult:
    """Outcome of one config: a status plus data, never a sentinel cost."""

    error_no: ErrorNo
    costs: tuple[float, ...] = ()
    error_msg: str = ""
    all_cost: float = 0.0
    timestamp: float = field(default_factory=time.time)
    code_hash: str | None = None  # engine.codehash of what ran; None where nothing was generated

    @property
    def ok(self) -> bool:
        return self.error_no == ErrorNo.NO_ERROR and bool(self.costs)

    @property
    def mean_cost(self) -> float | None:
        return sum(self.costs) / len(self.costs) if self.ok else None

    @classmethod
    def failure(cls, error_no: ErrorNo, message: str, all_cost: float = 0.0) -> "MeasureResult":
        return cls(error_no=error_no, costs=(), error_msg=message, all_cost=all_cost)


def to_record(task: "Task", config: "ConfigEntity", result: MeasureResult, target: str) -> Record:
    """The log line for one measurement of `config` of `task` on `target`."""
    return Record(
        target=target,
        task_name=task.name,
        args=task.args,
        config_index=config.index,
        entity=config.to_entity(),
        costs=result.costs if result.ok else (),
        error_no=result.error_no,
        all_cost=result.all_cost,
        timestamp=result.timestamp,
        error_msg=result.error_msg,
        code_hash=result.code_hash,
    )


class Measurer(ABC):
    """Turns configs into results on one device."""

    device: DeviceInfo

    @abstractmethod
    def measure(self, task: "Task", configs: Sequence["ConfigEntity"]) -> list[MeasureResult]:
        """One result per config, in order. Never raises for a bad config: it reports it."""

    def environment(self) -> dict:
        """What the next batch is measured on (GPU board, driver, runtime, compiler, clock);
        empty where there is nothing to say."""
        return {}

    def close(self) -> None:
        """Release child processes and GPU state; a no-op where there is none."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
