"""A private job's records are read only by its owner (Alice) and staff (Sam), on every page,
API answer and download: Charlie, logged in, and anonymous visitors see none of them, while
the shared records around them stay public."""
import pytest
from django.urls import reverse

from jobs.models import Job, JobRun
from jobs.recording import open_batch
from records.models import MeasurementRecord
from factories import make_device, make_record, make_workload
from jobs_fixtures import C12_JOB

pytestmark = pytest.mark.django_db

PRIVATE_COST = 10e-6  # faster than the public record, so it would top every table it leaked into


@pytest.fixture
def world(alice, django_user_model):
    device = make_device("h200")
    workload = make_workload()
    public = make_record(workload, device, 100e-6)
    job = Job.objects.create(owner=alice, workload=workload, tuner="xgb", n_trial=4, private=True)
    run = JobRun.objects.create(job=job, device=device)
    batch = open_batch(run)
    secret = make_record(workload, device, PRIVATE_COST, batch=batch)
    charlie = django_user_model.objects.create_user("charlie", password="charlie-password-1")
    sam = django_user_model.objects.create_user("sam", password="sam-password-1", is_staff=True)
    return {"workload": workload, "public": public, "secret": secret, "batch": batch, "job": job,
            "charlie": charlie, "sam": sam, "alice": alice}


def pages(w) -> dict[str, str]:
    """Every page, API answer and download that could show a record, by name."""
    wl, secret, public, batch = w["workload"].pk, w["secret"].pk, w["public"].pk, w["batch"].pk
    return {
        "home": "/", "leaderboard": f"/leaderboard/{wl}/", "records": "/records/",
        "records csv": "/records/?format=csv", "compare": f"/compare/{wl}/", "devices": "/devices/",
        "imports": "/imports/", "api leaderboard": f"/api/leaderboard/{wl}/", "api records": "/api/records/",
        "api workload": f"/api/workloads/{wl}/", "api compare": f"/api/compare/{wl}/",
        "download best": f"/export/best.log?workload={wl}", "download records": "/export/records.log",
        "api export": f"/api/export/records/?workload={wl}",
        "record page": f"/records/{secret}/", "api record": f"/api/records/{secret}/",
        "import page": f"/imports/{batch}/", "batch download": f"/export/records.log?batch={batch}",
        "diff": f"/diff/?a={public}&b={secret}", "api diff": f"/api/diff/?a={public}&b={secret}",
        "compare records": f"/compare/records/?r={public}&r={secret}", "knobs": f"/leaderboard/{wl}/knobs/",
        "roofline": "/roofline/?device=h200", "speedups": "/speedups/?device=h200",
    }


def body(response) -> str:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode()
    return response.content.decode()


def shows_secret(response, w) -> bool:
    text = body(response)
    return response.status_code == 200 and (f"/records/{w['secret'].pk}/" in text or '"id": %d' % w["secret"].pk in text
                                            or f'"id":{w["secret"].pk}' in text or "1e-05" in text or "10.0" in text
                                            or w["batch"].file_name in text)


@pytest.mark.parametrize("who", ["anonymous", "charlie"])
def test_others_never_read_a_private_job_s_records(world, client, who):
    if who == "charlie":
        client.force_login(world["charlie"])

    leaks = [name for name, url in pages(world).items() if shows_secret(client.get(url), world)]

    assert leaks == []
    assert client.get(f"/records/{world['secret'].pk}/").status_code == 404
    assert client.get(f"/imports/{world['batch'].pk}/").status_code == 404
    assert client.get(f"/export/records.log?batch={world['batch'].pk}").status_code == 404


def test_others_still_see_the_public_record_as_the_best(world, client):
    board = client.get(f"/api/leaderboard/{world['workload'].pk}/").json()

    assert [best["id"] for best in board["bests"]] == [world["public"].pk]
    assert client.get(f"/api/workloads/{world['workload'].pk}/").json()["record_count"] == 1


@pytest.mark.parametrize("who", ["alice", "sam"])
def test_the_owner_and_staff_read_them_everywhere(world, client, who):
    client.force_login(world[who])

    board = client.get(f"/api/leaderboard/{world['workload'].pk}/").json()
    download = body(client.get(f"/export/records.log?batch={world['batch'].pk}"))

    assert [best["id"] for best in board["bests"]] == [world["secret"].pk]
    assert client.get(f"/records/{world['secret'].pk}/").status_code == 200
    assert client.get(f"/imports/{world['batch'].pk}/").status_code == 200
    assert download.count("\n") == 2  # the header and the one record
    assert client.get(f"/api/workloads/{world['workload'].pk}/").json()["record_count"] == 2


def test_a_job_is_submitted_private_through_the_api(alice_client, replay_gpu, redis_url):
    answer = alice_client.post("/api/jobs/", {**C12_JOB, "private": True}, content_type="application/json")

    assert answer.status_code == 201 and answer.json()["private"] is True
    run = JobRun.objects.get()
    assert open_batch(run).private_to == run.job.owner
    assert not MeasurementRecord.objects.exists()
