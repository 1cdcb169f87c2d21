"""Kernel Tuner's cache file: read (complete, or unterminated as a running tuner leaves it) and written."""
from __future__ import annotations

import json
import re
from typing import Any, Iterable

from ..logfile import ErrorNo, Record
from .workload import (FAILURE_ERRORS, FAILURE_OF_ERROR, INDEX_KEY, ORIGIN_KEY, KernelTunerFile, KernelTunerFileError,
                       KernelTunerWorkload, Origin, device_model, failure_message, format_timestamp, is_number, overhead_seconds,
                       params_of_entity, parse_timestamp, positive_times, to_ms, to_seconds)

KIND = "kernel-tuner-cache"
# Kernel Tuner's per-config overheads (ms); their sum is the record's all_cost.
OVERHEAD_KEYS = ("compile_time", "verification_time", "benchmark_time", "strategy_time", "framework_time")
_CACHE_OPENING = re.compile(r'"cache"\s*:\s*\{')


def load_cache_json(text: str) -> tuple[dict, bool]:
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
    data, unterminated = load_cache_json(text)
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
    origin = Origin.from_json(data[ORIGIN_KEY]) if ORIGIN_KEY in data else None
    device_name = data.get("device_name") or ""
    model = device_model(device_name, device, "the cache file")
    found = KernelTunerFile(KIND, device_name=device_name, workloads=[workload], unterminated=unterminated)
    if not isinstance(data["cache"], dict):
        raise KernelTunerFileError("cache is not an object of key: entry")
    for key, entry in data["cache"].items():
        try:
            found.records.append(_cache_record(workload, model, key, entry, origin))
        except ValueError as exc:
            found.bad_entries.append((key, str(exc)))
    return found


def _cache_record(workload: KernelTunerWorkload, model: str, key: str, entry: Any, origin: Origin | None) -> Record:
    if not isinstance(entry, dict):
        raise ValueError("entry is not an object")
    params = {name: entry[name] for name in workload.param_names if name in entry}
    if len(params) != len(workload.param_names):
        missing = [n for n in workload.param_names if n not in entry]
        raise ValueError(f"parameter {', '.join(missing)} is missing")
    if workload.cache_key(params) != key:
        raise ValueError(f"the entry's parameters give the key {workload.cache_key(params)!r}")
    time = entry.get("time")
    common = {"all_cost": overhead_seconds(entry, OVERHEAD_KEYS), "timestamp": parse_timestamp(entry.get("timestamp")),
              "origin": origin, "index": entry.get(INDEX_KEY)}
    if isinstance(time, str):
        if time not in FAILURE_ERRORS:
            raise ValueError(f"time {time[:40]!r} is neither a number nor one of {', '.join(FAILURE_ERRORS)}")
        return workload.record(model, params, FAILURE_ERRORS[time], (), error_msg=failure_message(FAILURE_ERRORS[time]), **common)
    if not (is_number(time) and time > 0):
        raise ValueError("time is not a positive number")
    times = positive_times(entry.get("times", [time]), "times") or [time]
    return workload.record(model, params, ErrorNo.NO_ERROR, tuple(to_seconds(t) for t in times), **common)


def cache_document(workload: KernelTunerWorkload, device_name: str, records: Iterable[Record],
                   origin: Origin | None = None) -> dict:
    """A complete Kernel Tuner cache of these records (the first record of a config wins, as in Kernel Tuner).

    tunerweb keeps one overhead total per measurement: it is written as `framework_time`, the
    other overheads as 0. A file of another task's workload carries it (`origin`), and each
    entry its config index, so that tunerweb reads the file back onto that workload."""
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
            entry["time"] = FAILURE_OF_ERROR[record.error_no]
        entry.update({"compile_time": 0, "verification_time": 0, "benchmark_time": 0, "strategy_time": 0,
                      "framework_time": to_ms(record.all_cost), "timestamp": format_timestamp(record.timestamp)})
        if origin is not None:
            entry[INDEX_KEY] = record.config_index
        cache[key] = entry
    document = {"device_name": device_name, "kernel_name": workload.kernel_name,
                "problem_size": list(workload.problem_size), "tune_params_keys": workload.param_names,
                "tune_params": {name: list(values) for name, values in workload.tune_params},
                "objective": "time"}
    if origin is not None:
        document[ORIGIN_KEY] = origin.to_json()
    document["cache"] = cache  # last, as Kernel Tuner writes it, so the file can be appended to
    return document
