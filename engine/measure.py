"""What a measurement is, the one interface every measurer implements, and the measurers by name.

A measurer turns configs of a task into results. The GPU measurer (compile with
NVRTC, time in a child process) and the replay measurers (answer from a recorded
log) are the implementations; the tuning loop knows only this interface.
"""
from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from importlib import import_module
from typing import TYPE_CHECKING, Sequence

from .logfile import ErrorNo, Outcome, Record, make_target

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
    memory_bus_bits: int | None = None
    driver_version: str = ""
    cuda_version: str = ""
    is_replay: bool = False

    @property
    def target(self) -> str:
        return make_target(self.model)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class MeasureResult(Outcome):
    """Outcome of one config: a status plus data, never a sentinel cost."""

    error_no: ErrorNo
    costs: tuple[float, ...] = ()
    error_msg: str = ""
    all_cost: float = 0.0
    timestamp: float = field(default_factory=time.time)
    code_hash: str | None = None  # engine.codehash of what ran; None where nothing was generated

    @classmethod
    def failure(cls, error_no: ErrorNo, message: str, all_cost: float = 0.0) -> "MeasureResult":
        return cls(error_no=error_no, costs=(), error_msg=message, all_cost=all_cost)


def result_of(record: Record) -> MeasureResult:
    """A log record read back as the measurement it was."""
    return MeasureResult(
        error_no=record.error_no,
        costs=record.costs,
        error_msg=record.error_msg,
        all_cost=record.all_cost,
        timestamp=record.timestamp,
        code_hash=record.code_hash,
    )


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


# Measurers by name. Imports are lazy: the GPU measurer needs CuPy and a GPU, and
# naming it must not be needed to replay a recording on a laptop.
MEASURERS: dict[str, str] = {
    "replay": "engine.replay:ReplayMeasurer",
    "gpu": "engine.gpu.measurer:GpuMeasurer",
}


class UnknownMeasurer(ValueError):
    pass


class MeasurerUnavailable(RuntimeError):
    """A known measurer that cannot load here (its module or a library it needs is missing)."""


def get_measurer_class(name: str) -> type[Measurer]:
    try:
        path = MEASURERS[name]
    except KeyError:
        raise UnknownMeasurer(f"unknown measurer {name!r}; valid measurers: {', '.join(sorted(MEASURERS))}") from None
    module_name, class_name = path.split(":")
    try:
        module = import_module(module_name)
    except ImportError as exc:
        raise MeasurerUnavailable(f"the {name} measurer cannot load here: {exc}") from None
    return getattr(module, class_name)


def make_measurer(name: str, **options) -> Measurer:
    """A measurer by registry name; options go to its constructor."""
    return get_measurer_class(name)(**options)
