import pytest
from django.urls import reverse

from engine.workloads import gemm_args
from records.diffs import config_diff
from tests.factories import C9_ARGS, conv2d_entity, make_device, make_record, make_workload

pytestmark = pytest.mark.django_db


@pytest.fixture
def pair():
    v100 = make_device("v100")
    workload = make_workload()
    a = make_record(workload, v100, 100e-6, entity=conv2d_entity())
    b = make_record(workload, v100, 80e-6, entity=conv2d_entity(tile_rc=(-1, 16), auto_unroll_max_step=1500))
    return a, b


def test_rows_follow_definition_order_and_mark_what_differs(pair):
    a, b = pair
    diff = config_diff(a, b)

    assert [row.name for row in diff.rows] == [
        "tile_f", "tile_y", "tile_x", "tile_rc", "tile_ry", "tile_rx", "auto_unroll_max_step", "unroll_explicit"
    ]
    assert [(row.name, row.a, row.b) for row in diff.differing_rows] == [
        ("tile_rc", [-1, 8], [-1, 16]),
        ("auto_unroll_max_step", 512, 1500),
    ]


def test_a_knob_only_one_record_has_is_a_differing_row_with_a_gap(pair):
    a, _ = pair
    other = make_record(a.workload, a.device, 90e-6, entity=conv2d_entity()[:-1] + [["vthread", "ot", 2]])

    rows = {row.name: row for row in config_diff(a, other).rows}

    assert list(rows)[-2:] == ["unroll_explicit", "vthread"]
    assert (rows["unroll_explicit"].b, rows["vthread"].a, rows["vthread"].differs) == (None, None, True)


def test_a_knob_the_template_gained_later_reads_as_its_default_for_an_older_record():
    h200 = make_device("h200")
    workload = make_workload("gemm", gemm_args(512, 49, 4608))
    knobs = [["block_m", "ot", 32], ["block_n", "ot", 64], ["block_k", "ot", 16], ["warp_m", "ot", 16],
             ["warp_n", "ot", 64], ["thread_m", "ot", 2], ["thread_n", "ot", 2], ["warp_lanes_n", "ot", 16],
             ["vector_a", "ot", 2], ["vector_b", "ot", 1], ["pipeline", "ot", "prefetch"], ["smem_pad", "ot", 4],
             ["split_k", "ot", 16], ["unroll_k", "ot", 32]]
    old = make_record(workload, h200, 19.7e-6, entity=knobs)  # logged before slice_k and split_reduce
    same = make_record(workload, h200, 19.6e-6, entity=knobs + [["slice_k", "ot", 1], ["split_reduce", "ot", "workspace"]])
    sliced = make_record(workload, h200, 15.9e-6, entity=knobs + [["slice_k", "ot", 4], ["split_reduce", "ot", "workspace"]])

    assert config_diff(old, same).differing_rows == []
    assert [(r.name, r.a, r.b) for r in config_diff(old, sliced).differing_rows] == [("slice_k", 1, 4)]


def test_the_ratio_is_b_over_a_and_names_the_faster(pair):
    a, b = pair
    diff = config_diff(a, b)

    assert diff.ratio == pytest.approx(0.8)
    assert diff.faster == "b"
    assert diff.speedup == pytest.approx(1.25)
    assert config_diff(b, a).faster == "a"
    assert config_diff(a, a).faster == "same"


def test_a_failed_record_has_no_ratio(pair):
    a, _ = pair
    failed = make_record(a.workload, a.device, error_no=7)

    assert config_diff(a, failed).ratio is None
    assert config_diff(a, failed).faster is None


def test_the_page_highlights_differing_rows_and_can_hide_the_rest(client, pair):
    a, b = pair
    url = reverse("records:diff")

    full = client.get(url, {"a": a.pk, "b": b.pk}).content.decode()
    only = client.get(url, {"a": a.pk, "b": b.pk, "only": "1"}).content.decode()

    assert full.count('<tr class="differs"><th class="mono">') == 2
    assert "tile_ry" in full and "tile_ry" not in only
    assert only.count('<tr class="differs"><th class="mono">') == 2
    assert "B is 1.25× faster" in full
    assert "different workloads" not in full and "different GPUs" not in full


def test_the_page_flags_different_workloads_and_gpus(client, pair):
    a, _ = pair
    elsewhere = make_record(make_workload(args=C9_ARGS), make_device("h200", is_replay=True), 20e-6)

    html = client.get(reverse("records:diff"), {"a": a.pk, "b": elsewhere.pk}).content.decode()

    assert "different workloads" in html and "different GPUs" in html
    assert '<span class="badge replay"' in html


def test_an_unknown_record_id_is_a_clear_400(client, pair):
    a, _ = pair
    response = client.get(reverse("records:diff"), {"a": a.pk, "b": 999999})

    assert response.status_code == 400
    assert "There is no record with that id." in response.content.decode()


def test_the_empty_diff_page_asks_for_two_records(client):
    response = client.get(reverse("records:diff"))

    assert response.status_code == 200
    assert "Pick two record ids" in response.content.decode()
