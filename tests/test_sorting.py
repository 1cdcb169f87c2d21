"""Every table sorts by any of its columns: `?sort=NAME` or `?sort=-NAME`, checked against the
table's own columns, server side before paginating."""
import re

import pytest
from django.urls import reverse

from tests.factories import C9_ARGS, make_baseline, make_device, make_record, make_workload

pytestmark = pytest.mark.django_db


def record_ids(html: str) -> list[int]:
    return [int(pk) for pk in re.findall(r'name="r" value="(\d+)"', html)]


@pytest.fixture
def records():
    v100, h200 = make_device("v100"), make_device("h200")
    workload = make_workload()
    return workload, [
        make_record(workload, v100, 300e-6, timestamp=1_700_000_003),
        make_record(workload, h200, 100e-6, timestamp=1_700_000_001),
        make_record(workload, v100, 200e-6, timestamp=1_700_000_002),
    ]


def test_the_records_page_sorts_by_a_column_and_flips_it(client, records):
    _, (slow, fast, middle) = records
    url = reverse("records:record_list")

    assert record_ids(client.get(url).content.decode()) == [fast.pk, middle.pk, slow.pk]
    assert record_ids(client.get(url, {"sort": "-time"}).content.decode()) == [slow.pk, middle.pk, fast.pk]
    assert record_ids(client.get(url, {"sort": "measured"}).content.decode()) == [fast.pk, middle.pk, slow.pk]
    assert record_ids(client.get(url, {"sort": "-measured"}).content.decode()) == [slow.pk, middle.pk, fast.pk]


def test_a_sorted_header_links_to_the_reverse_order_and_keeps_the_filters(client, records):
    html = client.get(reverse("records:record_list"), {"sort": "gflops", "device": "v100"}).content.decode()
    link = re.search(r'<a class="sort" href="\?([^"]*)" data-sort="gflops">', html).group(1)
    assert "device=v100" in link and "sort=-gflops" in link
    assert 'name="sort" value="gflops"' in html  # the filter form keeps the sort


def test_an_unknown_sort_column_says_which_columns_there_are(client, records):
    response = client.get(reverse("records:record_list"), {"sort": "mean_cost; drop table"})
    assert response.status_code == 400
    text = response.content.decode()
    assert "Cannot sort by" in text and "time, gflops, peak" in text


def test_the_records_page_sorts_by_percent_of_peak_across_gpus(client, records):
    _, (slow, fast, middle) = records
    # The v100's peak is a fifth of the h200's, so its 200 µs config is nearer its peak than the h200's 100 µs.
    html = client.get(reverse("records:record_list"), {"sort": "-peak"}).content.decode()
    assert record_ids(html) == [middle.pk, slow.pk, fast.pk]


def test_the_home_page_sorts_workloads_by_best_gflops_and_names_the_gpu(client, records):
    workload, _ = records
    other = make_workload(args=C9_ARGS)
    make_record(other, make_device("a100"), 1e-3)
    html = client.get(reverse("records:home"), {"sort": "-gflops"}).content.decode()
    assert html.index(f'/leaderboard/{workload.pk}/"') < html.index(f'/leaderboard/{other.pk}/"')
    assert '<td class="best-gpu">h200</td>' in html and '<td class="best-gpu">a100</td>' in html
    html = client.get(reverse("records:home"), {"sort": "gflops"}).content.decode()
    assert html.index(f'/leaderboard/{other.pk}/"') < html.index(f'/leaderboard/{workload.pk}/"')


def test_the_speedup_table_sorts_in_python_by_speedup(client):
    h200 = make_device("h200")
    small, large = make_workload(), make_workload(args=C9_ARGS)
    make_record(small, h200, 100e-6)
    make_record(large, h200, 100e-6)
    make_baseline(small, h200, 300e-6)
    make_baseline(large, h200, 150e-6)
    url = reverse("records:speedups")
    html = client.get(url, {"device": "h200", "provider": "cudnn", "sort": "speedup"}).content.decode()
    table = html[html.index('<table class="speedups">'):]
    assert table.index("1.50×") < table.index("3.00×")
    html = client.get(url, {"device": "h200", "provider": "cudnn", "sort": "-speedup"}).content.decode()
    table = html[html.index('<table class="speedups">'):]
    assert table.index("3.00×") < table.index("1.50×")


def test_sorting_the_dashboard_by_its_name_does_not_summarize_every_workload(records):
    from records.leaderboards import dashboard_workloads
    from records.columns import WORKLOAD_COLUMNS
    from records.sorting import sorting_from

    assert "record_count" not in dashboard_workloads("", sorting_from({"sort": "-task"}, WORKLOAD_COLUMNS)).query.annotations
    assert "record_count" in dashboard_workloads("", sorting_from({"sort": "-records"}, WORKLOAD_COLUMNS)).query.annotations


def test_the_devices_and_imports_pages_sort_too(client, records):
    from tests.factories import make_batch

    html = client.get(reverse("records:devices"), {"sort": "-records"}).content.decode()
    assert html.index("/records/?device=v100") < html.index("/records/?device=h200")  # 2 records, then 1
    html = client.get(reverse("records:devices"), {"sort": "records"}).content.decode()
    assert html.index("/records/?device=h200") < html.index("/records/?device=v100")
    small, big = make_batch("small.log", lines=3), make_batch("big.log", lines=300)
    html = client.get(reverse("records:batch_list"), {"sort": "-lines"}).content.decode()
    assert html.index("big.log") < html.index("small.log")
    assert client.get(reverse("records:batch_list"), {"sort": "owner"}).status_code == 400


def test_a_csv_asked_for_with_a_bad_sort_gets_the_message_not_a_file(client, records):
    response = client.get(reverse("records:record_list"), {"sort": "nope", "format": "csv"})
    assert response.status_code == 400 and "Cannot sort by" in response.content.decode()
    response = client.get(reverse("records:record_list"), {"sort": "-time", "format": "csv"})
    assert response["Content-Type"].startswith("text/csv")
