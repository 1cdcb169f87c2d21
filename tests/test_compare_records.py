"""Tick any records and compare them all at once, knob by knob, times against the first; and the
diff's rough edges: a split written with its outer factor is the same as one written with -1."""
import pytest
from django.urls import reverse

from records.diffs import config_diff
from tests.factories import C9_ARGS, conv2d_entity, make_device, make_record, make_workload

pytestmark = pytest.mark.django_db


def test_ticked_records_show_side_by_side_with_differing_knobs_and_ratios_to_the_first(client):
    v100, h200 = make_device("v100"), make_device("h200")
    workload = make_workload()
    first = make_record(workload, v100, 200e-6)
    faster = make_record(workload, h200, 100e-6, entity=conv2d_entity(tile_rc=(-1, 16)))
    same = make_record(workload, v100, 400e-6)

    response = client.get(reverse("records:compare_records"), {"r": [first.pk, faster.pk, same.pk]})

    html = response.content.decode()
    assert response.status_code == 200
    assert [f'data-record="{r.pk}"' in html for r in (first, faster, same)] == [True] * 3
    assert html.index(f'data-record="{first.pk}"') < html.index(f'data-record="{faster.pk}"') < html.index(f'data-record="{same.pk}"')
    assert "0.50×" in html and "2.00×" in html
    assert html.count('<tr class="differs"><th class="mono">') == 1 and '<th class="mono">tile_rc</th>' in html
    assert f"?r={first.pk}&amp;r={faster.pk}&amp;r={same.pk}" in html  # the permalink


def test_the_comparison_as_csv_lists_every_record(client):
    v100 = make_device("v100")
    workload = make_workload()
    a, b = make_record(workload, v100, 200e-6), make_record(workload, v100, 100e-6)
    response = client.get(reverse("records:compare_records"), {"r": [a.pk, b.pk], "format": "csv"})
    text = b"".join(response.streaming_content).decode()
    assert text.splitlines()[0] == f"row,record_{a.pk},record_{b.pk},differs"
    assert "time_over_first,1.000,0.500," in text


@pytest.mark.parametrize("query, message", [
    ({"r": ["ONE"]}, "Tick at least two records"),
    ({"r": ["999999", "999998"]}, "There is no record with id"),
    ({"r": ["1.5", "2"]}, "is not a record id"),
])
def test_bad_picks_get_a_clear_message(client, query, message):
    only = make_record(make_workload(), make_device("v100"))
    query = {"r": [str(only.pk) if value == "ONE" else value for value in query["r"]]}
    response = client.get(reverse("records:compare_records"), query)
    assert response.status_code == 400 and message in response.content.decode()


def test_records_of_different_workloads_get_no_ratio(client):
    v100 = make_device("v100")
    a = make_record(make_workload(), v100, 200e-6)
    b = make_record(make_workload(args=C9_ARGS), v100, 100e-6)
    html = client.get(reverse("records:compare_records"), {"r": [a.pk, b.pk]}).content.decode()
    assert "different workloads" in html and "0.50×" not in html


def test_a_split_written_with_its_outer_factor_is_the_same_knob_value(client):
    # TopHub writes the outer factor ([8, 8, 8, 1] of 512), newer logs -1: the same config.
    v100 = make_device("v100")
    workload = make_workload()
    tophub = make_record(workload, v100, 100e-6, entity=conv2d_entity(tile_f=(8, 8, 8, 1), tile_y=(1, 1, 7, 1), tile_rc=(64, 8)))
    ours = make_record(workload, v100, 90e-6, entity=conv2d_entity(tile_f=(-1, 8, 8, 1), tile_y=(-1, 1, 7, 1)))

    assert config_diff(tophub, ours).differing_rows == []
    api = client.get(reverse("api-diff"), {"a": tophub.pk, "b": ours.pk}).json()
    assert api["differing"] == 0
    assert "0 of 8 knobs differ" in client.get(reverse("records:diff"), {"a": tophub.pk, "b": ours.pk}).content.decode()


def test_a_diff_of_two_workloads_says_so_and_gives_no_ratio(client):
    v100 = make_device("v100")
    a = make_record(make_workload(), v100, 313e-6)
    b = make_record(make_workload(args=C9_ARGS), v100, 100e-6)
    diff = config_diff(a, b)
    assert diff.ratio is None and diff.faster is None
    html = client.get(reverse("records:diff"), {"a": a.pk, "b": b.pk}).content.decode()
    assert "different workloads, so there is no time ratio" in html and "faster" not in html.split('class="verdict"')[1]
