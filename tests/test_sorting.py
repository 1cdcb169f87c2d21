"""Every table sorts by any of its columns: `?sort=NAME` or `?sort=-NAME`, checked against the
table's own columns, server side before paginating."""
import re

import pytest
from django.urls import reverse

from tests.factories import C9_ARGS, make_baseline, make_batch, make_device, make_record, make_workload

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


def ranked_indexes(html: str, table: str = '<table class="records standings">') -> list[int]:
    """The config indexes of a leaderboard table's rows, top to bottom."""
    body = html[html.index(table):]
    body = body[:body.index("</table>")]
    return [int(index) for index in re.findall(r'/records/\d+/">(\d+)</a>', body)]


@pytest.fixture
def board():
    """On the h200: config 1 measured at 100, 400 and 400 µs (fastest first, median 400),
    config 2 at 200 µs, config 3 at 50 µs in tuning but 300 µs in its confirmation rounds;
    on the v100 config 4 at 600 µs."""
    h200, v100 = make_device("h200"), make_device("v100")
    workload = make_workload()
    for cost in (100e-6, 400e-6, 400e-6):
        make_record(workload, h200, cost, config_index=1)
    make_record(workload, h200, 200e-6, config_index=2)
    make_record(workload, h200, 50e-6, config_index=3)
    make_record(workload, h200, costs=[300e-6] * 5, config_index=3, kind="confirmation", rounds=5)
    make_record(workload, v100, 600e-6, config_index=4)
    return workload


def test_the_leaderboard_ranks_configs_by_any_column(client, board):
    url = reverse("records:leaderboard", args=[board.pk])
    assert ranked_indexes(client.get(url).content.decode()) == [3, 1, 2, 4]  # by fastest measurement
    # by median: config 3's rests on its confirmation rounds, config 1's on its three measurements
    assert ranked_indexes(client.get(url, {"sort": "median"}).content.decode()) == [2, 3, 1, 4]
    assert ranked_indexes(client.get(url, {"sort": "-gflops"}).content.decode()) == [2, 3, 1, 4]
    assert ranked_indexes(client.get(url, {"sort": "-n"}).content.decode()) == [1, 3, 2, 4]
    assert ranked_indexes(client.get(url, {"sort": "-gpu"}).content.decode()) == [4, 3, 1, 2]
    assert ranked_indexes(client.get(url, {"sort": "-index"}).content.decode()) == [4, 3, 2, 1]
    # The v100's best at 600 µs is nearer the v100's peak than the h200's 200 µs to the h200's.
    assert ranked_indexes(client.get(url, {"sort": "-peak"}).content.decode())[0] == 4


def test_the_leaderboard_sorts_before_paginating(client, board, monkeypatch):
    from records.views import pages

    paginate = pages._page
    monkeypatch.setattr(pages, "_page", lambda request, items: paginate(request, items, per_page=2))
    url = reverse("records:leaderboard", args=[board.pk])
    assert ranked_indexes(client.get(url, {"sort": "-median", "page": 1}).content.decode()) == [4, 1]
    html = client.get(url, {"sort": "-median", "page": 2}).content.decode()
    assert ranked_indexes(html) == [3, 2]
    assert "?sort=-median&page=1" in html  # the pager keeps the sort


def test_the_leaderboard_bests_sort_on_their_own_and_say_how_near_their_peak(client, board):
    url = reverse("records:leaderboard", args=[board.pk])
    bests = '<table class="bests">'
    # The h200's best is its confirmed config; the fastest GPU first.
    assert ranked_indexes(client.get(url).content.decode(), bests) == [3, 4]
    html = client.get(url, {"best_sort": "-median", "sort": "index"}).content.decode()
    assert ranked_indexes(html, bests) == [4, 3] and ranked_indexes(html) == [1, 2, 3, 4]
    assert "% of peak" in html and html.count('class="num peak"') == 2 + 4
    assert client.get(url, {"best_sort": "knobs"}).status_code == 400


def test_the_home_page_sorts_workloads_and_tasks_by_every_column(client, records):
    workload, _ = records
    other = make_workload(args=C9_ARGS)
    make_record(other, make_device("a100"), 1e-3)
    url = reverse("records:home")

    def order(**query):
        html = client.get(url, query).content.decode()
        return html.index(f'/leaderboard/{workload.pk}/"') < html.index(f'/leaderboard/{other.pk}/"')

    assert order(sort="-gpus") and not order(sort="gpus")  # two GPUs against one
    assert order(sort="-on") and not order(sort="on")  # h200 against a100
    assert order(sort="-shape") != order(sort="shape")
    from engine.workloads import PRESETS

    gemm = make_workload("gemm", PRESETS["G3"].args)
    make_record(gemm, make_device("t4"), 1e-3)
    html = client.get(url, {"task_sort": "-records"}).content.decode()
    tasks = html[html.index('<table class="tasks">'):]
    assert tasks.index("conv2d_nchw.cuda") < tasks.index("gemm")
    tasks = client.get(url, {"task_sort": "-task"}).content.decode()
    tasks = tasks[tasks.index('<table class="tasks">'):]
    assert tasks.index("gemm") < tasks.index("conv2d_nchw.cuda")


def test_the_workers_page_sorts_by_status_and_heartbeat(client):
    from datetime import timedelta

    from django.utils import timezone

    from jobs.models import Worker

    Worker.objects.create(name="v100@host:0", hostname="host", queue="v100", device=make_device("v100"),
                          last_heartbeat=timezone.now() - timedelta(days=1))
    Worker.objects.create(name="a100@host:0", hostname="host", queue="a100", device=make_device("a100"),
                          last_heartbeat=timezone.now())
    url = reverse("jobs:workers")

    def a100_first(**query) -> bool:
        html = client.get(url, query).content.decode()
        table = html[html.index('<table id="workers">'):]
        return table.index("a100") < table.index("v100")

    assert a100_first(sort="-heartbeat") and not a100_first(sort="heartbeat")
    assert a100_first(sort="gpu") and not a100_first(sort="-gpu")
    assert a100_first(sort="-status") != a100_first(sort="status")  # online against offline
    assert client.get(url, {"sort": "pid"}).status_code == 400


def test_the_roofline_table_sorts_by_intensity_or_share_of_peak(client):
    from engine import describe_workload
    from engine.workloads import PRESETS

    h200 = make_device("h200")
    gemm, broadcast = make_workload("gemm", PRESETS["G3"].args), make_workload("broadcast_nchw", PRESETS["B-div-b"].args)
    for workload in (gemm, broadcast):
        workload.bytes_moved = describe_workload(workload.task_name, workload.args).bytes_moved
        workload.save()
        make_record(workload, h200, 100e-6)
    url = reverse("records:roofline")

    def first_task(**query):
        html = client.get(url, {"device": "h200", **query}).content.decode()
        table = html[html.index('<table class="roofline">'):]
        return "gemm" if table.index("<td>gemm</td>") < table.index("<td>broadcast_nchw</td>") else "broadcast_nchw"

    assert first_task(sort="intensity") == "broadcast_nchw" and first_task(sort="-intensity") == "gemm"
    assert first_task(sort="-gflops") == "gemm"


def test_the_records_page_s_environment_groups_sort_by_count(client):
    h200 = make_device("h200")
    workload = make_workload()
    for driver, n in (("570.1", 1), ("580.2", 3), ("590.3", 2)):
        for _ in range(n):
            make_record(workload, h200, 100e-6, environment={"driver": driver})
    url = reverse("records:record_list")

    def drivers(query) -> list[str]:
        html = client.get(url, {"group_by": "driver", **query}).content.decode()
        table = html.split('class="environment-groups"')[1].split("</table>")[0]
        return re.findall(r'<td class="mono">([^<]*)</td>', table)

    assert drivers({}) == ["570.1", "580.2", "590.3"]
    assert drivers({"group_sort": "-n"}) == ["580.2", "590.3", "570.1"]
    assert client.get(url, {"group_by": "driver", "group_sort": "nope"}).status_code == 400


def test_an_import_s_problems_sort_by_line_or_reason(client):
    batch = make_batch(problems=[{"line": 9, "reason": "b: bad json"}, {"line": 2, "reason": "c: no config"},
                                 {"line": 5, "reason": "a: unknown task"}])
    url = reverse("records:batch_detail", args=[batch.pk])

    def lines(query) -> list[str]:
        table = client.get(url, query).content.decode().split('class="problems"')[1].split("</table>")[0]
        return re.findall(r'<tr><td class="num">(\d+)</td>', table)

    assert lines({}) == ["9", "2", "5"]  # as the import met them
    assert lines({"problem_sort": "where"}) == ["2", "5", "9"]
    assert lines({"problem_sort": "reason"}) == ["5", "9", "2"]


def test_a_job_s_confirmations_sort_by_warm_median_with_missing_ones_last():
    from records.columns import CONFIRMATION_COLUMNS
    from records.sorting import sorting_from

    rows = [{"role": "tuned", "config_index": 1, "warm": {"median": 3e-6, "min": 2e-6, "n": 5}},
            {"role": "vendor", "provider": "cudnn", "warm": {"median": 1e-6, "min": 1e-6, "n": 5}},
            {"role": "tuned", "config_index": 2, "error": "wrong answer"}]
    ordered = sorting_from({"confirmation_sort": "-warm"}, CONFIRMATION_COLUMNS, name="confirmation_sort").rows(rows)
    assert [row.get("config_index", row.get("provider")) for row in ordered] == [1, "cudnn", 2]


def test_the_job_list_sorts_by_state_as_each_job_reads_it(alice_client, alice):
    from jobs.models import Job, JobRun, State

    workload, h200, v100 = make_workload(), make_device("h200"), make_device("v100")
    runs_of = {"a": [State.DONE, State.FAILED], "b": [State.QUEUED, State.DONE], "c": [State.DONE, State.DONE],
               "d": [State.BETWEEN_ROUNDS, State.CANCELLED], "e": [State.CANCELLED, State.DONE]}
    jobs = {}
    for name, states in runs_of.items():
        jobs[name] = Job.objects.create(owner=alice, workload=workload, tuner="xgb", n_trial=4)
        for device, state in zip((h200, v100), states):
            JobRun.objects.create(job=jobs[name], device=device, state=state)
    in_sql = dict(Job.objects.annotate(s=Job.state_expression()).values_list("pk", "s"))
    assert {job.pk: job.state for job in jobs.values()} == in_sql

    html = alice_client.get(reverse("jobs:list"), {"sort": "state"}).content.decode()
    listed = [int(pk) for pk in re.findall(r'<a href="/jobs/(\d+)/">', html)]
    order = [pk for pk in dict.fromkeys(listed) if pk in in_sql]
    assert [in_sql[pk] for pk in order] == sorted(in_sql.values())
