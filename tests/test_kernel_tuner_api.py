"""Kernel Tuner cache files and T4 results through the API (`/api/export/kernel-tuner/`,
`/api/export/t4/`): Kernel Tuner's own reader loads them, errors are JSON, the schema
documents them, and a private job's records go out only to its owner (Alice) and staff
(Sam), on the API, the pages' downloads and the command line alike."""
from __future__ import annotations

import io
import json

import jsonschema
import pytest
from django.core.management import call_command
from kernel_tuner import file_utils as kt_files
from kernel_tuner import util as kt_util

from factories import conv2d_entity, make_device, make_record, make_workload
from jobs.models import Job, JobRun
from jobs.recording import open_batch
from tests.hub_data import caches_for_the_module

pytestmark = pytest.mark.django_db

CACHE, T4 = "/api/export/kernel-tuner/", "/api/export/t4/"


# Importing the two caches is most of this module's time; its tests only read them.
@pytest.fixture(scope="module")
def conv_a100_and_a4000(django_db_setup, django_db_blocker):
    with caches_for_the_module(django_db_blocker, "convolution_milo", ("A100", "A4000")) as workload:
        yield workload


def test_kernel_tuners_reader_loads_the_apis_cache_file(client, conv_a100_and_a4000, tmp_path):
    response = client.get(CACHE, {"workload": conv_a100_and_a4000.pk, "device": "a100"})

    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    assert 'filename="tunerweb-kernel-tuner-workload-' in response["Content-Disposition"]
    path = tmp_path / "a100.json"
    path.write_bytes(response.content)
    cache = kt_util.read_cache(str(path), open_cache=False)
    assert cache["device_name"] == "NVIDIA A100-PCIE-40GB" and len(cache["cache"]) == 4362


def test_the_apis_t4_results_satisfy_kernel_tuners_schema(client, conv_a100_and_a4000):
    response = client.get(T4, {"workload": conv_a100_and_a4000.pk, "device": "rtxa4000"})

    assert response.status_code == 200
    document = response.json()
    _, schema = kt_files.output_file_schema("results")
    jsonschema.validate(document, schema)
    assert len(document["results"]) == 4362


@pytest.mark.parametrize("url", [CACHE, T4])
def test_a_selection_of_two_gpus_is_refused_as_json(client, conv_a100_and_a4000, url):
    response = client.get(url, {"workload": conv_a100_and_a4000.pk})

    assert response.status_code == 400 and response["Content-Type"] == "application/json"
    assert "one workload on one GPU" in response.json()["detail"]


@pytest.mark.parametrize("query, status, words", [
    ({"device": "no-such-gpu"}, 404, "no GPU model 'no-such-gpu'"),
    ({"workload": "seven"}, 400, "workload must be a number"),
    ({"workload": "999999", "device": "a100"}, 404, "no workload with id 999999"),
])
def test_bad_filters_are_answered_with_a_json_reason(client, conv_a100_and_a4000, query, status, words):
    response = client.get(CACHE, query)

    assert response.status_code == status and words in response.json()["detail"]


def test_the_schema_documents_both_exports_with_their_filters_and_errors(client):
    paths = client.get("/api/schema/?format=json").json()["paths"]

    for url in (CACHE, T4):
        get = paths[url]["get"]
        assert {p["name"] for p in get["parameters"]} >= {"workload", "device", "task", "batch"}
        assert {"200", "400", "404"} <= set(get["responses"]) and "application/json" in get["responses"]["200"]["content"]


@pytest.fixture
def world(alice, django_user_model):
    """A public record and, of another config, a faster one of Alice's private job."""
    device = make_device("h200", name="NVIDIA H200")
    workload = make_workload()
    make_record(workload, device, 100e-6)
    job = Job.objects.create(owner=alice, workload=workload, tuner="xgb", n_trial=4, private=True)
    batch = open_batch(JobRun.objects.create(job=job, device=device))
    make_record(workload, device, 10e-6, batch=batch, entity=conv2d_entity(tile_f=(-1, 4, 4, 1)))
    charlie = django_user_model.objects.create_user("charlie", password="charlie-password-1")
    sam = django_user_model.objects.create_user("sam", password="sam-password-1", is_staff=True)
    return {"workload": workload, "alice": alice, "charlie": charlie, "sam": sam}


def times_in(text: str, fmt: str) -> list[float]:
    """The error-free times (ms) a cache file or T4 results hold."""
    document = json.loads(text)
    if fmt == "kernel-tuner":
        return sorted(e["time"] for e in document["cache"].values())
    return sorted(m["value"] for r in document["results"] for m in r["measurements"] if m["name"] == "time")


DOWNLOADS = {("kernel-tuner", "api"): CACHE, ("t4", "api"): T4,
             ("kernel-tuner", "page"): "/export/kernel-tuner.json", ("t4", "page"): "/export/t4.json"}


@pytest.mark.parametrize("fmt, where", list(DOWNLOADS))
@pytest.mark.parametrize("who, times", [("anonymous", [0.1]), ("charlie", [0.1]), ("alice", [0.01, 0.1]),
                                        ("sam", [0.01, 0.1])])
def test_a_private_jobs_records_go_out_only_to_its_owner_and_staff(client, world, fmt, where, who, times):
    if who != "anonymous":
        client.force_login(world[who])

    response = client.get(DOWNLOADS[fmt, where], {"workload": world["workload"].pk, "device": "h200"})

    assert response.status_code == 200, response.content
    assert times_in(response.content.decode(), fmt) == pytest.approx(times)


@pytest.mark.parametrize("fmt", ["kernel-tuner", "t4"])
def test_the_command_line_exports_every_record_as_its_autotvm_export_does(world, fmt, tmp_path):
    path = tmp_path / "out.json"
    call_command("export_records", "--format", fmt, "--workload", str(world["workload"].pk), "--device", "h200",
                 "-o", str(path), stderr=io.StringIO())

    assert times_in(path.read_text(), fmt) == pytest.approx([0.01, 0.1])
