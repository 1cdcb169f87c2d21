"""Conditional GETs (tunerweb.conditional): the job page, its poll, the job's API answer and a
leaderboard carry an ETag of what their reader is answered. Asked again with it, they are a
304 while nothing that reader can see has changed and a 200 as soon as something has; a reader
who may not see a job is never answered 304 for it, and a private record stored is no news to
those who cannot read it. Against the test PostgreSQL and Redis, as every page test."""
import pytest
from django.test import Client
from django.urls import reverse

from factories import make_batch, make_device, make_record, make_workload
from jobs.models import Job, JobRun, State
from jobs.recording import open_batch
from jobs.tokens import issue_token

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(alice, django_user_model):
    """Alice's private job, one run on an H200 that stored one record (its best, 50 µs), beside
    a public 30 µs record of the same workload and GPU (the run's rival on its leaderboard)."""
    device, workload = make_device("h200"), make_workload()
    public = make_record(workload, device, 30e-6)
    job = Job.objects.create(owner=alice, workload=workload, tuner="xgb", n_trial=8, private=True)
    run = JobRun.objects.create(job=job, device=device, state=State.RUNNING)
    batch = open_batch(run)
    best = make_record(workload, device, 50e-6, batch=batch)
    JobRun.objects.filter(pk=run.pk).update(best_record=best)
    charlie = django_user_model.objects.create_user("charlie", password="charlie-password-1")
    return {"device": device, "workload": workload, "public": public, "job": job, "run": run, "batch": batch,
            "charlie": charlie, "alice": alice}


def logged_in(user, **kwargs) -> Client:
    client = Client(**kwargs)
    client.force_login(user)
    return client


def job_urls(job) -> list[str]:
    return [reverse("jobs:detail", args=[job.pk]), reverse("jobs:progress", args=[job.pk]), f"/api/jobs/{job.pk}/"]


def again(client, url, answer, **headers):
    return client.get(url, headers={"If-None-Match": answer["ETag"], **headers})


def test_a_jobs_page_poll_and_api_answer_are_304_until_the_run_stores_a_record(world):
    alice = logged_in(world["alice"])
    firsts = {}
    for url in job_urls(world["job"]):
        first = alice.get(url)
        assert first.status_code == 200 and first["ETag"].startswith('"')
        assert "private" in first["Cache-Control"] and "no-cache" in first["Cache-Control"]
        repeat = again(alice, url, first)
        assert repeat.status_code == 304, url
        assert repeat.content == b"" and repeat["ETag"] == first["ETag"]
        firsts[url] = first

    stored = make_record(world["workload"], world["device"], 70e-6, batch=world["batch"])

    page, *data = job_urls(world["job"])
    for url in data:
        changed = again(alice, url, firsts[url])
        assert changed.status_code == 200, url
        assert changed["ETag"] != firsts[url]["ETag"]
        assert f"{stored.pk}" in changed.content.decode()
    # The page holds no trials (its script reads them from the poll): a record stored is no news to it,
    # the run's end is.
    assert again(alice, page, firsts[page]).status_code == 304
    JobRun.objects.filter(pk=world["run"].pk).update(state=State.DONE)
    ended = again(alice, page, firsts[page])
    assert ended.status_code == 200 and 'class="state state-done"' in ended.content.decode()


def test_the_api_answers_its_token_holder_304_too(world):
    token = {"Authorization": f"Token {issue_token(world['alice'])}"}
    url = f"/api/jobs/{world['job'].pk}/"
    first = Client().get(url, headers=token)
    assert first.status_code == 200 and "Authorization" in first["Vary"]

    assert again(Client(), url, first, **token).status_code == 304


def test_a_private_jobs_etag_gets_others_no_304(world):
    alice = logged_in(world["alice"])
    etags = {url: alice.get(url)["ETag"] for url in job_urls(world["job"])}
    charlie, anonymous = logged_in(world["charlie"]), Client()

    for url, etag in etags.items():
        assert charlie.get(url, headers={"If-None-Match": etag}).status_code == 404, url
        answer = anonymous.get(url, headers={"If-None-Match": etag})
        assert answer.status_code in (302, 401, 403) and not answer.has_header("ETag"), url


def test_a_private_record_stored_is_no_news_on_the_leaderboard_to_those_who_cannot_read_it(world):
    url = reverse("records:leaderboard", args=[world["workload"].pk])
    anonymous, charlie, alice = Client(), logged_in(world["charlie"]), logged_in(world["alice"])
    seen = {name: reader.get(url) for name, reader in (("anonymous", anonymous), ("charlie", charlie), ("alice", alice))}

    secret = make_record(world["workload"], world["device"], 10e-6, batch=make_batch(private_to=world["alice"]))

    # The records' version moved (the cache is keyed by it), but what the others read did not.
    assert again(anonymous, url, seen["anonymous"]).status_code == 304
    assert again(charlie, url, seen["charlie"]).status_code == 304
    for_alice = again(alice, url, seen["alice"])
    assert for_alice.status_code == 200 and f"/records/{secret.pk}/" in for_alice.content.decode()
    # And a record they can read is news to them.
    shown = make_record(world["workload"], world["device"], 5e-6)
    for name, reader in (("anonymous", anonymous), ("charlie", charlie)):
        answer = again(reader, url, seen[name])
        assert answer.status_code == 200 and f"/records/{shown.pk}/" in answer.content.decode(), name


def test_a_logged_in_readers_page_is_304_though_its_csrf_token_is_masked_afresh_and_the_kept_page_still_posts(world):
    url = reverse("records:leaderboard", args=[world["workload"].pk])
    alice = logged_in(world["alice"], enforce_csrf_checks=True)
    first, second = alice.get(url), alice.get(url)
    assert first.content != second.content  # the logout form's token, masked afresh
    assert first["ETag"] == second["ETag"]
    assert again(alice, url, first).status_code == 304

    kept_token = first.content.decode().split('name="csrfmiddlewaretoken" value="')[1].split('"')[0]
    assert alice.post(reverse("logout"), {"csrfmiddlewaretoken": kept_token}).status_code == 302  # not a 403


def test_a_new_csrf_secret_is_a_new_etag(world):
    url = reverse("records:leaderboard", args=[world["workload"].pk])
    alice = logged_in(world["alice"])
    first = alice.get(url)
    alice.cookies["csrftoken"] = "A" * 32  # another secret, as a new login makes

    answer = again(alice, url, first)

    assert answer.status_code == 200 and answer["ETag"] != first["ETag"]


def rival_of(client, job) -> int | None:
    diff = client.get(reverse("jobs:progress", args=[job.pk])).json()["runs"][0]["diff_url"]
    return int(diff.split("b=")[1]) if diff else None


def test_the_rival_follows_other_batches_while_the_runs_own_records_leave_it_cached(world):
    alice = logged_in(world["alice"])
    assert rival_of(alice, world["job"]) == world["public"].pk

    faster = make_record(world["workload"], world["device"], 20e-6, batch=make_batch())  # another import
    assert rival_of(alice, world["job"]) == faster.pk

    make_record(world["workload"], world["device"], 60e-6, batch=world["batch"])  # the run's own, slower than its best
    assert rival_of(alice, world["job"]) == faster.pk
    # The run's new best: the rival is worked out again for it.
    own_best = make_record(world["workload"], world["device"], 5e-6, batch=world["batch"])
    JobRun.objects.filter(pk=world["run"].pk).update(best_record=own_best)
    assert rival_of(alice, world["job"]) is None  # now the run holds the GPU's best, and no other GPU has one
