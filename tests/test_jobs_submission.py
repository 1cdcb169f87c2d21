"""Submitting jobs through the form and the API: the rules, who sees what, tokens, cancel."""
import pytest
from django.core.management import call_command
from django.urls import reverse

from jobs.models import Job, JobRun, State
from jobs.worker import register, replay_config
from jobs_fixtures import REPLAY_QUEUE

pytestmark = pytest.mark.django_db

GOOD = {"template": "conv2d_nchw.cuda", "preset": "C12", "tuner": "random", "n_trial": 20, "gpus": [REPLAY_QUEUE]}


@pytest.fixture
def replay_gpu(recording_path):
    """A replay worker that is online (its row, freshly beating; no process needed here)."""
    return register(replay_config(recording_path))


@pytest.fixture
def charlie_client(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("charlie", password="charlie-password-1"))
    return client


def api_post(client, data, **headers):
    return client.post("/api/jobs/", data, content_type="application/json", **headers)


def test_the_form_queues_a_job_with_one_run_per_gpu(alice_client, replay_gpu, redis_url):
    response = alice_client.post(reverse("jobs:submit"), GOOD)

    job = Job.objects.get()
    assert response.status_code == 302 and response.url == job.get_absolute_url()
    run = job.runs.get()
    assert (run.device.model, run.state, job.n_trial, job.preset) == (REPLAY_QUEUE, State.QUEUED, 20, "C12")
    assert job.workload.task_name == "conv2d_nchw.cuda"


@pytest.mark.parametrize("change, field, words", [
    ({"template": "conv9d.cuda"}, "template", "conv9d.cuda"),
    ({"preset": "", "args": "[1, 2"}, "args", "not valid JSON"),
    ({"preset": "", "args": '[["TENSOR", [1, 512, -7, 7], "float32"], ["TENSOR", [512, 512, 3, 3], "float32"],'
      ' [1, 1], [1, 1, 1, 1], [1, 1], "float32"]'}, "args", "non-positive"),
    ({"preset": "D1"}, "preset", "depthwise_conv2d_nchw.cuda workload"),
    ({"n_trial": 0}, "n_trial", "from 1 to"),
    ({"n_trial": 10**9}, "n_trial", "from 1 to"),
    ({"early_stopping": -3}, "early_stopping", "positive"),
    ({"gpus": ["a100"]}, "gpus", "no GPU of model 'a100' is online"),
    ({"preset": "C1"}, "gpus", "replay device"),
])
def test_the_api_names_the_field_that_is_wrong_and_why(alice_client, replay_gpu, change, field, words):
    response = api_post(alice_client, {**GOOD, **change})

    assert response.status_code == 400
    message = " ".join(response.json()[field])
    assert words in message and message
    assert not Job.objects.exists()


def test_the_form_shows_the_template_s_own_message_for_absurd_sizes(alice_client, replay_gpu):
    args = ('[["TENSOR", [1, 512, 7000000, 7000000], "float32"], ["TENSOR", [512, 512, 3, 3], "float32"],'
            ' [1, 1], [1, 1, 1, 1], [1, 1], "float32"]')
    response = alice_client.post(reverse("jobs:submit"), {**GOOD, "preset": "", "args": args})

    assert response.status_code == 400
    assert "more than 2^31 - 1" in response.context["form"].errors["args"][0]
    assert not Job.objects.exists()


def test_a_gpu_that_went_silent_is_not_offered(alice_client, replay_gpu):
    replay_gpu.last_heartbeat = None
    replay_gpu.save()

    response = api_post(alice_client, GOOD)

    assert response.status_code == 400
    assert "no GPU of model" in response.json()["gpus"][0] and "online now: none" in response.json()["gpus"][0]


def test_only_logged_in_users_submit(client, replay_gpu):
    assert client.get(reverse("jobs:submit")).status_code == 302
    assert api_post(client, GOOD).status_code in (401, 403)
    assert not Job.objects.exists()


def test_charlie_cannot_see_or_cancel_alice_s_job(alice, charlie_client, replay_gpu, redis_url):
    from jobs.submission import check_request, submit_job

    job = submit_job(alice, check_request(**GOOD)).job

    assert charlie_client.get(reverse("jobs:detail", args=[job.pk])).status_code == 404
    assert charlie_client.get(reverse("jobs:progress", args=[job.pk])).status_code == 404
    assert charlie_client.get(f"/api/jobs/{job.pk}/").status_code == 404
    assert charlie_client.post(reverse("jobs:cancel", args=[job.pk])).status_code == 404
    assert job.pk not in [j["id"] for j in charlie_client.get("/api/jobs/").json()["results"]]
    assert job.runs.get().state == State.QUEUED


def test_staff_see_every_job(alice, client, django_user_model, replay_gpu, redis_url):
    from jobs.submission import check_request, submit_job

    job = submit_job(alice, check_request(**GOOD)).job
    client.force_login(django_user_model.objects.create_user("sam", password="sam-password-1", is_staff=True))

    assert client.get(reverse("jobs:detail", args=[job.pk])).status_code == 200
    assert f"#{job.pk}" in client.get(reverse("jobs:list")).content.decode()


def test_alice_cancels_her_queued_job(alice_client, replay_gpu, redis_url):
    job_id = api_post(alice_client, GOOD).json()["id"]

    response = alice_client.post(f"/api/jobs/{job_id}/cancel/")

    assert response.status_code == 200 and response.json()["state"] == "cancelled"
    assert JobRun.objects.get(job_id=job_id).message == "cancelled by alice"


def test_a_token_from_the_profile_page_authenticates_the_api(alice_client, client, replay_gpu, redis_url):
    alice_client.post(reverse("jobs:profile"))
    key = alice_client.get(reverse("jobs:profile")).context["token"].key
    alice_client.logout()

    created = api_post(client, GOOD, HTTP_AUTHORIZATION=f"Token {key}")
    assert created.status_code == 201, created.content
    shown = client.get(f"/api/jobs/{created.json()['id']}/", HTTP_AUTHORIZATION=f"Token {key}")
    assert shown.status_code == 200
    body = shown.json()
    assert body["state"] == "queued" and body["runs"][0]["trials_planned"] == 20 and body["owner"] == "alice"
    assert client.get(f"/api/jobs/{created.json()['id']}/", HTTP_AUTHORIZATION="Token wrong").status_code == 401


def test_create_token_prints_a_key_that_works(alice, client, capsys, replay_gpu):
    call_command("create_token", "alice")
    key = capsys.readouterr().out.strip()

    assert client.get("/api/jobs/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 200


def test_create_token_names_an_unknown_user():
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="no user 'nobody'"):
        call_command("create_token", "nobody")


@pytest.mark.django_db(transaction=True)
def test_the_redis_down_message_reaches_the_page(alice_client, replay_gpu, settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/5"

    response = alice_client.post(reverse("jobs:submit"), GOOD, follow=True)

    page = response.content.decode()
    assert "task queue" in page and "unreachable" in page
    assert Job.objects.get().runs.get().state == State.QUEUED


def test_the_workers_page_shows_the_replay_gpu_as_idle(client, replay_gpu):
    page = client.get(reverse("jobs:workers")).content.decode()

    assert REPLAY_QUEUE in page and "replay" in page and "idle" in page


def test_the_job_list_api_pages_short_summaries(alice_client, django_user_model):
    from jobs.models import Job
    from records.models import Workload

    alice = django_user_model.objects.get(username="alice")
    workload = Workload.objects.create(task_name="conv2d_nchw.cuda", args_json="[]")
    for _ in range(3):
        Job.objects.create(owner=alice, workload=workload, tuner="xgb", n_trial=10)
    first = alice_client.get("/api/jobs/", {"page_size": 2}).json()
    assert first["count"] == 3 and len(first["results"]) == 2 and first["next"]
    assert "trials" not in str(first["results"][0]["runs"])  # summaries, not each record
    assert len(alice_client.get(first["next"]).json()["results"]) == 1
