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

A device name becomes a GPU model slug through engine.gpu.device.model_slug
(`NVIDIA A100-PCIE-40GB` → `a100`, `AMD Radeon PRO W6600` → `w6600`); a file
that names no GPU needs the caller's `device`.
"""
from __future__ import annotations

import gzip
import json
import zlib
from os import PathLike
from typing import Any

from .cache import KIND as CACHE
from .cache import cache_document, load_cache_json, parse_cache
from .results import KIND as RESULTS
from .results import parse_results_file
from .t4 import KIND as T4
from .t4 import T4_ERRORS, TIME_UNITS, parse_t4, t1_workload, t4_device_name, t4_document
from .workload import (FAILURE_ERRORS, INDEX_KEY, ORIGIN_KEY, TASK_NAME, DeviceNameMissing, KernelTunerFile,
                       KernelTunerFileError, KernelTunerWorkload, Origin, checked_model, device_model, export_view,
                       params_of_entity,
                       parse_timestamp, to_ms, to_seconds)

SNIFF_BYTES = 64 * 1024
KERNEL_TUNER_TEMPLATE = TASK_NAME

__all__ = [
    "CACHE", "FAILURE_ERRORS", "INDEX_KEY", "ORIGIN_KEY", "RESULTS", "SNIFF_BYTES", "T4", "T4_ERRORS", "TASK_NAME",
    "TIME_UNITS", "DeviceNameMissing", "KernelTunerFile", "KernelTunerFileError", "KernelTunerWorkload", "Origin",
    "cache_document", "checked_model", "device_model", "export_view", "load_cache_json", "params_of_entity", "parse_cache",
    "parse_results_file", "parse_t4", "parse_text", "parse_timestamp", "read_file", "read_text", "sniff",
    "sniff_file", "t1_workload", "t4_device_name", "t4_document", "to_ms", "to_seconds",
]


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


def read_file(path: str | PathLike, device: str | None = None,
              metadata_path: str | PathLike | None = None) -> KernelTunerFile:
    """Read a Kernel Tuner file (gzipped or not) from disk; `metadata_path` as `parse_text`'s `metadata_file`."""
    metadata = None
    if metadata_path is not None:
        try:
            metadata = json.loads(read_text(metadata_path))
        except json.JSONDecodeError as exc:
            raise KernelTunerFileError(f"{metadata_path} is not JSON ({exc.msg})") from None
    return parse_text(read_text(path), device, metadata)


# The names the front door (engine/__init__.py) gives the web side.
sniff_kernel_tuner = sniff
parse_kernel_tuner_text = parse_text
kernel_tuner_cache_document = cache_document
kernel_tuner_t4_document = t4_document
kernel_tuner_export_view = export_view
KERNEL_TUNER_SNIFF_BYTES = SNIFF_BYTES
