"""A job's page kept whole per state (tunerweb.conditional.kept_page) and its progress cached per
state (jobs.answer_keys): a repeat in the same state is a cache read with its queries pinned, not
a render, whatever `?since=` asks; anything they are made from changes the key; a private job's
kept answers reach no one else, and a waiting message is shown, not a kept page. Against the test
PostgreSQL and Redis."""
import json

import pytest
from django.test import Client
from django.urls import reverse

from factories import make_batch, make_device, make_record, make_workload
from jobs.models import Job, JobRun, State
from jobs.recording import open_batch

pytestmark = pytest.mark.django_db
TRIALS = 40


@pytest.fixture
def job(alice):
    """Alice's private job, one H200 run that stored TRIALS records, its best the first."""
    device, workload = make_device("h200"), make_workload()
    job = Job.objects.create(owner=alice, workload=workload, tuner="xgb", n_trial=100, private=True)
    run = JobRun.objects.create(job=job, device=device, state=State.RUNNING)
    records = [make_record(workload, device, (50 + i) * 1e-6, batch=open_batch(run)) for i in range(TRIALS)]
    JobRun.objects.filter(pk=run.pk).update(best_record=records[0])
    return job


def logged_in(user, **kwargs) -> Client:
    client = Client(**kwargs)
    client.force_login(user)
    return client


def page_url(job) -> str:
    return reverse("jobs:detail", args=[job.pk])


def progress_url(job, since: str = "") -> str:
    return reverse("jobs:progress", args=[job.pk]) + (f"?since={since}" if since else "")


def test_the_page_holds_the_jobs_facts_and_state_and_its_whole_progress_as_the_json_reads(job, alice):
    alice_client = logged_in(alice)
    page = alice_client.get(page_url(job)).content.decode()

    assert 'class="state state-running"' in page and "Cancel job" in page and "<strong>private</strong>" in page
    assert f'data-progress-url="{progress_url(job)}"' in page
    embedded = page.split('<script id="job-progress" type="application/json">', 1)[1].split("</script>", 1)[0]
    assert json.loads(embedded) == alice_client.get(progress_url(job)).json()


def test_the_embedded_progress_is_escaped_as_json_script_escapes(job, alice):
    """A record's error message is the worker's text: in the page it must not end the script element."""
    run = job.runs.get()
    make_record(job.workload, run.device, 60e-6, batch=open_batch(run), error_msg="</script><b>&")
    alice_client = logged_in(alice)
    page = alice_client.get(page_url(job)).content.decode()

    assert "</script><b>&" not in page and "\\u003C/script\\u003E\\u003Cb\\u003E\\u0026" in page
    embedded = page.split('<script id="job-progress" type="application/json">', 1)[1].split("</script>", 1)[0]
    assert json.loads(embedded) == alice_client.get(progress_url(job)).json()


def test_a_repeat_in_the_same_state_is_a_cache_read_not_a_render(job, alice, django_assert_num_queries):
    alice_client = logged_in(alice)
    last = job.runs.get().records().last()
    for url in (page_url(job), progress_url(job), progress_url(job, f"{job.runs.get().pk}:{last.pk - 5}")):
        first = alice_client.get(url)
        # Session, user, job, runs (with the GPU's last worker heartbeat: is the run waiting for
        # one?) and the workload's records counted (the page holds the progress). (Made again, the
        # JSON would also count the records outside the run's.)
        with django_assert_num_queries(5):
            repeat = alice_client.get(url)
        assert repeat.status_code == 200 and repeat.content == first.content and repeat["ETag"] == first["ETag"]
        assert repeat["Content-Type"] == first["Content-Type"]
        assert not repeat.templates, url  # nothing rendered
        assert alice_client.get(url, headers={"If-None-Match": first["ETag"]}).status_code == 304


def test_a_poll_adds_the_points_and_latest_trials_stored_after_what_the_page_has(job, alice):
    alice_client = logged_in(alice)
    run = job.runs.get()
    whole = alice_client.get(progress_url(job)).json()
    records = whole["runs"][0]["points"]["record"]

    tail = alice_client.get(progress_url(job, f"{run.pk}:{records[-4]}")).json()["runs"][0]

    assert tail["points"]["record"] == records[-3:]
    assert [trial["record"] for trial in tail["trials"]] == records[-3:][::-1]  # newest first
    # What the page's script makes of it: its latest trials, the poll's added to them, as many as before.
    merged = (tail["trials"] + whole["runs"][0]["trials"][3:])[:whole["trial_rows"]]
    assert merged == whole["runs"][0]["trials"]


def test_what_the_answers_are_made_of_changing_makes_them_again(job, alice):
    alice_client = logged_in(alice)
    run = job.runs.get()
    page, poll = alice_client.get(page_url(job)), alice_client.get(progress_url(job))

    stored = make_record(job.workload, run.device, 20e-6, batch=run.batch)
    assert alice_client.get(progress_url(job)).json()["runs"][0]["trials_done"] == TRIALS + 1
    assert f"/records/{stored.pk}/" in alice_client.get(progress_url(job)).content.decode()
    again = alice_client.get(page_url(job))  # the page holds the progress, its HTML kept all the same
    assert f"/records/{stored.pk}/" in again.content.decode() and again["ETag"] != page["ETag"]
    assert not again.templates

    JobRun.objects.filter(pk=run.pk).update(state=State.DONE, message="all trials measured")
    ended = alice_client.get(progress_url(job)).json()
    assert ended["state"] == "done" and ended["runs"][0]["message"] == "all trials measured"
    assert 'class="state state-done"' in alice_client.get(page_url(job)).content.decode()
    assert ended != poll.json()


def test_a_workload_edit_or_a_renamed_reader_makes_the_page_again(job, django_user_model, django_capture_on_commit_callbacks):
    staff = django_user_model.objects.create_user("sam", password="sam-password-1", is_staff=True)
    staff_client = logged_in(staff)  # a reader who is not the owner, whose name is in the job's state
    staff_client.get(page_url(job))
    assert not staff_client.get(page_url(job)).templates  # kept

    with django_capture_on_commit_callbacks(execute=True):
        job.workload.save()  # as the admin saves an edit: the workload's generation moves
    assert staff_client.get(page_url(job)).templates

    staff.username = "sam-renamed"
    staff.save()
    renamed = staff_client.get(page_url(job))
    assert renamed.templates and "sam-renamed" in renamed.content.decode()


def test_a_private_jobs_kept_answers_reach_no_one_else(job, alice, django_user_model):
    alice_client = logged_in(alice)
    kept = {url: alice_client.get(url) for url in (page_url(job), progress_url(job))}
    charlie = logged_in(django_user_model.objects.create_user("charlie", password="charlie-password-1"))
    staff = logged_in(django_user_model.objects.create_user("sam", password="sam-password-1", is_staff=True))

    for url, answer in kept.items():
        assert charlie.get(url).status_code == 404, url
        assert charlie.get(url, headers={"If-None-Match": answer["ETag"]}).status_code == 404, url
        assert Client().get(url, headers={"If-None-Match": answer["ETag"]}).status_code == 302, url
    # Staff read the job: the same JSON (its ETag holds for them), a page of their own (it names who reads).
    assert staff.get(progress_url(job)).content == kept[progress_url(job)].content
    for_staff = staff.get(page_url(job), headers={"If-None-Match": kept[page_url(job)]["ETag"]})
    assert for_staff.status_code == 200 and ">sam</a>" in for_staff.content.decode()
    assert ">sam</a>" not in alice_client.get(page_url(job)).content.decode()


def test_a_private_record_of_someone_else_is_no_news_in_the_jobs_json(job, alice, django_user_model):
    alice_client = logged_in(alice)
    first = alice_client.get(progress_url(job))
    bob = django_user_model.objects.create_user("bob", password="bob-password-1")
    # Faster than alice's best: were it readable to her it would be the rival her best is diffed against.
    make_record(job.workload, job.runs.get().device, 1e-6, batch=make_batch(private_to=bob))

    again = alice_client.get(progress_url(job), headers={"If-None-Match": first["ETag"]})

    assert again.status_code == 304  # the workload's version moved, what alice reads did not


def test_a_waiting_message_is_shown_not_a_kept_page_and_a_kept_pages_token_still_posts(job, alice):
    alice_client = logged_in(alice, enforce_csrf_checks=True)
    JobRun.objects.filter(job=job).update(state=State.DONE)
    alice_client.get(page_url(job))
    kept = alice_client.get(page_url(job))
    assert not kept.templates
    token = kept.content.decode().split('name="csrfmiddlewaretoken" value="')[1].split('"')[0]

    cancelled = alice_client.post(reverse("jobs:cancel", args=[job.pk]), {"csrfmiddlewaretoken": token})
    assert cancelled.status_code == 302  # not a 403

    shown = alice_client.get(page_url(job))
    assert f"Job {job.pk} had already finished." in shown.content.decode()
    assert "had already finished" not in alice_client.get(page_url(job)).content.decode()  # shown once



def test_a_running_jobs_progress_is_kept_briefly_a_settled_ones_longer(job, alice, settings):
    import redis
    from django.conf import settings as live

    from jobs.views import ACTIVE_PROGRESS_SECONDS
    from tunerweb.cache import ENTRY_SECONDS

    server = redis.Redis.from_url(live.CACHES["default"]["LOCATION"])
    prefix = live.CACHES["default"]["KEY_PREFIX"]

    def progress_entries_ttl() -> list[int]:
        return [server.ttl(key) for key in server.scan_iter(f"{prefix}:*job-progress:{job.pk}:*")]

    alice_client = logged_in(alice)
    alice_client.get(progress_url(job))
    running = progress_entries_ttl()  # the progress and the answer made of it
    JobRun.objects.filter(job=job).update(state=State.DONE)
    alice_client.get(progress_url(job))
    settled = set(progress_entries_ttl()) - set(running)

    assert len(running) == 2 and all(0 < ttl <= ACTIVE_PROGRESS_SECONDS for ttl in running)
    assert len(settled) >= 1 and all(ACTIVE_PROGRESS_SECONDS < ttl <= ENTRY_SECONDS for ttl in settled)
