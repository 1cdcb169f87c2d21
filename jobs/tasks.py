"""The Celery task: thin glue between a JobRun row and engine.tune (see jobs.running)."""
from __future__ import annotations

from celery import shared_task

from .claims import claim
from .running import run_claimed
from .submission import CELERY_RUN_TASK
from .worker import WorkerConfig, this_worker


@shared_task(name=CELERY_RUN_TASK, acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def run_tuning_job(run_id: int) -> str:
    """Claim the run for this worker and tune it; a run held elsewhere or finished is left alone."""
    worker = this_worker()
    token = claim(run_id, worker)
    if token is None:
        return f"run {run_id} is finished or running elsewhere"
    return run_claimed(run_id, token, WorkerConfig.from_env())
