"""Records out as AutoTVM logs, streamed line by line.

Two exports over the same filters (workload id, GPU model, import batch id, task
name; none means everything): the best config per (GPU model, workload), as TVM's
`pick_best` writes it, and every record. Lines come from
`MeasurementRecord.to_record()` through `engine.logfile.format_record`, so the files
import back into tunerweb and load in TVM's `apply_history_best` unchanged.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Mapping

from django.db.models import QuerySet
from django.utils.text import slugify

from engine import format_record

from .models import Device, ImportBatch, MeasurementRecord, Workload

ITERATOR_CHUNK = 2000


class ExportFilterError(ValueError):
    """A filter value that is not well formed (a workload id that is not a number)."""


class UnknownFilterTarget(ExportFilterError):
    """A filter naming a workload, device or batch that does not exist."""


def _optional_int(params: Mapping, name: str) -> int | None:
    raw = (params.get(name) or "").strip()
    if not raw:
        return None
    try:
        return int(raw)
    except ValueError:
        raise ExportFilterError(f"{name} must be a number, not {raw!r}") from None


def _optional_name(params: Mapping, name: str) -> str | None:
    raw = (params.get(name) or "").strip()
    if any(ord(c) < 32 or ord(c) == 127 for c in raw):
        # The value is echoed in the download's header line: no line breaks may ride along.
        raise ExportFilterError(f"{name} must not contain control characters")
    return raw or None


@dataclass(frozen=True)
class ExportFilter:
    workload: int | None = None
    device: str | None = None
    batch: int | None = None
    task: str | None = None

    @classmethod
    def from_params(cls, params: Mapping) -> "ExportFilter":
        """From query parameters or command options; raises ExportFilterError."""
        found = cls(
            workload=_optional_int(params, "workload"),
            device=_optional_name(params, "device"),
            batch=_optional_int(params, "batch"),
            task=_optional_name(params, "task"),
        )
        found.check_targets_exist()
        return found

    def check_targets_exist(self) -> None:
        if self.workload is not None and not Workload.objects.filter(pk=self.workload).exists():
            raise UnknownFilterTarget(f"no workload with id {self.workload}")
        if self.device is not None and not Device.objects.filter(model=self.device).exists():
            raise UnknownFilterTarget(f"no GPU model {self.device!r}")
        if self.batch is not None and not ImportBatch.objects.filter(pk=self.batch).exists():
            raise UnknownFilterTarget(f"no import batch with id {self.batch}")
        if self.task is not None and not Workload.objects.filter(task_name=self.task).exists():
            raise UnknownFilterTarget(f"no workload of task {self.task!r}")

    def records(self) -> QuerySet:
        records = MeasurementRecord.objects.all()
        if self.workload is not None:
            records = records.filter(workload_id=self.workload)
        if self.device is not None:
            records = records.filter(device__model=self.device)
        if self.batch is not None:
            records = records.filter(batch_id=self.batch)
        if self.task is not None:
            records = records.filter(workload__task_name=self.task)
        return records

    def describe(self) -> str:
        """What the filter selects, as words: `task conv2d_nchw.cuda, GPU v100`."""
        parts = [
            f"{label} {value}"
            for label, value in (("workload", self.workload), ("task", self.task), ("GPU", self.device), ("batch", self.batch))
            if value is not None
        ]
        return ", ".join(parts) or "all records"

    def file_name(self, kind: str) -> str:
        """An attachment name that says what the file holds: `tunerweb-best-task-dense-gpu-v100.log`."""
        parts = ["tunerweb", kind]
        for label, value in (("workload", self.workload), ("task", self.task), ("gpu", self.device), ("batch", self.batch)):
            if value is not None:
                parts += [label, slugify(str(value).replace(".", "-"))]
        return "-".join(parts) + ".log"


def best_lines(selection: ExportFilter) -> Iterator[str]:
    """The best record per (GPU model, workload) among the selection, one line each."""
    yield f"# tunerweb best configs: {selection.describe()}\n"
    for record in selection.records().best_per_gpu().iterator(chunk_size=ITERATOR_CHUNK):
        yield format_record(record.to_record()) + "\n"


def record_lines(selection: ExportFilter) -> Iterator[str]:
    """Every record of the selection, in import order."""
    yield f"# tunerweb records: {selection.describe()}\n"
    records = selection.records().select_related("workload").order_by("id")
    for record in records.iterator(chunk_size=ITERATOR_CHUNK):
        yield format_record(record.to_record()) + "\n"
