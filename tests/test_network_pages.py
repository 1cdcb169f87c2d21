"""The network job's browser pages: the submit form, the jobs list."""
import pytest

from jobs.models import Job, JobKind, State
from jobs.worker import register, replay_config
from jobs_fixtures import redis_url, resnet18_recording  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def worker(resnet18_recording):
    return register(replay_config(resnet18_recording))


def form(**fields):
    return {"network": "resnet18", "tasks": "", "tuner": "grid", "n_trial": 96, "allocation": "gradient",
            "round_trials": 8, "gpus": ["h200-replay"], **fields}


def test_the_form_offers_the_network_presets_and_the_online_gpus(alice_client, worker):
    page = alice_client.get("/jobs/network/new/").content.decode()
    assert "ResNet-18 conv2d C1–C12" in page and "12 tasks, 21 layers" in page
    assert "MobileNet v1 depthwise" in page and "BERT-base encoder layer GEMMs" in page
    assert 'value="h200-replay"' in page and "round-robin" in page


def test_a_network_job_submitted_from_the_form_lands_on_its_page(alice_client, worker, redis_url,
                                                                  django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = alice_client.post("/jobs/network/new/", form())
    job = Job.objects.get()
    assert response.status_code == 302 and response.url == f"/jobs/network/{job.pk}/"
    assert job.kind == JobKind.NETWORK and job.allocation == "gradient" and job.round_trials == 8
    assert job.runs.filter(state=State.QUEUED).count() == 1

    listing = alice_client.get("/jobs/").content.decode()
    assert "network resnet18" in listing and f"/jobs/network/{job.pk}/" in listing
    page = alice_client.get(response.url).content.decode()
    assert "Download the network&#x27;s best configs" in page or "Download the network's best configs" in page


def test_a_task_list_that_is_not_json_is_refused_with_the_reason(alice_client, worker):
    response = alice_client.post("/jobs/network/new/", form(network="", tasks="[{template: gemm}"))
    assert response.status_code == 400
    assert "the tasks are not valid JSON" in response.content.decode()
    assert not Job.objects.exists()


def test_a_task_list_of_user_workloads_is_accepted(alice_client, worker, redis_url, django_capture_on_commit_callbacks):
    tasks = '[{"template": "conv2d_nchw.cuda", "preset": "C12", "weight": 3}, {"label": "first", "template": "conv2d_nchw.cuda", "preset": "C1"}]'
    with django_capture_on_commit_callbacks(execute=True):
        response = alice_client.post("/jobs/network/new/", form(network="", tasks=tasks))
    assert response.status_code == 302, response.content.decode()
    job = Job.objects.get()
    assert [(t.label, t.weight) for t in job.tasks.all()] == [("C12", 3), ("first", 1)]


def test_an_anonymous_visitor_is_sent_to_log_in(client, worker):
    response = client.post("/jobs/network/new/", form())
    assert response.status_code == 302 and "/login" in response.url
    assert not Job.objects.exists()
