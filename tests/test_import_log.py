import io
import json

import pytest

from engine.logfile import ErrorNo, Record, format_record, read_records
from records.importing import NotALogError, import_log
from records.models import Device, ImportBatch, MeasurementRecord, Workload

pytestmark = pytest.mark.django_db

C12_ARGS = [["TENSOR", [1, 512, 7, 7], "float32"], ["TENSOR", [512, 512, 3, 3], "float32"], [1, 1], [1, 1, 1, 1], [1, 1], "float32"]


def a_record(**changes) -> Record:
    fields = dict(
        target="cuda -model=h200",
        task_name="conv2d_nchw.cuda",
        args=C12_ARGS,
        config_index=7,
        entity=[["tile_f", "sp", [-1, 2, 8, 1]], ["auto_unroll_max_step", "ot", 512]],
        costs=(1e-4, 1.2e-4),
        error_no=ErrorNo.NO_ERROR,
        all_cost=1.5,
        timestamp=1_700_000_000.0,
    )
    fields.update(changes)
    return Record(**fields)


def lines_of(*records_or_text) -> list[str]:
    return [(item if isinstance(item, str) else format_record(item)) + "\n" for item in records_or_text]


def test_it_imports_the_tophub_log(tophub_log):
    with tophub_log.open("rb") as stream:
        result = import_log(stream, tophub_log.name)
    records = read_records(tophub_log.open())
    assert (result.lines, result.imported, result.duplicates, result.malformed, result.legacy_skipped) == (688, 688, 0, 0, 0)
    assert MeasurementRecord.objects.count() == 688
    assert set(Device.objects.values_list("model", flat=True)) == {"jetson-nano", "tx2", "titanx", "1080ti", "v100"}
    assert Workload.objects.count() == len({r.workload_key for r in records}) == 342
    assert Workload.objects.filter(flops__isnull=True).count() == 0
    batch = ImportBatch.objects.get()
    assert batch == result and batch.imported == 688 and batch.source == ImportBatch.Source.COMMAND
    assert len(batch.sha256) == 64


def test_reimporting_the_same_file_adds_nothing(tophub_log):
    import_log(tophub_log.open(), "first.log")
    again = import_log(tophub_log.open(), "again.log")
    assert (again.imported, again.duplicates) == (0, 688)
    assert MeasurementRecord.objects.count() == 688
    assert ImportBatch.objects.get(pk=again.pk).duplicates == 688


def test_a_line_repeated_within_a_file_counts_as_a_duplicate():
    result = import_log(lines_of(a_record(), a_record(), a_record(config_index=8)), "twice.log")
    assert (result.imported, result.duplicates) == (2, 1)


def test_it_reports_malformed_lines_by_number_and_imports_the_rest():
    text = lines_of(a_record(), "{not json", a_record(config_index=8), '{"input": [], "config": {}, "result": []}', "")
    result = import_log(text, "mixed.log")
    assert (result.lines, result.imported, result.malformed) == (5, 2, 2)
    assert [p["line"] for p in result.problems] == [2, 4]
    assert result.problems[0]["reason"].startswith("not JSON")
    assert "input is not" in result.problems[1]["reason"]
    assert ImportBatch.objects.get().problems == result.problems


def test_it_skips_and_counts_version_0_1_lines():
    legacy = json.dumps({"i": ["cuda", "conv2d", [], {}, [], {}], "r": [[1e-4], 0, 1.0, 1.0], "v": 0.1})
    result = import_log(lines_of(legacy, a_record(), legacy), "old.log")
    assert (result.imported, result.legacy_skipped, result.malformed) == (1, 2, 0)


def test_a_file_of_only_version_0_1_lines_is_a_log():
    legacy = json.dumps({"i": ["cuda", "conv2d", [], {}, [], {}], "r": [[1e-4], 0, 1.0, 1.0], "v": 0.1})
    result = import_log(lines_of(legacy), "old.log")
    assert (result.imported, result.legacy_skipped) == (0, 1)


def test_an_empty_file_imports_nothing_and_says_so():
    result = import_log(io.BytesIO(b""), "empty.log")
    assert (result.lines, result.imported, result.malformed) == (0, 0, 0)
    assert MeasurementRecord.objects.count() == 0


def test_comments_and_blank_lines_are_not_problems():
    result = import_log(lines_of("# tuned on h200", "", a_record()), "commented.log")
    assert (result.lines, result.imported, result.malformed, result.problems) == (3, 1, 0, [])


@pytest.mark.parametrize(
    "content",
    [
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00",
        b"\x1f\x8b\x08\x00\xff\xfe\xfd" * 50,
        b"name,age\nalice,30\nbob,40\n",
        "héllo wörld\n".encode("latin-1"),
    ],
    ids=["png", "gzip", "csv", "latin-1"],
)
def test_a_file_that_is_not_a_log_is_refused_and_nothing_changes(content):
    with pytest.raises(NotALogError) as refused:
        import_log(io.BytesIO(content), "photo.png")
    assert "photo.png" in str(refused.value)
    assert ImportBatch.objects.count() == 0 and MeasurementRecord.objects.count() == 0
    assert Device.objects.count() == 0 and Workload.objects.count() == 0


def test_a_bad_line_later_in_a_log_is_malformed_not_a_refusal():
    content = "".join(lines_of(a_record())).encode() + b"\xff\xfe\x00 binary\n" + "".join(lines_of(a_record(config_index=9))).encode()
    result = import_log(io.BytesIO(content), "damaged.log")
    assert (result.imported, result.malformed) == (2, 1)
    assert result.problems == [{"line": 2, "reason": "binary data or not UTF-8 text"}]


def test_it_stores_mean_cost_and_gflops_worked_out_by_hand():
    import_log(lines_of(a_record(costs=(1e-4, 1.2e-4))), "one.log")
    stored = MeasurementRecord.objects.get()
    # C12: 2 * N*CO*OH*OW * CI*KH*KW = 2 * 1*512*7*7 * 512*3*3 = 231,211,008 FLOPs
    assert stored.workload.flops == 231_211_008
    assert stored.mean_cost == pytest.approx(1.1e-4)
    assert stored.gflops == pytest.approx(231_211_008 / 1.1e-4 / 1e9)  # about 2101.9
    assert stored.device.model == "h200" and stored.target == "cuda -model=h200"


def test_a_failed_measurement_imports_without_cost_or_gflops():
    import_log(lines_of(a_record(costs=(), error_no=ErrorNo.RUN_TIMEOUT, error_msg="timed out")), "fail.log")
    stored = MeasurementRecord.objects.get()
    assert (stored.error_no, stored.mean_cost, stored.gflops, stored.costs, stored.error_msg) == (7, None, None, [], "timed out")


def test_an_unknown_task_imports_with_time_only():
    result = import_log(lines_of(a_record(task_name="my_fancy_op.cuda", args=[3, 4])), "custom.log")
    stored = MeasurementRecord.objects.get()
    assert result.imported == 1 and stored.workload.flops is None and stored.gflops is None
    assert stored.mean_cost == pytest.approx(1.1e-4)
    assert "no FLOP counter for task my_fancy_op.cuda" in result.problems[0]["reason"]


def test_args_a_flop_counter_rejects_import_with_time_only_and_a_note():
    bad_args = [["TENSOR", [1, 64, 7, 7], "float32"], ["TENSOR", [512, 512, 3, 3], "float32"], [1, 1], [1, 1], [1, 1], "float32"]
    result = import_log(lines_of(a_record(args=bad_args)), "odd.log")
    assert result.imported == 1 and MeasurementRecord.objects.get().gflops is None
    assert result.problems == [{"line": 1, "reason": "no FLOP count for conv2d_nchw.cuda (kernel has 512 input channels, data has 64): imported with time only"}]


def test_values_the_database_cannot_hold_are_malformed_lines():
    too_long = a_record(tvm_version="x" * 65)
    nul = a_record(error_msg="bad\x00byte", config_index=3)
    nan = a_record(entity=[["tile_f", "ot", float("nan")]], config_index=4)
    huge = a_record(config_index=2**64)
    result = import_log(lines_of(too_long, nul, nan, huge, a_record()), "odd.log")
    assert result.imported == 1
    assert [p["reason"] for p in result.problems] == [
        "tvm_version is longer than 64 characters",
        "contains a NUL character",
        "contains NaN or Infinity",
        "config.index is larger than a 64-bit integer",
    ]


def test_problems_are_capped_but_all_malformed_lines_are_counted():
    result = import_log(lines_of(a_record(), *(["{oops"] * 500)), "noisy.log")
    assert result.malformed == 500 and len(result.problems) == 300


def test_it_remembers_who_uploaded_and_how(alice):
    result = import_log(lines_of(a_record()), "mine.log", user=alice, source=ImportBatch.Source.UPLOAD)
    batch = ImportBatch.objects.get(pk=result.pk)
    assert (batch.created_by, batch.source) == (alice, "upload")


def test_imports_span_several_chunks(monkeypatch):
    monkeypatch.setattr("records.importing.CHUNK_SIZE", 3)
    records = [a_record(config_index=i) for i in range(10)]
    result = import_log(lines_of(*records, records[0]), "chunks.log")
    assert (result.imported, result.duplicates) == (10, 1)
    assert sorted(MeasurementRecord.objects.values_list("config_index", flat=True)) == list(range(10))
