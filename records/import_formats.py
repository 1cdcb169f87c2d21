"""Which format an imported file is in, and the import of each: the one door the import command,
the upload page and `POST /api/imports/` go through.

AutoTVM JSON lines (plain or gzip) stream through records.importing; Kernel Tuner's cache
file (complete or unterminated), T4 results and `store_results` file are read whole by
engine.kernel_tuner and stored as the records they are, through the same importer, so
re-importing adds nothing. A Kernel Tuner file that names no GPU is refused unless the
user names its model; a malformed entry is reported with its key and reason.
"""
from __future__ import annotations

import gzip
import hashlib
import io
import json
import zlib
from typing import IO

from django.db import transaction

from engine import (KERNEL_TUNER_SNIFF_BYTES, KernelTunerFile, KernelTunerFileError, checked_model, format_record,
                    parse_kernel_tuner_text, sniff_kernel_tuner)

from .importing import MAX_PROBLEMS, NotALogError, import_log
from .models import Device, ImportBatch

AUTOTVM = "autotvm"
_GZIP_MAGIC = b"\x1f\x8b"
# Kernel Tuner files are read whole; a gzip that unpacks past this is refused, not unpacked.
# (The benchmark hub's largest cache, 11,130 configs of 32 times each, is 12 MB.)
MAX_KERNEL_TUNER_BYTES = 256 * 1024 * 1024
_GZIP_ERRORS = (gzip.BadGzipFile, EOFError, zlib.error)


def checked_device(model: str | None) -> str | None:
    """The GPU model slug a user named, lower-case; NotALogError when it is not a slug."""
    if model is None or not model.strip():
        return None
    try:
        return checked_model(model)
    except ValueError as exc:
        raise NotALogError(str(exc)) from None


def _binary(stream) -> IO[bytes]:
    """A seekable binary stream of the file's content, gunzipped when it is gzip data."""
    if hasattr(stream, "seek"):
        stream.seek(0)
    raw = stream if hasattr(stream, "read") else io.BytesIO(b"".join(stream))
    head = raw.read(2)
    raw.seek(0)
    return gzip.GzipFile(fileobj=raw, mode="rb") if head == _GZIP_MAGIC else raw


def detect(stream) -> str:
    """AUTOTVM or one of engine.kernel_tuner's kinds, from the file's opening; the stream is rewound."""
    content = _binary(stream)
    try:
        head = content.read(KERNEL_TUNER_SNIFF_BYTES)
    except _GZIP_ERRORS:
        raise NotALogError("not a readable gzip file") from None
    stream.seek(0)
    return sniff_kernel_tuner(head.decode("utf-8", errors="ignore")) or AUTOTVM


def import_file(stream, file_name: str, *, user=None, source: str = ImportBatch.Source.COMMAND,
                device: str | None = None, metadata=None) -> ImportBatch:
    """Import one file in whichever format it is. `device`: the GPU model of a Kernel Tuner file
    (it overrides the file's device name); `metadata`: a T4 metadata or T1 file for T4 results.
    NotALogError, changing nothing, when the file is none of the formats or cannot be imported."""
    device = checked_device(device)
    kind = detect(stream)
    if kind == AUTOTVM:
        if device or metadata is not None:
            raise NotALogError(f"{file_name} is an AutoTVM log, whose lines name their GPU: "
                               "the device and metadata options are for Kernel Tuner files")
        return import_log(stream, file_name, user=user, source=source)  # plain or gzip, streamed
    found = _read_kernel_tuner(stream, file_name, device, metadata)
    return _store(found, stream, file_name, user, source)


def _read_kernel_tuner(stream, file_name: str, device: str | None, metadata) -> KernelTunerFile:
    try:
        raw = _binary(stream).read(MAX_KERNEL_TUNER_BYTES + 1)
    except _GZIP_ERRORS:
        raise NotALogError(f"{file_name} is not a readable gzip file") from None
    if len(raw) > MAX_KERNEL_TUNER_BYTES:
        raise NotALogError(f"{file_name} unpacks to more than {MAX_KERNEL_TUNER_BYTES // 2**20} MiB")
    try:
        text = raw.decode("utf-8")
        meta = json.loads(_binary(metadata).read(MAX_KERNEL_TUNER_BYTES).decode("utf-8")) if metadata is not None else None
        found = parse_kernel_tuner_text(text, device, meta)
    except UnicodeDecodeError:
        raise NotALogError(f"{file_name} (or its metadata file) is not UTF-8 text") from None
    except _GZIP_ERRORS:
        raise NotALogError("the metadata file is not a readable gzip file") from None
    except json.JSONDecodeError as exc:
        raise NotALogError(f"the metadata file is not JSON ({exc.msg} at line {exc.lineno})") from None
    except KernelTunerFileError as exc:
        raise NotALogError(f"{file_name}: {exc}") from None
    if not found.records:
        first = f" (entry {found.bad_entries[0][0]}: {found.bad_entries[0][1]})" if found.bad_entries else ""
        raise NotALogError(f"{file_name}: this {found.kind} file holds no readable entry{first}")
    return found


@transaction.atomic
def _store(found: KernelTunerFile, stream, file_name: str, user, source) -> ImportBatch:
    batch = import_log((format_record(r) for r in found.records), file_name, user=user, source=source)
    batch.lines = len(found.records) + len(found.bad_entries)
    batch.malformed += len(found.bad_entries)
    room = max(0, MAX_PROBLEMS - len(batch.problems))
    batch.problems += [{"entry": key, "reason": reason} for key, reason in found.bad_entries[:room]]
    stream.seek(0)
    digest = hashlib.sha256()
    for chunk in iter(lambda: stream.read(1 << 20), b""):
        digest.update(chunk)
    batch.sha256 = digest.hexdigest()
    batch.save(update_fields=["sha256", "lines", "malformed", "problems"])
    if found.device_name:
        # The file's device name becomes the GPU's name where none is known (exports write it back).
        models = {record.model for record in found.records}
        Device.objects.filter(model__in=models, name="").update(name=found.device_name[:128])
    return batch
