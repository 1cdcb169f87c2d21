"""Confirmations: tuning measurements find candidates, confirmations decide.

A run's top-k distinct configs, the vendor baseline and the untuned default config
(the contenders) are timed again in a fresh measuring process, in interleaved rounds
A B C A B C ... (at least MIN_ROUNDS), each contender once warm (inputs resident in L2,
a CUDA graph of back-to-back launches) and once cold (L2 flushed before each launch)
per round, so drift in clocks or temperature hits all of them alike.

The timing itself is a Stopwatch's: the GPU's runs in a fresh child process
(`engine.gpu.confirming`), the replay one answers from a recording's repeated
measurements of each config, so the flow runs end to end without a GPU.
"""
from __future__ import annotations

import statistics
import time
import uuid
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Iterable, Sequence

from .logfile import ErrorNo, Record, canonical_args
from .baselines import DEFAULT_CONFIG_BASELINE
from .space import EntityError

if TYPE_CHECKING:  # pragma: no cover
    from .task import Task

MIN_ROUNDS = 5
DEFAULT_TOP_K = 5
BASELINE_PREFIX = "baseline:"


class Role(str, Enum):
    TUNED = "tuned"
    VENDOR = "vendor"
    DEFAULT = "default"


@dataclass(frozen=True)
class Contender:
    """One thing timed: a config (tuned or the untuned default) or a vendor library."""

    role: Role
    entity: tuple | list | None = None
    config_index: int | None = None
    provider: str = ""  # the baseline provider of a vendor or default contender

    @property
    def label(self) -> str:
        if self.role == Role.VENDOR:
            return self.provider
        return f"{'default ' if self.role == Role.DEFAULT else ''}config {self.config_index}"


@dataclass(frozen=True)
class Spread:
    """Median, min and max of one contender's rounds (seconds)."""

    median: float
    min: float
    max: float
    n: int

    @classmethod
    def of(cls, values: Sequence[float]) -> "Spread | None":
        if not values:
            return None
        return cls(statistics.median(values), min(values), max(values), len(values))

    def overlaps(self, other: "Spread") -> bool:
        return self.min <= other.max and other.min <= self.max


@dataclass(frozen=True)
class Unready:
    """Why a contender cannot be timed: an error number (AutoTVM's) and a message."""

    error_no: ErrorNo
    message: str


@dataclass
class Timing:
    """What the rounds gave one contender: seconds per launch, one value per round."""

    contender: Contender
    warm: list[float] = field(default_factory=list)
    cold: list[float] = field(default_factory=list)
    error_no: ErrorNo = ErrorNo.NO_ERROR
    error: str = ""
    details: dict = field(default_factory=dict)  # code_hash; a library's name, version, algorithm

    @property
    def ok(self) -> bool:
        return self.error_no == ErrorNo.NO_ERROR and bool(self.warm)

    @property
    def warm_spread(self) -> Spread | None:
        return Spread.of(self.warm)

    @property
    def cold_spread(self) -> Spread | None:
        return Spread.of(self.cold)


@dataclass
class Confirmation:
    task_name: str
    args: list
    target: str
    rounds: int
    timings: list[Timing]
    environment: dict
    session: str
    started_at: float
    finished_at: float

    def of_role(self, role: Role) -> list[Timing]:
        return [t for t in self.timings if t.contender.role == role]

    def to_dict(self) -> dict:
        """Plain JSON data (benchmarks write it; `from_dict` and the records app read it)."""
        return {
            "task_name": self.task_name, "args": self.args, "target": self.target, "rounds": self.rounds,
            "environment": self.environment, "session": self.session, "started_at": self.started_at,
            "finished_at": self.finished_at,
            "timings": [
                {"role": t.contender.role.value, "entity": t.contender.entity, "config_index": t.contender.config_index,
                 "provider": t.contender.provider, "warm": t.warm, "cold": t.cold, "error_no": int(t.error_no),
                 "error": t.error, "details": t.details}
                for t in self.timings
            ],
        }

    @classmethod
    def from_dict(cls, data: dict) -> "Confirmation":
        timings = [
            Timing(
                Contender(Role(t["role"]), entity=t["entity"], config_index=t["config_index"], provider=t["provider"]),
                warm=list(t["warm"]), cold=list(t["cold"]), error_no=ErrorNo(t["error_no"]), error=t["error"],
                details=dict(t["details"]),
            )
            for t in data["timings"]
        ]
        return cls(task_name=data["task_name"], args=data["args"], target=data["target"], rounds=data["rounds"],
                   timings=timings, environment=data["environment"], session=data["session"],
                   started_at=data["started_at"], finished_at=data["finished_at"])


class Stopwatch(ABC):
    """Times contenders of one task; the protocol decides the order."""

    @abstractmethod
    def prepare(self, task: "Task", contenders: Sequence[Contender]) -> list[dict | Unready]:
        """Build and check every contender; per contender, its details (a dict) when it is
        ready to time, or why not (Unready: wrong answer, no kernel, library missing)."""

    @abstractmethod
    def time(self, index: int, cold: bool) -> float:
        """One measurement of prepared contender `index`: seconds per launch."""

    @abstractmethod
    def environment(self) -> dict:
        """The GPU board, driver, runtime, compiler and library versions, the SM clock now."""

    @property
    @abstractmethod
    def target(self) -> str:
        """The target string of the device timed on (`cuda -model=...`)."""

    def close(self) -> None:
        """Release the measuring process; a no-op where there is none."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# What names a vendor library's build in a timing's details: two processes' times of one
# library may be compared (and the faster kept) only where these agree.
VENDOR_LIBRARY_KEYS = ("library", "library_version", "torch")


def same_vendor_library(details: dict, other: dict) -> bool:
    """Whether two vendor timings' details name the same library build."""
    return all(details.get(k) == other.get(k) for k in VENDOR_LIBRARY_KEYS)


def confirm_contenders(task: "Task", contenders: Sequence[Contender], stopwatch: Stopwatch,
            rounds: int = MIN_ROUNDS) -> Confirmation:
    """Time `contenders` in `rounds` interleaved rounds, warm then cold within each round."""
    if rounds < MIN_ROUNDS:
        raise ValueError(f"a confirmation takes at least {MIN_ROUNDS} rounds, not {rounds}")
    started = time.time()
    prepared = stopwatch.prepare(task, contenders)
    environment = stopwatch.environment()
    timings = [
        Timing(c, details=p) if isinstance(p, dict) else Timing(c, error_no=p.error_no, error=p.message)
        for c, p in zip(contenders, prepared)
    ]
    ready = [i for i, t in enumerate(timings) if t.error_no == ErrorNo.NO_ERROR]
    for _ in range(rounds):
        for i in ready:
            timings[i].warm.append(stopwatch.time(i, cold=False))
            timings[i].cold.append(stopwatch.time(i, cold=True))
    return Confirmation(
        task_name=task.name, args=task.args, target=stopwatch.target, rounds=rounds, timings=timings,
        environment=environment, session=uuid.uuid4().hex, started_at=started, finished_at=time.time(),
    )


def top_k_distinct(records: Iterable[Record], k: int = DEFAULT_TOP_K) -> list[Record]:
    """The k fastest distinct configs of `records` (each config's fastest record), fastest first."""
    fastest: dict[int, Record] = {}
    for record in records:
        if not record.ok:
            continue
        held = fastest.get(record.config_index)
        if held is None or record.mean_cost < held.mean_cost:
            fastest[record.config_index] = record
    return sorted(fastest.values(), key=lambda r: (r.mean_cost, r.timestamp))[:k]


def entities_of(task: "Task", records: Iterable) -> list[tuple[int, list]]:
    """(index in `task`'s space, entity) of each distinct config among `records` (anything
    with an `entity`: log records, database rows), in their order; configs the space no
    longer has (an old log's) are left out."""
    found: dict[int, list] = {}
    for record in records:
        try:
            index = task.config_space.index_of(record.entity)
        except EntityError:
            continue
        found.setdefault(index, task.config_space.get(index).to_entity())
    return list(found.items())


def contenders_for(task: "Task", entities: Iterable[tuple[int, list]]) -> list[Contender]:
    """The tuned configs (index, entity) as given, then the template's vendor baseline (where
    it has one), then the untuned default config, dropped when it is one of the tuned ones."""
    tuned = [Contender(Role.TUNED, entity=entity, config_index=index) for index, entity in entities]
    contenders = list(tuned)
    vendor = task.template.baseline_provider
    if vendor != DEFAULT_CONFIG_BASELINE:
        contenders.append(Contender(Role.VENDOR, provider=vendor))
    default = task.default_config()
    if default.index not in {c.config_index for c in tuned}:
        contenders.append(Contender(Role.DEFAULT, entity=default.to_entity(), config_index=default.index,
                                    provider=DEFAULT_CONFIG_BASELINE))
    return contenders


class ReplayStopwatch(Stopwatch):
    """Answers from a recording: each config's recorded measurements in turn (a recording
    with repeated measurements of a config gives it a spread), baselines from its
    `baseline:<provider>` lines. A recording holds no cold timings, so cold answers are
    the same recorded values, and the environment says so."""

    def __init__(self, records: Iterable[Record], target: str, name: str = "") -> None:
        self.records = list(records)
        self._target = target
        self.name = name
        self._answers: list[list[float]] = []
        self._turns: list[int] = []

    @property
    def target(self) -> str:
        return self._target

    def prepare(self, task: "Task", contenders: Sequence[Contender]) -> list[dict | Unready]:
        key = (task.name, canonical_args(task.args))
        mine = [r for r in self.records if r.workload_key == key and r.ok]
        by_index: dict[int, list[float]] = {}
        by_provider: dict[str, list[float]] = {}
        for record in mine:
            if record.tvm_version.startswith(BASELINE_PREFIX):
                by_provider.setdefault(record.tvm_version[len(BASELINE_PREFIX):], []).append(record.mean_cost)
                continue
            try:
                index = task.config_space.index_of(record.entity)
            except ValueError:
                continue
            by_index.setdefault(index, []).append(record.mean_cost)
        prepared: list[dict | Unready] = []
        self._answers, self._turns = [], []
        for contender in contenders:
            if contender.role == Role.VENDOR:
                answers = by_provider.get(contender.provider, [])
            else:
                answers = by_index.get(contender.config_index, [])
            self._answers.append(answers)
            self._turns.append(0)
            if not answers:
                prepared.append(Unready(ErrorNo.UNKNOWN_ERROR, f"{contender.label} is not in the recording"))
            else:
                prepared.append({"replayed_measurements": len(answers)})
        return prepared

    def time(self, index: int, cold: bool) -> float:
        answers = self._answers[index]
        turn = self._turns[index]
        if cold:  # the same value as this round's warm answer
            self._turns[index] = turn + 1
            return answers[turn % len(answers)]
        return answers[turn % len(answers)]

    def environment(self) -> dict:
        return {"replay": self.name or True, "cold": "replayed from warm records"}
