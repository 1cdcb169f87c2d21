"""Exports as Kernel Tuner files: Kernel Tuner's own reader loads them, and they import back as the same records."""
from __future__ import annotations

import io
import json

import jsonschema
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from kernel_tuner import file_utils as kt_files
from kernel_tuner import util as kt_util

from engine import kernel_tuner as kt
from records.models import ImportBatch, MeasurementRecord, Workload
from tests.hub_data import cache_path, caches_for_the_module

pytestmark = pytest.mark.django_db


def run(command: str, *args) -> str:
    out, err = io.StringIO(), io.StringIO()
    call_command(command, *map(str, args), stdout=out, stderr=err)
    return out.getvalue() + err.getvalue()


# Importing the two caches is most of this module's time; its tests read them, or change them
# inside their own savepoints.
@pytest.fixture(scope="module")
def conv_a100_and_a4000(django_db_setup, django_db_blocker):
    with caches_for_the_module(django_db_blocker, "convolution_milo", ("A100", "A4000")) as workload:
        yield workload


def test_kernel_tuners_reader_loads_our_cache_with_every_entry_and_failure(conv_a100_and_a4000, tmp_path):
    path = tmp_path / "a100.json"
    out = run("export_records", "--format", "kernel-tuner", "--workload", conv_a100_and_a4000.pk,
              "--device", "a100", "-o", path)
    assert "4362 records written" in out
    cache = kt_util.read_cache(str(path), open_cache=False)
    assert cache["device_name"] == "NVIDIA A100-PCIE-40GB" and cache["kernel_name"] == "convolution_kernel"
    assert cache["problem_size"] == [4096, 4096] and len(cache["cache"]) == 4362
    errors = [type(e["__error__"]).__name__ for e in cache["cache"].values() if "__error__" in e]
    assert sorted(set(errors)) == ["CompilationFailedConfig", "RuntimeFailedConfig"] and len(errors) == 161
    # Kernel Tuner's own key: the values of tune_params_keys, joined by ",".
    for key, entry in list(cache["cache"].items())[:50]:
        assert key == ",".join(str(entry[k]) for k in cache["tune_params_keys"])
    original = json.loads(kt.read_text(cache_path("convolution_milo", "A100")))["cache"]
    fastest = min((k for k, e in original.items() if not isinstance(e["time"], str)), key=lambda k: original[k]["time"])
    ours = min((k for k, e in cache["cache"].items() if "__error__" not in e), key=lambda k: cache["cache"][k]["time"])
    assert ours == fastest


def test_our_t4_results_satisfy_kernel_tuners_t4_schema(conv_a100_and_a4000, tmp_path):
    path = tmp_path / "a4000_t4.json"
    run("export_records", "--format", "t4", "--workload", conv_a100_and_a4000.pk, "--device", "rtxa4000", "-o", path)
    document = json.loads(path.read_text())
    _, schema = kt_files.output_file_schema("results")
    jsonschema.validate(document, schema)
    assert len(document["results"]) == 4362 and document["metadata"]["timeunit"] == "milliseconds"
    assert {r["invalidity"] for r in document["results"]} == {"correct", "compile", "runtime"}


@pytest.mark.parametrize("fmt", ["kernel-tuner", "t4"])
def test_import_export_import_gives_the_same_records(conv_a100_and_a4000, tmp_path, fmt):
    path = tmp_path / f"out-{fmt}.json"
    run("export_records", "--format", fmt, "--task", kt.TASK_NAME, "--device", "a100", "-o", path)
    out = run("import_records", path)
    assert "4362 lines: 0 imported, 4362 duplicates" in out  # fingerprints equal: the very same records
    assert MeasurementRecord.objects.count() == 2 * 4362 and Workload.objects.count() == 1


def test_a_workload_of_another_task_goes_out_and_comes_back_onto_itself(tophub_log, tmp_path):
    run("import_records", tophub_log)
    workload = Workload.objects.filter(task_name="conv2d_nchw.cuda", records__device__model="titanx").first()
    path = tmp_path / "conv.json"
    run("export_records", "--format", "kernel-tuner", "--workload", workload.pk, "--device", "titanx", "-o", path)
    cache = kt_util.read_cache(str(path), open_cache=False)
    assert cache["kernel_name"] == "conv2d_nchw.cuda" and "tile_f" in cache["tune_params_keys"]
    run("import_records", path)
    batch = ImportBatch.objects.latest("id")
    back = {(r.config_index, tuple(r.costs), r.error_no) for r in batch.records.all()}
    # Kernel Tuner keeps one entry per config: the first record of each went out.
    first = {}
    for r in workload.records.filter(device__model="titanx", batch__lt=batch.pk).order_by("id"):
        first.setdefault(r.config_index, (r.config_index, tuple(r.costs), r.error_no))
    assert back == set(first.values()) and batch.records.filter(workload=workload).count() == len(first)


def test_a_selection_of_two_gpus_is_refused_with_a_reason(conv_a100_and_a4000):
    with pytest.raises(CommandError, match="one workload on one GPU.*selects several"):
        run("export_records", "--format", "kernel-tuner", "--workload", conv_a100_and_a4000.pk)


def test_the_leaderboard_links_each_gpus_kernel_tuner_cache(client, conv_a100_and_a4000):
    page = client.get(reverse("records:leaderboard", args=[conv_a100_and_a4000.pk])).content.decode()
    link = f"{reverse('records:download_kernel_tuner')}?workload={conv_a100_and_a4000.pk}&device=rtxa4000"
    assert link in page
    response = client.get(link)
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    assert json.loads(response.content)["device_name"] == "NVIDIA RTX A4000"
    assert "attachment" in response["Content-Disposition"]
    both = client.get(f"{reverse('records:download_t4')}?workload={conv_a100_and_a4000.pk}")
    assert both.status_code == 400 and "one workload on one GPU" in both.content.decode()


def test_an_unterminated_cache_reads_as_kernel_tuner_reads_it(tmp_path):
    from tests.hub_data import unterminated

    path = tmp_path / "running.json"
    path.write_text(unterminated(cache_path("dedispersion_milo", "A4000"), 321))
    theirs = kt_util.read_cache(str(path), open_cache=False)["cache"]
    ours = kt.read_file(path)
    assert len(theirs) == len(ours.records) == 321
    workload = ours.workloads[0]
    assert [workload.cache_key(kt.params_of_entity(r.entity)) for r in ours.records] == list(theirs)
    assert [r.costs for r in ours.records] == [tuple(t / 1000 for t in e["times"]) for e in theirs.values()]
