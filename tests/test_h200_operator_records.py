"""The H200 operator runs of 2026-12-01 (GEMM, the broadcast tactics, a custom kernel),
imported as a user would import them: every workload's leaderboard shows the config the
logs' own best-of rule picks, each template's pages render it, and the best-config
download of a task holds exactly those records."""
import gzip
from pathlib import Path

import pytest
from django.urls import reverse

from engine.logfile import format_record, pick_best, read_records
from module_rows import rows_for_the_module
from records.importing import import_log
from records.standings import leaderboard
from records.models import Workload

pytestmark = pytest.mark.django_db

RUNS = Path(__file__).resolve().parent.parent / "docs" / "benchmarks" / "operators-h200-logs" / "2026-12-01"
LOGS = [RUNS / "operators.log.gz", RUNS / "skinny.log.gz", RUNS / "run5-custom.log.gz"]


def read_lines(path: Path) -> list[str]:
    with gzip.open(path, "rt") as stream:
        return stream.readlines()


@pytest.fixture(scope="module")
def expected() -> dict:
    return pick_best([record for path in LOGS for record in read_records(read_lines(path))])


# Imported once: the tests only read the records, and the imports were most of their time.
@pytest.fixture(scope="module")
def imported(expected, django_db_setup, django_db_blocker):
    with rows_for_the_module(django_db_blocker):
        for path in LOGS:
            result = import_log(read_lines(path), path.name)
            assert result.malformed == 0
        yield expected


def test_every_operator_workload_shows_the_logs_best(imported):
    shown = {
        (best.device.model, workload.task_name, workload.args_json): (best.config_index, best.median_cost)
        for workload in Workload.objects.all()
        for best in leaderboard(workload).bests
    }
    assert {key[1] for key in shown} == {"gemm", "broadcast_nchw", "custom"}
    assert len(shown) == 5 + 12 + 1
    assert shown == {key: (r.config_index, pytest.approx(r.mean_cost)) for key, r in imported.items()}


@pytest.mark.parametrize("task", ["gemm", "broadcast_nchw", "custom"])
def test_each_templates_leaderboard_and_best_record_pages_render(client, imported, task):
    workload = Workload.objects.filter(task_name=task).order_by("pk").first()
    best = leaderboard(workload).bests[0]
    page = client.get(reverse("records:leaderboard", args=[workload.pk]))
    assert page.status_code == 200 and page.context["board"].bests[0].pk == best.pk
    assert client.get(reverse("records:record_detail", args=[best.pk])).status_code == 200
    html = page.content.decode()
    if task == "custom":  # the imported kernel's spec and source are shown, escaped, never as markup
        assert "Custom kernel <code>transpose</code>: 36 configs" in html
        assert "j &lt; TILE" in html and "j < TILE" not in html
    else:
        assert "custom-spec" not in html


def test_memory_bound_workloads_show_their_bandwidth(client, imported):
    workload = Workload.objects.get(task_name="broadcast_nchw", args_json__contains='[128,256,32,32]',
                                    args_json__endswith='"exp"]')
    assert workload.bytes_moved == 4 * (128 * 256 * 32 * 32 + 256)  # out written, v read
    best = leaderboard(workload).bests[0]
    shown = f"{workload.bytes_moved / best.median_cost / 1e9:.1f}"
    assert 4000 < float(shown) < 5000  # the 4.49 TB/s of operators-h200.md
    html = client.get(reverse("records:leaderboard", args=[workload.pk])).content.decode()
    assert ">GB/s</a></th>" in html and f'<td class="num">{shown}</td>' in html
    detail = client.get(reverse("records:record_detail", args=[best.pk])).content.decode()
    assert f"<td>{shown} <span" in detail


def test_the_best_log_download_of_gemm_is_what_pick_best_picks(client, imported):
    response = client.get(reverse("records:download_best"), {"task": "gemm"})
    assert response.status_code == 200
    lines = b"".join(response.streaming_content).decode().splitlines(keepends=True)
    expected = sorted(format_record(r) + "\n" for key, r in imported.items() if key[1] == "gemm")
    assert len(expected) == 5 and sorted(lines[1:]) == expected
