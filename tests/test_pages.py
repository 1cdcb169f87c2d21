import csv
import io

import pytest
from django.test import Client
from django.urls import reverse

from records.models import Baseline
from tests.factories import (conv2d_entity, make_baseline, make_batch, make_device, make_record,
                             make_workload)

pytestmark = pytest.mark.django_db

HOSTILE = "<script>alert(1)</script>"


@pytest.fixture
def data():
    """Two GPUs (one replay), a real workload, a hostile task and import."""
    v100, h200 = make_device("v100", name=HOSTILE), make_device("h200", is_replay=True)
    c12 = make_workload()
    hostile = make_workload(task_name=HOSTILE, args=[HOSTILE], flops=None)
    batch = make_batch(file_name=HOSTILE, problems=[{"line": 3, "reason": HOSTILE}])
    a = make_record(c12, v100, 100e-6, batch=batch)
    b = make_record(c12, h200, 50e-6, entity=conv2d_entity(tile_rc=(-1, 16)), batch=batch)
    make_record(c12, v100, error_no=2, error_msg=HOSTILE)
    h = make_record(hostile, v100, 10e-6, entity=[[HOSTILE, "ot", HOSTILE]])
    make_record(hostile, h200, 5e-6, entity=[[HOSTILE, "ot", 1]])
    make_baseline(c12, h200, 129e-6)
    make_baseline(hostile, h200, 9e-6, provider=Baseline.Provider.OTHER)
    return {"a": a, "b": b, "h": h, "c12": c12, "hostile": hostile, "batch": batch}


def page_urls(data) -> list[str]:
    return [
        reverse("records:home"),
        reverse("records:home") + "?q=script",
        reverse("records:leaderboard", args=[data["hostile"].pk]),
        reverse("records:leaderboard", args=[data["c12"].pk]),
        reverse("records:record_list"),
        reverse("records:record_list") + "?status=all",
        reverse("records:record_detail", args=[data["h"].pk]),
        reverse("records:diff") + f"?a={data['a'].pk}&b={data['h'].pk}",
        reverse("records:compare_workload", args=[data["hostile"].pk]),
        reverse("records:compare_devices") + "?a=v100&b=h200",
        reverse("records:speedups") + "?device=h200&provider=other",
        reverse("records:devices"),
        reverse("records:batch_list"),
        reverse("records:batch_detail", args=[data["batch"].pk]),
    ]


def test_every_page_renders_and_escapes_hostile_text(client, data):
    for url in page_urls(data):
        response = client.get(url)
        html = response.content.decode()
        assert response.status_code == 200, url
        assert HOSTILE not in html, url
    detail = client.get(reverse("records:batch_detail", args=[data["batch"].pk])).content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in detail


def test_every_page_gives_csv_that_parses(client, data):
    for url in page_urls(data):
        response = client.get(url + ("&" if "?" in url else "?") + "format=csv")
        assert response.status_code == 200, url
        assert response["Content-Type"].startswith("text/csv")
        rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
        assert len(rows) >= 2 and all(len(row) == len(rows[0]) for row in rows), url


def test_the_leaderboard_csv_matches_its_tables(client, data):
    url = reverse("records:leaderboard", args=[data["c12"].pk])

    bests = list(csv.DictReader(io.StringIO(b"".join(client.get(url, {"format": "csv"}).streaming_content).decode())))
    ranked = list(csv.DictReader(io.StringIO(
        b"".join(client.get(url, {"format": "csv", "table": "records", "device": "v100"}).streaming_content).decode()
    )))

    assert [(r["gpu"], r["median_us"], r["gflops"], r["replay"]) for r in bests] == [
        ("h200", "50.00", f"{data['c12'].flops / 50e-6 / 1e9:.1f}", "True"),
        ("v100", "100.00", f"{data['c12'].flops / 100e-6 / 1e9:.1f}", "False"),
    ]
    assert [r["record_id"] for r in ranked] == [str(data["a"].pk)]
    assert '"tile_rc":[-1,8]' in ranked[0]["knobs"]


def test_csv_cells_that_a_spreadsheet_would_run_are_defused(client, data):
    formula = make_workload(task_name="=HYPERLINK(\"x\")", args=[3], flops=None)
    make_record(formula, make_device("a100"), 1e-6)

    text = b"".join(client.get(reverse("records:record_list"), {"format": "csv"}).streaming_content).decode()

    assert "'=HYPERLINK" in text


def test_an_unknown_csv_table_names_the_ones_there_are(client, data):
    response = client.get(reverse("records:leaderboard", args=[data["c12"].pk]), {"format": "csv", "table": "x"})

    assert response.status_code == 400
    assert "bests, records" in response.content.decode()


def test_the_record_list_filters_by_task_gpu_shape_and_status(client, data):
    url = reverse("records:record_list")

    def ids(**params):
        return [r.pk for r in client.get(url, params).context["page"]]

    assert ids() == [data["h"].pk + 1, data["h"].pk, data["b"].pk, data["a"].pk]
    assert ids(task="conv2d_nchw.cuda") == [data["b"].pk, data["a"].pk]
    assert ids(device="v100", shape="[1, 512, 7, 7]") == [data["a"].pk]
    assert [r.error_no for r in client.get(url, {"status": "errors"}).context["page"]] == [2]
    assert [r.error_no for r in client.get(url, {"status": "2"}).context["page"]] == [2]
    assert len(ids(status="all")) == 5


def test_the_record_list_paginates(client):
    v100, workload = make_device("v100"), make_workload()
    for i in range(120):
        make_record(workload, v100, (1 + i) * 1e-6)

    page = client.get(reverse("records:record_list"), {"page": 3}).context["page"]

    assert (page.paginator.count, page.paginator.num_pages, len(page.object_list)) == (120, 3, 20)
    assert page.object_list[0].mean_cost == pytest.approx(101e-6)


def test_an_unknown_gpu_filter_says_so(client, data):
    response = client.get(reverse("records:record_list"), {"device": "nope"})

    assert response.status_code == 400
    assert "Select a valid choice" in response.content.decode()


def test_the_dashboard_searches_and_links_the_downloads(client, data):
    html = client.get(reverse("records:home"), {"q": "512,7,7"}).content.decode()

    assert reverse("records:leaderboard", args=[data["c12"].pk]) in html
    assert reverse("records:leaderboard", args=[data["hostile"].pk]) not in html
    assert reverse("records:download_best") in html and reverse("records:download_records") in html
    assert '<span class="badge replay"' in html


def test_record_detail_links_to_the_diff_against_its_gpus_best(client, data):
    slower = make_record(data["c12"], data["a"].device, 300e-6)

    html = client.get(reverse("records:record_detail", args=[slower.pk])).content.decode()

    assert f'{reverse("records:diff")}?a={data["a"].pk}&b={slower.pk}' in html


def test_with_public_read_off_pages_send_visitors_to_log_in(alice_client, data, settings):
    settings.TUNERWEB_PUBLIC_READ = False
    visitor = Client()

    for url in page_urls(data):
        response = visitor.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("login") + "?next="), url
    assert alice_client.get(reverse("records:home")).status_code == 200


def test_a_missing_workload_is_a_404(client):
    assert client.get(reverse("records:leaderboard", args=[12345])).status_code == 404


def test_a_workload_whose_tensor_has_no_shape_list_still_renders(client):
    from records.importing import import_log

    line = (
        '{"input": ["cuda -model=v100", "odd_task", [["TENSOR", 5, "float32"]], {}], '
        '"config": {"index": 0, "code_hash": null, "entity": []}, '
        '"result": [[1e-5], 0, 1.0, 1.0], "version": 0.2, "tvm_version": "x"}'
    )
    import_log([line], "odd.log")
    for name in ("records:home", "records:record_list"):
        response = client.get(reverse(name))
        assert response.status_code == 200
        assert "TENSOR" in response.content.decode()


def test_a_custom_kernel_workload_is_named_not_printed_whole():
    from tests.factories import make_workload

    spec = {"kernel_name": "vector_add", "source": "extern \"C\" __global__ void vector_add() {}"}
    assert make_workload(task_name="custom", args=[spec], flops=None).shape_summary == "kernel vector_add"


def test_a_workloads_precision_shows_where_it_is_not_float32():
    from engine.workloads import conv2d_tc_args, gemm_tc_args
    from tests.factories import make_workload

    assert make_workload(task_name="gemm_tensorcore", args=gemm_tc_args(16, 4096, 4096, "bfloat16")).shape_summary \
        == "[16,4096] [4096,4096] bfloat16"
    assert make_workload(task_name="gemm_tensorcore", args=gemm_tc_args(16, 4096, 4096, "tf32")).shape_summary \
        == "[16,4096] [4096,4096] tf32"
    assert make_workload().shape_summary == "[1,512,7,7] [512,512,3,3] [1,1] [1,1,1,1] [1,1] float32"  # as before
    conv = make_workload(task_name="conv2d_nhwc_tensorcore", args=conv2d_tc_args(32, 56, 64, 64, 3, 1, 1, "bfloat16"))
    assert conv.shape_summary == "[32,56,56,64] [64,3,3,64] [1,1] [1,1,1,1] [1,1] bfloat16 → bfloat16"  # and its out_dtype
    # A 16-bit C is a workload of its own, and reads as one beside the float32 C of the same inputs.
    bf16_c = make_workload(task_name="gemm_tensorcore", args=gemm_tc_args(16, 4096, 4096, "bfloat16", c_dtype="bfloat16"))
    assert bf16_c.shape_summary == "[16,4096] [4096,4096] bfloat16 → bfloat16"
