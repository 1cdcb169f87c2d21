import io

import pytest
from django.core.management import call_command
from django.urls import reverse

from engine.logfile import canonical_args, format_record, pick_best, read_records
from module_rows import rows_for_the_module
from records.exporting import ExportFilter, ExportFilterError, UnknownFilterTarget, best_lines, record_lines
from records.importing import import_log
from records.models import ImportBatch, MeasurementRecord, Workload

pytestmark = pytest.mark.django_db

C12_ARGS = canonical_args(
    [["TENSOR", [1, 512, 7, 7], "float32"], ["TENSOR", [512, 512, 3, 3], "float32"], [1, 1], [1, 1, 1, 1], [1, 1], "float32"]
)


# Importing the 688 records is most of this module's time; its tests only read them or change
# them inside their own savepoints.
@pytest.fixture(scope="module")
def tophub(django_db_setup, django_db_blocker, tophub_log):
    with rows_for_the_module(django_db_blocker):
        yield import_log(tophub_log.open(), tophub_log.name)


def bests_by_key() -> dict:
    return {
        (r.device.model, r.workload.task_name, r.workload.args_json): format_record(r.to_record())
        for r in MeasurementRecord.objects.best_per_gpu()
    }


def test_the_best_log_holds_one_line_per_gpu_and_workload(tophub, tophub_log):
    lines = list(best_lines(ExportFilter()))
    assert lines[0].startswith("# tunerweb best configs: all records")
    exported = read_records(lines)
    expected = pick_best(read_records(tophub_log.open()))
    assert len(exported) == len(expected) == 683
    assert {(r.model, *r.workload_key): format_record(r) for r in exported} == {k: format_record(r) for k, r in expected.items()}


def test_exporting_the_best_and_importing_it_into_a_clean_database_keeps_the_bests(tophub):
    before = bests_by_key()
    text = "".join(best_lines(ExportFilter()))
    MeasurementRecord.objects.all().delete()
    Workload.objects.all().delete()
    result = import_log(io.StringIO(text), "best.log")
    assert (result.imported, result.malformed) == (683, 0)
    assert bests_by_key() == before


def test_exported_records_import_back_as_duplicates(tophub):
    text = "".join(record_lines(ExportFilter()))
    again = import_log(io.StringIO(text), "records.log")
    assert (again.imported, again.duplicates) == (0, 688)


# TopHub v0.08 tunes ResNet's last 3x3 layer (data [1,512,7,7], kernel [512,512,3,3])
# only with the Winograd template, on titanx, 1080ti and tx2.
@pytest.mark.parametrize("task", ["conv2d_nchw_winograd.cuda"])
def test_the_best_log_for_c12_holds_exactly_what_pick_best_picks(tophub, tophub_log, task):
    workload = Workload.objects.get(task_name=task, args_json=C12_ARGS)
    lines = list(best_lines(ExportFilter(workload=workload.pk)))
    expected = [r for key, r in pick_best(read_records(tophub_log.open())).items() if key[1:] == (task, C12_ARGS)]
    assert {r.model for r in expected} == {"titanx", "1080ti", "tx2"}
    assert sorted(lines[1:]) == sorted(format_record(r) + "\n" for r in expected)


def test_filters_select_by_task_device_and_batch(tophub, tophub_log):
    by_device = read_records(record_lines(ExportFilter(device="v100")))
    assert len(by_device) == 1 and by_device[0].model == "v100"
    by_task = read_records(record_lines(ExportFilter(task="depthwise_conv2d_nchw.cuda")))
    assert len(by_task) == 97
    both = read_records(best_lines(ExportFilter(task="conv2d_nchw.cuda", device="tx2")))
    assert both and {(r.model, r.task_name) for r in both} == {("tx2", "conv2d_nchw.cuda")}
    assert len(read_records(record_lines(ExportFilter(batch=tophub.pk)))) == 688


def test_a_batch_filter_selects_only_that_batchs_records(tophub):
    other = import_log(
        [line.replace("titanx", "a100") for line in record_lines(ExportFilter(device="titanx"))], "a100.log"
    )
    exported = read_records(record_lines(ExportFilter(batch=other.pk)))
    assert len(exported) == other.imported == 160 and {r.model for r in exported} == {"a100"}


@pytest.mark.parametrize(
    "params, error, message",
    [
        ({"workload": "abc"}, ExportFilterError, "workload must be a number"),
        ({"batch": "1.5"}, ExportFilterError, "batch must be a number"),
        ({"workload": "999999"}, UnknownFilterTarget, "no workload with id 999999"),
        ({"device": "nope"}, UnknownFilterTarget, "no GPU model 'nope'"),
        ({"batch": "999999"}, UnknownFilterTarget, "no import batch with id 999999"),
    ],
)
def test_bad_filters_are_refused_with_a_message(params, error, message):
    with pytest.raises(error, match=message):
        ExportFilter.from_params(params)


def test_the_file_name_says_what_it_holds():
    selection = ExportFilter(workload=3, task="conv2d_nchw.cuda", device="v100", batch=2)
    assert selection.file_name("best") == "tunerweb-best-workload-3-task-conv2d_nchw-cuda-gpu-v100-batch-2.log"
    assert ExportFilter().file_name("records") == "tunerweb-records.log"


def test_export_best_writes_to_stdout(tophub):
    out = io.StringIO()
    call_command("export_best", "--device", "v100", stdout=out)
    assert len(read_records(out.getvalue().splitlines())) == 1


def test_export_records_writes_a_file(tophub, tmp_path, capsys):
    target = tmp_path / "tx2.log"
    err = io.StringIO()
    call_command("export_records", "--device", "tx2", "--task", "conv2d_nchw.cuda", "-o", str(target), stderr=err)
    records = read_records(target.open())
    assert records and {r.model for r in records} == {"tx2"}
    assert f"{len(records)} records written to {target}" in err.getvalue()


def test_export_commands_refuse_bad_filters_with_an_error_exit(db):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="no GPU model 'nope'"):
        call_command("export_best", "--device", "nope", stdout=io.StringIO())
    with pytest.raises(CommandError, match="batch must be a number"):
        call_command("export_records", "--batch", "x", stdout=io.StringIO())


def test_export_refuses_an_unwritable_output(tophub, tmp_path):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="cannot write"):
        call_command("export_best", "-o", str(tmp_path / "missing-dir" / "x.log"))
    assert ImportBatch.objects.count() == 1


def test_a_download_refuses_line_breaks_and_unknown_tasks_in_its_filters(client):
    injected = client.get(reverse("records:download_best"), {"task": 'x\n{"input": "injected"}'})
    assert injected.status_code == 400
    assert "control characters" in injected.content.decode()
    unknown = client.get(reverse("records:download_best"), {"task": "no_such_task"})
    assert unknown.status_code == 404
    assert "no workload of task 'no_such_task'" in unknown.content.decode()
