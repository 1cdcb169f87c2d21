import pytest
import yaml
from django.core.management import call_command
from django.test import Client

from tests.factories import C9_ARGS, conv2d_entity, make_baseline, make_device, make_record, make_workload

pytestmark = pytest.mark.django_db


@pytest.fixture
def data():
    v100, h200 = make_device("v100"), make_device("h200", is_replay=True)
    c12, c9 = make_workload(), make_workload(args=C9_ARGS)
    records = {
        "c12_v100": make_record(c12, v100, 100e-6),
        "c12_h200": make_record(c12, h200, 50e-6, entity=conv2d_entity(unroll_explicit=0)),
        "c9_v100": make_record(c9, v100, 80e-6),
        "c9_h200": make_record(c9, h200, 10e-6),
        "failed": make_record(c12, v100, error_no=6),
    }
    make_baseline(c12, h200, 100e-6)
    return {"c12": c12, "c9": c9, **records}


def test_the_leaderboard_lists_each_gpus_best(client, data):
    body = client.get(f"/api/leaderboard/{data['c12'].pk}/").json()

    assert body["workload"]["shape_summary"] == data["c12"].shape_summary
    assert [(b["device"], b["device_is_replay"], b["time_us"]) for b in body["bests"]] == [
        ("h200", True, pytest.approx(50.0)), ("v100", False, pytest.approx(100.0))
    ]
    assert body["bests"][0]["knobs"]["unroll_explicit"] == 0


def test_records_filter_by_task_device_and_workload_and_page(client, data):
    body = client.get("/api/records/", {"task": "conv2d_nchw.cuda", "device": "v100"}).json()
    assert body["count"] == 2
    assert [r["id"] for r in body["results"]] == [data["c9_v100"].pk, data["c12_v100"].pk]

    by_workload = client.get("/api/records/", {"workload": data["c12"].pk, "status": "all"}).json()
    assert [r["error"] for r in by_workload["results"]] == ["no error", "no error", "build timeout"]


def test_diff_returns_rows_ratio_and_the_faster(client, data):
    params = {"a": data["c12_v100"].pk, "b": data["c12_h200"].pk, "only": "1"}
    body = client.get("/api/diff/", params).json()

    assert body["rows"] == [{"name": "unroll_explicit", "a": 1, "b": 0, "differs": True}]
    assert (body["ratio"], body["faster"], body["same_device"], body["differing"]) == (pytest.approx(0.5), "b", False, 1)


def test_bad_query_parameters_answer_400_with_the_reason(client, data):
    diff = client.get("/api/diff/", {"a": data["c12_v100"].pk})
    speedups = client.get("/api/speedups/", {"device": "nope"})

    assert diff.status_code == 400 and diff.json() == {"b": ["This field is required."]}
    assert speedups.status_code == 400 and speedups.json() == {"device": ["There is no GPU model of that name."]}


def test_compare_one_workload_and_two_gpus(client, data):
    workload = client.get(f"/api/compare/{data['c12'].pk}/").json()
    devices = client.get("/api/compare/", {"a": "v100", "b": "h200"}).json()

    assert [d["model"] for d in workload["devices"]] == ["h200", "v100"]
    assert {k["name"]: k["differs"] for k in workload["knobs"]}["unroll_explicit"] is True
    assert [row["speedup"] for row in devices["rows"]] == [pytest.approx(2.0), pytest.approx(8.0)]
    assert devices["geomean"] == pytest.approx(4.0)


def test_speedups_default_to_cudnn(client, data):
    body = client.get("/api/speedups/", {"device": "h200"}).json()

    assert body["provider"] == "cudnn"
    assert [(r["workload"]["id"], r["speedup"]) for r in body["rows"]] == [(data["c12"].pk, pytest.approx(2.0))]
    assert body["geomean"] == pytest.approx(2.0)
    assert [r["workload"] for r in body["without_baseline"]] == [data["c9"].pk]


def test_workloads_devices_and_tasks_list_with_counts(client, data):
    workloads = client.get("/api/workloads/", {"q": "256,14,14"}).json()
    detail = client.get(f"/api/workloads/{data['c12'].pk}/").json()
    devices = client.get("/api/devices/").json()
    device = client.get("/api/devices/h200/").json()
    tasks = client.get("/api/tasks/").json()

    assert [w["id"] for w in workloads["results"]] == [data["c9"].pk]
    assert (detail["record_count"], detail["valid_count"]) == (3, 2)
    assert detail["best_gflops"] == pytest.approx(data["c12"].flops / 50e-6 / 1e9)
    assert [(d["model"], d["record_count"]) for d in devices] == [("h200", 2), ("v100", 3)]
    assert device["is_replay"] is True and device["workload_count"] == 2
    assert tasks == [{"task_name": "conv2d_nchw.cuda", "workload_count": 2, "record_count": 5, "device_count": 2}]


def test_with_public_read_off_the_api_refuses_visitors(data, alice_client, settings):
    settings.TUNERWEB_PUBLIC_READ = False

    assert Client().get("/api/records/").status_code in (401, 403)
    assert alice_client.get("/api/records/").status_code == 200


def test_the_schema_generates_without_warnings_and_documents_every_read_endpoint(tmp_path):
    out = tmp_path / "schema.yaml"
    call_command("spectacular", "--fail-on-warn", "--validate", "--file", str(out))

    paths = yaml.safe_load(out.read_text())["paths"]
    for path in ["/api/leaderboard/{id}/", "/api/records/", "/api/records/{id}/", "/api/diff/",
                 "/api/compare/{id}/", "/api/compare/", "/api/speedups/", "/api/devices/",
                 "/api/devices/{model}/", "/api/workloads/", "/api/workloads/{id}/", "/api/tasks/"]:
        assert "get" in paths[path], path
    diff_params = {p["name"] for p in paths["/api/diff/"]["get"]["parameters"]}
    assert {"a", "b", "only"} <= diff_params
