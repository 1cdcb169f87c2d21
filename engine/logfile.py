"""AutoTVM's JSON-lines tuning log, version 0.2: one measurement a line.

This is the only reader and writer of the format in tunerweb: the engine's log
callback, its `best` command and the Django records app all go through it.
Inside tunerweb an error is `error_no != NO_ERROR` with empty `costs`; the
`[1e9]` that AutoTVM writes for a failed measurement exists only in the file.
"""
from __future__ import annotations

import gzip
import io
import json
import math
import re
import zlib
from dataclasses import dataclass, field
from enum import IntEnum
from os import PathLike
from typing import Any, BinaryIO, Iterable, Iterator, TextIO

LOG_VERSION = 0.2
PRODUCER = "tunerweb-0.1"
ERROR_COST = 1e9
UNKNOWN_MODEL = "unknown"

_MODEL_RE = re.compile(r"(?:^|\s)-model=(\S+)")


class ErrorNo(IntEnum):
    """AutoTVM's MeasureErrorNo."""

    NO_ERROR = 0
    INSTANTIATION_ERROR = 1
    COMPILE_HOST = 2
    COMPILE_DEVICE = 3
    RUNTIME_DEVICE = 4
    WRONG_ANSWER = 5
    BUILD_TIMEOUT = 6
    RUN_TIMEOUT = 7
    UNKNOWN_ERROR = 8

    @property
    def label(self) -> str:
        return self.name.replace("_", " ").lower()


class LogLineError(ValueError):
    """A line that is not a valid version 0.2 record; the message says why."""


class LegacyLineError(LogLineError):
    """A version 0.1 line (`{"i": .., "r": .., "v": 0.1}`): skipped, not imported."""


class Outcome:
    """The rule of a measurement's outcome, written once for a log record and a measurer's
    result alike: it ran when it has no error and a time; its cost is the mean of its times."""

    error_no: ErrorNo
    costs: tuple[float, ...]

    @property
    def ok(self) -> bool:
        return self.error_no == ErrorNo.NO_ERROR and bool(self.costs)

    @property
    def mean_cost(self) -> float | None:
        return sum(self.costs) / len(self.costs) if self.ok else None


@dataclass(frozen=True)
class Record(Outcome):
    target: str
    task_name: str
    args: list
    config_index: int
    entity: list
    costs: tuple[float, ...]
    error_no: ErrorNo
    all_cost: float
    timestamp: float
    kwargs: dict = field(default_factory=dict)
    tvm_version: str = PRODUCER
    error_msg: str = ""
    code_hash: str | None = None

    @property
    def model(self) -> str:
        return target_model(self.target)

    @property
    def workload_key(self) -> tuple[str, str]:
        return (self.task_name, canonical_args(self.args))


def target_model(target: str) -> str:
    """The GPU model slug of a target string: `cuda -model=v100` gives `v100`."""
    match = _MODEL_RE.search(target)
    return match.group(1) if match else UNKNOWN_MODEL


def make_target(model: str) -> str:
    return f"cuda -model={model}"


def canonical_args(args: Iterable) -> str:
    """One spelling of a workload's args, so equal workloads compare equal as text
    (json writes tuples as lists, so a tuple and a list spell the same)."""
    return json.dumps(args, separators=(",", ":"), sort_keys=True)


def _require(condition: bool, reason: str) -> None:
    if not condition:
        raise LogLineError(reason)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_entity(entity: Any) -> list:
    _require(isinstance(entity, list), "config.entity is not a list")
    for knob in entity:
        if not (isinstance(knob, list) and len(knob) == 3 and isinstance(knob[0], str) and isinstance(knob[1], str)):
            raise LogLineError(f"config.entity item {json.dumps(knob)[:60]} is not [name, kind, value]")
    return entity


def parse_line(text: str) -> Record | None:
    """Parse one log line; None for a blank or `#` comment line.

    Raises LegacyLineError for a version 0.1 line and LogLineError for anything
    else that is not a record, with the reason in the message.
    """
    text = text.strip()
    if not text or text.startswith("#"):
        return None
    try:
        row = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LogLineError(f"not JSON ({exc.msg} at column {exc.colno})") from None
    _require(isinstance(row, dict), "not a JSON object")
    if "v" in row and "i" in row:
        raise LegacyLineError(f"version {row.get('v')} record (only version 0.2 is read)")
    for key in ("input", "config", "result"):
        _require(key in row, f"missing '{key}'")
    version = row.get("version", LOG_VERSION)
    _require(version == LOG_VERSION, f"unsupported version {version!r} (expected 0.2)")

    inp = row["input"]
    _require(isinstance(inp, list) and len(inp) == 4, "input is not [target, task_name, args, kwargs]")
    target, task_name, args, kwargs = inp
    _require(isinstance(target, str) and target.strip() != "", "input target is not a string")
    _require(isinstance(task_name, str) and task_name.strip() != "", "input task name is not a string")
    _require(isinstance(args, list), "input args is not a list")
    _require(isinstance(kwargs, dict), "input kwargs is not an object")

    config = row["config"]
    _require(isinstance(config, dict), "config is not an object")
    index = config.get("index")
    _require(isinstance(index, int) and not isinstance(index, bool) and index >= 0, "config.index is not a non-negative integer")
    entity = _check_entity(config.get("entity"))

    result = row["result"]
    _require(isinstance(result, list) and len(result) == 4, "result is not [costs, error_no, all_cost, timestamp]")
    costs, error_no, all_cost, timestamp = result
    _require(isinstance(costs, list) and len(costs) > 0, "result costs is not a non-empty list")
    _require(isinstance(error_no, int) and not isinstance(error_no, bool), "result error_no is not an integer")
    try:
        error = ErrorNo(error_no)
    except ValueError:
        raise LogLineError(f"result error_no {error_no} is not one of 0..8") from None
    _require(_is_number(all_cost) and all_cost >= 0, "result all_cost is not a non-negative number")
    _require(_is_number(timestamp), "result timestamp is not a number")
    if error == ErrorNo.NO_ERROR:
        _require(all(_is_number(c) and c > 0 for c in costs), "result costs are not positive numbers")
        kept = tuple(float(c) for c in costs)
    else:
        kept = ()

    return Record(
        target=target.strip(),
        task_name=task_name,
        args=args,
        kwargs=kwargs,
        config_index=index,
        entity=entity,
        costs=kept,
        error_no=error,
        all_cost=float(all_cost),
        timestamp=float(timestamp),
        tvm_version=str(row.get("tvm_version", "")),
        error_msg=str(row.get("error_msg", "")),
        code_hash=config.get("code_hash"),
    )


def format_record(record: Record) -> str:
    """One log line (no newline) that AutoTVM and `parse_line` both read back."""
    row = {
        "input": [record.target, record.task_name, record.args, record.kwargs],
        "config": {"index": record.config_index, "code_hash": record.code_hash, "entity": record.entity},
        "result": [
            list(record.costs) if record.ok else [ERROR_COST],
            int(record.error_no),
            record.all_cost,
            record.timestamp,
        ],
        "version": LOG_VERSION,
        "tvm_version": record.tvm_version,
    }
    if record.error_msg:
        # AutoTVM's reader ignores unknown keys; ours keeps the compiler's or runner's message.
        row["error_msg"] = record.error_msg
    return json.dumps(row)


def scan_log(lines: Iterable[str]) -> Iterator[tuple[int, Record | LogLineError]]:
    """Yield (line number, record or the error that line raised); skips blanks and comments.

    Errors are yielded, not raised, so one bad line never stops a file.
    """
    for lineno, text in enumerate(lines, start=1):
        try:
            record = parse_line(text)
        except LogLineError as exc:
            yield lineno, exc
            continue
        if record is not None:
            yield lineno, record


def read_records(stream: TextIO | Iterable[str]) -> list[Record]:
    """Every valid record of a log, skipping legacy and malformed lines."""
    return [item for _, item in scan_log(stream) if isinstance(item, Record)]


class LogFileError(ValueError):
    """A file that cannot be read as a text log at all (binary, not UTF-8, a broken gzip)."""


GZIP_MAGIC = b"\x1f\x8b"


def log_lines(stream: BinaryIO, name: str = "the file") -> Iterator[bytes]:
    """The lines of a log as bytes, from a binary stream, plain or gzipped: told by its first
    two bytes, not by its name, so an upload, an API post, the command line and a replay
    recording read alike. LogFileError (naming `name`) when gzip data is broken."""
    head = stream.read(2)
    if stream.seekable():
        stream.seek(0)
        body = stream
    else:
        body = io.BufferedReader(_Prepended(head, stream))
    if head != GZIP_MAGIC:
        yield from body
        return
    try:
        yield from gzip.GzipFile(fileobj=body, mode="rb")
    except (gzip.BadGzipFile, EOFError, zlib.error):
        raise LogFileError(f"{name} is not a readable gzip file") from None


class _Prepended(io.RawIOBase):
    """A stream that cannot seek, its first bytes read already and given back."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self._head, self._rest = head, rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self._head or self._rest.read(len(buffer))
        data, self._head = data[:len(buffer)], data[len(buffer):]
        buffer[:len(data)] = data
        return len(data)


@dataclass(frozen=True)
class LogFile:
    """What `read_log_file` found: the records, and each unreadable line with its reason."""

    records: list[Record]
    bad_lines: list[tuple[int, LogLineError]]


def read_log_file(path: str | PathLike) -> LogFile:
    """Scan a log file, gzipped or plain (see `log_lines`).

    OSError when it cannot be opened; LogFileError when it is not UTF-8 text (or broken
    gzip data). Malformed lines are kept in `bad_lines`, never raised.
    """
    records: list[Record] = []
    bad: list[tuple[int, LogLineError]] = []
    try:
        with open(path, "rb") as stream:
            lines = (line.decode("utf-8") for line in log_lines(stream, str(path)))
            for lineno, item in scan_log(lines):
                if isinstance(item, Record):
                    records.append(item)
                else:
                    bad.append((lineno, item))
    except UnicodeDecodeError:
        raise LogFileError(f"{path} is not a UTF-8 text log") from None
    return LogFile(records, bad)


def read_history(path: str | PathLike) -> list[Record]:
    """The records of a log that a tuning run appends to, none when it does not exist yet:
    the history `engine.tune` resumes from."""
    try:
        return read_log_file(path).records
    except FileNotFoundError:
        return []


def write_records(stream: TextIO, records: Iterable[Record]) -> int:
    count = 0
    for record in records:
        stream.write(format_record(record) + "\n")
        count += 1
    return count


def is_faster(candidate: Record, incumbent: Record | None) -> bool:
    """AutoTVM's rule: an error-free record replaces the best only when strictly faster."""
    if not candidate.ok:
        return False
    return incumbent is None or candidate.mean_cost < incumbent.mean_cost


BestKey = tuple[str, str, str]  # (GPU model, task name, canonical args)


def pick_best(records: Iterable[Record]) -> dict[BestKey, Record]:
    """Best record per (GPU model, workload), in the order records first appear."""
    best: dict[BestKey, Record] = {}
    for record in records:
        key = (record.model, *record.workload_key)
        if is_faster(record, best.get(key)):
            best[key] = record
    return best
