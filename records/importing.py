"""Bring an AutoTVM log into the records manager, streaming, in bulk.

`import_log` reads a log line by line (an open file, an UploadedFile, any
iterable of str or bytes lines), parses it with the engine's scan_log, creates
devices and workloads the first time it sees them and inserts records in chunks.
Re-importing a file, or a log exported from here, adds nothing: a record's
fingerprint is the sha256 of its canonical line (`format_record` of the parsed
record), unique in the database, and inserts ignore rows that already exist.

A file that is not a log at all (binary, not UTF-8, or no record among its first
lines) raises NotALogError before anything is written.
"""
from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
from typing import BinaryIO, Iterable, Iterator

from django.db import transaction

from engine import LegacyLineError, LogFileError, LogLineError, Record, canonical_args, format_record, log_lines, scan_log

from .models import BIGINT_MAX, Catalog, Device, ImportBatch, MeasurementRecord, Workload

CHUNK_SIZE = 2000
MAX_PROBLEMS = 300
# Duplicates noted by line (which line or record they repeat): the first few are enough to see why.
MAX_DUPLICATE_NOTES = 20
# The first lines a file must show a record among, or it is refused as not a log.
SNIFF_LINES = 20


class NotALogError(ValueError):
    """The file is not an AutoTVM log at all; nothing was imported."""


def canonical_line(record: Record) -> str:
    """The record's line as `format_record` writes it, kwargs keys sorted, since JSON
    columns (PostgreSQL's jsonb) may hand an object back in another key order."""
    if record.kwargs:
        record = dataclasses.replace(record, kwargs=json.loads(canonical_args(record.kwargs)))
    return format_record(record)


def fingerprint(line: str) -> str:
    """What makes a record unique: the sha256 of its canonical line."""
    return hashlib.sha256(line.encode()).hexdigest()


_LIMITS = {
    "target": MeasurementRecord._meta.get_field("target").max_length,
    "task name": Workload._meta.get_field("task_name").max_length,
    "GPU model": Device._meta.get_field("model").max_length,
    "tvm_version": MeasurementRecord._meta.get_field("tvm_version").max_length,
    "code_hash": MeasurementRecord._meta.get_field("code_hash").max_length,
}


def storage_problem(record: Record, line: str) -> str | None:
    """Why a parsed record cannot be stored as it is, or None; `line` is its
    `format_record` text, where a NUL shows as \\u0000 and a NaN as NaN.

    The parser accepts some things the database refuses (long strings, NUL
    characters, NaN inside JSON values, indexes beyond 64 bits); catching them
    here keeps one odd line from failing a whole chunk.
    """
    values = {
        "target": record.target,
        "task name": record.task_name,
        "GPU model": record.model,
        "tvm_version": record.tvm_version,
        "code_hash": record.code_hash or "",
    }
    for what, value in values.items():
        if not isinstance(value, str):
            return f"{what} is not a string"
        if len(value) > _LIMITS[what]:
            return f"{what} is longer than {_LIMITS[what]} characters"
    if record.config_index > BIGINT_MAX:
        return "config.index is larger than a 64-bit integer"
    if "\x00" in line or "\\u0000" in line:
        return "contains a NUL character"
    if "NaN" in line or "Infinity" in line:
        try:
            json.dumps([record.args, record.kwargs, record.entity], allow_nan=False)
        except ValueError:
            return "contains NaN or Infinity"
    return None


class _Reader:
    """Lines as text, with the file's sha256, its line count and the lines that
    were not UTF-8 (decoded with replacement characters so numbering holds)."""

    def __init__(self, lines: Iterable[str | bytes]) -> None:
        self._lines = lines
        self.sha256 = hashlib.sha256()
        self.count = 0
        self.undecodable: set[int] = set()

    def __iter__(self) -> Iterator[str]:
        for self.count, raw in enumerate(self._lines, start=1):
            if isinstance(raw, str):
                self.sha256.update(raw.encode("utf-8", "surrogatepass"))
                text = raw
            else:
                self.sha256.update(raw)
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError:
                    self.undecodable.add(self.count)
                    text = raw.decode("utf-8", "replace")
            if self.count == 1:
                text = text.removeprefix("\ufeff")
            if "\x00" in text:
                self.undecodable.add(self.count)
            yield text


def _sniff(items: Iterator, reader: _Reader, file_name: str) -> list:
    """The first parsed items; NotALogError when none of them is a record."""
    head = list(itertools.islice(items, SNIFF_LINES))
    if not head or any(isinstance(item, (Record, LegacyLineError)) for _, item in head):
        return head
    lineno, error = head[0]
    if reader.undecodable:
        raise NotALogError(f"{file_name} is not a text log: line {min(reader.undecodable)} is binary or not UTF-8")
    raise NotALogError(
        f"{file_name} is not an AutoTVM log: none of its first {len(head)} lines is a record "
        f"(line {lineno}: {error})"
    )


class _Importer:
    def __init__(self, batch: ImportBatch, reader: _Reader) -> None:
        self.batch = batch
        self.reader = reader
        self.catalog = Workload.objects.catalog()
        self.pending: dict[str, tuple[int, Record]] = {}  # fingerprint: (line number, record)
        self.valid = 0
        self.legacy = 0
        self.malformed = 0
        self.problems: list[dict] = []
        self.duplicate_notes = 0

    def note(self, lineno: int, reason: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append({"line": lineno, "reason": reason})

    def note_duplicate(self, lineno: int, reason: str) -> None:
        """Which line or record a duplicate repeats; only the first few, so they cannot crowd
        the malformed lines out of the report."""
        if self.duplicate_notes < MAX_DUPLICATE_NOTES:
            self.duplicate_notes += 1
            self.note(lineno, reason)

    def take(self, lineno: int, item: Record | LogLineError) -> None:
        if lineno in self.reader.undecodable:
            self.malformed += 1
            self.note(lineno, "binary data or not UTF-8 text")
            return
        if isinstance(item, LegacyLineError):
            self.legacy += 1
            return
        if isinstance(item, LogLineError):
            self.malformed += 1
            self.note(lineno, str(item))
            return
        line = canonical_line(item)
        problem = storage_problem(item, line)
        if problem:
            self.malformed += 1
            self.note(lineno, problem)
            return
        self.valid += 1
        key = fingerprint(line)
        if key in self.pending:
            self.note_duplicate(lineno, f"duplicate of line {self.pending[key][0]}")
            return
        self.pending[key] = (lineno, item)
        if len(self.pending) >= CHUNK_SIZE:
            self.flush()

    def flush(self) -> None:
        # Rows for records not stored yet only; ignore_conflicts covers an import
        # of the same lines running at the same time.
        stored = dict(
            MeasurementRecord.objects.filter(fingerprint__in=list(self.pending)).values_list("fingerprint", "pk")
        )
        for key in stored:
            self.note_duplicate(self.pending[key][0], f"duplicate: already stored as record #{stored[key]}")
        rows = [self.row(key, lineno, item) for key, (lineno, item) in self.pending.items() if key not in stored]
        MeasurementRecord.objects.bulk_create(rows, ignore_conflicts=True)
        self.pending.clear()

    def row(self, key: str, lineno: int, item: Record) -> MeasurementRecord:
        row, flops_note = record_row(item, self.batch, self.catalog, key)
        if flops_note:
            self.note(lineno, flops_note)
        return row


def record_row(
    record: Record, batch: ImportBatch | None, catalog: Catalog, key: str | None = None
) -> tuple[MeasurementRecord, str | None]:
    """The unsaved row of one record, and a note the first time its workload has no FLOP
    count. Log imports and tuning jobs both store records through here."""
    workload, flops_note = catalog.workload(record.task_name, record.args)
    row = MeasurementRecord(
        device_id=catalog.device_id(record.model),
        workload=workload,
        target=record.target,
        config_index=record.config_index,
        entity=record.entity,
        costs=list(record.costs),
        mean_cost=record.mean_cost,
        gflops=workload.gflops(record.mean_cost),
        error_no=int(record.error_no),
        error_msg=record.error_msg,
        all_cost=record.all_cost,
        timestamp=record.timestamp,
        tvm_version=record.tvm_version,
        code_hash=record.code_hash,
        kwargs=record.kwargs,
        batch=batch,
        fingerprint=key or fingerprint(canonical_line(record)),
    )
    return row, flops_note


def new_batch(file_name: str, source: str, user=None, kind: str = ImportBatch.Kind.RECORDS) -> ImportBatch:
    """The ImportBatch row of one file; a long name keeps its end, where the extension is."""
    limit = ImportBatch._meta.get_field("file_name").max_length
    if len(file_name) > limit:
        file_name = "…" + file_name[-(limit - 1):]
    created_by = user if user is not None and user.is_authenticated else None
    return ImportBatch.objects.create(file_name=file_name, source=source, kind=kind, created_by=created_by)


def import_log(
    lines: Iterable[str | bytes] | BinaryIO,
    file_name: str,
    user=None,
    source: str = ImportBatch.Source.COMMAND,
) -> ImportBatch:
    """Import one log (lines, or a binary stream, plain or gzipped, read by the engine's
    `log_lines`); see the module docstring. Raises NotALogError, changing nothing, for a
    file that is not a log."""
    if hasattr(lines, "read"):
        lines = log_lines(lines, file_name)
    try:
        return _import(lines, file_name, user, source)
    except LogFileError as exc:  # a broken gzip, found while reading: nothing was kept
        raise NotALogError(str(exc)) from None


def _import(lines: Iterable[str | bytes], file_name: str, user, source: str) -> ImportBatch:
    reader = _Reader(lines)
    items = scan_log(reader)
    head = _sniff(items, reader, file_name)
    with transaction.atomic():
        batch = new_batch(file_name, source, user)
        importer = _Importer(batch, reader)
        for lineno, item in itertools.chain(head, items):
            importer.take(lineno, item)
        importer.flush()
        batch.imported = batch.records.count()
        batch.lines = reader.count
        batch.duplicates = importer.valid - batch.imported
        batch.legacy_skipped = importer.legacy
        batch.malformed = importer.malformed
        batch.problems = sorted(importer.problems, key=lambda problem: problem["line"])
        batch.sha256 = reader.sha256.hexdigest()
        batch.save()
    return batch
