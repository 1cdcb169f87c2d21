from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from engine.logfile import canonical_args, pick_best, read_records
from records.importing import import_log
from records.leaderboards import search_workloads, summarize
from records.standings import leaderboard
from records.models import MeasurementRecord, Workload
from tests.factories import C9_ARGS, conv2d_entity, make_device, make_record, make_workload

pytestmark = pytest.mark.django_db


@pytest.fixture
def gpus():
    return make_device("v100"), make_device("h200", is_replay=True)


def test_each_gpu_gets_its_own_fastest_error_free_config(gpus):
    v100, h200 = gpus
    workload = make_workload()
    make_record(workload, v100, 120e-6)
    v100_best = make_record(workload, v100, 90e-6)
    make_record(workload, h200, 40e-6)
    h200_best = make_record(workload, h200, 30e-6)
    make_record(make_workload(args=C9_ARGS), h200, 1e-6)  # another workload never leaks in

    board = leaderboard(workload)

    assert [r.pk for r in board.bests] == [h200_best.pk, v100_best.pk]
    assert {pk: best.record for pk, best in board.best_by_device.items()} == {h200.pk: h200_best, v100.pk: v100_best}


def test_a_tie_keeps_the_earlier_measurement(gpus):
    v100, _ = gpus
    workload = make_workload()
    make_record(workload, v100, 50e-6, timestamp=2_000.0)
    earlier = make_record(workload, v100, 50e-6, timestamp=1_000.0)

    assert [best.record for best in leaderboard(workload).bests] == [earlier]


def test_an_error_never_wins_even_with_a_time_stored(gpus):
    v100, _ = gpus
    workload = make_workload()
    failed = make_record(workload, v100, error_no=5)
    MeasurementRecord.objects.filter(pk=failed.pk).update(mean_cost=1e-9, costs=[1e-9])
    good = make_record(workload, v100, 80e-6)

    assert [best.record for best in leaderboard(workload).bests] == [good]


def test_the_ranked_table_filters_by_gpu_and_paginates(client, gpus):
    v100, h200 = gpus
    workload = make_workload()
    for i in range(55):
        make_record(workload, v100, (100 + i) * 1e-6)
    make_record(workload, h200, 10e-6)
    make_record(workload, v100, error_no=4)
    url = reverse("records:leaderboard", args=[workload.pk])

    everything = client.get(url)
    assert everything.context["page"].paginator.count == 56  # valid ones only
    assert everything.context["rows"][0].device == h200

    second = client.get(url, {"device": "v100", "page": 2})
    page = second.context["page"]
    assert page.paginator.count == 55
    assert len(page.object_list) == 5
    assert page.object_list[0].low == pytest.approx(150e-6)
    assert 'href="?device=v100&page=1"' in second.content.decode()  # the pager keeps the filter


def test_each_ranked_row_links_to_the_diff_against_its_gpus_best(client, gpus):
    v100, _ = gpus
    workload = make_workload()
    best = make_record(workload, v100, 50e-6)
    slower = make_record(workload, v100, 70e-6)

    html = client.get(reverse("records:leaderboard", args=[workload.pk])).content.decode()

    assert f'{reverse("records:diff")}?a={best.pk}&b={slower.pk}' in html


def test_the_leaderboard_costs_the_same_queries_for_five_rows_or_fifty(client, gpus):
    v100, h200 = gpus
    workload = make_workload()
    url = reverse("records:leaderboard", args=[workload.pk])
    for i in range(5):
        make_record(workload, v100 if i % 2 else h200, (50 + i) * 1e-6)
    with CaptureQueriesContext(connection) as few:
        client.get(url)
    for i in range(45):
        make_record(workload, v100 if i % 2 else h200, (60 + i) * 1e-6, entity=conv2d_entity(unroll_explicit=i % 2))
    with CaptureQueriesContext(connection) as many:
        client.get(url)
    assert len(many) == len(few)


def test_the_dashboard_counts_records_and_best_gflops(gpus):
    v100, h200 = gpus
    workload = make_workload()
    make_record(workload, v100, 100e-6)
    make_record(workload, h200, 50e-6)
    make_record(workload, h200, error_no=2)

    summary = summarize(search_workloads("512,512,3,3")).get()

    assert (summary.record_count, summary.valid_count) == (3, 2)
    assert summary.best_gflops == pytest.approx(workload.flops / 50e-6 / 1e9)
    assert not search_workloads("depthwise").exists()
    assert search_workloads("[1, 512, 7, 7]").get() == workload


def test_an_imported_tophub_log_shows_each_gpus_best_from_the_file(client, tophub_log: Path):
    with tophub_log.open() as lines:
        import_log(lines, tophub_log.name)
    with tophub_log.open() as lines:
        expected = pick_best(read_records(lines))

    shown = {
        (best.device.model, workload.task_name, workload.args_json): (best.config_index, best.median_cost)
        for workload in Workload.objects.all()
        for best in leaderboard(workload).bests
    }
    assert shown == {key: (r.config_index, pytest.approx(r.mean_cost)) for key, r in expected.items()}

    # TopHub's conv2d_nchw.cuda on 7x7x512 data (its 3x3 kernel is tuned only as winograd there).
    args = [["TENSOR", [1, 512, 7, 7], "float32"], ["TENSOR", [2048, 512, 1, 1], "float32"],
            [1, 1], [0, 0, 0, 0], [1, 1], "float32"]
    workload = Workload.objects.get(task_name="conv2d_nchw.cuda", args_json=canonical_args(args))
    page = client.get(reverse("records:leaderboard", args=[workload.pk]))
    assert {b.device.model for b in page.context["board"].bests} == {"titanx", "1080ti", "tx2"}
    for best in page.context["board"].bests:
        assert expected[(best.device.model, workload.task_name, workload.args_json)].config_index == best.config_index


def test_the_leaderboard_links_other_tasks_of_the_same_shape(client, gpus):
    direct = make_workload()
    winograd = make_workload(task_name="conv2d_nchw_winograd.cuda")
    other_shape = make_workload(args=C9_ARGS)
    page = client.get(reverse("records:leaderboard", args=[direct.pk])).content.decode()
    assert list(direct.same_shape()) == [winograd]
    assert reverse("records:leaderboard", args=[winograd.pk]) in page
    assert "Same shape, other tasks" in page
    assert "Same shape" not in client.get(reverse("records:leaderboard", args=[other_shape.pk])).content.decode()


def test_the_same_shape_line_shows_each_other_tasks_bests_that_the_reader_may_read(client, gpus, alice):
    from jobs.models import Job, JobRun
    from jobs.recording import open_batch

    direct = make_workload()
    implicit = make_workload(task_name="conv2d_nchw_implicit_gemm")
    make_record(direct, gpus[0], 63e-6)
    make_record(implicit, gpus[0], 29e-6)
    make_record(implicit, gpus[1], 31e-6)
    job = Job.objects.create(owner=alice, workload=implicit, tuner="xgb", n_trial=4, private=True)
    make_record(implicit, gpus[0], 11e-6, batch=open_batch(JobRun.objects.create(job=job, device=gpus[0])))
    url = reverse("records:leaderboard", args=[direct.pk])
    line = f'conv2d_nchw_implicit_gemm</a> <span class="muted">(best %s µs on {gpus[0].model}, 31.00 µs on {gpus[1].model})'
    assert line % "29.00" in client.get(url).content.decode()  # the private 11 µs stays Alice's
    client.force_login(alice)
    assert line % "11.00" in client.get(url).content.decode()


def test_a_leaderboard_of_a_task_without_a_byte_count_shows_gflops_without_a_bandwidth_column(client, gpus):
    workload = make_workload("conv2d_nchw_winograd.cuda")  # no template here, so no byte count
    make_record(workload, gpus[0], 100e-6)
    html = client.get(reverse("records:leaderboard", args=[workload.pk])).content.decode()
    assert workload.bytes_moved is None and ">GFLOPS</a></th>" in html and "GB/s" not in html


def test_the_migration_gives_stored_workloads_the_engines_byte_count(gpus):
    import importlib

    from django.apps import apps

    from engine.describe import describe_workload
    from engine.workloads import PRESETS

    migration = importlib.import_module("records.migrations.0004_workload_bytes_moved")
    broadcast = make_workload("broadcast_nchw", PRESETS["B-div-b"].args)
    conv = make_workload()
    assert broadcast.bytes_moved is None  # as a database from before the field holds it
    migration.fill_bytes_moved(apps, None)
    broadcast.refresh_from_db()
    conv.refresh_from_db()
    assert broadcast.bytes_moved == describe_workload("broadcast_nchw", PRESETS["B-div-b"].args).bytes_moved == 4 * (2 * 256 * 64 * 56 * 56 + 64)
    assert conv.bytes_moved == 4 * (512 * 7 * 7 + 512 * 512 * 3 * 3 + 512 * 7 * 7)  # conv2d counts them too
