"""Leaderboards and job progress are cached (tunerweb.cache) by a version of the records they
are made from: a new record, an import, an edit in place or a private batch's owner always see
what is stored now, and a Redis that is down or hung costs a page nothing but the cache."""
import socket
import time

import pytest
from django.urls import reverse

from jobs.claims import claim
from jobs.running import run_claimed
from jobs.submission import check_request, submit_job
from jobs.worker import register, replay_config
from jobs_fixtures import REPLAY_QUEUE
from records.models import MeasurementRecord
from tests.factories import make_batch, make_device, make_record, make_workload

pytestmark = pytest.mark.django_db


def stored_like(record: MeasurementRecord, **changes) -> MeasurementRecord:
    """A copy of `record` stored as imports and workers store records (bulk: no signal)."""
    record.pk = None
    record.fingerprint = f"copy-{time.monotonic_ns()}"
    for name, value in changes.items():
        setattr(record, name, value)
    (stored,) = MeasurementRecord.objects.bulk_create([record])
    return stored


@pytest.fixture
def board():
    workload, v100 = make_workload(), make_device("v100")
    return workload, v100, make_record(workload, v100, 90e-6)


def best_link(client, workload) -> str:
    page = client.get(reverse("records:leaderboard", args=[workload.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    table = html[html.index('<table class="bests">'):]
    return table[table.index("/records/"):].split('"')[0]


def test_a_cached_leaderboard_shows_a_faster_record_stored_after_it(client, board):
    workload, _, first = board
    assert best_link(client, workload) == reverse("records:record_detail", args=[first.pk])
    assert best_link(client, workload) == reverse("records:record_detail", args=[first.pk])  # from the cache

    faster = stored_like(first, mean_cost=40e-6, costs=[40e-6], config_index=first.config_index + 1)

    assert best_link(client, workload) == reverse("records:record_detail", args=[faster.pk])


def test_a_cached_leaderboard_shows_a_record_edited_in_place_by_staff(client, board, django_capture_on_commit_callbacks):
    workload, v100, first = board
    slower = make_record(workload, v100, 200e-6)
    assert best_link(client, workload) == reverse("records:record_detail", args=[first.pk])

    with django_capture_on_commit_callbacks(execute=False) as bumps:
        slower.mean_cost, slower.costs = 10e-6, [10e-6]
        slower.save()  # as the admin saves, in its transaction
    # Until the edit commits, the cache keeps the name it had: nothing can store old rows under a new one.
    assert best_link(client, workload) == reverse("records:record_detail", args=[first.pk])
    for bump in bumps:
        bump()

    assert best_link(client, workload) == reverse("records:record_detail", args=[slower.pk])


def test_a_private_batch_is_read_by_its_owner_only_cached_or_not(client, alice, board):
    workload, v100, first = board
    mine = make_record(workload, v100, 20e-6, batch=make_batch(private_to=alice))
    public_best = reverse("records:record_detail", args=[first.pk])
    assert best_link(client, workload) == public_best

    client.force_login(alice)
    assert best_link(client, workload) == reverse("records:record_detail", args=[mine.pk])
    client.logout()
    assert best_link(client, workload) == public_best


@pytest.fixture
def finished_run(alice, recording_path):
    config = replay_config(recording_path)
    worker = register(config)
    request = check_request(template="conv2d_nchw.cuda", preset="C12", tuner="random", n_trial=24, gpus=[REPLAY_QUEUE],
                            seed=0)
    run = submit_job(alice, request).job.runs.get()
    run_claimed(run.pk, claim(run.pk, worker), config)
    run.refresh_from_db()
    return run


def test_the_progress_of_a_run_shows_a_record_stored_after_it_was_cached(finished_run, alice_client):
    url = reverse("jobs:progress", args=[finished_run.job_id])
    before = alice_client.get(url).json()["runs"][0]
    assert alice_client.get(url).json()["runs"][0]["points"] == before["points"]  # from the cache
    last = finished_run.records().last()

    added = stored_like(last, config_index=last.config_index + 100_000)

    after = alice_client.get(url).json()["runs"][0]
    assert after["trials_done"] == before["trials_done"] + 1 == 25
    assert after["points"]["record"] == [*before["points"]["record"], added.pk]
    assert after["trials"][0]["record"] == added.pk and after["trials"][0]["number"] == 25
    assert len(after["convergence"]) == 25


def test_the_progress_of_a_run_shows_a_record_edited_in_place_by_staff(finished_run, alice_client,
                                                                       django_capture_on_commit_callbacks):
    url = reverse("jobs:progress", args=[finished_run.job_id])
    last = finished_run.records().last()
    # The newest trial, as stored: it may be one the recording says failed ("too many registers").
    assert alice_client.get(url).json()["runs"][0]["trials"][0]["error_msg"] == last.error_msg != "noted by staff"

    with django_capture_on_commit_callbacks(execute=True):
        last.error_msg = "noted by staff"
        last.save()

    assert alice_client.get(url).json()["runs"][0]["trials"][0]["error_msg"] == "noted by staff"


def test_the_job_page_poll_sends_only_the_points_after_the_ones_it_has(finished_run, alice_client):
    url = reverse("jobs:progress", args=[finished_run.job_id])
    whole = alice_client.get(url).json()["runs"][0]
    records = whole["points"]["record"]

    tail = alice_client.get(url, {"since": f"{finished_run.pk}:{records[15]}"}).json()["runs"][0]

    assert tail["points_after"] == records[15]
    assert tail["points"] == {name: column[16:] for name, column in whole["points"].items()}
    assert tail["convergence"] == whole["convergence"][16:]
    assert tail["trials_done"] == 24 and tail["trials"] == [t for t in whole["trials"] if t["record"] > records[15]]
    nothing_new = alice_client.get(url, {"since": f"{finished_run.pk}:{records[-1]}"}).json()["runs"][0]
    assert nothing_new["points"]["record"] == [] and nothing_new["convergence"] == []
    other_run = alice_client.get(url, {"since": f"{finished_run.pk + 1}:{records[-1]}"}).json()["runs"][0]
    assert other_run["points"] == whole["points"] and "points_after" not in other_run


@pytest.mark.parametrize("since", ["x", "12", "1:-3", "1:2:3", "1:" + "9" * 40, "1:\u00b2"])
def test_a_malformed_since_is_a_clear_json_400(finished_run, alice_client, since):
    answer = alice_client.get(reverse("jobs:progress", args=[finished_run.job_id]), {"since": since})
    assert answer.status_code == 400
    assert "<run id>:<record id>" in answer.json()["detail"]


@pytest.fixture
def hung_redis():
    """A port that takes connections and never answers, as a stopped Redis does."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    yield f"redis://127.0.0.1:{listener.getsockname()[1]}/0"
    listener.close()


@pytest.fixture
def closed_port():
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return f"redis://127.0.0.1:{port}/0"


@pytest.mark.parametrize("outage", ["closed_port", "hung_redis"])
def test_pages_answer_without_their_cache_when_redis_is_down(request, outage, settings, finished_run, alice_client):
    settings.CACHES = {"default": {**settings.CACHES["default"], "LOCATION": request.getfixturevalue(outage)}}
    leaderboard = reverse("records:leaderboard", args=[finished_run.job.workload_id])
    progress = reverse("jobs:progress", args=[finished_run.job_id])
    for _ in range(3):
        started = time.monotonic()
        assert alice_client.get(leaderboard).status_code == 200
        assert alice_client.get(progress).json()["runs"][0]["trials_done"] == 24
        assert alice_client.get(reverse("jobs:detail", args=[finished_run.job_id])).status_code == 200
        assert time.monotonic() - started < 1.5


def test_deleting_a_private_batch_deletes_its_records_rather_than_making_them_public(
        client, alice, board, django_capture_on_commit_callbacks):
    workload, v100, first = board
    batch = make_batch(private_to=alice)
    hidden = make_record(workload, v100, 1e-6, batch=batch)
    assert best_link(client, workload) == reverse("records:record_detail", args=[first.pk])

    with django_capture_on_commit_callbacks(execute=True):
        batch.delete()

    assert not MeasurementRecord.objects.filter(pk=hidden.pk).exists()
    assert best_link(client, workload) == reverse("records:record_detail", args=[first.pk])


def test_made_up_parameters_and_far_pages_get_no_key(board):
    from django.contrib.auth.models import AnonymousUser

    from records.versions import leaderboard_key

    workload, viewer = board[0], AnonymousUser()
    plain = leaderboard_key(workload, viewer, {})
    assert leaderboard_key(workload, viewer, {"page": "1"}) == plain
    assert leaderboard_key(workload, viewer, {"junk": "1", "page": "1"}) is None
    assert leaderboard_key(workload, viewer, {"sort": "-median"}) != plain
    assert leaderboard_key(workload, viewer, {"page": "999"}) is None
    assert leaderboard_key(workload, viewer, {"page": "x"}) is None


def test_an_answer_the_cache_should_not_keep_is_worked_out_each_time():
    from tunerweb.cache import cached

    calls = []

    def board():
        calls.append(1)
        return "<table>", 400

    for _ in range(2):
        assert cached("test-bad-sort", board, keep=lambda made: made[1] == 200) == ("<table>", 400)
    assert len(calls) == 2
    for _ in range(2):
        cached("test-good", lambda: calls.append(1) or ("<table>", 200), keep=lambda made: made[1] == 200)
    assert len(calls) == 3


def test_the_cache_asks_redis_through_one_client_not_a_new_one_each_time():
    from django.core.cache import caches

    client = caches["default"]._cache
    assert client.get_client("a") is client.get_client("b", write=True)
    caches["default"].set("reused", 1)
    assert caches["default"].get("reused") == 1
