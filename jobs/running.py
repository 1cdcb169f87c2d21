"""One claimed run, tuned: build the task, tuner and measurer, resume from the run's
stored records, and let engine.tune call back after every batch."""
from __future__ import annotations

import logging
import uuid

from django.conf import settings

from engine import (BadArgs, DeviceLimits, RecordingError, UnknownTemplate, UnknownTuner, create_task, early_stopping,
                    get_tuner, restrict_to_recording, tune)

from . import network
from .claims import ClaimLost, RunHeartbeat, finish, release
from .confirming import confirm_run, remeasure_configs, run_top_k
from .models import JobKind, JobRun, State
from .recording import RunRecorder, stored_records
from .worker import WorkerConfig, measurer_for, stopwatch_for

log = logging.getLogger(__name__)

# A job that passed submission can still fail here for these reasons, each with a
# message a person can act on; anything else is a bug, logged with its traceback.
EXPECTED_ERRORS = (BadArgs, UnknownTemplate, UnknownTuner, RecordingError)


def run_claimed(run_id: int, token: uuid.UUID, config: WorkerConfig) -> str:
    try:
        return _tune_claimed(run_id, token, config)
    finally:
        release(run_id, token)


def _tune_claimed(run_id: int, token: uuid.UUID, config: WorkerConfig) -> str:
    run = JobRun.objects.select_related("job__workload", "job__owner", "job__from_device", "task__workload",
                                        "device").get(pk=run_id)
    job, workload = run.job, run.workload
    try:
        if job.is_remeasure:
            return _remeasure(run, token, config)
        measurer = measurer_for(config)
        task = create_task(workload.task_name, workload.args, DeviceLimits.for_device(measurer.device))
        if config.kind == "replay":
            task = restrict_to_recording(task, measurer.records)
        tuner = get_tuner(job.tuner, task, seed=job.seed)
        callbacks = [RunRecorder(run, token, measurer.environment)]
        if job.early_stopping:
            callbacks.append(early_stopping(job.early_stopping))
        with RunHeartbeat(run_id, token):
            result = tune(task, tuner, measurer, run.trials_planned, history=stored_records(run), callbacks=callbacks,
                          batch_size=settings.TUNERWEB_JOB_BATCH_SIZE)
            # A network task's round is not confirmed: its job's tasks share the budget.
            confirmed = "" if job.kind == JobKind.NETWORK else _confirm_top_k(run, token, config, measurer.device)
    except ClaimLost as exc:
        return str(exc)
    except EXPECTED_ERRORS as exc:
        _fail(run, token, str(exc))
        return f"run {run_id} failed: {exc}"
    except Exception as exc:
        log.exception("run %s failed", run_id)
        _fail(run, token, f"{type(exc).__name__}: {exc}")
        raise
    message = ""
    exhausted = not tuner.has_next() and result.trials + result.resumed < run.trials_planned
    if result.stopped_early and job.early_stopping:
        message = f"stopped early: no faster config in {job.early_stopping} trials"
    elif exhausted:
        message = "every config of the space was measured"
    message = "; ".join(m for m in (message, confirmed) if m)
    if job.kind == JobKind.NETWORK:
        network.end_round(run, token, exhausted=exhausted, message=message)
    else:
        finish(run_id, token, State.DONE, message)
    return f"run {run_id} finished: {result.trials} trials measured, {result.resumed} resumed"


def _fail(run: JobRun, token: uuid.UUID, message: str) -> None:
    finish(run.pk, token, State.FAILED, message)
    if run.job.kind == JobKind.NETWORK:
        network.after_failure(run)


def _confirm_top_k(run: JobRun, token: uuid.UUID, config: WorkerConfig, device) -> str:
    """Confirm the run's top-k distinct configs (none when the job's top_k is 0); what it did, in words."""
    job = run.job
    if not job.top_k:
        return ""
    task = create_task(job.workload.task_name, job.workload.args, DeviceLimits.for_device(device))
    configs = run_top_k(run, task, job.top_k)
    if not configs:
        return ""
    with stopwatch_for(config) as stopwatch:
        confirm_run(run, token, task, configs, stopwatch, job.rounds)
    return f"top {len(configs)} confirmed in {job.rounds} interleaved rounds"


def _remeasure(run: JobRun, token: uuid.UUID, config: WorkerConfig) -> str:
    job = run.job
    device = config.device_info()
    task = create_task(job.workload.task_name, job.workload.args, DeviceLimits.for_device(device))
    configs = remeasure_configs(run, task)
    if not configs:
        finish(run.pk, token, State.FAILED, f"nothing to re-measure: {job.source_label} holds no config of this workload")
        return f"run {run.pk} failed: nothing to re-measure"
    with RunHeartbeat(run.pk, token), stopwatch_for(config) as stopwatch:
        confirm_run(run, token, task, configs, stopwatch, job.rounds)
    message = f"{len(configs)} configs re-measured in {job.rounds} interleaved rounds"
    finish(run.pk, token, State.DONE, message)
    return f"run {run.pk} finished: {message}"
