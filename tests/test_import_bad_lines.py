"""Bad lines never end an import in a 500 nor lose the good lines: each kind of bad line
becomes a malformed line with its number and reason, and the rest of the file imports,
through the command line, the upload page and the API alike."""
import io
import json
import tracemalloc

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse

from engine import create_task
from engine.logfile import format_record
from engine.synthetic import synthetic_recording
from engine.workloads import PRESETS
from records.importing import MAX_LINE_BYTES  # noqa: E402
from records.models import ImportBatch, MeasurementRecord, Workload

pytestmark = pytest.mark.django_db

C12 = PRESETS["C12"]


def good_lines(count: int) -> list[bytes]:
    records = synthetic_recording(create_task(C12.task_name, C12.args), count, seed=3)
    return [format_record(r).encode() for r in records]


def line_with(**changes) -> bytes:
    """A record line with parts of its input replaced."""
    row = json.loads(good_lines(1)[0])
    target, task, args, kwargs = row["input"]
    row["input"] = [changes.get("target", target), changes.get("task", task), changes.get("args", args), kwargs]
    return json.dumps(row).encode()


def surrogate(where: str) -> bytes:
    row = json.loads(good_lines(1)[0])
    text = json.dumps(row)
    if where == "string":
        return text.replace('"tvm_version": "', '"tvm_version": "\\ud800', 1).encode()
    return text.replace('"kwargs_placeholder"', "").replace("}, \"result\"", ', "\\udfff": 1}, "result"', 1).encode()


# kind: (the bad line, words of its reason, good lines before it)
KINDS = {
    "undecodable": (b'{"input": ["cuda -model=h200", "\xff\xfe\xfa", [], {}]}', "not UTF-8", 2000),
    "deeply nested": (b"[" * 100_000 + b"]" * 100_000, "nest deeper than 400", 3),
    "lone surrogate in a string": (surrogate("string"), "lone UTF-16 surrogate", 3),
    "lone surrogate in a key": (surrogate("key"), "lone UTF-16 surrogate", 3),
    "GPU model not a slug": (line_with(target="cuda -model=<img/src=x>"), "not a slug", 3),
    "GPU model in capitals": (line_with(target="cuda -model=H200"), "not a slug", 3),
    "a 10 MB line": (b'{"input": "' + b"x" * 10_000_000 + b'"}', f"longer than the {MAX_LINE_BYTES} bytes", 3),
}


def log_with(kind: str) -> tuple[bytes, int, int]:
    """(file, how many good lines it holds, the bad line's number)."""
    bad, _words, before = KINDS[kind]
    lines = good_lines(before + 2)
    content = b"\n".join([*lines[:before], bad, *lines[before:]]) + b"\n"
    return content, len(lines), before + 1


def check_batch(batch: ImportBatch, kind: str, good: int, bad_line: int) -> None:
    assert batch.imported == good and batch.records.count() == good
    assert batch.malformed == 1
    [problem] = batch.problems
    assert problem["line"] == bad_line and KINDS[kind][1] in problem["reason"]


@pytest.mark.parametrize("kind", KINDS)
def test_the_command_line_keeps_the_good_lines_around_a_bad_one(kind, tmp_path):
    content, good, bad_line = log_with(kind)
    path = tmp_path / "bad.log"
    path.write_bytes(content)
    out = io.StringIO()

    call_command("import_records", str(path), stdout=out, stderr=io.StringIO())

    check_batch(ImportBatch.objects.get(), kind, good, bad_line)
    assert f"line {bad_line}: " in out.getvalue()


@pytest.mark.parametrize("kind", KINDS)
def test_the_upload_page_keeps_the_good_lines_around_a_bad_one(kind, alice_client):
    content, good, bad_line = log_with(kind)

    response = alice_client.post(reverse("records:upload"), {"file": SimpleUploadedFile("bad.log", content)})

    assert response.status_code == 302
    check_batch(ImportBatch.objects.get(), kind, good, bad_line)


@pytest.mark.parametrize("kind", KINDS)
def test_the_api_keeps_the_good_lines_around_a_bad_one(kind, alice_client):
    content, good, bad_line = log_with(kind)

    response = alice_client.post("/api/imports/", {"file": SimpleUploadedFile("bad.log", content)})

    assert response.status_code == 201, response.content
    assert response.json()["malformed"] == 1 and response.json()["imported"] == good
    check_batch(ImportBatch.objects.get(), kind, good, bad_line)


def test_a_10_mb_line_is_read_in_bounded_memory(tmp_path):
    content, good, _ = log_with("a 10 MB line")
    path = tmp_path / "long.log"
    path.write_bytes(content)

    tracemalloc.start()
    call_command("import_records", str(path), stdout=io.StringIO(), stderr=io.StringIO())
    _now, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    assert MeasurementRecord.objects.count() == good
    assert peak < 3 * MAX_LINE_BYTES, f"{peak / 1e6:.1f} MB at the peak"


def large_args_log(size: int) -> tuple[bytes, list]:
    big_args = [*C12.args, {"note": "n" * size}]
    lines = [line_with(task="some_task.cuda", args=big_args), *good_lines(2)]
    return b"\n".join(lines) + b"\n", big_args


@pytest.mark.parametrize("size", [10_000, 300_000])
def test_a_line_with_large_args_imports(size, tmp_path):
    """Workloads are told apart by a digest of their args, so args of any length store."""
    content, big_args = large_args_log(size)
    path = tmp_path / "large.log"
    path.write_bytes(content)

    call_command("import_records", str(path), stdout=io.StringIO(), stderr=io.StringIO())

    batch = ImportBatch.objects.get()
    assert (batch.imported, batch.malformed) == (3, 0)
    assert Workload.objects.get(task_name="some_task.cuda").args == big_args


@pytest.mark.parametrize("through", ["upload page", "api"])
def test_a_line_with_large_args_imports_through_the_upload_page_and_the_api(through, alice_client):
    content, big_args = large_args_log(300_000)
    upload = {"file": SimpleUploadedFile("large.log", content)}

    if through == "api":
        response = alice_client.post("/api/imports/", upload)
        assert response.status_code == 201, response.content
        assert (response.json()["imported"], response.json()["malformed"]) == (3, 0)
    else:
        assert alice_client.post(reverse("records:upload"), upload).status_code == 302

    batch = ImportBatch.objects.get()
    assert (batch.imported, batch.malformed) == (3, 0)
    assert Workload.objects.get(task_name="some_task.cuda").args == big_args
