"""Redis down at submit: the broker and the result backend are one real redis-server of the
test's own, stopped; the API (through a real gunicorn) and the form answer 503 at once, the
job is stored once, a retry with the same Idempotency-Key makes no second job, and once
Redis is back the job runs on a real replay worker."""
import re
import time

import pytest
import requests
from django.urls import reverse

from jobs.models import Job, JobRun, State, Worker
from jobs.tokens import issue_token
from jobs_fixtures import C12_JOB, WorkerProcess, database_url, wait_for
from live_server import LiveServer

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

GOOD = {**C12_JOB, "n_trial": 12}


@pytest.fixture
def web(own_redis, tmp_path):
    """gunicorn whose broker and result backend are `own_redis` (REDIS_URL names both)."""
    server = LiveServer(tmp_path / "web.log", {"DATABASE_URL": database_url(), "REDIS_URL": own_redis.url})
    yield server
    server.stop()


def test_the_api_answers_503_within_a_second_and_a_retry_with_its_key_makes_no_second_job(
    web, own_redis, alice, replay_gpu, recording_path, tmp_path
):
    headers = {"Authorization": f"Token {issue_token(alice)}", "Idempotency-Key": "alice-c12-1"}
    own_redis.stop()

    started = time.monotonic()
    first = requests.post(web.url + "/api/jobs/", json=GOOD, headers=headers, timeout=60)
    took = time.monotonic() - started

    assert first.status_code == 503, first.text
    assert took < 1.0, f"503 after {took:.2f} s"
    assert first.headers["Content-Type"] == "application/json"
    assert "unreachable" in first.json()["detail"] and "saved and queued" in first.json()["detail"]
    job = Job.objects.get()
    assert first.json()["job"]["id"] == job.pk and job.runs.get().enqueued_at is None

    retry = requests.post(web.url + "/api/jobs/", json=GOOD, headers=headers, timeout=60)
    assert retry.status_code == 503 and retry.json()["job"]["id"] == job.pk
    assert Job.objects.count() == 1 and JobRun.objects.count() == 1

    own_redis.start()
    after = requests.post(web.url + "/api/jobs/", json=GOOD, headers=headers, timeout=60)
    assert after.status_code == 200 and after.json()["id"] == job.pk
    assert Job.objects.count() == 1 and job.runs.get().enqueued_at is not None

    Worker.objects.filter(pk=replay_gpu.pk).update(pid=None)  # the row stood in for a worker; a real one takes it
    worker = WorkerProcess(recording_path, own_redis.url, tmp_path / "worker.log", 0.0)
    try:
        worker.wait_ready()
        run = wait_for(lambda: JobRun.objects.filter(job=job, state=State.DONE).first(), what="the job to finish")
    finally:
        worker.stop()
    assert run.records().count() == 12


def test_without_a_key_each_request_is_a_job_of_its_own(web, own_redis, alice, replay_gpu):
    headers = {"Authorization": f"Token {issue_token(alice)}"}
    own_redis.stop()

    answers = [requests.post(web.url + "/api/jobs/", json=GOOD, headers=headers, timeout=60) for _ in range(2)]

    assert [a.status_code for a in answers] == [503, 503]
    assert Job.objects.count() == 2  # exactly one per request: the 503 never stores a job twice


def test_the_form_says_the_queue_is_down_and_submitting_it_again_makes_no_second_job(
    alice_client, own_redis, replay_gpu, settings
):
    settings.CELERY_BROKER_URL = settings.CELERY_RESULT_BACKEND = own_redis.url
    form_page = alice_client.get(reverse("jobs:submit")).content.decode()
    key = re.search(r'name="idempotency_key" value="([0-9a-f]+)"', form_page).group(1)
    own_redis.stop()

    started = time.monotonic()
    response = alice_client.post(reverse("jobs:submit"), {**GOOD, "idempotency_key": key})
    took = time.monotonic() - started

    assert response.status_code == 503 and took < 1.0
    page = response.content.decode()
    job = Job.objects.get()
    assert "task queue" in page and "unreachable" in page and job.get_absolute_url() in page
    assert f'value="{key}"' in page  # the form keeps its key for the retry

    again = alice_client.post(reverse("jobs:submit"), {**GOOD, "idempotency_key": key})
    assert again.status_code == 503 and Job.objects.count() == 1

    own_redis.start()
    sent = alice_client.post(reverse("jobs:submit"), {**GOOD, "idempotency_key": key})
    assert sent.status_code == 302 and sent.url == job.get_absolute_url()
    assert Job.objects.count() == 1 and job.runs.get().enqueued_at is not None


def test_an_idempotency_key_that_is_not_printable_ascii_is_refused(alice_client, replay_gpu):
    response = alice_client.post("/api/jobs/", GOOD, content_type="application/json", HTTP_IDEMPOTENCY_KEY="x" * 500)

    assert response.status_code == 400 and "Idempotency-Key" in response.json()["idempotency_key"][0]
    assert not Job.objects.exists()
