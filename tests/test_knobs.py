"""Which knobs matter: each knob's values against time, knobs that move the time first."""
import json
import re

import pytest
from django.urls import reverse

from records.knobs import study_knobs
from tests.factories import conv2d_entity, make_batch, make_device, make_record, make_workload

pytestmark = pytest.mark.django_db


@pytest.fixture
def workload_records():
    v100, h200 = make_device("v100"), make_device("h200")
    workload = make_workload()
    # tile_rc decides the time (8: 100 µs, 16: 400 µs); unroll_explicit barely matters.
    for rc, unroll, cost in [(8, 0, 100e-6), (8, 1, 101e-6), (16, 0, 400e-6), (16, 1, 402e-6)]:
        make_record(workload, h200, cost, entity=conv2d_entity(tile_rc=(-1, rc), unroll_explicit=unroll))
    make_record(workload, v100, 1e-3)
    make_record(workload, h200, error_no=3)
    return workload, h200


def test_knobs_are_ordered_by_how_far_apart_their_values_medians_lie(workload_records):
    workload, h200 = workload_records
    study = study_knobs(workload.records.filter(device=h200, error_no=0), workload.knob_defaults())

    first = study.slices[0]
    assert (first.name, first.values, first.counts) == ("tile_rc", ["[-1, 8]", "[-1, 16]"], [2, 2])
    assert first.spread == pytest.approx(401e-6 / 100.5e-6)
    unroll = next(s for s in study.slices if s.name == "unroll_explicit")
    assert unroll.spread == pytest.approx(251.5e-6 / 250e-6)
    assert len(study.costs) == 4 and study.positions["tile_rc"] == [0, 0, 1, 1]


def test_the_knobs_page_embeds_its_data_for_one_gpu_or_one_run(client, workload_records):
    workload, h200 = workload_records
    url = reverse("records:knobs", args=[workload.pk])
    html = client.get(url, {"device": "h200"}).content.decode()
    data = json.loads(re.search(r'<script id="knob-data" type="application/json">(.*?)</script>', html, re.S).group(1))
    assert data["knobs"][0]["name"] == "tile_rc" and len(data["times_us"]) == 4

    batch = make_batch("run.log")
    make_record(workload, h200, 50e-6, batch=batch)
    html = client.get(url, {"batch": batch.pk}).content.decode()
    data = json.loads(re.search(r'<script id="knob-data" type="application/json">(.*?)</script>', html, re.S).group(1))
    assert data["times_us"] == [pytest.approx(50)]


def test_a_bad_gpu_or_batch_gets_a_clear_message(client, workload_records):
    workload, _ = workload_records
    response = client.get(reverse("records:knobs", args=[workload.pk]), {"batch": "x"})
    assert response.status_code == 400 and "Select a valid choice" not in response.content.decode()
    response = client.get(reverse("records:knobs", args=[workload.pk]), {"device": "nope"})
    assert response.status_code == 400 and "There is no GPU model of that name." in response.content.decode()
