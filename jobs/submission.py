"""Submitting a tuning job: the rules a request must pass, and handing its runs to Celery.

The form and the API both call `check_request` (one set of rules, one set of messages)
and `submit_job`. Runs are sent to the broker only after the job is committed
(pretix's TransactionAwareTask), so a worker never looks for a row that is not there.
A broker that is down is retried once and then reported within a second, never
swallowed: the job stays queued in the database and `requeue_orphans` sends it when a
worker starts or beats. A client's Idempotency-Key makes a retry return that job.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Callable

from celery import current_app
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone
from kombu.exceptions import OperationalError
from kombu.utils.url import maybe_sanitize_url

from engine import (CUSTOM_TEMPLATE as CUSTOM, KERNEL_TUNER_TEMPLATE as KERNEL_TUNER, MIN_ROUNDS, PRESETS,
                    TEMPLATES, TUNERS, BadArgs, UnknownTemplate, args_from_json, create_task)
from records.models import Device, ImportBatch, Workload

from .custom_kernels import stored_kernel_for
from .models import IDEMPOTENCY_KEY_CHARS, Job, JobKind, JobRun, State, Worker, stale_before

log = logging.getLogger(__name__)

# Retry a failed publish once, quickly, then tell the person.
PUBLISH_RETRY = {"max_retries": 1, "interval_start": 0.2, "interval_step": 0.2, "interval_max": 0.5}
CELERY_RUN_TASK = "jobs.run_tuning_job"  # the Celery task's name (jobs/tasks.py), not a template's
# The tuners seed NumPy's generators, which take 32-bit seeds.
SEED_MAX = 2**32 - 1


MAX_TOP_K = 50
MAX_ROUNDS = 50


@dataclass(frozen=True)
class JobRequest:
    """A request that passed every rule."""

    task_name: str
    args: list
    tuner: str
    n_trial: int
    gpus: list[str]
    preset: str = ""
    early_stopping: int | None = None
    seed: int | None = None
    private: bool = False
    kind: str = JobKind.TUNE
    top_k: int = 5
    rounds: int = 5
    from_batch: ImportBatch | None = None
    from_device: Device | None = None


@dataclass
class Submission:
    job: Job
    queue_errors: list[str] = field(default_factory=list)
    created: bool = True  # False: an earlier request with the same Idempotency-Key made the job


def online_devices() -> dict[str, list[Worker]]:
    """GPU model -> online workers serving it."""
    found: dict[str, list[Worker]] = {}
    for worker in Worker.objects.online().select_related("device"):
        found.setdefault(worker.queue, []).append(worker)
    return found


def _check_confirmation(top_k, rounds, errors: dict, least_top_k: int = 0) -> tuple[int, int]:
    top_k = settings.TUNERWEB_CONFIRM_TOP_K if top_k is None else top_k
    rounds = settings.TUNERWEB_CONFIRM_ROUNDS if rounds is None else rounds
    if not isinstance(top_k, int) or isinstance(top_k, bool) or not least_top_k <= top_k <= MAX_TOP_K:
        errors["top_k"] = f"top_k must be a whole number from {least_top_k} to {MAX_TOP_K}"
    if not isinstance(rounds, int) or isinstance(rounds, bool) or not MIN_ROUNDS <= rounds <= MAX_ROUNDS:
        errors["rounds"] = f"a confirmation takes a whole number of rounds from {MIN_ROUNDS} to {MAX_ROUNDS}"
    return top_k, rounds


def check_remeasure_request(*, workload, gpus, from_batch=None, from_device=None, top_k=None, rounds=None) -> JobRequest:
    """A re-measure request: a workload (id), the configs to measure (an import batch's bests
    of it, or a GPU model's leaderboard top-k) and the GPU models to measure on."""
    errors: dict[str, str] = {}
    top_k, rounds = _check_confirmation(top_k, rounds, errors, least_top_k=1)
    found = Workload.objects.filter(pk=workload).first() if isinstance(workload, int) else None
    if found is None:
        errors["workload"] = "choose a workload by its id (the number in its leaderboard's address)"
    batch = device = None
    if (from_batch is None) == (from_device is None):
        errors["from_batch"] = "re-measure either an import batch's bests (from_batch) or a leaderboard's top-k (from_device)"
    elif from_batch is not None:
        batch = ImportBatch.objects.filter(pk=from_batch).first() if isinstance(from_batch, int) else None
        if batch is None:
            errors["from_batch"] = "there is no import batch with that id"
        elif found is not None and not batch.records.filter(workload=found, error_no=0).exists():
            errors["from_batch"] = f"import {batch.pk} holds no error-free record of this workload"
    else:
        device = Device.objects.filter(model=from_device).first() if isinstance(from_device, str) else None
        if device is None:
            errors["from_device"] = "there is no GPU model of that name"
        elif found is not None and not found.records.filter(device=device, error_no=0).exists():
            errors["from_device"] = f"{device.model} has no error-free record of this workload"
    gpu_list = list(gpus or [])
    if not gpu_list:
        errors["gpus"] = "choose at least one GPU model"
    elif found is not None:
        problem = _why_gpus_cannot_run(gpu_list, found.task_name, found.args)
        if problem:
            errors["gpus"] = problem
    if errors:
        raise ValidationError(errors)
    return JobRequest(
        task_name=found.task_name, args=found.args, tuner="", n_trial=0, gpus=sorted(set(gpu_list)),
        kind=JobKind.REMEASURE, top_k=top_k, rounds=rounds, from_batch=batch, from_device=device,
    )


def check_request(
    *, template: str, preset: str = "", args=None, tuner: str, n_trial, gpus, early_stopping=None, seed=None,
    top_k=None, rounds=None, private: bool = False,
) -> JobRequest:
    """The request as a JobRequest, or ValidationError naming each bad field and why."""
    errors: dict[str, str] = {}
    top_k, rounds = _check_confirmation(top_k, rounds, errors)
    task_name, task_args = _check_workload(template, preset, args, errors)
    if tuner not in TUNERS:
        errors["tuner"] = f"unknown tuner {tuner!r}; choose one of {', '.join(sorted(TUNERS))}"
    limit = settings.TUNERWEB_JOB_MAX_TRIALS
    if not isinstance(n_trial, int) or not 1 <= n_trial <= limit:
        errors["n_trial"] = f"the trial budget must be a whole number from 1 to {limit}"
    if early_stopping is not None and (not isinstance(early_stopping, int) or early_stopping < 1):
        errors["early_stopping"] = "early stopping must be a positive number of trials, or empty for none"
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= SEED_MAX):
        errors["seed"] = f"the seed must be a whole number from 0 to {SEED_MAX} (2^32 - 1), or empty for a random one"
    gpu_list = list(gpus or [])
    if not gpu_list:
        errors["gpus"] = "choose at least one GPU model"
    elif "template" not in errors and "args" not in errors and "preset" not in errors:
        problem = _why_gpus_cannot_run(gpu_list, task_name, task_args)
        if problem:
            errors["gpus"] = problem
    if errors:
        raise ValidationError(errors)
    return JobRequest(
        task_name=task_name, args=task_args, tuner=tuner, n_trial=n_trial, gpus=sorted(set(gpu_list)),
        preset=preset or "", early_stopping=early_stopping, seed=seed, top_k=top_k, rounds=rounds,
        private=bool(private),
    )


def _check_workload(template: str, preset: str, args, errors: dict) -> tuple[str, list]:
    if template not in TEMPLATES and template != KERNEL_TUNER:
        errors["template"] = f"unknown template {template!r}; choose one of {', '.join(sorted(TEMPLATES))}"
        return template, []
    if preset:
        if preset not in PRESETS:
            errors["preset"] = f"unknown workload preset {preset!r}; known: {', '.join(PRESETS)}"
            return template, []
        chosen = PRESETS[preset]
        if chosen.task_name != template:
            errors["preset"] = f"preset {preset} is a {chosen.task_name} workload, not {template}"
            return template, []
        args = chosen.args
    if isinstance(args, str):
        try:
            args = args_from_json(args)
        except ValueError as exc:
            errors["args"] = str(exc)
            return template, []
    if not args:
        errors["args"] = "pick a workload preset or type the workload's args"
        return template, []
    try:
        create_task(template, args)
    except UnknownTemplate as exc:
        errors["template"] = str(exc)
    except BadArgs as exc:
        errors["args"] = str(exc)
    else:
        if template == CUSTOM and stored_kernel_for(args) is None:
            errors["args"] = ("a custom job runs only a custom kernel that staff added; "
                              "choose one of the stored custom kernels")
    return template, args


def _why_gpus_cannot_run(gpus: list[str], task_name: str, args: list) -> str | None:
    online = online_devices()
    for model in gpus:
        workers = online.get(model)
        if not workers:
            known = ", ".join(sorted(online)) or "none"
            return f"no GPU of model {model!r} is online (online now: {known})"
        if task_name == KERNEL_TUNER and not any(w.is_replay for w in workers):
            return (f"{model} is a GPU, and a Kernel Tuner kernel has no source here: only a replay of its "
                    f"cache runs it (tune its source through the custom template)")
        if not any(w.serves(task_name, args) for w in workers):
            return (
                f"{model} is a replay device: it answers only for the workloads in its recording, "
                f"and this workload is not one of them"
            )
    return None


def submit_job(user, request: JobRequest, idempotency_key: str = "") -> Submission:
    """Create the job and one run per GPU model; send the runs once committed (once per
    Idempotency-Key: see submit_once). Inside an outer transaction the runs are sent when
    it commits, and their queue errors, if any, are only logged."""
    def create() -> Submission:
        with transaction.atomic():
            workload, _note = Workload.objects.catalog().workload(request.task_name, request.args)
            job = Job.objects.create(
                owner=user, workload=workload, preset=request.preset, tuner=request.tuner, n_trial=request.n_trial,
                early_stopping=request.early_stopping, seed=request.seed, kind=request.kind, top_k=request.top_k,
                rounds=request.rounds, from_batch=request.from_batch, from_device=request.from_device,
                private=request.private, idempotency_key=idempotency_key,
            )
            runs = [JobRun.objects.create(job=job, device=Device.objects.get(model=m)) for m in request.gpus]
            submission = Submission(job)
            transaction.on_commit(lambda: submission.queue_errors.extend(send_runs(runs)))
        return submission

    return submit_once(user, idempotency_key, create)


def submit_once(user, idempotency_key: str, create: Callable[[], Submission], *, network: bool = False) -> Submission:
    """`create()`'s new job, made with `idempotency_key` (every kind of job submits through here;
    `network` says which endpoint: network jobs or the others).

    With a key this user sent before, no second job is made: the first one is returned
    (`created` False) and its runs the broker never got are sent again. A key first sent to
    the other endpoint is refused (ValidationError): its job is not what this request asks for.
    """
    if idempotency_key:
        earlier = _job_with_key(user, idempotency_key, network)
        if earlier is not None:
            return _resend(earlier)
    try:
        return create()
    except IntegrityError:
        # The same key sent twice at once: the other request made the job.
        earlier = _job_with_key(user, idempotency_key, network) if idempotency_key else None
        if earlier is None:
            raise
        return _resend(earlier)


def check_idempotency_key(key: str) -> str:
    """The key as sent, or ValidationError: printable ASCII, at most IDEMPOTENCY_KEY_CHARS."""
    if not key.isascii() or not key.isprintable() or len(key) > IDEMPOTENCY_KEY_CHARS:
        raise ValidationError(
            {"idempotency_key": f"the Idempotency-Key must be printable ASCII of at most {IDEMPOTENCY_KEY_CHARS} characters"}
        )
    return key.strip()


def _job_with_key(user, key: str, network: bool) -> Job | None:
    earlier = Job.objects.filter(owner=user, idempotency_key=key).first()
    if earlier is not None and (earlier.kind == JobKind.NETWORK) != network:
        made = "a network job" if earlier.kind == JobKind.NETWORK else "a single-workload job"
        raise ValidationError({"idempotency_key": f"this Idempotency-Key made {made} (job {earlier.pk}); "
                                                  "a different request needs a new key"})
    return earlier


def _resend(job: Job) -> Submission:
    unsent = list(job.runs.filter(state=State.QUEUED, enqueued_at__isnull=True).select_related("device"))
    return Submission(job, queue_errors=send_runs(unsent), created=False)


def send_runs(runs: list[JobRun]) -> list[str]:
    """Send each run to its GPU model's queue; the errors, one message per run that failed."""
    errors = []
    for run in runs:
        try:
            send_run(run)
        except QueueUnavailable as exc:
            log.warning("%s", exc)
            errors.append(str(exc))
    return errors


class QueueUnavailable(Exception):
    pass


def send_run(run: JobRun) -> None:
    url = settings.CELERY_BROKER_URL
    try:
        with current_app.connection_for_write(url) as connection:
            # ignore_result: with a result backend Celery would subscribe to the task's
            # result first, and a Redis that is down then holds the request for 19 s.
            current_app.send_task(
                CELERY_RUN_TASK, args=(run.pk,), queue=run.queue, connection=connection,
                retry=True, retry_policy=PUBLISH_RETRY, ignore_result=True,
            )
    except (OperationalError, OSError) as exc:
        raise QueueUnavailable(
            f"job {run.job_id} on {run.queue} is saved and queued, but the task queue "
            f"(Redis at {maybe_sanitize_url(url)}) is unreachable: {exc}. It starts once the "
            f"queue is back and a {run.queue} worker is running."
        ) from None
    JobRun.objects.filter(pk=run.pk).update(enqueued_at=timezone.now())


def requeue_orphans(queue: str, worker: Worker | None = None, *, all_queued: bool = False) -> int:
    """Re-send runs of `queue` that no live worker holds: never sent (broker was down),
    running under a silent worker, or running under `worker` itself (it restarted).
    With `all_queued`, every queued run (after a broker restart lost its messages).
    A duplicate message is harmless: only one claim succeeds."""
    orphaned = Q(state=State.RUNNING, heartbeat_at__lt=stale_before())
    orphaned |= Q(state=State.QUEUED) if all_queued else Q(state=State.QUEUED, enqueued_at__isnull=True)
    if worker is not None:
        orphaned |= Q(state=State.RUNNING, worker=worker)
    runs = list(JobRun.objects.filter(orphaned, device__model=queue).select_related("device"))
    sent = 0
    for run in runs:
        try:
            send_run(run)
            sent += 1
        except QueueUnavailable as exc:
            log.warning("%s", exc)
    return sent
