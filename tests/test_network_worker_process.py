"""Network jobs end to end: a real Redis, several real Celery replay workers of one GPU
model, each answering from the twelve ResNet-18 layers' real H200 recordings."""
import pytest
from django.urls import reverse

from jobs.models import Job, JobRun, State, Worker
from jobs_fixtures import (  # noqa: F401
    recording_path, redis_url, resnet18_recording, start_worker, wait_for,
)

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
H200_REPLAY = "h200-replay"
ROUND = 8


def start_workers(start_worker, recording, count: int, pace: float):
    workers = [start_worker(pace=pace, recording=recording, slot=slot, wait=False) for slot in range(count)]
    for worker in workers:
        worker.wait_ready()
    wait_for(lambda: Worker.objects.online().filter(queue=H200_REPLAY).count() == count, what="every worker online")
    return workers


def submit_network(client, n_trial: int, **fields) -> int:
    body = {"network": "resnet18", "tuner": "grid", "n_trial": n_trial, "round_trials": ROUND, "gpus": [H200_REPLAY],
            **fields}
    response = client.post("/api/network-jobs/", body, content_type="application/json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


def finished(job_id):
    job = Job.objects.get(pk=job_id)
    return job if job.state not in (State.QUEUED, State.RUNNING) else None


def task_runs(job_id) -> list[JobRun]:
    return list(JobRun.objects.filter(job_id=job_id).select_related("task__workload", "best_record")
                .order_by("task__position"))


def assert_every_trial_recorded_once(runs, budget: int) -> None:
    assert sum(run.trials_done for run in runs) == budget
    for run in runs:
        assert run.trials_done == run.trials_allotted >= ROUND, run
        assert run.records().values("config_index").distinct().count() == run.trials_done, run


def test_three_workers_spend_the_budget_as_allocated_and_find_what_separate_jobs_find(start_worker, alice_client,
                                                                                        resnet18_recording):
    start_workers(start_worker, resnet18_recording, 3, pace=0.01)
    budget = 12 * ROUND + 6 * ROUND
    job_id = submit_network(alice_client, budget)

    job = wait_for(lambda: finished(job_id), timeout=240, what="the network job to finish")
    runs = task_runs(job_id)
    assert job.state == State.DONE, [run.message for run in runs]
    assert_every_trial_recorded_once(runs, budget)
    assert len({run.worker_id for run in runs}) == 3, "every worker tuned tasks"
    assert any(run.trials_allotted > ROUND for run in runs), "some task got more than its warm-up round"

    # The same tuner, on each task alone, with the trials the network job gave it.
    separate = {}
    for run in runs:
        response = alice_client.post("/api/jobs/", {
            "template": "conv2d_nchw.cuda", "preset": run.task.label, "tuner": "grid", "n_trial": run.trials_done,
            "gpus": [H200_REPLAY]}, content_type="application/json")
        assert response.status_code == 201, response.content
        separate[run.task.label] = response.json()["id"]
    for label, tune_job_id in separate.items():
        wait_for(lambda: finished(tune_job_id), timeout=120, what=f"the separate {label} job")
    alone = {label: JobRun.objects.select_related("best_record").get(job_id=pk) for label, pk in separate.items()}
    assert {run.task.label: run.best_cost for run in runs} == {label: r.best_cost for label, r in alone.items()}
    assert {run.task.label: run.best_record.config_index for run in runs} == {
        label: r.best_record.config_index for label, r in alone.items()
    }


def test_killing_one_of_three_workers_mid_job_loses_nothing(start_worker, alice_client, resnet18_recording):
    workers = start_workers(start_worker, resnet18_recording, 3, pace=0.05)
    budget = 12 * ROUND + 4 * ROUND
    job_id = submit_network(alice_client, budget)
    wait_for(lambda: sum(run.trials_done for run in task_runs(job_id)) >= 3 * ROUND, timeout=120,
             what="three rounds measured")

    busy = wait_for(lambda: Worker.objects.filter(runs__job_id=job_id, runs__state=State.RUNNING).first(),
                    what="a worker in the middle of a round")
    victim = next(w for w in workers if w.proc.pid == busy.pid)
    victim.kill()
    orphan = JobRun.objects.get(job_id=job_id, worker=busy, state=State.RUNNING)

    job = wait_for(lambda: finished(job_id), timeout=240, what="the network job to finish without the worker")
    runs = task_runs(job_id)
    assert job.state == State.DONE, [run.message for run in runs]
    assert_every_trial_recorded_once(runs, budget)
    orphan.refresh_from_db()
    assert orphan.attempts >= 2 and orphan.worker_id != busy.pk, "another worker finished the killed worker's round"


def test_a_cancelled_network_job_stops_every_worker_within_a_batch(start_worker, alice_client, resnet18_recording):
    start_workers(start_worker, resnet18_recording, 2, pace=0.1)
    job_id = submit_network(alice_client, 12 * ROUND * 4)
    wait_for(lambda: sum(run.trials_done for run in task_runs(job_id)) >= 2 * ROUND, timeout=120, what="two rounds")

    assert alice_client.post(reverse("jobs:cancel", args=[job_id])).status_code == 302
    at_cancel = sum(run.trials_done for run in task_runs(job_id))
    wait_for(lambda: not JobRun.objects.filter(job_id=job_id, state__in=[State.RUNNING, State.QUEUED]).exists()
             and not any(w.current_run for w in Worker.objects.all()), what="the workers to let go")

    runs = task_runs(job_id)
    assert Job.objects.get(pk=job_id).state == State.CANCELLED
    assert {run.state for run in runs} <= {State.CANCELLED, State.DONE}
    # Each of the two workers finishes at most the batch it was measuring (4 trials).
    assert at_cancel <= sum(run.trials_done for run in runs) <= at_cancel + 2 * 4
