"""Network jobs: many workloads, one trial budget, every online worker of a GPU model.

A network job holds its tasks (NetworkTask: a workload and its occurrences) and, per
GPU model, one JobRun per task. The budget goes out a round at a time: whenever a run
finishes its round, `give_rounds` asks engine.scheduler which task gains most from
the next one, raises that run's `trials_allotted` and queues it, until every online
worker of the model has a round (one task per worker, one worker per task). A worker
claims, resumes and records a task's run exactly as a tune job's (jobs.claims,
jobs.recording), so a killed worker's round is taken over and finished, and a cancel
stops every task. The job's row is locked while rounds are given, so two workers
finishing at once never spend the same trials.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterator

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from engine import (NETWORKS, PRESETS, TUNERS, NetworkTask as NetworkPreset, Strategy, TaskView, bests_per_round,
                    format_record, next_task)
from records.importing import Catalog
from records.models import Device, MeasurementRecord

from .claims import finish, held
from .models import Job, JobKind, JobRun, NetworkTask, State, Worker
from .submission import Submission, _check_workload, _why_gpus_cannot_run, send_runs, submit_once

MAX_TASKS = 100
MAX_WEIGHT = 10_000
TASK_FIELDS = {"label", "template", "preset", "args", "weight"}


@dataclass(frozen=True)
class NetworkRequest:
    """A network job request that passed every rule."""

    network: str                       # a preset's name, or "" for the user's own list
    tasks: tuple[NetworkPreset, ...]
    tuner: str
    n_trial: int
    gpus: list[str]
    allocation: Strategy
    round_trials: int
    seed: int | None = None


def check_network_request(
    *, network: str = "", tasks=None, tuner: str, n_trial, gpus, allocation: str = Strategy.GRADIENT.value,
    round_trials=None, seed=None,
) -> NetworkRequest:
    """The request as a NetworkRequest, or ValidationError naming each bad field and why."""
    errors: dict[str, str] = {}
    chosen = _check_tasks(network, tasks, errors)
    if tuner not in TUNERS:
        errors["tuner"] = f"unknown tuner {tuner!r}; choose one of {', '.join(sorted(TUNERS))}"
    limit = settings.TUNERWEB_JOB_MAX_TRIALS
    if not isinstance(n_trial, int) or not 1 <= n_trial <= limit:
        errors["n_trial"] = f"the trial budget must be a whole number from 1 to {limit}"
    if allocation not in {s.value for s in Strategy}:
        errors["allocation"] = f"unknown allocation {allocation!r}; choose one of {', '.join(s.value for s in Strategy)}"
    if round_trials in (None, ""):
        round_trials = settings.TUNERWEB_NETWORK_ROUND_TRIALS
    if not isinstance(round_trials, int) or not 1 <= round_trials <= limit:
        errors["round_trials"] = f"trials per round must be a whole number from 1 to {limit}"
    gpu_list = list(gpus or [])
    if not gpu_list:
        errors["gpus"] = "choose at least one GPU model"
    elif chosen:
        problem = next(filter(None, (_why_gpus_cannot_run(gpu_list, t.task_name, t.args) for t in chosen)), None)
        if problem:
            errors["gpus"] = problem
    if errors:
        raise ValidationError(errors)
    return NetworkRequest(
        network=network or "", tasks=tuple(chosen), tuner=tuner, n_trial=n_trial, gpus=sorted(set(gpu_list)),
        allocation=Strategy(allocation), round_trials=round_trials, seed=seed,
    )


def _check_tasks(network: str, tasks, errors: dict) -> list[NetworkPreset]:
    if network:
        if tasks:
            errors["tasks"] = "give a network preset or a list of tasks, not both"
            return []
        if not isinstance(network, str) or network not in NETWORKS:
            errors["network"] = f"unknown network {network!r}; known networks: {', '.join(NETWORKS)}"
            return []
        return list(NETWORKS[network].tasks)
    if not isinstance(tasks, list) or not tasks:
        errors["tasks"] = ("pick a network preset, or list the tasks: "
                           '[{"template": ..., "preset": ... or "args": [...], "weight": occurrences, "label": ...}]')
        return []
    if len(tasks) > MAX_TASKS:
        errors["tasks"] = f"a network job holds at most {MAX_TASKS} tasks, not {len(tasks)}"
        return []
    chosen, problems = [], []
    for number, item in enumerate(tasks, start=1):
        task, problem = _check_task(item, number)
        if problem:
            problems.append(f"task {number}: {problem}")
        else:
            chosen.append(task)
    keys = [(t.task_name, str(t.args)) for t in chosen]
    if not problems and len(set(keys)) != len(keys):
        problems.append("a workload is listed twice; give it once, with its occurrences as the weight")
    if problems:
        errors["tasks"] = "; ".join(problems)
        return []
    return chosen


def _check_task(item, number: int) -> tuple[NetworkPreset | None, str]:
    if not isinstance(item, dict):
        return None, "each task is an object with template, preset or args, and weight"
    unknown = set(item) - TASK_FIELDS
    if unknown:
        return None, f"unknown field(s) {', '.join(sorted(map(str, unknown)))}; a task has {', '.join(sorted(TASK_FIELDS))}"
    weight = item.get("weight", 1)
    if isinstance(weight, bool) or not isinstance(weight, int) or not 1 <= weight <= MAX_WEIGHT:
        return None, f"weight (occurrences in the network) must be a whole number from 1 to {MAX_WEIGHT}"
    template, preset = item.get("template"), item.get("preset") or ""
    if template is None and isinstance(preset, str) and preset in PRESETS:
        template = PRESETS[preset].task_name  # a preset names its template
    if not isinstance(template, str) or not isinstance(preset, str):
        return None, "template (or a preset) and preset are names (text)"
    found: dict[str, str] = {}
    task_name, args = _check_workload(template, preset, item.get("args"), found)
    if found:
        return None, "; ".join(found.values())
    label = item.get("label") or preset or f"T{number}"
    if not isinstance(label, str) or len(label) > NetworkTask._meta.get_field("label").max_length:
        return None, "label must be a short text (32 characters at most)"
    return NetworkPreset(label, task_name, args, weight), ""


def submit_network_job(user, request: NetworkRequest, idempotency_key: str = "") -> Submission:
    """Create the job, its tasks and their runs on each GPU model; give the first rounds
    once committed. Once per Idempotency-Key and inside an outer transaction, as submit_job."""
    def create() -> Submission:
        with transaction.atomic():
            catalog = Catalog()
            job = Job.objects.create(
                owner=user, kind=JobKind.NETWORK, preset=request.network, tuner=request.tuner,
                n_trial=request.n_trial, allocation=request.allocation.value, round_trials=request.round_trials,
                seed=request.seed, idempotency_key=idempotency_key,
            )
            devices = [Device.objects.get(model=model) for model in request.gpus]
            for position, preset in enumerate(request.tasks):
                workload, _note = catalog.workload(preset.task_name, preset.args)
                task = NetworkTask.objects.create(job=job, position=position, label=preset.label, workload=workload,
                                                  weight=preset.weight)
                JobRun.objects.bulk_create([
                    JobRun(job=job, device=device, task=task, trials_allotted=0, state=State.BETWEEN_ROUNDS)
                    for device in devices
                ])
            submission = Submission(job)
            transaction.on_commit(lambda: submission.queue_errors.extend(_start(job, devices)))
        return submission

    return submit_once(user, idempotency_key, create, network=True)


def _start(job: Job, devices: list[Device]) -> list[str]:
    errors = []
    for device in devices:
        errors += send_runs(give_rounds(job.pk, device.pk))
    return errors


def end_round(run: JobRun, token, *, exhausted: bool, message: str = "") -> None:
    """The run's round is measured: it waits for its next (or, exhausted, is done and
    gives back the trials it could not spend); the next rounds go out once committed."""
    with transaction.atomic():
        Job.objects.select_for_update().filter(pk=run.job_id).first()
        if exhausted:
            held(run.pk, token).update(trials_allotted=run.records().count(), exhausted=True)
        state = State.DONE if exhausted else State.BETWEEN_ROUNDS
        if finish(run.pk, token, state, message):  # not when cancelled meanwhile
            _send_on_commit(give_rounds(run.job_id, run.device_id))


def after_failure(run: JobRun) -> None:
    """A task failed: it gives back the trials it did not spend, and the others go on."""
    with transaction.atomic():
        Job.objects.select_for_update().filter(pk=run.job_id).first()
        JobRun.objects.filter(pk=run.pk, state=State.FAILED).update(trials_allotted=run.records().count())
        _send_on_commit(give_rounds(run.job_id, run.device_id))


def _send_on_commit(runs: list[JobRun]) -> None:
    # A broker that is down leaves them queued: requeue_orphans sends them later.
    transaction.on_commit(lambda: send_runs(runs))


def give_rounds(job_id: int, device_id: int) -> list[JobRun]:
    """Queue rounds until every online worker of the GPU model has one (at least one in
    flight), as the job's budget and allocation allow; when nothing is in flight and
    nothing more can go out, the job is over on this GPU. Returns the runs to send."""
    with transaction.atomic():
        job = Job.objects.select_for_update().get(pk=job_id)
        runs = list(
            JobRun.objects.filter(job_id=job_id, device_id=device_id).select_related("task__workload", "device")
            .order_by("task__position")
        )
        if any(run.state == State.CANCELLED for run in runs):
            return []
        views = task_views(runs, job.round_trials)
        in_flight = sum(view.busy for view in views)
        wanted = max(1, Worker.objects.online().filter(device_id=device_id).count())
        left = job.n_trial - sum(run.trials_allotted for run in runs)
        given: list[JobRun] = []
        while left > 0 and in_flight + len(given) < wanted:
            index = next_task(views, Strategy(job.allocation))
            if index is None:
                break
            run, size = runs[index], min(job.round_trials, left)
            JobRun.objects.filter(pk=run.pk).update(
                trials_allotted=run.trials_allotted + size, state=State.QUEUED, enqueued_at=None, message=""
            )
            views[index] = replace(views[index], busy=True)
            left -= size
            given.append(run)
        if not given and not in_flight:
            JobRun.objects.filter(job_id=job_id, device_id=device_id, state=State.BETWEEN_ROUNDS).update(
                state=State.DONE, finished_at=timezone.now(),
                message="the budget is spent" if left <= 0 else "no task can take more trials",
            )
    return given


def task_views(runs: list[JobRun], round_trials: int) -> list[TaskView]:
    """The scheduler's view of each task's run, from the runs' stored records."""
    costs: dict[int, list] = {run.batch_id: [] for run in runs if run.batch_id}
    rows = MeasurementRecord.objects.filter(batch_id__in=costs).order_by("id").values_list("batch_id", "mean_cost")
    for batch_id, cost in rows:
        costs[batch_id].append(cost)
    return [
        TaskView(
            weight=run.task.weight, flops=run.task.workload.flops or 0, group=run.task.workload.task_name,
            bests=bests_per_round(costs.get(run.batch_id, []), round_trials),
            busy=run.state in (State.QUEUED, State.RUNNING),
            finished=run.exhausted or run.state in (State.DONE, State.FAILED),
        )
        for run in runs
    ]


def best_log_lines(job: Job) -> Iterator[str]:
    """One AutoTVM log for the whole network: the best config of each task on each GPU model."""
    yield f"# tunerweb best configs of network job {job.pk} ({job.preset or 'listed tasks'})\n"
    for record in MeasurementRecord.objects.filter(batch__job_run__job=job).best_per_gpu().iterator():
        yield format_record(record.to_record()) + "\n"
