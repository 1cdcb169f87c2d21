"""The tuning-results file Kernel Tuner's `store_results` writes: the top configs per device and problem size."""
from __future__ import annotations

from typing import Any

from ..logfile import ErrorNo, Record
from .workload import (DeviceNameMissing, KernelTunerFile, KernelTunerFileError, KernelTunerWorkload, device_model,
                       is_number, same_value, sorted_values, to_seconds)

KIND = "kernel-tuner-results"


def parse_results_file(data: Any, device: str | None = None) -> KernelTunerFile:
    """Read a `store_results` file. It lists parameter names, not their values, so each problem
    size's workload takes the values seen in the file (sorted): such records join one another,
    not a cache's full space. Device names there are Kernel Tuner's (`NVIDIA_A100_PCIE_40GB`)."""
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
    found = KernelTunerFile(KIND)
    for size, items in by_size.items():
        where = f"problem_size {size}"
        try:
            workload = _workload_of(data["kernel_name"], size, names, items)
        except ValueError as exc:
            found.bad_entries.append((where, str(exc)))
            continue
        found.workloads.append(workload)
        for number, item in enumerate(items):
            try:
                found.records.append(_results_record(workload, item, device))
            except (DeviceNameMissing, ValueError) as exc:
                found.bad_entries.append((f"{where} data[{number}]", str(exc)))
    if not found.workloads:
        raise KernelTunerFileError("the results file holds no results")
    return found


def _workload_of(kernel_name: Any, size: str, names: list[str], items: list) -> KernelTunerWorkload:
    values: dict[str, list] = {n: [] for n in names}
    for item in items:
        params = item.get("tunable_parameters") if isinstance(item, dict) else None
        for name in names:
            value = params.get(name) if isinstance(params, dict) else None
            if value is not None and not any(same_value(value, v) for v in values[name]):
                values[name].append(value)
    # store_results writes the problem size as "4096x4096".
    problem = [int(p) if p.isdigit() else p for p in size.split("x")] if size != "None" else []
    return KernelTunerWorkload.create(kernel_name, problem, [[n, sorted_values(values[n])] for n in names])


def _results_record(workload: KernelTunerWorkload, item: Any, device: str | None) -> Record:
    if not isinstance(item, dict) or not isinstance(item.get("tunable_parameters"), dict):
        raise ValueError("item has no tunable_parameters object")
    time = item.get("time")
    if not (is_number(time) and time > 0):
        raise ValueError("time is not a positive number")
    model = device_model(str(item.get("device_name") or ""), device, "the item")
    return workload.record(model, item["tunable_parameters"], ErrorNo.NO_ERROR, (to_seconds(time),),
                           all_cost=0.0, timestamp=0.0)
