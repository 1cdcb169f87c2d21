"""The rough edges a new user hit, each checked where it was."""
import io

import pytest
from django.urls import reverse
from django.utils import timezone

from jobs.models import Worker
from records.importing import import_log
from tests.factories import make_device, make_record, make_workload

pytestmark = pytest.mark.django_db


def test_the_favicon_is_served_from_our_static_files(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 301 and response["Location"].endswith("/static/favicon.svg")
    assert 'rel="icon"' in client.get(reverse("records:home")).content.decode()


def test_the_status_filter_lists_valid_once(client):
    html = client.get(reverse("records:record_list")).content.decode()
    assert html.count("valid (no error)") == 1


def test_the_workload_id_filter_takes_whole_numbers_only(client):
    response = client.get(reverse("records:record_list"), {"workload": "1.5"})
    assert response.status_code == 400 and "whole number" in response.content.decode()


def test_anonymous_visitors_see_no_jobs_link_and_the_login_page_says_why(client):
    html = client.get(reverse("records:home")).content.decode()
    assert 'href="/jobs/"' not in html
    response = client.get(reverse("jobs:list"), follow=True)
    assert "Log in to see <code>/jobs/</code>" in response.content.decode()


def test_a_missing_page_is_a_page_of_ours(client, settings):
    settings.DEBUG = False
    response = client.get("/records/999999/")
    assert response.status_code == 404 and "Not found" in response.content.decode() and "Leaderboards" in response.content.decode()


def test_the_first_token_is_not_called_a_replacement(alice_client):
    first = alice_client.post(reverse("jobs:profile"), follow=True).content.decode()
    assert "Your API token is made." in first and "no longer works" not in first
    second = alice_client.post(reverse("jobs:profile"), follow=True).content.decode()
    assert "the old one no longer works" in second


def test_the_profile_s_curl_example_names_a_gpu_model_online(alice_client):
    device = make_device("a100")
    Worker.objects.create(name="a100@host:0", hostname="host", queue="a100", device=device, last_heartbeat=timezone.now())
    html = alice_client.get(reverse("jobs:profile")).content.decode()
    assert '"gpus": ["a100"]' in html.replace("&quot;", '"') and "h200" not in html


def test_an_offline_worker_that_never_beat_says_so(alice_client):
    Worker.objects.create(name="v100@host:0", hostname="host", queue="v100", device=make_device("v100"))
    html = alice_client.get(reverse("jobs:workers")).content.decode()
    assert "never (started" in html


def test_an_import_report_with_comment_lines_adds_up(tophub_log):
    log = io.StringIO("# a comment\n\n" + tophub_log.open().readline())
    batch = import_log(log, "commented.log")
    assert batch.summary() == "3 lines: 1 imported, 0 duplicates, 0 version 0.1 skipped, 0 malformed, 2 comments or blank"


def test_times_read_as_iso_timestamps_with_a_relative_hint(client):
    record = make_record(make_workload(), make_device("v100"), timestamp=1_700_000_000)
    html = client.get(reverse("records:record_detail", args=[record.pk])).content.decode()
    assert '<time datetime="2023-11-14T22:13:20+00:00"' in html and "2023-11-14 22:13 UTC" in html and " ago)" in html
    assert "unix time" not in html


def test_the_submit_form_knows_which_presets_each_online_gpu_serves(alice_client):
    device = make_device("h200-replay", is_replay=True)
    from engine.workloads import PRESETS
    from records.models import Workload
    Worker.objects.create(name="r@host:replay", hostname="host", queue="h200-replay", device=device, is_replay=True,
                          last_heartbeat=timezone.now(), workloads=[[*Workload.key_of("conv2d_nchw.cuda", PRESETS["C12"].args)]])
    response = alice_client.get(reverse("jobs:submit"))
    presets = response.context["presets"]
    assert presets["served"] == {"h200-replay": ["C12"]} and presets["templates"]["D1"] == "depthwise_conv2d_nchw.cuda"
    assert response.context["form"]["template"].value() == "conv2d_nchw.cuda"


def test_an_import_report_says_which_line_or_record_a_duplicate_repeats(tophub_log):
    line = tophub_log.open().readline()
    first = import_log(io.StringIO(line), "first.log")
    stored = first.records.get()

    again = import_log(io.StringIO(line + "# between\n" + line), "again.log")

    assert again.summary() == "3 lines: 0 imported, 2 duplicates, 0 version 0.1 skipped, 0 malformed, 1 comments or blank"
    assert again.problems == [
        {"line": 1, "reason": f"duplicate: already stored as record #{stored.pk}"},
        {"line": 3, "reason": "duplicate of line 1"},
    ]


def test_the_submit_form_shows_every_problem_at_once(alice_client):
    response = alice_client.post(reverse("jobs:submit"), {
        "template": "conv2d_nchw.cuda", "preset": "D1", "tuner": "xgb", "n_trial": "0",
    })
    errors = response.context["form"].errors
    assert response.status_code == 400
    assert set(errors) == {"preset", "n_trial", "gpus"} and "not conv2d_nchw.cuda" in errors["preset"][0]
