"""Names for the state of what a job's page and its progress are made from, the keys the page is
kept under (tunerweb.conditional.kept_page) and the progress cached: worked out from the rows
the view reads anyway (the job, its runs) and one count of the workload's records, so a repeat in
the same state costs those reads and a cache read, not the answer made again."""
from __future__ import annotations

import hashlib

from records.templatetags.tables import when
from records.versions import workload_generation, workload_records_version

from .models import Job, JobRun
from .progress import confirmed_vendors


def _digest(state) -> str:
    return hashlib.blake2b(repr(state).encode(), digest_size=16).hexdigest()


def _row(instance, leave_out=()) -> list:
    return [getattr(instance, field.attname) for field in instance._meta.concrete_fields if field.attname not in leave_out]


def _job_state(job: Job) -> list:
    """The job's row (staff may edit it in the admin) and its owner's name."""
    return [*_row(job), job.owner.username]


def _run_state(run: JobRun) -> list:
    """A run as `job_progress` reads it, fetched `with_figures()` (its records named by their count
    and newest id) with its worker: its row, but for the heartbeat, which changes every few seconds
    and shows only through whether the run has settled; what it waits for (that changes with time
    and other rows); its confirmed vendor baselines (a faster process's confirmation replaces one in place)."""
    return [*_row(run, leave_out=("heartbeat_at",)), run.record_count, run.last_record_id, run.settled,
            run.device.model, run.device.is_replay, str(run.worker) if run.worker else None,
            run.waiting_for_worker(), confirmed_vendors(run)]


def progress_key(job: Job, runs: list[JobRun]) -> str:
    """`job_progress(job, runs)`'s state. The workload's records, all of them (versions count
    private ones too), name the run's own trials and the leaderboard best it is diffed against."""
    state = [_job_state(job), workload_records_version(job.workload_id), [_run_state(run) for run in runs]]
    return f"job-progress:{job.pk}:{_digest(state)}"


def page_key(job: Job, page: dict, query: dict) -> str | None:
    """The job page's state: the job and its age as the page says it, its workload (staff may edit
    it), what `job_page` read of its runs, and the query (its sort); None for a query with anything else, which is made each time
    (made-up ones must not fill the cache)."""
    if set(query) - {"confirmation_sort"}:
        return None
    state = [_job_state(job), str(when(job.created_at)), workload_generation(job.workload_id), page, sorted(query.items())]
    return f"job-page:{job.pk}:{_digest(state)}"
