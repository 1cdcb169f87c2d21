"""A run is claimed by one worker at a time, resumes from its stored records, and
keeps its cancel; the tuning glue runs here in-process, without Celery."""
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from engine.logfile import ErrorNo
from jobs.claims import claim, finish
from jobs.models import JobRun, State, Worker
from jobs.running import run_claimed
from jobs.submission import check_request, submit_job
from jobs.worker import WorkerConfig, register, replay_config
from jobs_fixtures import REPLAY_QUEUE

pytestmark = pytest.mark.django_db


@pytest.fixture
def config(recording_path) -> WorkerConfig:
    return replay_config(recording_path)


@pytest.fixture
def worker(config) -> Worker:
    return register(config)


@pytest.fixture
def other_worker(worker) -> Worker:
    return Worker.objects.create(name="other@host:replay", hostname="host", queue=worker.queue, device=worker.device,
                                 is_replay=True, last_heartbeat=timezone.now())


@pytest.fixture
def run(alice, worker) -> JobRun:
    request = check_request(template="conv2d_nchw.cuda", preset="C12", tuner="random", n_trial=8, gpus=[REPLAY_QUEUE])
    return submit_job(alice, request).job.runs.get()


def test_a_run_is_claimed_once(run, worker, other_worker):
    assert claim(run.pk, worker) is not None
    assert claim(run.pk, other_worker) is None
    run.refresh_from_db()
    assert (run.state, run.worker, run.attempts) == (State.RUNNING, worker, 1)


def test_a_run_whose_worker_went_silent_is_taken_over(run, worker, other_worker):
    first = claim(run.pk, worker)
    JobRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1))

    second = claim(run.pk, other_worker)

    assert second not in (None, first)
    assert not finish(run.pk, first, State.DONE), "the old claim no longer writes"
    run.refresh_from_db()
    assert (run.worker, run.attempts, run.state) == (other_worker, 2, State.RUNNING)


def test_a_worker_that_restarted_takes_back_its_own_run_at_once(run, worker, other_worker):
    claim(run.pk, worker)
    assert claim(run.pk, other_worker) is None
    assert claim(run.pk, worker) is not None


def test_a_finished_run_is_never_claimed_again(run, worker):
    token = claim(run.pk, worker)
    assert finish(run.pk, token, State.DONE)
    assert claim(run.pk, worker) is None


def test_finishing_keeps_a_cancel(run, worker):
    token = claim(run.pk, worker)
    run.job.cancel(by="alice")

    assert not finish(run.pk, token, State.DONE)
    run.refresh_from_db()
    assert run.state == State.CANCELLED


def test_a_run_resumes_from_its_stored_records_without_measuring_them_again(run, worker, config):
    run_claimed(run.pk, claim(run.pk, worker), config)
    first = set(JobRun.objects.get(pk=run.pk).records().values_list("config_index", flat=True))
    assert len(first) == 8
    run.job.n_trial = 20
    run.job.save()
    JobRun.objects.filter(pk=run.pk).update(state=State.QUEUED)

    run_claimed(run.pk, claim(run.pk, worker), config)

    run.refresh_from_db()
    indexes = list(run.records().values_list("config_index", flat=True))
    assert (run.state, run.trials_done, len(indexes), len(set(indexes))) == (State.DONE, 20, 20, 20)
    assert first <= set(indexes)


def test_a_cancelled_run_stores_the_batch_in_flight_and_stops(run, worker, config, monkeypatch, settings):
    from jobs import recording

    settings.TUNERWEB_JOB_BATCH_SIZE = 8
    store = recording.RunRecorder.store

    def cancel_during_first_batch(self, records):
        run.job.cancel(by="alice")
        store(self, records)

    monkeypatch.setattr(recording.RunRecorder, "store", cancel_during_first_batch)
    run.job.n_trial = 40
    run.job.save()

    run_claimed(run.pk, claim(run.pk, worker), config)

    run.refresh_from_db()
    assert run.state == State.CANCELLED
    assert run.trials_done == run.records().count() == 8  # one batch


def test_a_second_worker_for_the_same_gpu_is_refused_while_the_first_lives(recording_path):
    import subprocess
    import sys

    from django.core.management import CommandError, call_command

    from jobs.worker import already_running

    config = replay_config(recording_path)
    first = register(config)
    assert already_running(config) is None  # the row is this very process
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        Worker.objects.filter(pk=first.pk).update(pid=sleeper.pid)
        assert f"pid {sleeper.pid}" in already_running(config)
        with pytest.raises(CommandError, match="already running here"):
            call_command("run_worker", "--replay", str(recording_path))
    finally:
        sleeper.kill()
        sleeper.wait()
    assert already_running(config) is None  # that process is gone: a restart may take the name


def test_a_run_s_figures_are_read_from_its_records(run, worker, config, alice_client):
    run.job.n_trial = 40
    run.job.save()
    run_claimed(run.pk, claim(run.pk, worker), config)

    records = JobRun.objects.get(pk=run.pk).records()
    best = records.best()
    # Random configs of the recording fail only now and then: make sure two kinds show.
    others = list(records.filter(error_no=0).exclude(pk=best.pk).values_list("pk", flat=True)[:3])
    records.filter(pk__in=others[:1]).update(error_no=ErrorNo.COMPILE_HOST)
    records.filter(pk__in=others[1:]).update(error_no=ErrorNo.RUNTIME_DEVICE)
    failed = Counter(ErrorNo(r.error_no) for r in records if r.error_no)
    expected = [{"kind": e.label, "count": n} for e, n in sorted(failed.items(), key=lambda kv: (-kv[1], kv[0]))]
    for url in (f"/api/jobs/{run.job_id}/", reverse("jobs:progress", args=[run.job_id])):
        shown = alice_client.get(url).json()["runs"][0]
        assert (shown["trials_done"], shown["best_cost"], shown["best_gflops"]) == (40, best.mean_cost, best.gflops)
        assert shown["failures"] == expected and sum(failed.values()) >= 3
    listed = alice_client.get("/api/jobs/").json()["results"][0]["runs"][0]
    assert (listed["trials_done"], listed["best_gflops"]) == (40, best.gflops)


def test_job_lists_and_progress_read_no_more_for_more_records(run, worker, config, alice_client):
    def queries(url) -> int:
        with CaptureQueriesContext(connection) as seen:
            assert alice_client.get(url).status_code == 200
        return len(seen)

    urls = ("/api/jobs/", reverse("jobs:progress", args=[run.job_id]))
    run_claimed(run.pk, claim(run.pk, worker), config)
    before = [queries(url) for url in urls]
    run.job.n_trial = 40
    run.job.save()
    JobRun.objects.filter(pk=run.pk).update(state=State.QUEUED)
    run_claimed(run.pk, claim(run.pk, worker), config)

    assert JobRun.objects.get(pk=run.pk).records().count() == 40
    # The diff target's rule takes one query fewer when another record leads the board, so
    # the count may fall, never grow.
    after = [queries(url) for url in urls]
    assert all(a <= b for a, b in zip(after, before)), (before, after)
