"""A T1 input file (FAIR autotuning schema) and the kernel's source as a custom-kernel spec
(engine.ops.custom.tiling), so a kernel tuned with Kernel Tuner elsewhere tunes on tunerweb's
GPU workers over the same space, and its records map back onto its `kernel_tuner` workload.

From the T1 file: the tunable parameters (in order, with their values), the restrictions, the
problem size (sizes `problem_size_0`, `problem_size_1`, ...), the block (LocalSize) and the grid
Kernel Tuner launches: each problem dimension divided by the product of its GridDiv list,
rounded up (without a GridDiv list, by block_size_x/y/z as Kernel Tuner does). Arguments come
from the T1 file when it describes them well enough, or from the caller; constant-memory
arguments (MemType Constant) become the spec's `constants`.
"""
from __future__ import annotations

import json
import re
from typing import Any

from ..logfile import Record
from .t4 import t1_workload
from .workload import KernelTunerFileError, KernelTunerWorkload, params_of_entity

_T1_TYPES = {"float": "float32", "double": "float64", "int": "int32", "unsigned char": "uint8", "uint8": "uint8"}
_PROBLEM_SIZE = re.compile(r"ProblemSize\[(\d)\]")
_MAX_OF_PARAM = re.compile(r"max\((\w+)\)")
_AXES = ("X", "Y", "Z")


def problem_sizes(t1: dict) -> dict[str, int]:
    sizes = t1["KernelSpecification"].get("ProblemSize", [])
    if isinstance(sizes, int):
        sizes = [sizes]
    return {f"problem_size_{i}": int(n) for i, n in enumerate(sizes)}


def _size_expression(text: str, values: dict[str, list]) -> str:
    """T1's `(ProblemSize[0]+max(filter_width)-1)` in our expression language (a parameter's max as a number)."""
    text = _PROBLEM_SIZE.sub(r"problem_size_\1", str(text))
    return _MAX_OF_PARAM.sub(lambda m: str(max(values[m.group(1)])) if m.group(1) in values else m.group(0), text)


def t1_arguments(t1: dict) -> tuple[list[dict], dict[str, str]]:
    """The T1 file's arguments as spec arguments, and its constant-memory ones as `constants`."""
    values = {name: list(v) for name, v in t1_workload(t1).tune_params}
    arguments, constants = [], {}
    for raw in t1["KernelSpecification"].get("Arguments", []):
        if raw.get("Type") not in _T1_TYPES:
            raise KernelTunerFileError(f"T1 argument {raw.get('Name')}: type {raw.get('Type')!r} is not one of "
                                       f"{', '.join(_T1_TYPES)}")
        argument = {"name": raw["Name"], "shape": [_size_expression(raw["Size"], values)],
                    "dtype": _T1_TYPES[raw["Type"]]}
        if raw.get("Output"):
            argument["output"] = True
        arguments.append(argument)
        if raw.get("MemType") == "Constant":
            constants[raw["Name"]] = raw["Name"]
    return arguments, constants


def _launch(t1: dict, names: list[str]) -> tuple[list[str], list[str]]:
    spec = t1["KernelSpecification"]
    local = spec.get("LocalSize", {})
    block = [str(local.get(axis, f"block_size_{axis.lower()}" if f"block_size_{axis.lower()}" in names else 1))
             for axis in _AXES]
    dims = list(problem_sizes(t1))
    grid = []
    for i, axis in enumerate(_AXES):
        if i >= len(dims):
            grid.append("1")
            continue
        divisors = spec.get(f"GridDiv{axis}")
        if divisors is None:
            default = f"block_size_{axis.lower()}"
            divisors = [default] if default in names else []
        grid.append(f"ceil_div({dims[i]}, {' * '.join(divisors)})" if divisors else dims[i])
    return block, grid


def custom_spec(t1: dict, source: str, *, reference: dict, arguments: list[dict] | None = None,
                constants: dict[str, str] | None = None, sizes: dict[str, int] | None = None,
                flops: str | int | None = None) -> dict:
    """The custom-kernel spec of a T1 kernel; `arguments`/`constants` replace the T1 file's where
    those are wrong or missing, `sizes` adds sizes the argument shapes use."""
    try:
        workload = t1_workload(t1)
        names = workload.param_names
        block, grid = _launch(t1, names)
        if arguments is None:
            arguments, found_constants = t1_arguments(t1)
            constants = found_constants if constants is None else constants
        spec = {
            "kernel_name": workload.kernel_name,
            "source": source,
            "sizes": {**problem_sizes(t1), **(sizes or {})},
            "tune_params": [[name, list(values)] for name, values in workload.tune_params],
            "restrictions": [c["Expression"] for c in t1["ConfigurationSpace"].get("Conditions", [])],
            "block": block,
            "grid": grid,
            "arguments": arguments,
            "reference": reference,
        }
    except (KeyError, TypeError, ValueError) as exc:
        raise KernelTunerFileError(f"T1 file: {exc}") from None
    if constants:
        spec["constants"] = constants
    if flops is not None:
        spec["flops"] = flops
    return spec


def as_kernel_tuner_record(workload: KernelTunerWorkload, record: Record) -> Record:
    """A custom-kernel record of a T1 kernel as the record of its `kernel_tuner` workload (no source)."""
    return workload.record(record.model, params_of_entity(record.entity), record.error_no, record.costs,
                           all_cost=record.all_cost, timestamp=record.timestamp, error_msg=record.error_msg)


def describe(spec: dict) -> str:
    """One line for logs: the kernel and its space, without the source."""
    return json.dumps({k: v for k, v in spec.items() if k not in ("source", "reference")})[:400]
