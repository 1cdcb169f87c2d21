"""Leaderboards group measurements per config, GPU and code hash, rest on confirmations,
mark ties by interval overlap and tell current code from changed and unknown."""
import pytest
from django.urls import reverse

from engine import create_task
from engine.codehash import config_code_hash
from records.models import MeasurementRecord
from records.standings import leaderboard
from tests.factories import C12_ARGS, conv2d_entity, make_baseline, make_device, make_record, make_workload

pytestmark = pytest.mark.django_db

Kind, Cache = MeasurementRecord.Kind, MeasurementRecord.Cache


@pytest.fixture
def h200():
    return make_device("h200", compute_capability="9.0")


@pytest.fixture
def c12():
    return make_workload()


def current_hash(entity) -> str:
    task = create_task("conv2d_nchw.cuda", C12_ARGS)
    return config_code_hash(task, task.config_space.from_entity(entity), "sm_90")


def test_measurements_of_one_config_make_one_row_with_median_min_max_and_count(client, h200, c12):
    for cost in (52e-6, 50e-6, 61e-6):
        make_record(c12, h200, cost, config_index=7)
    make_record(c12, h200, 80e-6, config_index=8, entity=conv2d_entity(unroll_explicit=0))

    best = leaderboard(c12).bests[0]
    assert (best.config_index, best.n_measurements) == (7, 3)
    assert (best.median_cost, best.min_cost, best.max_cost) == pytest.approx((52e-6, 50e-6, 61e-6))

    page = client.get(reverse("records:leaderboard", args=[c12.pk]))
    assert [(row.config_index, row.n_measurements) for row in page.context["rows"]] == [(7, 3), (8, 1)]
    assert page.context["page"].paginator.count == 2


def test_the_median_decides_not_the_luckiest_measurement(h200, c12):
    make_record(c12, h200, 40e-6, config_index=1)  # one lucky run ...
    for cost in (70e-6, 71e-6):
        make_record(c12, h200, cost, config_index=1)  # ... of a config that is slow
    make_record(c12, h200, 50e-6, config_index=2)

    assert leaderboard(c12).bests[0].config_index == 2


def test_a_config_whose_interval_overlaps_the_best_is_a_tie(client, h200, c12):
    for cost in (50e-6, 54e-6, 52e-6):
        make_record(c12, h200, cost, config_index=1)
    for cost in (53e-6, 58e-6):
        make_record(c12, h200, cost, config_index=2)  # overlaps 50-54
    make_record(c12, h200, 60e-6, config_index=3)  # does not

    best = leaderboard(c12).bests[0]
    assert best.config_index == 1 and best.ties == 1
    rows = client.get(reverse("records:leaderboard", args=[c12.pk])).context["rows"]
    assert [(r.config_index, r.tie_with_best, r.is_best) for r in rows] == [
        (1, False, True), (2, True, False), (3, False, False)]


def test_confirmations_decide_where_they_exist(h200, c12):
    make_record(c12, h200, 40e-6, config_index=1)  # the luckiest tuning measurement, never confirmed
    make_record(c12, h200, 45e-6, config_index=2)
    make_record(c12, h200, costs=[47e-6, 48e-6, 46e-6, 47e-6, 49e-6], config_index=2, kind=Kind.CONFIRMATION, rounds=5)
    make_record(c12, h200, costs=[90e-6, 91e-6, 92e-6, 90e-6, 93e-6], config_index=2, kind=Kind.CONFIRMATION,
                cache=Cache.COLD, rounds=5)

    best = leaderboard(c12).bests[0]
    assert (best.config_index, best.confirmed, best.rounds, best.n_measurements) == (2, True, 5, 5)
    assert best.median_cost == pytest.approx(47e-6)
    assert (best.cold.median, best.cold.min, best.cold.max) == pytest.approx((91e-6, 90e-6, 93e-6))


def test_records_of_changed_code_are_left_out_of_bests_unless_asked(client, h200, c12):
    entity = conv2d_entity()
    current = make_record(c12, h200, 60e-6, config_index=1, entity=entity, code_hash=current_hash(entity))
    old_entity = conv2d_entity(unroll_explicit=0)
    changed = make_record(c12, h200, 30e-6, config_index=2, entity=old_entity, code_hash="sha256:" + "0" * 64)
    unknown = make_record(c12, make_device("v100"), 20e-6, config_index=1, entity=entity)

    statuses = {b.device.model: (b.pk, b.code_status) for b in leaderboard(c12).bests}
    assert statuses == {"h200": (current.pk, "current"), "v100": (unknown.pk, "unknown")}
    shown = {b.device.model: (b.pk, b.code_status) for b in leaderboard(c12, show_changed=True).bests}
    assert shown["h200"] == (changed.pk, "changed")

    page = client.get(reverse("records:leaderboard", args=[c12.pk])).content.decode()
    assert "code changed since" in page and "unknown code" in page and "show_changed=on" in page


def test_the_best_is_found_below_many_faster_configs_of_changed_code(h200, c12):
    for i in range(40):
        make_record(c12, h200, (20 + i) * 1e-6, config_index=100 + i, code_hash="sha256:" + f"{i:064x}")
    entity = conv2d_entity()
    current = make_record(c12, h200, 90e-6, config_index=1, entity=entity, code_hash=current_hash(entity))

    assert [b.pk for b in leaderboard(c12).bests] == [current.pk]


def test_a_generator_change_marks_its_records_changed(monkeypatch, h200, c12):
    entity = conv2d_entity()
    make_record(c12, h200, 60e-6, config_index=1, entity=entity, code_hash=current_hash(entity))
    assert leaderboard(c12).bests[0].code_status == "current"

    template_class = type(create_task("conv2d_nchw.cuda", C12_ARGS).template)
    monkeypatch.setattr(template_class, "generator_version", "2", raising=False)

    assert leaderboard(c12).bests == []
    assert leaderboard(c12, show_changed=True).bests[0].code_status == "changed"


def test_the_leaderboard_json_gives_each_bests_spread_code_status_and_tie(client, h200, c12):
    entity = conv2d_entity()
    for cost in (50e-6, 52e-6, 55e-6):
        make_record(c12, h200, cost, config_index=1, entity=entity, code_hash=current_hash(entity))
    make_record(c12, make_device("h100", compute_capability="9.0"), 53e-6, config_index=1)

    body = client.get(f"/api/leaderboard/{c12.pk}/").json()

    first, second = body["bests"]
    assert (first["device"], first["n_measurements"], first["code_status"], first["tie_with_best"]) == (
        "h200", 3, "current", False)
    assert (first["median_cost"], first["min_cost"], first["max_cost"]) == pytest.approx((52e-6, 50e-6, 55e-6))
    assert (second["device"], second["n_measurements"], second["code_status"], second["tie_with_best"]) == (
        "h100", 1, "unknown", True)
    assert body["show_changed"] is False


def test_speedups_give_intervals_warm_and_cold_and_their_rounds(client, h200, c12):
    make_record(c12, h200, costs=[40e-6, 42e-6, 41e-6, 40e-6, 44e-6], config_index=2, kind=Kind.CONFIRMATION, rounds=5)
    make_record(c12, h200, costs=[60e-6, 62e-6, 61e-6, 60e-6, 64e-6], config_index=2, kind=Kind.CONFIRMATION,
                cache=Cache.COLD, rounds=5)
    baseline = make_baseline(c12, h200, 82e-6)
    baseline.costs, baseline.cold_costs, baseline.rounds = [80e-6, 82e-6, 84e-6, 81e-6, 83e-6], [120e-6] * 5, 5
    baseline.cold_cost = 120e-6
    baseline.save()

    row = client.get("/api/speedups/", {"device": "h200"}).json()["rows"][0]

    assert row["speedup"] == pytest.approx(82 / 41)
    assert (row["warm"]["low"], row["warm"]["high"]) == pytest.approx((80 / 44, 84 / 40))
    assert row["cold"]["value"] == pytest.approx(120 / 61)
    assert row["rounds"] == 5
    page = client.get(reverse("records:speedups"), {"device": "h200"}).content.decode()
    assert "1.82–2.10×" in page and "1.97×" in page
