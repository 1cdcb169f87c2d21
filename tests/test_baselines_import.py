import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from engine.logfile import ErrorNo, Record, canonical_args, format_record
from records.baselines import BaselineFileError, detect_format, import_baselines
from records.models import Baseline, Device, ImportBatch, Workload

pytestmark = pytest.mark.django_db

C12 = [["TENSOR", [1, 512, 7, 7], "float32"], ["TENSOR", [512, 512, 3, 3], "float32"], [1, 1], [1, 1, 1, 1], [1, 1], "float32"]
C12_CSV = json.dumps(C12).replace('"', '""')


def csv_file(*rows: str, header: str = "task,args,device,provider,cost_us,note") -> io.BytesIO:
    return io.BytesIO(("\n".join([header, *rows]) + "\n").encode())


def test_it_imports_a_csv_and_creates_the_workload_and_device():
    result = import_baselines(csv_file(f'conv2d_nchw.cuda,"{C12_CSV}",h200,cudnn,129.0,PyTorch 2.11'), "csv", "cudnn.csv")
    baseline = Baseline.objects.get()
    assert (result.lines, result.imported, result.problems) == (1, 1, [])
    assert baseline.provider == "cudnn" and baseline.cost == pytest.approx(129e-6) and baseline.note == "PyTorch 2.11"
    assert baseline.device == Device.objects.get(model="h200")
    assert baseline.workload.args_json == canonical_args(C12) and baseline.workload.flops == 231_211_008
    batch = ImportBatch.objects.get()
    assert baseline.batch == batch and batch.kind == ImportBatch.Kind.BASELINES and batch.imported == 1


def test_a_second_import_replaces_the_time_of_the_same_workload_gpu_and_provider():
    import_baselines(csv_file(f'conv2d_nchw.cuda,"{C12_CSV}",h200,cudnn,129.0,'), "csv")
    import_baselines(csv_file(f'conv2d_nchw.cuda,"{C12_CSV}",h200,cudnn,120.0,', f'conv2d_nchw.cuda,"{C12_CSV}",h200,default-config,900,'), "csv")
    assert {(b.provider, round(b.cost * 1e6, 3)) for b in Baseline.objects.all()} == {("cudnn", 120.0), ("default-config", 900.0)}


def test_a_workload_column_names_a_stored_workload():
    workload = Workload.objects.create(task_name="dense", args_json="[]")
    result = import_baselines(csv_file(f"{workload.pk},cuda -model=a100,cublas,42", "999999,a100,cublas,1", header="workload,device,provider,cost_us"), "csv")
    assert result.imported == 1 and Baseline.objects.get().workload == workload
    assert Baseline.objects.get().device.model == "a100"
    assert result.problems == [{"line": 3, "reason": "no workload with id 999999"}]


def test_bad_rows_are_reported_by_line_and_the_rest_imported():
    result = import_baselines(
        csv_file(
            f'conv2d_nchw.cuda,"{C12_CSV}",h200,mkl,10,',
            f'conv2d_nchw.cuda,"{C12_CSV}",h200,cudnn,-3,',
            f'conv2d_nchw.cuda,"{C12_CSV}",h200,cudnn,fast,',
            "conv2d_nchw.cuda,[oops,h200,cudnn,10,",
            f'conv2d_nchw.cuda,"{C12_CSV}",h200,cublas,10,',
        ),
        "csv",
    )
    assert result.imported == 1
    assert [(p["line"], p["reason"]) for p in result.problems] == [
        (2, "provider 'mkl' is not one of cudnn, cublas, default-config, other"),
        (3, "cost_us '-3' is not a positive number"),
        (4, "cost_us 'fast' is not a number"),
        (5, "args are not valid JSON (Expecting value at line 1 column 2)"),
    ]


def test_a_csv_without_the_needed_columns_is_refused_and_nothing_changes():
    with pytest.raises(BaselineFileError, match="the CSV header lacks cost_us, provider"):
        import_baselines(csv_file("a,b,c", header="task,args,device"), "csv")
    assert ImportBatch.objects.count() == 0


def test_a_csv_the_csv_module_cannot_read_is_refused():
    with pytest.raises(BaselineFileError, match=r"line 2 is not CSV: field larger than field limit"):
        import_baselines(csv_file("x" * 200_000 + ",[],h200,cudnn,1,"), "csv")


def test_a_file_with_no_usable_row_is_refused():
    with pytest.raises(BaselineFileError, match="no baseline in x.csv"):
        import_baselines(csv_file(f'conv2d_nchw.cuda,"{C12_CSV}",h200,mkl,10,'), "csv", "x.csv")
    assert ImportBatch.objects.count() == 0 and Workload.objects.count() == 0


def test_it_imports_json_with_args_as_a_list_or_a_string():
    rows = [
        {"task": "conv2d_nchw.cuda", "args": C12, "device": "h200", "provider": "cudnn", "cost_us": 129},
        {"task": "conv2d_nchw.cuda", "args": json.dumps(C12), "device": "a100", "provider": "cudnn", "cost_us": 150.5},
        "not an object",
    ]
    result = import_baselines(io.BytesIO(json.dumps(rows).encode()), "json")
    assert result.imported == 2 and Workload.objects.count() == 1
    assert result.problems == [{"line": 3, "reason": "not an object"}]


def test_json_that_is_not_a_list_is_refused():
    with pytest.raises(BaselineFileError, match="not a list"):
        import_baselines(io.BytesIO(b'{"task": "x"}'), "json")
    with pytest.raises(BaselineFileError, match="not JSON"):
        import_baselines(io.BytesIO(b"[{"), "json")


def baseline_record(**changes) -> Record:
    fields = dict(
        target="cuda -model=h200", task_name="conv2d_nchw.cuda", args=C12, config_index=0, entity=[],
        costs=(1.2e-4, 1.4e-4), error_no=ErrorNo.NO_ERROR, all_cost=0.5, timestamp=1.7e9, tvm_version="baseline:cudnn",
    )
    fields.update(changes)
    return Record(**fields)


def test_it_imports_engine_written_baseline_records_from_a_log():
    lines = [
        format_record(baseline_record()),
        format_record(baseline_record(tvm_version="baseline:default-config", costs=(9e-4,))),
        format_record(baseline_record(tvm_version="0.7.dev0", entity=[["tile_f", "sp", [-1, 1, 1, 1]]])),
        format_record(baseline_record(tvm_version="baseline:cublas", costs=(), error_no=ErrorNo.RUNTIME_DEVICE)),
    ]
    result = import_baselines(io.BytesIO("\n".join(lines).encode()), "log")
    assert {(b.provider, round(b.cost * 1e6, 3)) for b in Baseline.objects.all()} == {("cudnn", 130.0), ("default-config", 900.0)}
    assert [p["line"] for p in result.problems] == [3, 4]
    assert "not a baseline record" in result.problems[0]["reason"]
    assert result.problems[1]["reason"] == "the cublas measurement failed (runtime device)"


def test_the_format_comes_from_the_extension():
    assert [detect_format(n) for n in ("a.csv", "b.JSON", "c.log", "d.jsonl")] == ["csv", "json", "log", "log"]
    with pytest.raises(BaselineFileError, match="cannot tell the format"):
        detect_format("baselines.xlsx")


def test_the_command_imports_and_prints_counts(tmp_path):
    path = tmp_path / "b.csv"
    path.write_bytes(csv_file(f'conv2d_nchw.cuda,"{C12_CSV}",h200,cudnn,129.0,', "x,[],h200,nope,1,").getvalue())
    out = io.StringIO()
    call_command("import_baselines", str(path), stdout=out)
    assert "2 rows: 1 baselines saved, 1 problems" in out.getvalue()
    assert "row 3: provider 'nope' is not one of" in out.getvalue()


def test_the_command_fails_cleanly_on_a_missing_or_unreadable_file(tmp_path):
    with pytest.raises(CommandError, match="cannot read it: No such file or directory"):
        call_command("import_baselines", str(tmp_path / "missing.csv"))
    (tmp_path / "b.txt").write_bytes(b"\xff\xfe")
    with pytest.raises(CommandError, match="refused: the file is not UTF-8 text"):
        call_command("import_baselines", str(tmp_path / "b.txt"))
