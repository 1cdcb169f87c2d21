"""T4 results (FAIR autotuning schema 1.0.0), read and written; T1 input files and T4 metadata files
supply what T4 results leave out (the kernel, the GPU)."""
from __future__ import annotations

import json
from typing import Any, Iterable

from ..logfile import ErrorNo, Record
from .workload import (FAILURE_OF_ERROR, INDEX_KEY, ORIGIN_KEY, KernelTunerFile, KernelTunerFileError,
                       KernelTunerWorkload, Origin, device_model, failure_message, format_timestamp, in_seconds, overhead_seconds,
                       params_of_entity, parse_timestamp, positive_times, same_value, sorted_values, to_ms)

KIND = "t4"
SCHEMA_VERSION = "1.0.0"
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
OVERHEAD_KEYS = ("compilation", "compilation_time", "benchmark", "framework", "search_algorithm", "validation")


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


def _inferred_workload(results: list, metadata: dict) -> KernelTunerWorkload:
    """The kernel the metadata tunerweb writes names, or one inferred from the configurations
    ("unnamed", each parameter's values as seen, sorted)."""
    if {"kernel_name", "tune_params"} <= set(metadata):
        return KernelTunerWorkload.create(metadata["kernel_name"], metadata.get("problem_size", []),
                                          metadata["tune_params"])
    values: dict[str, list] = {}
    for result in results:
        configuration = result.get("configuration") if isinstance(result, dict) else None
        for name, value in (configuration or {}).items() if isinstance(configuration, dict) else ():
            seen = values.setdefault(name, [])
            if not any(same_value(value, v) for v in seen):
                seen.append(value)
    if not values:
        raise KernelTunerFileError("the T4 results hold no configuration")
    return KernelTunerWorkload.create("unnamed", [], [[n, sorted_values(v)] for n, v in values.items()])


def parse_t4(data: Any, device: str | None = None, workload: KernelTunerWorkload | None = None,
             metadata_file: Any = None) -> KernelTunerFile:
    """Read T4 results. The kernel comes from `workload` (a T1 file's), else from the metadata
    tunerweb writes, else it is inferred; the GPU from `device`, else the metadata, else the
    T4 metadata file (`metadata_file`)."""
    if not (isinstance(data, dict) and isinstance(data.get("results"), list)):
        raise KernelTunerFileError("not T4 results (no \"results\" list)")
    metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    unit_name = metadata.get("timeunit", "milliseconds")
    if unit_name not in TIME_UNITS:
        raise KernelTunerFileError(f"timeunit {unit_name!r} is not one of {', '.join(TIME_UNITS)}")
    unit = TIME_UNITS[unit_name]
    try:
        workload = workload or _inferred_workload(data["results"], metadata)
    except ValueError as exc:
        raise KernelTunerFileError(f"T4 metadata: {exc}") from None
    origin = Origin.from_json(metadata[ORIGIN_KEY]) if ORIGIN_KEY in metadata else None
    device_name = metadata.get("device_name") or (t4_device_name(metadata_file) if metadata_file else "")
    model = device_model(device_name, device, "the T4 file")
    found = KernelTunerFile(KIND, device_name=device_name, workloads=[workload])
    for number, result in enumerate(data["results"]):
        try:
            found.records.append(_t4_record(workload, model, result, unit, origin))
        except ValueError as exc:
            found.bad_entries.append((f"results[{number}]", str(exc)))
    return found


def _t4_record(workload: KernelTunerWorkload, model: str, result: Any, unit: float, origin: Origin | None) -> Record:
    if not isinstance(result, dict) or not isinstance(result.get("configuration"), dict):
        raise ValueError("result has no configuration object")
    invalidity = result.get("invalidity", "correct")
    if invalidity not in T4_ERRORS:
        raise ValueError(f"invalidity {str(invalidity)[:40]!r} is not one of {', '.join(T4_ERRORS)}")
    times = result.get("times") if isinstance(result.get("times"), dict) else {}
    common = {"all_cost": overhead_seconds(times, OVERHEAD_KEYS, unit),
              "timestamp": parse_timestamp(result.get("timestamp")), "origin": origin, "index": result.get(INDEX_KEY)}
    params = result["configuration"]
    error = T4_ERRORS[invalidity]
    if error == ErrorNo.NO_ERROR and result.get("correctness", 1) == 0:
        error = ErrorNo.WRONG_ANSWER
    if error != ErrorNo.NO_ERROR:
        return workload.record(model, params, error, (), error_msg=failure_message(error), **common)
    runtimes = positive_times(times.get("runtimes", []), "times.runtimes")
    if not runtimes:
        measured = [m.get("value") for m in result.get("measurements", [])
                    if isinstance(m, dict) and m.get("name") == "time"]
        runtimes = positive_times(measured[:1], "the time measurement")
    if not runtimes:
        raise ValueError("a correct result without runtimes or a time measurement")
    return workload.record(model, params, ErrorNo.NO_ERROR, tuple(in_seconds(t, unit) for t in runtimes), **common)


def t4_document(workload: KernelTunerWorkload, device_name: str, records: Iterable[Record],
                origin: Origin | None = None) -> dict:
    """T4 results of these records. The metadata also names the kernel, the GPU and (for another
    task's workload) the workload, so tunerweb reads the file back whole."""
    results = []
    for record in records:
        params = params_of_entity(record.entity)
        runtimes = [to_ms(c) for c in record.costs] if record.ok else []
        value: Any = sum(runtimes) / len(runtimes) if runtimes else FAILURE_OF_ERROR[record.error_no]
        result = {
            "timestamp": format_timestamp(record.timestamp),
            "configuration": {name: params[name] for name in workload.param_names},
            "times": {"compilation": 0, "framework": to_ms(record.all_cost), "search_algorithm": 0,
                      "validation": 0, "runtimes": runtimes},
            "invalidity": _T4_OF_ERROR[record.error_no],
            "correctness": 0 if record.error_no == ErrorNo.WRONG_ANSWER else 1,
            "measurements": [{"name": "time", "value": value, "unit": "ms"}],
            "objectives": ["time"],
        }
        if origin is not None:
            result[INDEX_KEY] = record.config_index
        results.append(result)
    spec = workload.args[0]
    metadata = {"timeunit": "milliseconds", "device_name": device_name, "kernel_name": spec["kernel_name"],
                "problem_size": spec["problem_size"], "tune_params": spec["tune_params"]}
    if origin is not None:
        metadata[ORIGIN_KEY] = origin.to_json()
    return {"schema_version": SCHEMA_VERSION, "metadata": metadata, "results": results}
