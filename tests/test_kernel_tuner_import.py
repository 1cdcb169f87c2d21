"""Kernel Tuner's files through the three import doors: the command, the upload page and the API."""
from __future__ import annotations

import gzip
import io
import json
from collections import Counter

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db.models import Count
from django.urls import reverse

from engine import kernel_tuner as kt
from records.models import ImportBatch, MeasurementRecord, Workload
from tests.hub_data import KERNELS, all_caches, best_records, cache_path, device_for, unterminated

pytestmark = pytest.mark.django_db


def run(*args) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("import_records", *map(str, args), stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def _cache(kernel: str, gpu: str) -> dict:
    with gzip.open(cache_path(kernel, gpu), "rt") as stream:
        return json.load(stream)["cache"]


@pytest.mark.parametrize("kernel,gpu", all_caches())
def test_every_hub_cache_imports_every_entry_and_its_best_is_the_fastest_entry(kernel, gpu):
    device = device_for(gpu)
    out, _ = run(cache_path(kernel, gpu), *(["--device", device] if device else []))
    cache = _cache(kernel, gpu)
    assert f"{len(cache)} lines: {len(cache)} imported, 0 duplicates" in out
    records = MeasurementRecord.objects.all()
    failures = Counter(e["time"] for e in cache.values() if isinstance(e["time"], str))
    assert Counter(dict(records.exclude(error_no=0).values_list("error_no").annotate(n=Count("id")))) == \
        Counter({int(kt.FAILURE_ERRORS[s]): n for s, n in failures.items()})
    [workload] = Workload.objects.all()
    [best] = best_records(workload)
    fastest = min((k for k, e in cache.items() if not isinstance(e["time"], str)), key=lambda k: cache[k]["time"])
    assert kt.KernelTunerWorkload.from_args(workload.args).cache_key(kt.params_of_entity(best.entity)) == fastest
    assert best.mean_cost == pytest.approx(cache[fastest]["time"] / 1000, rel=1e-12)


def test_reimporting_adds_nothing_and_the_four_gpus_share_one_workload():
    for gpu in ("A100", "A4000", "MI250X", "W6600"):
        run(cache_path("convolution_milo", gpu), *(["--device", "mi250x"] if gpu == "MI250X" else []))
    out, _ = run(cache_path("convolution_milo", "A100"))
    assert "4362 lines: 0 imported, 4362 duplicates" in out
    [workload] = Workload.objects.all()
    assert workload.task_name == kt.TASK_NAME
    assert sorted(b.device.model for b in best_records(workload)) == ["a100", "mi250x", "rtxa4000", "w6600"]


def test_the_empty_device_name_is_refused_without_a_device_and_imports_with_it():
    path = cache_path("convolution_milo", "MI250X")
    err = io.StringIO()
    with pytest.raises(CommandError, match="1 of 1 files refused"):
        call_command("import_records", str(path), stdout=io.StringIO(), stderr=err)
    assert "empty device name" in err.getvalue() and "--device MODEL" in err.getvalue()
    assert MeasurementRecord.objects.count() == 0 and ImportBatch.objects.count() == 0
    out, _ = run(path, "--device", "mi250x")
    assert "4362 imported" in out and MeasurementRecord.objects.filter(device__model="mi250x").count() == 4362


def test_a_device_that_is_not_a_model_name_is_refused():
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command("import_records", str(cache_path("convolution_milo", "MI250X")), "--device", "MI 250<x>",
                     stdout=io.StringIO(), stderr=err)
    assert "is not a GPU model name" in err.getvalue()


def test_an_unterminated_cache_imports_what_it_holds(tmp_path):
    path = tmp_path / "running.json"
    path.write_text(unterminated(cache_path("dedispersion_milo", "A4000"), 500))
    out, _ = run(path)
    assert "500 lines: 500 imported" in out


def test_a_malformed_entry_is_listed_by_key_and_the_rest_imports(tmp_path):
    data = json.loads(gzip.decompress(cache_path("convolution_milo", "A100").read_bytes()))
    key = list(data["cache"])[7]
    data["cache"][key]["time"] = -1
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    out, _ = run(path)
    assert "4362 lines: 4361 imported, 0 duplicates, 0 version 0.1 skipped, 1 malformed" in out
    assert f"  entry {key}: time is not a positive number" in out
    assert ImportBatch.objects.get().problems == [{"entry": key, "reason": "time is not a positive number"}]


def test_t4_results_with_the_t1_file_land_on_the_cache_workload():
    run(cache_path("convolution_milo", "A100"))
    out, _ = run(cache_path("convolution_milo", "A100_T4"), "--device", "a100",
                 "--metadata", KERNELS / "convolution_milo.json")
    # The same measurements as the cache's, bar the overhead times; the compile failures, whose
    # times agree too, are the very same records.
    assert "4362 lines: 4356 imported, 6 duplicates" in out
    [workload] = Workload.objects.all()
    assert workload.records.filter(device__model="a100").count() == 4362 + 4356


def test_a_gzipped_autotvm_log_imports(tophub_log, tmp_path):
    path = tmp_path / "tophub.log.gz"
    path.write_bytes(gzip.compress(tophub_log.read_bytes()))
    out, _ = run(path)
    assert "688 lines: 688 imported" in out


def test_a_device_for_an_autotvm_log_is_refused(tophub_log):
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command("import_records", str(tophub_log), "--device", "a100", stdout=io.StringIO(), stderr=err)
    assert "AutoTVM log, whose lines name their GPU" in err.getvalue()


def _upload(path, name=None) -> SimpleUploadedFile:
    return SimpleUploadedFile(name or path.name, path.read_bytes())


def test_the_api_refuses_the_mi250x_cache_without_a_device_as_json_and_imports_it_with_one(alice_client):
    path = cache_path("dedispersion_milo", "MI250X")
    refused = alice_client.post("/api/imports/", {"file": _upload(path)})
    assert refused.status_code == 400 and "empty device name" in refused.json()["detail"]
    done = alice_client.post("/api/imports/", {"file": _upload(path), "device": "mi250x"})
    assert done.status_code == 201, done.content
    assert done.json()["imported"] == 11130 and done.json()["malformed"] == 0


def test_the_upload_page_takes_a_t4_file_with_its_metadata_and_gpu(alice_client):
    response = alice_client.post(reverse("records:upload"), {"file": _upload(cache_path("convolution_milo", "A100_T4")),
                                              "device": "a100", "metadata": _upload(KERNELS / "convolution_milo.json")})
    assert response.status_code == 302, response.content.decode()[:2000]
    assert MeasurementRecord.objects.filter(device__model="a100").count() == 4362
    again = alice_client.post(reverse("records:upload"), {"file": _upload(cache_path("convolution_milo", "A100_T4"))})
    assert again.status_code == 400 and "empty device name" in again.content.decode()


def test_a_gzip_broken_after_its_opening_is_refused_and_keeps_nothing(tophub_log, tmp_path):
    whole = gzip.compress(tophub_log.read_bytes() * 3)
    path = tmp_path / "cut.log.gz"
    path.write_bytes(whole[: len(whole) // 2])
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command("import_records", str(path), stdout=io.StringIO(), stderr=err)
    assert "not a readable gzip file" in err.getvalue()
    assert MeasurementRecord.objects.count() == 0 and ImportBatch.objects.count() == 0


def test_a_cut_gzip_cache_is_refused_through_the_api_as_json(alice_client):
    whole = cache_path("convolution_milo", "A100").read_bytes()
    cut = SimpleUploadedFile("A100.json.gz", whole[: len(whole) // 2])
    response = alice_client.post("/api/imports/", {"file": cut})
    assert response.status_code == 400 and "not a readable gzip file" in response.json()["detail"]


def test_a_store_results_file_imports_through_the_api_and_its_entry_without_a_gpu_is_reported(alice_client):
    results = {"version_number": "1.0", "kernel_name": "vector_add", "objective": "time",
               "objective_higher_is_better": False, "tunable_parameters": ["block_size_x"],
               "data": [{"device_name": "NVIDIA A100-PCIE-40GB", "problem_size": "1000000",
                         "tunable_parameters": {"block_size_x": size}, "time": time}
                        for size, time in ((256, 0.5), (128, 0.51))]
               + [{"device_name": "", "problem_size": "1000000", "tunable_parameters": {"block_size_x": 64}, "time": 0.7}]}
    upload = SimpleUploadedFile("vector_add_results.json", json.dumps(results).encode())

    answer = alice_client.post("/api/imports/", {"file": upload})

    assert answer.status_code == 201, answer.content
    assert answer.json()["imported"] == 2 and answer.json()["malformed"] == 1
    assert "empty device name" in answer.json()["problems"][0]["reason"]
    workload = Workload.objects.get(task_name=kt.TASK_NAME)
    assert sorted(workload.records.values_list("mean_cost", flat=True)) == pytest.approx([0.0005, 0.00051])
    assert set(workload.records.values_list("device__model", flat=True)) == {"a100"}
