"""Kernel Tuner's files as engine records, in and out: the cache file, T4 results, `store_results`.

A Kernel Tuner kernel is one workload of the task `kernel_tuner`, whose single
arg names the kernel, its problem size and its tunable parameters with their
values, in Kernel Tuner's order:

    ["cuda -model=a100", "kernel_tuner",
     [{"kernel_name": "convolution_kernel", "problem_size": [4096, 4096],
       "tune_params": [["block_size_x", [16, 32, ...]], ["block_size_y", [1, 2, 4, 8, 16]], ...]}], {}]

A config is `[[name, "ot", value], ...]` in that order, and its index is the
mixed-radix number over the value lists (first parameter fastest), as for any
space of "ot" knobs. So the same kernel measured on two GPUs lands on one workload.

Kernel Tuner keeps times in milliseconds and a failure as a string where the time
would be; inside tunerweb a cost is in seconds and a failure is an error number:
`InvalidConfig` is 1 (instantiation), `CompilationFailedConfig` 3 (device compile),
`RuntimeFailedConfig` 4 (runtime device error). A malformed entry is reported with
its key and reason; the rest of the file still reads. Seconds are `ms / 1000` and
milliseconds `s * 1000`: on every time of the benchmark hub that pair gives back
the very same float, so import, export and import again give the same records.
"""
from __future__ import annotations

import gzip
import json
import math
import re
import zlib
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from os import PathLike
from typing import Any, Iterable

from .gpu.device import model_slug
from .records import ErrorNo, Record, make_target

TASK_NAME = "kernel_tuner"
PRODUCER = "tunerweb-0.1 (kernel_tuner)"

CACHE = "kernel-tuner-cache"
T4 = "t4"
RESULTS = "kernel-tuner-results"

# Kernel Tuner's failure strings, and ours back: ErrorConfig is its base class (failure of no named kind).
FAILURE_ERRORS = {
    "InvalidConfig": ErrorNo.INSTANTIATION_ERROR,
    "CompilationFailedConfig": ErrorNo.COMPILE_DEVICE,
    "RuntimeFailedConfig": ErrorNo.RUNTIME_DEVICE,
    "ErrorConfig": ErrorNo.UNKNOWN_ERROR,
}
_FAILURE_OF_ERROR = {
    ErrorNo.INSTANTIATION_ERROR: "InvalidConfig",
    ErrorNo.COMPILE_HOST: "CompilationFailedConfig",
    ErrorNo.COMPILE_DEVICE: "CompilationFailedConfig",
    ErrorNo.BUILD_TIMEOUT: "CompilationFailedConfig",
    ErrorNo.RUNTIME_DEVICE: "RuntimeFailedConfig",
    ErrorNo.WRONG_ANSWER: "RuntimeFailedConfig",
    ErrorNo.RUN_TIMEOUT: "RuntimeFailedConfig",
    ErrorNo.UNKNOWN_ERROR: "RuntimeFailedConfig",
}
# T4's `invalidity` (FAIR autotuning schema 1.0.0).
T4_ERRORS = {
    "correct": ErrorNo.NO_ERROR,
    "constraints": ErrorNo.INSTANTIATION_ERROR,
    "compile": ErrorNo.COMPILE_DEVICE,
    "runtime": ErrorNo.RUNTIME_DEVICE,
    "correctness": ErrorNo.WRONG_ANSWER,
    "timeout": ErrorNo.RUN_TIMEOUT,
}
_T4_OF_ERROR = {
    ErrorNo.NO_ERROR: "correct", ErrorNo.INSTANTIATION_ERROR: "constraints", ErrorNo.COMPILE_HOST: "compile",
    ErrorNo.COMPILE_DEVICE: "compile", ErrorNo.BUILD_TIMEOUT: "timeout", ErrorNo.RUNTIME_DEVICE: "runtime",
    ErrorNo.WRONG_ANSWER: "correctness", ErrorNo.RUN_TIMEOUT: "timeout", ErrorNo.UNKNOWN_ERROR: "runtime",
}
# Seconds per unit; the benchmark hub's T4 file spells milliseconds "miliseconds".
TIME_UNITS = {"seconds": 1.0, "s": 1.0, "milliseconds": 1e-3, "miliseconds": 1e-3, "ms": 1e-3,
              "microseconds": 1e-6, "us": 1e-6}
# Kernel Tuner's per-config overheads (ms); their sum is the record's all_cost.
_OVERHEAD_KEYS = ("compile_time", "verification_time", "benchmark_time", "strategy_time", "framework_time")
SNIFF_BYTES = 64 * 1024
_T4_OVERHEAD_KEYS = ("compilation", "compilation_time", "benchmark", "framework", "search_algorithm", "validation")


class KernelTunerFileError(ValueError):
    """A file that cannot be read as a Kernel Tuner file at all; the message says why."""


class DeviceNameMissing(KernelTunerFileError):
    """The file names no GPU (the MI250X caches have an empty `device_name`, T4 has none)."""


def to_seconds(ms: float) -> float:
    return ms / 1000


def to_ms(seconds: float) -> float:
    return seconds * 1000


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _same_value(a: Any, b: Any) -> bool:
    # 1 and True are equal in Python, not the same parameter value in a file.
    return (_is_number(a) and _is_number(b) and a == b) or (type(a) is type(b) and a == b)


@dataclass(frozen=True)
class KernelTunerWorkload:
    """A Kernel Tuner kernel: the one arg of a `kernel_tuner` task."""

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
        if _is_number(problem_size) or isinstance(problem_size, str):
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

    def option_of(self, name: str, values: tuple, value: Any) -> int:
        for option, candidate in enumerate(values):
            if _same_value(candidate, value):
                return option
        raise ValueError(f"{name}={json.dumps(value)} is not one of the tune_params values")

    def index_of(self, params: dict) -> int:
        """The config's index in the space of these parameters (first parameter fastest)."""
        index, stride = 0, 1
        for name, values in self.tune_params:
            if name not in params:
                raise ValueError(f"parameter {name} is missing")
            index += self.option_of(name, values, params[name]) * stride
            stride *= len(values)
        return index

    def entity(self, params: dict) -> list:
        return [[name, "ot", params[name]] for name in self.param_names]

    def cache_key(self, params: dict) -> str:
        """Kernel Tuner's cache key: the values joined by "," in tune_params order."""
        return ",".join(str(params[name]) for name in self.param_names)

    def record(self, model: str, params: dict, error_no: ErrorNo, costs: tuple[float, ...], *,
               all_cost: float, timestamp: float, error_msg: str = "") -> Record:
        """One engine record of this kernel; ValueError when the params are not a config of it."""
        return Record(target=make_target(model), task_name=TASK_NAME, args=self.args,
                      config_index=self.index_of(params), entity=self.entity(params), costs=costs,
                      error_no=error_no, all_cost=all_cost, timestamp=timestamp, tvm_version=PRODUCER,
                      error_msg=error_msg)


def workload_of_record(record: Record) -> KernelTunerWorkload:
    return KernelTunerWorkload.from_args(record.args)


def params_of_entity(entity: list) -> dict:
    return {name: value for name, _, value in entity}


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


def device_model(device_name: str, device: str | None, where: str = "the file") -> str:
    """The GPU model slug: the user's `device` when given, else the slug of the file's device name."""
    if device:
        return device
    if not device_name or not device_name.strip():
        raise DeviceNameMissing(f"{where} has an empty device name: say which GPU measured it (--device MODEL)")
    return model_slug(device_name)


def parse_timestamp(text: Any) -> float:
    """Unix seconds of Kernel Tuner's `2023-12-22 13:17:14.751935+00:00` (naive means UTC); 0 when absent."""
    if _is_number(text):
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


def _overhead(entry: dict, keys: Iterable[str], unit: float) -> float:
    total = 0.0
    for key in keys:
        value = entry.get(key, 0)
        if not _is_number(value) or value < 0:
            raise ValueError(f"{key} is not a non-negative number")
        total += value
    return total * unit if unit != 1e-3 else to_seconds(total)


def _positive_times(times: Any, what: str) -> list[float]:
    if not isinstance(times, list) or not all(_is_number(t) and t > 0 for t in times):
        raise ValueError(f"{what} is not a list of positive numbers")
    return times


# -- the cache file ------------------------------------------------------------------------

_CACHE_OPENING = re.compile(r'"cache"\s*:\s*\{')


def _load_cache_json(text: str) -> tuple[dict, bool]:
    """The cache as a dict and whether the file was unterminated (still being appended to)."""
    try:
        data = json.loads(text)
        if isinstance(data, dict):
            return data, False
    except json.JSONDecodeError:
        pass
    # Kernel Tuner writes the header without its closing braces, then one `"key": {...},` per config.
    opening = _CACHE_OPENING.search(text)
    if opening is None or not text.lstrip().startswith("{"):
        raise KernelTunerFileError("not a Kernel Tuner cache file (no JSON object with a \"cache\")")
    try:
        header = json.loads(text[:opening.start()].rstrip().rstrip(",") + "}")
    except json.JSONDecodeError as exc:
        raise KernelTunerFileError(f"the cache file's header is not JSON ({exc.msg})") from None
    decoder = json.JSONDecoder()
    cache: dict = {}
    position, end = opening.end(), len(text)
    while True:
        while position < end and text[position] in " \t\r\n,":
            position += 1
        if position >= end or text[position] == "}":
            break
        try:
            key, position = decoder.raw_decode(text, position)
            while position < end and text[position] in " \t\r\n:":
                position += 1
            value, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError:
            # The last entry was cut off while being written: what came before it stands.
            break
        cache[key] = value
    header["cache"] = cache
    return header, True


def parse_cache(text: str, device: str | None = None) -> KernelTunerFile:
    """Read a Kernel Tuner cache file's text, complete or unterminated; `device` names the GPU model."""
    data, unterminated = _load_cache_json(text)
    for key in ("kernel_name", "tune_params", "cache"):
        if key not in data:
            raise KernelTunerFileError(f"not a Kernel Tuner cache file: no {key!r}")
    tune_params = data["tune_params"]
    if not isinstance(tune_params, dict):
        raise KernelTunerFileError("tune_params is not an object of name: [values...]")
    keys = data.get("tune_params_keys", list(tune_params))
    if not isinstance(keys, list) or set(keys) != set(tune_params):
        raise KernelTunerFileError("tune_params_keys does not list the tune_params")
    try:
        workload = KernelTunerWorkload.create(data["kernel_name"], data.get("problem_size", []),
                                              [[k, tune_params[k]] for k in keys])
    except ValueError as exc:
        raise KernelTunerFileError(f"cache file: {exc}") from None
    objective = data.get("objective", "time")
    if objective != "time":
        raise KernelTunerFileError(f"objective {objective!r}: only caches tuned for time are read")
    device_name = data.get("device_name") or ""
    model = device_model(device_name, device, "the cache file")
    found = KernelTunerFile(CACHE, device_name=device_name, workloads=[workload], unterminated=unterminated)
    if not isinstance(data["cache"], dict):
        raise KernelTunerFileError("cache is not an object of key: entry")
    for key, entry in data["cache"].items():
        try:
            found.records.append(_cache_record(workload, model, key, entry))
        except ValueError as exc:
            found.bad_entries.append((key, str(exc)))
    return found


def _cache_record(workload: KernelTunerWorkload, model: str, key: str, entry: Any) -> Record:
    if not isinstance(entry, dict):
        raise ValueError("entry is not an object")
    params = {name: entry[name] for name in workload.param_names if name in entry}
    if len(params) != len(workload.param_names):
        missing = [n for n in workload.param_names if n not in entry]
        raise ValueError(f"parameter {', '.join(missing)} is missing")
    if workload.cache_key(params) != key:
        raise ValueError(f"the entry's parameters give the key {workload.cache_key(params)!r}")
    time = entry.get("time")
    all_cost = _overhead(entry, _OVERHEAD_KEYS, 1e-3)
    timestamp = parse_timestamp(entry.get("timestamp"))
    if isinstance(time, str):
        if time not in FAILURE_ERRORS:
            raise ValueError(f"time {time[:40]!r} is neither a number nor one of {', '.join(FAILURE_ERRORS)}")
        return workload.record(model, params, FAILURE_ERRORS[time], (), all_cost=all_cost, timestamp=timestamp,
                               error_msg=f"Kernel Tuner: {time}")
    if not (_is_number(time) and time > 0):
        raise ValueError("time is not a positive number")
    times = _positive_times(entry.get("times", [time]), "times") or [time]
    return workload.record(model, params, ErrorNo.NO_ERROR, tuple(to_seconds(t) for t in times),
                           all_cost=all_cost, timestamp=timestamp)


def cache_document(workload: KernelTunerWorkload, device_name: str, records: Iterable[Record]) -> dict:
    """A complete Kernel Tuner cache of these records (the first record of a config wins, as in Kernel Tuner)."""
    cache: dict = {}
    for record in records:
        params = params_of_entity(record.entity)
        key = workload.cache_key(params)
        if key in cache:
            continue
        entry = {name: params[name] for name in workload.param_names}
        if record.ok:
            times = [to_ms(c) for c in record.costs]
            entry["time"] = sum(times) / len(times)
            entry["times"] = times
        else:
            entry["time"] = _FAILURE_OF_ERROR[record.error_no]
        # tunerweb keeps one total per measurement; Kernel Tuner's other overheads are written as 0.
        entry.update({"compile_time": 0, "verification_time": 0, "benchmark_time": 0, "strategy_time": 0,
                      "framework_time": to_ms(record.all_cost), "timestamp": format_timestamp(record.timestamp)})
        cache[key] = entry
    return {"device_name": device_name, "kernel_name": workload.kernel_name,
            "problem_size": list(workload.problem_size), "tune_params_keys": workload.param_names,
            "tune_params": {name: list(values) for name, values in workload.tune_params},
            "objective": "time", "cache": cache}


# -- T4 results ----------------------------------------------------------------------------

def t4_device_name(metadata_file: Any) -> str:
    """The GPU named by a T4 metadata file (nvidia-smi's or rocm-smi's answer in it); "" when none."""
    try:
        query = metadata_file["metadata"]["environment"]["device_query"]
    except (KeyError, TypeError):
        return ""
    gpu = (query.get("nvidia-smi") or {}).get("nvidia_smi_log", {}).get("gpu")
    if isinstance(gpu, list):
        gpu = gpu[0] if gpu else None
    if isinstance(gpu, dict) and isinstance(gpu.get("product_name"), str):
        return gpu["product_name"]
    for card in (query.get("rocm-smi") or {}).values():
        if isinstance(card, dict):
            for key in ("Card Series", "Card series", "Card SKU", "Device Name"):
                if isinstance(card.get(key), str) and card[key].strip():
                    return card[key]
    return ""


def t1_workload(t1: Any) -> KernelTunerWorkload:
    """The kernel a T1 input file describes (KernelName, ProblemSize, TuningParameters)."""
    try:
        spec = t1["KernelSpecification"]
        params = [[p["Name"], json.loads(p["Values"]) if isinstance(p["Values"], str) else p["Values"]]
                  for p in t1["ConfigurationSpace"]["TuningParameters"]]
        return KernelTunerWorkload.create(spec["KernelName"], spec.get("ProblemSize", []), params)
    except (KeyError, TypeError, json.JSONDecodeError, ValueError) as exc:
        raise KernelTunerFileError(f"not a T1 input file ({exc})") from None


def _t4_inferred_workload(results: list, metadata: dict) -> KernelTunerWorkload:
    """The workload a T4 file states in our metadata keys, or one inferred from its configurations."""
    if {"kernel_name", "tune_params"} <= set(metadata):
        return KernelTunerWorkload.create(metadata["kernel_name"], metadata.get("problem_size", []),
                                          metadata["tune_params"])
    names: list[str] = []
    values: dict[str, list] = {}
    for result in results:
        configuration = result.get("configuration") if isinstance(result, dict) else None
        if isinstance(configuration, dict):
            for name, value in configuration.items():
                if name not in values:
                    names.append(name)
                    values[name] = []
                if not any(_same_value(value, v) for v in values[name]):
                    values[name].append(value)
    if not names:
        raise KernelTunerFileError("the T4 results hold no configuration")
    ordered = [[n, sorted(values[n], key=lambda v: (not _is_number(v), v if _is_number(v) else str(v)))] for n in names]
    return KernelTunerWorkload.create("unnamed", [], ordered)


def parse_t4(data: Any, device: str | None = None, workload: KernelTunerWorkload | None = None,
             metadata_file: Any = None) -> KernelTunerFile:
    """Read T4 results. The kernel comes from `workload` (e.g. a T1 file's), else from the metadata
    tunerweb writes, else it is inferred from the configurations ("unnamed", values sorted)."""
    if not (isinstance(data, dict) and isinstance(data.get("results"), list)):
        raise KernelTunerFileError("not T4 results (no \"results\" list)")
    metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    unit_name = metadata.get("timeunit", "milliseconds")
    if unit_name not in TIME_UNITS:
        raise KernelTunerFileError(f"timeunit {unit_name!r} is not one of {', '.join(TIME_UNITS)}")
    unit = TIME_UNITS[unit_name]
    try:
        workload = workload or _t4_inferred_workload(data["results"], metadata)
    except ValueError as exc:
        raise KernelTunerFileError(f"T4 metadata: {exc}") from None
    device_name = metadata.get("device_name") or (t4_device_name(metadata_file) if metadata_file else "")
    model = device_model(device_name, device, "the T4 file")
    found = KernelTunerFile(T4, device_name=device_name, workloads=[workload])
    for number, result in enumerate(data["results"]):
        try:
            found.records.append(_t4_record(workload, model, result, unit))
        except ValueError as exc:
            found.bad_entries.append((f"results[{number}]", str(exc)))
    return found


def _seconds(value: float, unit: float) -> float:
    return to_seconds(value) if unit == 1e-3 else value * unit


def _t4_record(workload: KernelTunerWorkload, model: str, result: Any, unit: float) -> Record:
    if not isinstance(result, dict) or not isinstance(result.get("configuration"), dict):
        raise ValueError("result has no configuration object")
    invalidity = result.get("invalidity", "correct")
    if invalidity not in T4_ERRORS:
        raise ValueError(f"invalidity {str(invalidity)[:40]!r} is not one of {', '.join(T4_ERRORS)}")
    times = result.get("times") if isinstance(result.get("times"), dict) else {}
    all_cost = _overhead(times, _T4_OVERHEAD_KEYS, unit)
    timestamp = parse_timestamp(result.get("timestamp"))
    params = result["configuration"]
    error = T4_ERRORS[invalidity]
    if error == ErrorNo.NO_ERROR and result.get("correctness", 1) == 0:
        error = ErrorNo.WRONG_ANSWER
    if error != ErrorNo.NO_ERROR:
        return workload.record(model, params, error, (), all_cost=all_cost, timestamp=timestamp,
                               error_msg=f"T4: {invalidity}")
    runtimes = _positive_times(times.get("runtimes", []), "times.runtimes")
    if not runtimes:
        measured = [m.get("value") for m in result.get("measurements", [])
                    if isinstance(m, dict) and m.get("name") == "time"]
        runtimes = _positive_times(measured[:1], "the time measurement")
    if not runtimes:
        raise ValueError("a correct result without runtimes or a time measurement")
    return workload.record(model, params, ErrorNo.NO_ERROR, tuple(_seconds(t, unit) for t in runtimes),
                           all_cost=all_cost, timestamp=timestamp)


def t4_document(workload: KernelTunerWorkload, device_name: str, records: Iterable[Record]) -> dict:
    """T4 results of these records; the metadata also names the kernel and GPU, so tunerweb reads it back whole."""
    results = []
    for record in records:
        params = params_of_entity(record.entity)
        runtimes = [to_ms(c) for c in record.costs] if record.ok else []
        value: Any = sum(runtimes) / len(runtimes) if runtimes else _FAILURE_OF_ERROR[record.error_no]
        results.append({
            "timestamp": format_timestamp(record.timestamp),
            "configuration": {name: params[name] for name in workload.param_names},
            "times": {"compilation": 0, "framework": to_ms(record.all_cost), "search_algorithm": 0,
                      "validation": 0, "runtimes": runtimes},
            "invalidity": _T4_OF_ERROR[record.error_no],
            "correctness": 0 if record.error_no == ErrorNo.WRONG_ANSWER else 1,
            "measurements": [{"name": "time", "value": value, "unit": "ms"}],
            "objectives": ["time"],
        })
    spec = workload.args[0]
    metadata = {"timeunit": "milliseconds", "device_name": device_name, "kernel_name": spec["kernel_name"],
                "problem_size": spec["problem_size"], "tune_params": spec["tune_params"]}
    return {"schema_version": "1.0.0", "metadata": metadata, "results": results}


# -- store_results' tuning-results file -----------------------------------------------------

def parse_results_file(data: Any, device: str | None = None) -> KernelTunerFile:
    """Read the file Kernel Tuner's `store_results` writes: the top configs per device and problem size.

    It lists parameter names, not their values, so each problem size's workload takes the values
    seen in the file (sorted): such records join one another, not a cache's full space.
    """
    for key in ("kernel_name", "tunable_parameters", "data"):
        if not isinstance(data, dict) or key not in data:
            raise KernelTunerFileError(f"not a Kernel Tuner results file: no {key!r}")
    objective = data.get("objective", "time")
    if objective != "time":
        raise KernelTunerFileError(f"objective {objective!r}: only results tuned for time are read")
    names = data["tunable_parameters"]
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names) or not isinstance(data["data"], list):
        raise KernelTunerFileError("tunable_parameters is not a list of names or data is not a list")
    by_size: dict[str, list] = {}
    for item in data["data"]:
        size = item.get("problem_size") if isinstance(item, dict) else None
        by_size.setdefault(str(size), []).append(item)
    found = KernelTunerFile(RESULTS)
    for size, items in by_size.items():
        values = {n: [] for n in names}
        for item in items:
            for n in names:
                value = (item.get("tunable_parameters") or {}).get(n) if isinstance(item, dict) else None
                if value is not None and not any(_same_value(value, v) for v in values[n]):
                    values[n].append(value)
        problem = [int(p) if p.isdigit() else p for p in size.split("x")] if size != "None" else []
        try:
            workload = KernelTunerWorkload.create(data["kernel_name"], problem,
                                                  [[n, sorted(values[n], key=str) if not all(_is_number(v) for v in values[n]) else sorted(values[n])] for n in names])
        except ValueError as exc:
            found.bad_entries.append((f"problem_size {size}", str(exc)))
            continue
        found.workloads.append(workload)
        for number, item in enumerate(items):
            try:
                found.records.append(_results_record(workload, item, device))
            except DeviceNameMissing as exc:
                found.bad_entries.append((f"problem_size {size} data[{number}]", str(exc)))
            except ValueError as exc:
                found.bad_entries.append((f"problem_size {size} data[{number}]", str(exc)))
    if not found.workloads:
        raise KernelTunerFileError("the results file holds no results")
    return found


def _results_record(workload: KernelTunerWorkload, item: Any, device: str | None) -> Record:
    if not isinstance(item, dict) or not isinstance(item.get("tunable_parameters"), dict):
        raise ValueError("item has no tunable_parameters object")
    time = item.get("time")
    if not (_is_number(time) and time > 0):
        raise ValueError("time is not a positive number")
    model = device_model(str(item.get("device_name") or ""), device, "the item")
    return workload.record(model, item["tunable_parameters"], ErrorNo.NO_ERROR, (to_seconds(time),),
                           all_cost=0.0, timestamp=0.0)


# -- which one, and from a path ---------------------------------------------------------------

def sniff(text: str) -> str | None:
    """CACHE, T4 or RESULTS when the text's opening looks like one of Kernel Tuner's files; None otherwise."""
    head = text.lstrip()[:SNIFF_BYTES]
    if not head.startswith("{"):
        return None
    if '"tune_params_keys"' in head or ('"cache"' in head and '"tune_params"' in head):
        return CACHE
    if '"results"' in head and ('"schema_version"' in head or '"configuration"' in head):
        return T4
    if '"tunable_parameters"' in head and '"version_number"' in head:
        return RESULTS
    return None


def read_text(path: str | PathLike) -> str:
    """A file's text, gunzipped when it is gzip data; KernelTunerFileError when it is not UTF-8 text."""
    with open(path, "rb") as stream:
        raw = stream.read()
    try:
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        return raw.decode("utf-8")
    except (OSError, EOFError, zlib.error):
        raise KernelTunerFileError(f"{path} is not a readable gzip file") from None
    except UnicodeDecodeError:
        raise KernelTunerFileError(f"{path} is not UTF-8 text") from None


def sniff_file(path: str | PathLike) -> str | None:
    """`sniff` of a file's opening (gzipped or not), without reading all of it; None when unreadable."""
    try:
        with open(path, "rb") as raw:
            magic = raw.read(2)
        opener = gzip.open if magic == b"\x1f\x8b" else open
        with opener(path, "rb") as stream:
            head = stream.read(SNIFF_BYTES)
        return sniff(head.decode("utf-8", errors="ignore"))
    except (OSError, EOFError, zlib.error):
        return None


def parse_text(text: str, device: str | None = None, metadata_file: Any = None) -> KernelTunerFile:
    """Any of the three files from its text; `metadata_file` (parsed JSON) is a T4 metadata or T1 file."""
    kind = sniff(text)
    if kind == CACHE:
        return parse_cache(text, device)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise KernelTunerFileError(f"not JSON ({exc.msg} at line {exc.lineno})") from None
    if kind == T4:
        workload = None
        if isinstance(metadata_file, dict) and "KernelSpecification" in metadata_file:
            workload, metadata_file = t1_workload(metadata_file), None
        return parse_t4(data, device, workload, metadata_file)
    if kind == RESULTS:
        return parse_results_file(data, device)
    raise KernelTunerFileError("not a Kernel Tuner cache, T4 results or results file")


def read_file(path: str | PathLike, device: str | None = None, metadata_path: str | PathLike | None = None) -> KernelTunerFile:
    """Read a Kernel Tuner file (gzipped or not) from disk; `metadata_path` as `parse_text`'s `metadata_file`."""
    metadata = None
    if metadata_path is not None:
        try:
            metadata = json.loads(read_text(metadata_path))
        except json.JSONDecodeError as exc:
            raise KernelTunerFileError(f"{metadata_path} is not JSON ({exc.msg})") from None
    return parse_text(read_text(path), device, metadata)
