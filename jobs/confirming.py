"""A run's confirmations: which configs, measured by engine.confirm, stored beside the originals.

After tuning, a run's top-k distinct configs are confirmed; a re-measure job's configs
are an import batch's bests of its workload (every TopHub best of a ResNet-18 layer, say)
or the top-k of a GPU's leaderboard. Either way the vendor baseline and the untuned
default config are timed in the same interleaved rounds. The results are stored
(`records.confirmations`) in the run's own confirmation batch (source "confirmation").
"""
from __future__ import annotations

import uuid

from django.db import transaction

from engine import Confirmation, Stopwatch, confirm_contenders, contenders_for, entities_of, top_k_distinct
from records.confirmations import store_confirmation
from records.models import ImportBatch, MeasurementRecord
from records.standings import workload_groups

from .claims import ClaimLost, held
from .models import JobRun
from .recording import open_batch


def run_top_k(run: JobRun, task, k: int) -> list[tuple[int, list]]:
    """The run's k fastest distinct configs."""
    records = [row.to_record() for row in run.records().select_related("workload")]
    return entities_of(task, top_k_distinct(records, k))


def remeasure_configs(run: JobRun, task) -> list[tuple[int, list]]:
    """A re-measure job's configs: its import batch's bests of the workload (the best
    record of each GPU model in it, fastest first), or the top-k of a GPU's leaderboard."""
    job = run.job
    if job.from_batch_id:
        records = MeasurementRecord.objects.filter(batch_id=job.from_batch_id, workload=job.workload).valid()
        bests: dict[int, MeasurementRecord] = {}
        for record in records.ranked():
            bests.setdefault(record.device_id, record)
        return entities_of(task, bests.values())
    groups = [g for g in workload_groups(job.workload) if g.device_id == job.from_device_id]
    ids = [g.config_index for g in groups[: job.top_k * 4]]  # code hashes may repeat a config
    records = {r.config_index: r for r in MeasurementRecord.objects.filter(
        workload=job.workload, device=job.from_device, config_index__in=ids)}
    return entities_of(task, [records[i] for i in ids if i in records])[: job.top_k]


def confirm_run(run: JobRun, token: uuid.UUID, task, configs: list[tuple[int, list]], stopwatch: Stopwatch,
                rounds: int) -> Confirmation:
    """Time `configs` beside the vendor baseline and the default config, and store it all."""
    contenders = contenders_for(task, configs)
    confirmation = confirm_contenders(task, contenders, stopwatch, rounds)
    store_run_confirmation(run, token, confirmation)
    return confirmation


def store_run_confirmation(run: JobRun, token: uuid.UUID, confirmation: Confirmation) -> None:
    """Store it in the run's confirmation batch while the run is still this worker's."""
    with transaction.atomic():
        if not held(run.pk, token).select_for_update().exists():
            raise ClaimLost(f"run {run.pk} was taken over by another worker")
        batch = open_batch(run, "confirmation_batch", ImportBatch.Source.CONFIRMATION, prefix="confirm-job")
        store_confirmation(confirmation, batch)
