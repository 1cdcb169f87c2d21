"""A Kernel Tuner kernel as a tunerweb workload, and what every Kernel Tuner file reader shares:
failure strings as error numbers, milliseconds as seconds, device names as GPU models."""
from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Iterable

from ..gpu.device import model_slug
from ..logfile import ErrorNo, Record, make_target

TASK_NAME = "kernel_tuner"
PRODUCER = "tunerweb-0.1 (kernel_tuner)"

# Kernel Tuner's failure strings; ErrorConfig is its base class (a failure of no named kind).
FAILURE_ERRORS = {
    "InvalidConfig": ErrorNo.INSTANTIATION_ERROR,
    "CompilationFailedConfig": ErrorNo.COMPILE_DEVICE,
    "RuntimeFailedConfig": ErrorNo.RUNTIME_DEVICE,
    "ErrorConfig": ErrorNo.UNKNOWN_ERROR,
}
FAILURE_OF_ERROR = {
    ErrorNo.INSTANTIATION_ERROR: "InvalidConfig",
    ErrorNo.COMPILE_HOST: "CompilationFailedConfig",
    ErrorNo.COMPILE_DEVICE: "CompilationFailedConfig",
    ErrorNo.BUILD_TIMEOUT: "CompilationFailedConfig",
    ErrorNo.RUNTIME_DEVICE: "RuntimeFailedConfig",
    ErrorNo.WRONG_ANSWER: "RuntimeFailedConfig",
    ErrorNo.RUN_TIMEOUT: "RuntimeFailedConfig",
    ErrorNo.UNKNOWN_ERROR: "ErrorConfig",
}
def failure_message(error_no: ErrorNo) -> str:
    """The error message of a failure read from any Kernel Tuner file: one per error number, so
    the same failure read from a cache or from T4 results is the same record."""
    named = {ErrorNo.WRONG_ANSWER: "wrong answer", ErrorNo.RUN_TIMEOUT: "timeout"}
    return f"Kernel Tuner: {named.get(error_no) or FAILURE_OF_ERROR[error_no]}"


# Where a file written from a workload of another task keeps that workload and each config's index.
ORIGIN_KEY = "tunerweb_workload"
INDEX_KEY = "tunerweb_config_index"


class KernelTunerFileError(ValueError):
    """A file that cannot be read as a Kernel Tuner file at all; the message says why."""


class DeviceNameMissing(KernelTunerFileError):
    """The file names no GPU (the MI250X caches have an empty `device_name`, T4 has none)."""


def to_seconds(ms: float) -> float:
    """ms / 1000 and its inverse s * 1000 give back the very same float on every time of the hub."""
    return ms / 1000


def to_ms(seconds: float) -> float:
    return seconds * 1000


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def same_value(a: Any, b: Any) -> bool:
    # 1 and True are equal in Python, not the same parameter value in a file.
    return (is_number(a) and is_number(b) and a == b) or (type(a) is type(b) and a == b)


def sorted_values(values: Iterable) -> list:
    """Values seen in a file, in the order a person would list them: numbers ascending, then the rest."""
    values = list(values)
    if all(is_number(v) for v in values):
        return sorted(values)
    return sorted(values, key=lambda v: json.dumps(v, sort_keys=True))


@dataclass(frozen=True)
class Origin:
    """The workload of another task (conv2d, gemm, ...) that a Kernel Tuner file was written from."""

    task_name: str
    args: list
    kinds: dict  # knob name: "sp" or "ot"

    def to_json(self) -> dict:
        return {"task_name": self.task_name, "args": self.args, "knob_kinds": self.kinds}

    @classmethod
    def from_json(cls, raw: Any) -> "Origin":
        if not (isinstance(raw, dict) and isinstance(raw.get("task_name"), str) and isinstance(raw.get("args"), list)
                and isinstance(raw.get("knob_kinds"), dict)):
            raise KernelTunerFileError(f"{ORIGIN_KEY} is not {{task_name, args, knob_kinds}}")
        return cls(raw["task_name"], raw["args"], raw["knob_kinds"])


@dataclass(frozen=True)
class KernelTunerWorkload:
    """A Kernel Tuner kernel: the one arg of a `kernel_tuner` task (see the package docstring)."""

    kernel_name: str
    problem_size: tuple
    tune_params: tuple[tuple[str, tuple], ...]

    @property
    def param_names(self) -> list[str]:
        return [name for name, _ in self.tune_params]

    @property
    def args(self) -> list:
        return [{"kernel_name": self.kernel_name, "problem_size": list(self.problem_size),
                 "tune_params": [[name, list(values)] for name, values in self.tune_params]}]

    @classmethod
    def from_args(cls, args: Any) -> "KernelTunerWorkload":
        """The workload of a `kernel_tuner` task's args; ValueError says what is wrong."""
        if not (isinstance(args, list) and len(args) == 1 and isinstance(args[0], dict)):
            raise ValueError('kernel_tuner args are [{"kernel_name", "problem_size", "tune_params"}]')
        spec = args[0]
        if set(spec) != {"kernel_name", "problem_size", "tune_params"}:
            raise ValueError("kernel_tuner args need exactly kernel_name, problem_size and tune_params")
        return cls.create(spec["kernel_name"], spec["problem_size"], spec["tune_params"])

    @classmethod
    def create(cls, kernel_name: Any, problem_size: Any, tune_params: Any) -> "KernelTunerWorkload":
        if not isinstance(kernel_name, str) or not kernel_name.strip():
            raise ValueError("kernel_name is not a non-empty string")
        if is_number(problem_size) or isinstance(problem_size, str):
            problem_size = [problem_size]
        if not isinstance(problem_size, list):
            raise ValueError("problem_size is not a number or a list")
        if isinstance(tune_params, dict):
            tune_params = list(tune_params.items())
        if not isinstance(tune_params, list) or not tune_params:
            raise ValueError("tune_params is not a non-empty list of [name, [values...]]")
        pairs = []
        for pair in tune_params:
            if not (isinstance(pair, (list, tuple)) and len(pair) == 2 and isinstance(pair[0], str)
                    and isinstance(pair[1], list) and pair[1]):
                raise ValueError(f"tune_params item {json.dumps(pair)[:60]} is not [name, [values...]]")
            pairs.append((pair[0], tuple(pair[1])))
        if len({name for name, _ in pairs}) != len(pairs):
            raise ValueError("tune_params names repeat")
        return cls(kernel_name, tuple(problem_size), tuple(pairs))

    def index_of(self, params: dict) -> int:
        """The config's index in the space of these parameters (first parameter fastest)."""
        index, stride = 0, 1
        for name, values in self.tune_params:
            if name not in params:
                raise ValueError(f"parameter {name} is missing")
            option = next((i for i, v in enumerate(values) if same_value(v, params[name])), None)
            if option is None:
                raise ValueError(f"{name}={json.dumps(params[name])} is not one of the tune_params values")
            index += option * stride
            stride *= len(values)
        return index

    def cache_key(self, params: dict) -> str:
        """Kernel Tuner's cache key: the values joined by "," in tune_params order."""
        return ",".join(str(params[name]) for name in self.param_names)

    def record(self, model: str, params: dict, error_no: ErrorNo, costs: tuple[float, ...], *, all_cost: float,
               timestamp: float, error_msg: str = "", origin: Origin | None = None, index: Any = None) -> Record:
        """One engine record of a config of this kernel (of `origin`'s workload, at `index`, when the
        file was written from one); ValueError when the params are not a config of it."""
        if origin is None:
            task_name, args, config_index = TASK_NAME, self.args, self.index_of(params)
            entity = [[name, "ot", params[name]] for name in self.param_names]
        else:
            missing = [name for name in self.param_names if name not in params or name not in origin.kinds]
            if missing:
                raise ValueError(f"parameter {', '.join(missing)} is missing")
            if not (isinstance(index, int) and not isinstance(index, bool) and index >= 0):
                raise ValueError(f"{INDEX_KEY} is not a non-negative integer")
            task_name, args, config_index = origin.task_name, origin.args, index
            entity = [[name, origin.kinds[name], params[name]] for name in self.param_names]
        return Record(target=make_target(model), task_name=task_name, args=args, config_index=config_index,
                      entity=entity, costs=costs, error_no=error_no, all_cost=all_cost, timestamp=timestamp,
                      tvm_version=PRODUCER, error_msg=error_msg)


def params_of_entity(entity: list) -> dict:
    return {name: value for name, _, value in entity}


def export_view(records: list[Record]) -> tuple[KernelTunerWorkload, Origin | None, list[Record]]:
    """How one workload's records appear in a Kernel Tuner file: the kernel, the origin (for a workload
    of another task: its knobs become tunable parameters with the values the records hold), and the
    records that fit (an old record missing a knob of the first one is left out)."""
    first = records[0]
    if first.task_name == TASK_NAME:
        return KernelTunerWorkload.from_args(first.args), None, records
    names = [name for name, _, _ in first.entity]
    kinds = {name: kind for name, kind, _ in first.entity}
    fitting = [r for r in records if [name for name, _, _ in r.entity] == names]
    values: dict[str, list] = {name: [] for name in names}
    for record in fitting:
        for name, _, value in record.entity:
            if not any(same_value(value, seen) for seen in values[name]):
                values[name].append(value)
    workload = KernelTunerWorkload.create(first.task_name, [], [[n, sorted_values(values[n])] for n in names])
    return workload, Origin(first.task_name, first.args, kinds), fitting


@dataclass
class KernelTunerFile:
    """What a reader found: the records, each malformed entry as (key, reason), and the file's own facts."""

    kind: str
    records: list[Record] = field(default_factory=list)
    bad_entries: list[tuple[str, str]] = field(default_factory=list)
    device_name: str = ""
    workloads: list[KernelTunerWorkload] = field(default_factory=list)
    unterminated: bool = False

    def failures(self) -> Counter:
        """Records by error number, errors only."""
        return Counter(r.error_no for r in self.records if r.error_no != ErrorNo.NO_ERROR)


_MODEL = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")


def checked_model(model: str) -> str:
    """A GPU model a person named, lower-case; ValueError unless it is a slug like a100 or mi250x."""
    model = model.strip().lower()
    if not _MODEL.fullmatch(model):
        raise ValueError(f"device {model[:70]!r} is not a GPU model name: lower-case letters, digits, - and _ "
                         "(like a100, mi250x)")
    return model


def device_model(device_name: str, device: str | None, where: str = "the file") -> str:
    """The GPU model slug: the user's `device` when given, else the slug of the file's device name."""
    if device:
        try:
            return checked_model(device)
        except ValueError as exc:
            raise KernelTunerFileError(str(exc)) from None
    if not device_name or not device_name.strip():
        raise DeviceNameMissing(f"{where} has an empty device name: say which GPU model measured it "
                                "(--device MODEL, or the GPU model field of the upload page and the API)")
    return model_slug(device_name)


def parse_timestamp(text: Any) -> float:
    """Unix seconds of Kernel Tuner's `2023-12-22 13:17:14.751935+00:00` (naive means UTC); 0 when absent."""
    if is_number(text):
        return float(text)
    if not isinstance(text, str) or not text:
        return 0.0
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"timestamp {text[:40]!r} is not an ISO date and time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def format_timestamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=timezone.utc).isoformat(sep=" ")


def overhead_seconds(entry: dict, keys: Iterable[str], seconds_per_unit: float = 1e-3) -> float:
    """The sum of a config's overhead times (compile, verification, ...), in seconds."""
    total = 0.0
    for key in keys:
        value = entry.get(key, 0)
        if not is_number(value) or value < 0:
            raise ValueError(f"{key} is not a non-negative number")
        total += value
    return in_seconds(total, seconds_per_unit)


def in_seconds(value: float, seconds_per_unit: float) -> float:
    return to_seconds(value) if seconds_per_unit == 1e-3 else value * seconds_per_unit


def positive_times(times: Any, what: str) -> list:
    if not isinstance(times, list) or not all(is_number(t) and t > 0 for t in times):
        raise ValueError(f"{what} is not a list of positive numbers")
    return times
