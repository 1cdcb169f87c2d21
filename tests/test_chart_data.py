"""What the speedup and compare charts draw: a bar per workload (or GPU) with its measurement
interval as a whisker, read from the same rows the tables show."""
import json
import re

import pytest
from django.urls import reverse

from records.models import Baseline
from tests.factories import C9_ARGS, make_baseline, make_device, make_record, make_workload

pytestmark = pytest.mark.django_db


def chart_of(html: str, script_id: str) -> dict:
    return json.loads(re.search(rf'<script id="{script_id}" type="application/json">(.*?)</script>', html, re.S).group(1))


def test_a_speedup_bar_carries_the_interval_of_its_confirmation_rounds(client):
    h200 = make_device("h200")
    c12, c9 = make_workload(), make_workload(args=C9_ARGS)
    make_record(c12, h200, costs=[100e-6, 110e-6, 120e-6], kind="confirmation", rounds=3)
    Baseline.objects.create(workload=c12, device=h200, provider="cudnn", cost=150e-6, costs=[140e-6, 150e-6, 160e-6], rounds=3)
    make_record(c9, h200, 50e-6)  # one tuning measurement against one baseline time: no interval
    make_baseline(c9, h200, 40e-6)

    html = client.get(reverse("records:speedups"), {"device": "h200", "provider": "cudnn"}).content.decode()
    bars = {bar["label"]: bar for bar in chart_of(html, "speedup-data")["bars"]}
    assert bars["C12"]["value"] == pytest.approx(150 / 110)
    assert (bars["C12"]["low"], bars["C12"]["high"]) == (pytest.approx(140 / 120), pytest.approx(160 / 100))
    assert bars["C9"]["low"] == bars["C9"]["high"] == pytest.approx(0.8)


def test_a_head_to_head_bar_carries_the_interval_of_both_gpus_measurements(client):
    v100, h200 = make_device("v100"), make_device("h200")
    workload = make_workload()
    for cost in (300e-6, 330e-6, 360e-6):
        make_record(workload, v100, cost, config_index=1)
    for cost in (100e-6, 120e-6):
        make_record(workload, h200, cost, config_index=1)

    html = client.get(reverse("records:compare_devices"), {"a": "v100", "b": "h200"}).content.decode()
    (bar,) = chart_of(html, "compare-data")["bars"]
    assert bar["value"] == pytest.approx(330 / 110)
    assert (bar["low"], bar["high"]) == (pytest.approx(300 / 120), pytest.approx(360 / 100))


def test_one_workload_across_gpus_bars_its_gflops_between_slowest_and_fastest(client):
    v100 = make_device("v100")
    workload = make_workload()
    for cost in (200e-6, 250e-6, 400e-6):
        make_record(workload, v100, cost, config_index=1)

    html = client.get(reverse("records:compare_workload", args=[workload.pk])).content.decode()
    (bar,) = chart_of(html, "workload-data")["bars"]
    assert bar["low"] == pytest.approx(workload.gflops(400e-6)) and bar["high"] == pytest.approx(workload.gflops(200e-6))
    assert bar["low"] < bar["value"] < bar["high"]
