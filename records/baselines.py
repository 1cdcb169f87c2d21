"""Baseline times (vendor libraries, untuned default configs) in from files.

Three formats; each row names a workload, a GPU, a provider and a time, and is
upserted per (workload, GPU, provider): a later import replaces the time.

**CSV** (`fmt="csv"`), a header line, then one baseline a row::

    task,args,device,provider,cost_us,note
    conv2d_nchw.cuda,"[[""TENSOR"",[1,512,7,7],""float32""],[""TENSOR"",[512,512,3,3],""float32""],[1,1],[1,1,1,1],[1,1],""float32""]",h200,cudnn,129.0,PyTorch 2.11

- `task` and `args` (the log's task name and args, args as JSON) name the workload;
  instead of both, a `workload` column may give a workload id already stored.
- `device` is the GPU model as in a target's `-model=` (`h200`); a whole target
  string (`cuda -model=h200`) works too.
- `provider` is one of cudnn, cublas, default-config, other.
- `cost_us` is microseconds per run, a positive number.
- `note` is optional free text (library version, settings).

**JSON** (`fmt="json"`): a list of objects with the same keys; `args` may be a
JSON list or a string holding one; `workload` may replace `task` and `args`.

**Engine log** (`fmt="log"`): AutoTVM JSON lines as the engine writes them when it
times a provider. A line is a baseline when its `tvm_version` is
`baseline:<provider>` and its `config.entity` is `[]` (a library call has no
knobs); the target's `-model=` names the GPU, the input names the workload and the
mean of the costs is the time. A failed measurement (error_no other than 0) is
reported and skipped; other lines are reported as not baselines.

A file with no usable row at all, or a CSV without the needed columns, raises
BaselineFileError and changes nothing.
"""
from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass
from pathlib import PurePath
from typing import IO, Iterable, Iterator

from django.db import transaction

from engine import PROVIDERS as ENGINE_PROVIDERS, BadArgs, Record, args_from_json, baseline_provider_of, scan_log, target_model

from .importing import MAX_PROBLEMS, new_batch
from .models import Baseline, Catalog, Device, ImportBatch, Workload

FORMATS = ("csv", "json", "log")
PROVIDERS = tuple(ENGINE_PROVIDERS)
_DEVICE_MODEL_LENGTH = Device._meta.get_field("model").max_length
_TASK_NAME_LENGTH = Workload._meta.get_field("task_name").max_length
_EXTENSIONS = {".csv": "csv", ".json": "json", ".log": "log", ".jsonl": "log", ".txt": "log"}


class BaselineFileError(ValueError):
    """The file as a whole cannot be read as baselines; nothing was imported."""


class RowError(ValueError):
    """One row that is not a baseline; the message says why."""


@dataclass(frozen=True)
class BaselineRow:
    """One baseline as read from a file, before workloads and devices are looked up."""

    device: str
    provider: str
    cost: float  # seconds
    task_name: str | None = None
    args: list | None = None
    workload_id: int | None = None
    note: str = ""


def detect_format(file_name: str) -> str:
    suffix = PurePath(file_name).suffix.lower()
    if suffix not in _EXTENSIONS:
        raise BaselineFileError(
            f"cannot tell the format of {file_name!r} from its extension; choose one of {', '.join(FORMATS)}"
        )
    return _EXTENSIONS[suffix]


def _text_lines(stream: Iterable[str | bytes]) -> Iterator[str]:
    for line in stream:
        if isinstance(line, bytes):
            try:
                line = line.decode("utf-8")
            except UnicodeDecodeError:
                raise BaselineFileError("the file is not UTF-8 text") from None
        yield line.removeprefix("\ufeff")


def _provider(value) -> str:
    provider = str(value or "").strip().lower()
    if provider not in PROVIDERS:
        raise RowError(f"provider {value!r} is not one of {', '.join(PROVIDERS)}")
    return provider


def _cost_seconds(value) -> float:
    try:
        micros = float(value)
    except (TypeError, ValueError):
        raise RowError(f"cost_us {value!r} is not a number") from None
    if not (math.isfinite(micros) and micros > 0):
        raise RowError(f"cost_us {value!r} is not a positive number")
    return micros / 1e6


def _row_from_mapping(row: dict) -> BaselineRow:
    device = str(row.get("device") or "").strip()
    if not device:
        raise RowError("device is missing")
    if "-model=" in device:
        device = target_model(device)
    if len(device) > _DEVICE_MODEL_LENGTH:
        raise RowError(f"device is longer than {_DEVICE_MODEL_LENGTH} characters")
    common = dict(device=device, provider=_provider(row.get("provider")), cost=_cost_seconds(row.get("cost_us")), note=str(row.get("note") or "")[:255])
    workload = row.get("workload")
    if workload not in (None, ""):
        try:
            return BaselineRow(workload_id=int(workload), **common)
        except (TypeError, ValueError):
            raise RowError(f"workload {workload!r} is not a workload id") from None
    task = str(row.get("task") or "").strip()
    if not task:
        raise RowError("neither task and args nor workload is given")
    if len(task) > _TASK_NAME_LENGTH:
        raise RowError(f"task is longer than {_TASK_NAME_LENGTH} characters")
    args = row.get("args")
    if isinstance(args, str):
        try:
            args = args_from_json(args)
        except BadArgs as exc:
            raise RowError(str(exc)) from None
    if not isinstance(args, list):
        raise RowError("args is not a JSON list")
    return BaselineRow(task_name=task, args=args, **common)


def read_csv(stream: Iterable[str | bytes]) -> Iterator[tuple[int, BaselineRow | RowError]]:
    reader = csv.DictReader(_text_lines(stream))
    columns = set(reader.fieldnames or [])
    missing = {"device", "provider", "cost_us"} - columns
    if not {"task", "args"} <= columns and "workload" not in columns:
        missing |= {"task", "args"}
    if missing:
        raise BaselineFileError(f"the CSV header lacks {', '.join(sorted(missing))} (see the format on the page)")
    rows = iter(reader)
    while True:
        try:
            row = next(rows)
        except StopIteration:
            return
        except csv.Error as exc:  # a field over the csv module's size limit, a stray quote
            # The reader counts a line only once it has parsed it.
            raise BaselineFileError(f"line {reader.line_num + 1} is not CSV: {exc}") from None
        try:
            yield reader.line_num, _row_from_mapping(row)
        except RowError as exc:
            yield reader.line_num, exc


def read_json(stream: Iterable[str | bytes]) -> Iterator[tuple[int, BaselineRow | RowError]]:
    try:
        rows = json.loads("".join(_text_lines(stream)))
    except json.JSONDecodeError as exc:
        raise BaselineFileError(f"not JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(rows, list):
        raise BaselineFileError("the JSON is not a list of baseline objects")
    for number, row in enumerate(rows, start=1):
        if not isinstance(row, dict):
            yield number, RowError("not an object")
            continue
        try:
            yield number, _row_from_mapping(row)
        except RowError as exc:
            yield number, exc


def _row_from_record(record: Record) -> BaselineRow:
    written = baseline_provider_of(record)
    if written is None:
        raise RowError("not a baseline record (needs tvm_version 'baseline:<provider>' and an empty config entity)")
    provider = _provider(written)
    if not record.ok:
        raise RowError(f"the {provider} measurement failed ({record.error_no.label})")
    return BaselineRow(device=record.model, provider=provider, cost=record.mean_cost, task_name=record.task_name, args=record.args)


def read_log(stream: Iterable[str | bytes]) -> Iterator[tuple[int, BaselineRow | RowError]]:
    for number, item in scan_log(_text_lines(stream)):
        if isinstance(item, Record):
            try:
                yield number, _row_from_record(item)
            except RowError as exc:
                yield number, exc
        else:
            yield number, RowError(str(item))


READERS = {"csv": read_csv, "json": read_json, "log": read_log}


def import_baselines(
    stream: IO | Iterable[str | bytes],
    fmt: str,
    file_name: str = "baselines",
    user=None,
    source: str = ImportBatch.Source.COMMAND,
) -> ImportBatch:
    """Upsert the baselines of one file (see the module docstring for the formats); the batch
    counts its rows as `lines` and the baselines saved as `imported`."""
    if fmt not in READERS:
        raise BaselineFileError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    parsed = list(READERS[fmt](stream))
    if parsed and not any(isinstance(item, BaselineRow) for _, item in parsed):
        number, error = parsed[0]
        raise BaselineFileError(f"no baseline in {file_name} (row {number}: {error})")

    catalog = Workload.objects.catalog()
    problems: list[dict] = []
    found: dict[tuple[int, int, str], Baseline] = {}
    with transaction.atomic():
        batch = new_batch(file_name, source, user, kind=ImportBatch.Kind.BASELINES)
        for number, item in parsed:
            if isinstance(item, RowError):
                problems.append({"line": number, "reason": str(item)})
                continue
            try:
                workload = _workload(catalog, item, problems, number)
            except RowError as exc:
                problems.append({"line": number, "reason": str(exc)})
                continue
            key = (workload.pk, catalog.device_id(item.device), item.provider)
            found[key] = Baseline(
                workload=workload, device_id=key[1], provider=item.provider, cost=item.cost, note=item.note, batch=batch
            )
        Baseline.objects.bulk_create(
            found.values(),
            update_conflicts=True,
            unique_fields=["workload", "device", "provider"],
            update_fields=["cost", "note", "batch", "measured_at"],
        )
        rejected = sum(isinstance(item, RowError) for _, item in parsed)
        batch.lines, batch.imported, batch.malformed = len(parsed), len(found), rejected
        batch.duplicates, batch.problems = len(parsed) - rejected - len(found), problems[:MAX_PROBLEMS]
        batch.save()
    return batch


def _workload(catalog: Catalog, row: BaselineRow, problems: list[dict], number: int) -> Workload:
    if row.workload_id is not None:
        workload = Workload.objects.filter(pk=row.workload_id).first()
        if workload is None:
            raise RowError(f"no workload with id {row.workload_id}")
        return workload
    workload, flops_note = catalog.workload(row.task_name, row.args)
    if flops_note:
        problems.append({"line": number, "reason": flops_note})
    return workload
