import math

import pytest
from django.urls import reverse

from records.compare import compare_devices, compare_workload
from tests.factories import C9_ARGS, conv2d_entity, make_device, make_record, make_workload

pytestmark = pytest.mark.django_db


@pytest.fixture
def gpus():
    return make_device("v100"), make_device("h200", is_replay=True), make_device("titanx")


def test_one_workload_puts_each_gpus_best_side_by_side_and_marks_differing_knobs(gpus):
    v100, h200, _ = gpus
    workload = make_workload()
    make_record(workload, v100, 200e-6, entity=conv2d_entity(tile_f=(-1, 4, 8, 1)))
    v100_best = make_record(workload, v100, 100e-6, entity=conv2d_entity(unroll_explicit=0))
    h200_best = make_record(workload, h200, 40e-6, entity=conv2d_entity(unroll_explicit=1))

    comparison = compare_workload(workload)

    assert [best.record for best in comparison.bests] == [h200_best, v100_best]
    assert [d.model for d in comparison.devices] == ["h200", "v100"]
    knobs = {k.name: k for k in comparison.knobs}
    assert knobs["unroll_explicit"].values == [1, 0] and knobs["unroll_explicit"].differs
    assert knobs["tile_f"].values == [[-1, 2, 8, 1]] * 2 and not knobs["tile_f"].differs


def test_a_split_written_with_its_outer_factor_is_no_difference_across_gpus(client, gpus):
    # TopHub's v100 record writes tile_f's outer factor ([8, 8, 8, 1] of 512); ours writes -1.
    v100, h200, _ = gpus
    workload = make_workload()
    make_record(workload, v100, 100e-6, entity=conv2d_entity(tile_f=(8, 8, 8, 1), tile_rc=(64, 8)))
    make_record(workload, h200, 40e-6, entity=conv2d_entity(tile_f=(-1, 8, 8, 1)))

    assert [k.name for k in compare_workload(workload).knobs if k.differs] == []
    html = client.get(reverse("records:compare_workload", args=[workload.pk])).content.decode()
    assert '<tr class="differs">' not in html


def test_the_workload_page_highlights_the_differing_knob(client, gpus):
    v100, h200, _ = gpus
    workload = make_workload()
    make_record(workload, v100, 100e-6, entity=conv2d_entity(unroll_explicit=0))
    make_record(workload, h200, 40e-6, entity=conv2d_entity(unroll_explicit=1))

    html = client.get(reverse("records:compare_workload", args=[workload.pk])).content.decode()

    assert '<tr class="differs"><th class="mono">unroll_explicit</th>' in html
    assert '<tr><th class="mono">tile_f</th>' in html


def test_two_gpus_cover_the_workloads_both_have_with_the_geometric_mean(gpus):
    v100, h200, titanx = gpus
    c12, c9, only_v100 = make_workload(), make_workload(args=C9_ARGS), make_workload(task_name="other.cuda", args=[1], flops=None)
    make_record(c12, v100, 100e-6)
    make_record(c12, h200, 50e-6)   # 2x
    make_record(c9, v100, 80e-6)
    make_record(c9, h200, 10e-6)    # 8x
    make_record(c9, titanx, 1e-6)   # a third GPU changes nothing
    make_record(only_v100, v100, 5e-6)

    comparison = compare_devices(v100, h200)

    assert [(row.workload, row.speedup) for row in comparison.rows] == [
        (c12, pytest.approx(2.0)), (c9, pytest.approx(8.0))
    ]
    assert comparison.geomean == pytest.approx(math.sqrt(2.0 * 8.0))
    assert compare_devices(h200, v100).geomean == pytest.approx(1 / 4)


def test_the_gpu_page_shows_the_rows_and_the_mean(client, gpus):
    v100, h200, _ = gpus
    workload = make_workload()
    make_record(workload, v100, 100e-6)
    make_record(workload, h200, 25e-6)

    response = client.get(reverse("records:compare_devices"), {"a": "v100", "b": "h200"})

    html = response.content.decode()
    assert response.status_code == 200
    assert "100.00" in html and "25.00" in html and "4.00×" in html
    assert "Geometric mean over 1 workload" in html


def test_comparing_a_gpu_with_itself_or_an_unknown_one_is_a_clear_400(client, gpus):
    same = client.get(reverse("records:compare_devices"), {"a": "v100", "b": "v100"})
    unknown = client.get(reverse("records:compare_devices"), {"a": "v100", "b": "nope"})

    assert same.status_code == unknown.status_code == 400
    assert "Choose two different GPU models." in same.content.decode()
    assert "There is no GPU model of that name." in unknown.content.decode()
