"""Jobs end to end: a real Redis, real Celery worker processes serving a replay recording."""
import socket

import pytest
from django.urls import reverse

from engine.logfile import read_records
from jobs.models import Job, JobRun, State, Worker
from jobs_fixtures import REPLAY_QUEUE, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def submit(client, n_trial, early_stopping=None):
    data = {"template": "conv2d_nchw.cuda", "preset": "C12", "tuner": "xgb", "n_trial": n_trial,
            "gpus": [REPLAY_QUEUE]}
    if early_stopping:
        data["early_stopping"] = early_stopping
    return client.post("/api/jobs/", data, content_type="application/json")


def run_of(job_id) -> JobRun:
    return JobRun.objects.select_related("device").get(job_id=job_id)


def finished(job_id):
    run = run_of(job_id)
    return run if run.state not in (State.QUEUED, State.RUNNING) else None


def test_a_job_runs_to_done_on_a_replay_worker_with_its_records_stored(start_worker, alice_client):
    start_worker()
    response = submit(alice_client, 40)
    assert response.status_code == 201, response.content
    job_id = response.json()["id"]

    run = wait_for(lambda: finished(job_id), what="the job to finish")
    assert run.state == State.DONE, run.message
    records = run.records()
    assert records.count() == 40 == run.trials_done
    assert records.values("config_index").distinct().count() == 40
    assert all(r.device.model == REPLAY_QUEUE and r.device.is_replay for r in records.select_related("device"))
    assert run.best_gflops == max(r.gflops for r in records if r.gflops)

    progress = alice_client.get(f"/api/jobs/{job_id}/").json()
    assert sum(row["count"] for row in progress["runs"][0]["failures"]) == records.exclude(error_no=0).count()
    assert progress["state"] == "done"
    curve = [gflops for _, gflops in progress["runs"][0]["convergence"] if gflops is not None]
    assert curve == sorted(curve) and curve[-1] == pytest.approx(run.best_gflops)

    download = alice_client.get(progress["runs"][0]["download_url"])
    assert download.status_code == 200
    best_lines = read_records(b"".join(download.streaming_content).decode().splitlines())
    assert [r.config_index for r in best_lines] == [run.best_record.config_index]


def test_a_cancelled_job_stops_within_one_batch(start_worker, alice_client):
    start_worker(pace=0.1)
    job_id = submit(alice_client, 200).json()["id"]
    wait_for(lambda: run_of(job_id).trials_done >= 8, what="two batches")

    assert alice_client.post(reverse("jobs:cancel", args=[job_id])).status_code == 302
    at_cancel = run_of(job_id).trials_done
    wait_for(lambda: not Worker.objects.get().current_run, what="the worker to let go of the job")

    run = run_of(job_id)
    assert run.state == State.CANCELLED
    assert at_cancel <= run.trials_done <= at_cancel + 4
    assert run.records().count() == run.trials_done


def test_a_job_whose_worker_was_killed_resumes_with_every_trial_recorded_once(start_worker, alice_client):
    first = start_worker(pace=0.05)
    job_id = submit(alice_client, 60).json()["id"]
    wait_for(lambda: run_of(job_id).trials_done >= 12, what="three batches")
    first.kill()
    measured_before = run_of(job_id).trials_done
    assert run_of(job_id).state == State.RUNNING

    start_worker(pace=0.05)
    run = wait_for(lambda: finished(job_id), what="the resumed job to finish")
    assert run.state == State.DONE, run.message
    assert run.attempts == 2
    records = run.records()
    assert records.count() == 60 == run.trials_done
    assert records.values("config_index").distinct().count() == 60
    assert measured_before < 60


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_job_submitted_while_redis_is_down_is_kept_and_runs_once_it_is_back(
    start_worker, alice_client, settings, redis_url
):
    start_worker()
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{closed_port()}/5"

    response = submit(alice_client, 12)

    assert response.status_code == 503
    body = response.json()
    assert "task queue" in body["detail"] and "unreachable" in body["detail"]
    job = Job.objects.get(pk=body["job"]["id"])
    assert job.state == State.QUEUED and run_of(job.pk).enqueued_at is None

    # The worker's heartbeat re-sends runs that never reached the broker.
    settings.CELERY_BROKER_URL = redis_url
    run = wait_for(lambda: finished(job.pk), timeout=60, what="the kept job to run")
    assert run.state == State.DONE and run.trials_done == 12
