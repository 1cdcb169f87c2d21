"""A network job submitted twice with one Idempotency-Key is one job, through the API and the
form, as a tuning job is (test_queue_outage.py): with the test's own Redis up, and with a
real redis-server of the test's own stopped (503, the job stored once with its tasks, its
first rounds sent once Redis is back)."""
import re

import pytest
from django.urls import reverse

from jobs.models import Job, JobKind, JobRun, NetworkTask, State
from jobs.tokens import issue_token
from jobs_fixtures import REPLAY_QUEUE

pytestmark = pytest.mark.django_db(transaction=True)

# A network of one task, the layer the C12 replay worker (replay_gpu) answers for.
C12_NETWORK = {
    "tasks": [{"label": "C12", "template": "conv2d_nchw.cuda", "preset": "C12", "weight": 2}],
    "tuner": "random", "n_trial": 16, "round_trials": 8, "gpus": [REPLAY_QUEUE],
}


def post(client, user, key: str | None = None):
    headers = {"HTTP_AUTHORIZATION": f"Token {issue_token(user)}"}
    if key is not None:
        headers["HTTP_IDEMPOTENCY_KEY"] = key
    return client.post("/api/network-jobs/", C12_NETWORK, content_type="application/json", **headers)


def test_a_retried_submit_with_its_key_returns_the_first_job(client, alice, replay_gpu, redis_url):
    first = post(client, alice, "alice-net-1")
    retry = post(client, alice, "alice-net-1")

    assert first.status_code == 201, first.content
    assert retry.status_code == 200 and retry.json()["id"] == first.json()["id"]
    job = Job.objects.get()
    assert job.kind == JobKind.NETWORK and job.idempotency_key == "alice-net-1"
    assert NetworkTask.objects.count() == 1 and JobRun.objects.count() == 1
    assert job.runs.get().trials_allotted == 8  # the first round was given once, not twice


def test_without_a_key_each_submit_is_a_job_of_its_own(client, alice, replay_gpu, redis_url):
    answers = [post(client, alice) for _ in range(2)]

    assert [a.status_code for a in answers] == [201, 201]
    assert Job.objects.filter(kind=JobKind.NETWORK).count() == 2


def test_another_users_key_is_another_job(client, alice, django_user_model, replay_gpu, redis_url):
    bob = django_user_model.objects.create_user("bob", password="bob-password-1")

    assert post(client, alice, "same-key").status_code == 201
    assert post(client, bob, "same-key").status_code == 201
    assert Job.objects.filter(kind=JobKind.NETWORK).count() == 2


def test_with_redis_down_the_api_answers_503_stores_the_job_once_and_sends_it_once_redis_is_back(
    client, alice, replay_gpu, own_redis, settings
):
    settings.CELERY_BROKER_URL = settings.CELERY_RESULT_BACKEND = own_redis.url
    own_redis.stop()

    first = post(client, alice, "alice-net-2")
    retry = post(client, alice, "alice-net-2")

    assert first.status_code == 503 and first["Content-Type"] == "application/json"
    assert "unreachable" in first.json()["detail"] and "saved and queued" in first.json()["detail"]
    job = Job.objects.get()
    assert first.json()["job"]["id"] == job.pk and retry.status_code == 503 and retry.json()["job"]["id"] == job.pk
    assert NetworkTask.objects.count() == 1 and JobRun.objects.count() == 1
    run = job.runs.get()
    assert run.state == State.QUEUED and run.enqueued_at is None and run.trials_allotted == 8

    own_redis.start()
    after = post(client, alice, "alice-net-2")
    assert after.status_code == 200 and after.json()["id"] == job.pk
    assert Job.objects.count() == 1 and JobRun.objects.count() == 1
    run.refresh_from_db()
    assert run.enqueued_at is not None and run.trials_allotted == 8


def test_the_form_says_the_queue_is_down_and_submitting_it_again_makes_no_second_job(
    alice_client, replay_gpu, own_redis, settings
):
    settings.CELERY_BROKER_URL = settings.CELERY_RESULT_BACKEND = own_redis.url
    form_page = alice_client.get(reverse("jobs:network_submit")).content.decode()
    key = re.search(r'name="idempotency_key" value="([0-9a-f]+)"', form_page).group(1)
    fields = {"network": "", "tasks": '[{"preset": "C12", "weight": 2}]', "tuner": "random", "n_trial": 16,
              "allocation": "gradient", "round_trials": 8, "gpus": [REPLAY_QUEUE], "idempotency_key": key}
    own_redis.stop()

    response = alice_client.post(reverse("jobs:network_submit"), fields)

    assert response.status_code == 503
    page = response.content.decode()
    job = Job.objects.get()
    assert "unreachable" in page and job.get_absolute_url() in page and f'value="{key}"' in page

    again = alice_client.post(reverse("jobs:network_submit"), fields)
    assert again.status_code == 503 and Job.objects.count() == 1

    own_redis.start()
    sent = alice_client.post(reverse("jobs:network_submit"), fields)
    assert sent.status_code == 302 and sent.url == job.get_absolute_url()
    assert Job.objects.count() == 1 and job.runs.get().enqueued_at is not None


def test_a_key_that_is_not_printable_ascii_is_refused_and_no_job_is_stored(client, alice, replay_gpu, redis_url):
    response = post(client, alice, "x" * 500)

    assert response.status_code == 400 and "Idempotency-Key" in response.json()["idempotency_key"][0]
    assert not Job.objects.exists()


def test_a_key_sent_first_to_the_other_endpoint_is_refused_with_what_it_made(client, alice, replay_gpu, redis_url):
    headers = {"HTTP_AUTHORIZATION": f"Token {issue_token(alice)}", "HTTP_IDEMPOTENCY_KEY": "alice-shared"}
    tune = client.post("/api/jobs/", {"template": "conv2d_nchw.cuda", "preset": "C12", "tuner": "random",
                                      "n_trial": 8, "gpus": [REPLAY_QUEUE]}, content_type="application/json", **headers)
    assert tune.status_code == 201, tune.content

    network = post(client, alice, "alice-shared")

    assert network.status_code == 400 and "single-workload job" in network.json()["idempotency_key"][0]
    assert Job.objects.count() == 1 and not Job.objects.filter(kind=JobKind.NETWORK).exists()
