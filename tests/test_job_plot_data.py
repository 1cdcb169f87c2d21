"""The job page's plot reads every stored trial from the progress JSON, and the page keeps
polling a cancelled run until its worker has stored the batch it had in hand."""
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from engine.logfile import ErrorNo
from jobs.claims import claim, release
from jobs.models import JobRun, State
from jobs.running import run_claimed
from jobs.submission import check_request, submit_job
from jobs.worker import register, replay_config
from jobs_fixtures import REPLAY_QUEUE

pytestmark = pytest.mark.django_db


@pytest.fixture
def config(recording_path):
    return replay_config(recording_path)


@pytest.fixture
def worker(config):
    return register(config)


@pytest.fixture
def run(alice, worker) -> JobRun:
    request = check_request(template="conv2d_nchw.cuda", preset="C12", tuner="random", n_trial=24, gpus=[REPLAY_QUEUE])
    return submit_job(alice, request).job.runs.get()


def test_the_progress_json_holds_every_stored_trial_in_order(run, worker, config, alice_client):
    run_claimed(run.pk, claim(run.pk, worker), config)
    run.refresh_from_db()
    stored = list(run.records().values_list("pk", "config_index", "mean_cost", "error_no"))
    run.records().filter(pk=stored[3][0]).update(error_no=ErrorNo.RUNTIME_DEVICE, mean_cost=None, gflops=None,
                                                 error_msg="CUDA_ERROR_ILLEGAL_ADDRESS")

    progress = alice_client.get(reverse("jobs:progress", args=[run.job_id])).json()

    points = progress["runs"][0]["points"]
    assert points["record"] == [row[0] for row in stored] and len(stored) == 24
    assert points["config_index"] == [row[1] for row in stored]
    assert points["error"][3] == ErrorNo.RUNTIME_DEVICE and points["cost"][3] is None
    assert progress["error_kinds"][str(int(ErrorNo.RUNTIME_DEVICE))] == ErrorNo.RUNTIME_DEVICE.label
    shown = {t["record"]: t for t in progress["runs"][0]["trials"]}
    assert shown[stored[3][0]]["error_msg"] == "CUDA_ERROR_ILLEGAL_ADDRESS"
    assert shown[stored[3][0]]["record_url"] == reverse("records:record_detail", args=[stored[3][0]])
    assert progress["settled"] is True


def test_a_cancelled_run_is_unsettled_while_its_worker_still_holds_it(run, worker, alice_client):
    url = reverse("jobs:progress", args=[run.job_id])
    token = claim(run.pk, worker)
    assert alice_client.get(url).json()["settled"] is False  # running

    run.job.cancel(by="alice")
    assert alice_client.get(url).json()["runs"][0]["state"] == State.CANCELLED
    assert alice_client.get(url).json()["settled"] is False  # its worker is storing the batch in hand

    release(run.pk, token)
    assert alice_client.get(url).json()["settled"] is True


def test_a_cancelled_run_whose_worker_went_silent_is_settled(run, worker, settings):
    claim(run.pk, worker)
    run.job.cancel(by="alice")
    silent = timezone.now() - timedelta(seconds=settings.TUNERWEB_WORKER_STALE_SECONDS + 5)
    JobRun.objects.filter(pk=run.pk).update(heartbeat_at=silent)
    assert JobRun.objects.get(pk=run.pk).settled


def test_a_worker_lets_go_of_its_claim_when_the_run_ends(run, worker, config):
    run_claimed(run.pk, claim(run.pk, worker), config)
    run.refresh_from_db()
    assert run.state == State.DONE and run.claim_token is None


def test_the_job_list_shows_each_run_s_best(run, worker, config, alice_client):
    run_claimed(run.pk, claim(run.pk, worker), config)
    run.refresh_from_db()
    html = alice_client.get(reverse("jobs:list")).content.decode()
    assert f'href="/records/{run.best_record_id}/">{run.best_record.gflops:.1f} GFLOPS' in html
