"""A job whose GPU model has had no live worker for longer than TUNERWEB_WORKER_WAIT_SECONDS
says so on the job page, in the API and on the workers page, instead of "running" for ever."""
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from jobs.models import Job, JobRun, State
from jobs.worker import register, replay_config
from jobs_fixtures import REPLAY_QUEUE
from records.models import Workload

pytestmark = pytest.mark.django_db


@pytest.fixture
def running_job(alice, recording_path, settings):
    """A job running under a replay worker that then went silent."""
    settings.TUNERWEB_WORKER_WAIT_SECONDS = 60
    worker = register(replay_config(recording_path))
    workload = Workload.objects.create(task_name="conv2d_nchw.cuda", args_json="[]")
    job = Job.objects.create(owner=alice, workload=workload, tuner="xgb", n_trial=10)
    JobRun.objects.create(job=job, device=worker.device, state=State.RUNNING, worker=worker,
                          heartbeat_at=timezone.now())
    return job, worker


def go_silent(worker, seconds: float) -> None:
    worker.last_heartbeat = timezone.now() - timedelta(seconds=seconds)
    worker.save()


def test_a_run_whose_worker_died_long_ago_says_it_waits_for_one(running_job, alice_client, settings):
    job, worker = running_job
    go_silent(worker, settings.TUNERWEB_WORKER_STALE_SECONDS + 120)
    seen = worker.last_heartbeat.strftime("%Y-%m-%d %H:%M:%S")
    expected = f"waiting for a worker of model {REPLAY_QUEUE}; none online since {seen} UTC"

    api = alice_client.get(f"/api/jobs/{job.pk}/").json()
    page = alice_client.get(job.get_absolute_url()).content.decode()
    workers = alice_client.get(reverse("jobs:workers")).content.decode()

    assert api["runs"][0]["waiting_for_worker"] == expected
    assert expected in page
    assert expected in workers and job.get_absolute_url() in workers


def test_a_short_silence_is_not_reported_yet(running_job, alice_client, settings):
    job, worker = running_job
    go_silent(worker, settings.TUNERWEB_WORKER_STALE_SECONDS + 10)  # offline, but for less than the wait

    assert alice_client.get(f"/api/jobs/{job.pk}/").json()["runs"][0]["waiting_for_worker"] is None


def test_a_run_with_its_worker_online_waits_for_nothing(running_job, alice_client):
    job, _worker = running_job

    assert alice_client.get(f"/api/jobs/{job.pk}/").json()["runs"][0]["waiting_for_worker"] is None
    assert "waiting for a worker" not in alice_client.get(reverse("jobs:workers")).content.decode()


def test_others_see_that_a_job_waits_but_not_which(running_job, client, settings):
    job, worker = running_job
    go_silent(worker, settings.TUNERWEB_WORKER_STALE_SECONDS + 120)

    page = client.get(reverse("jobs:workers")).content.decode()

    assert "a job is waiting for a worker" in page and job.get_absolute_url() not in page


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_job_whose_real_worker_was_killed_says_it_waits_for_one(start_worker, alice_client, settings):
    """The same through a real replay worker killed mid-job (SIGKILL, no goodbye), after the
    page, the API and the workers page were read (and cached) while it ran."""
    from jobs_fixtures import wait_for

    settings.TUNERWEB_WORKER_STALE_SECONDS, settings.TUNERWEB_WORKER_WAIT_SECONDS = 4, 2  # the worker beats every 1 s
    worker = start_worker(pace=0.1)
    body = {"template": "conv2d_nchw.cuda", "preset": "C12", "tuner": "random", "n_trial": 200, "gpus": [REPLAY_QUEUE]}
    job = Job.objects.get(pk=alice_client.post("/api/jobs/", body, content_type="application/json").json()["id"])
    wait_for(lambda: job.runs.get().trials_done >= 8, what="two batches")
    for url in (f"/api/jobs/{job.pk}/", job.get_absolute_url(), reverse("jobs:workers")):
        assert "waiting for a worker" not in alice_client.get(url).content.decode()

    worker.kill()
    waiting = wait_for(lambda: alice_client.get(f"/api/jobs/{job.pk}/").json()["runs"][0]["waiting_for_worker"],
                       timeout=30, what="the API to say the run waits")

    assert waiting.startswith(f"waiting for a worker of model {REPLAY_QUEUE}; none online since ")
    assert job.runs.get().state == State.RUNNING  # nothing else has changed: no worker is left to finish it
    assert waiting in alice_client.get(job.get_absolute_url()).content.decode()
    assert waiting in alice_client.get(reverse("jobs:workers")).content.decode()
