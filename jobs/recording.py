"""A run's measurements into the records app, one batch per transaction.

Each batch of engine Records becomes MeasurementRecord rows in the run's own
ImportBatch (source "tuning job"), with the same fingerprint, device and workload
helpers the log importer uses, so a job's records and an imported log of the same
lines are the same rows. The run's best record is updated in the same transaction
(its other figures are counted from the records): a crash loses at most the batch
in flight, and what is stored is what resumes.
"""
from __future__ import annotations

import uuid
from typing import Sequence

from django.db import transaction
from django.db.models import F

from engine import Record, StopTuning
from records.importing import record_row
from records.models import ImportBatch, MeasurementRecord, Workload

from .claims import ClaimLost, held
from .models import JobRun, State


class RunCancelled(StopTuning):
    """The run was cancelled; the batch just measured is stored, nothing more is measured."""


def open_batch(run: JobRun) -> ImportBatch:
    """The ImportBatch holding the run's records, made on first use."""
    if run.batch_id is None:
        run.batch = ImportBatch.objects.create(
            file_name=f"job-{run.job_id}-{run.device.model}.log",
            source=ImportBatch.Source.ENGINE,
            created_by=run.job.owner,
        )
        JobRun.objects.filter(pk=run.pk).update(batch=run.batch)
    return run.batch


def stored_records(run: JobRun) -> list[Record]:
    """What this run measured before, to resume from."""
    return [row.to_record() for row in run.records().select_related("workload")]


class RunRecorder:
    """Tuning-loop callback: store each batch and the run's best record, stop on cancel."""

    def __init__(self, run: JobRun, token: uuid.UUID) -> None:
        self.run = run
        self.token = token
        self.catalog = Workload.objects.catalog()

    def __call__(self, state, configs, results) -> None:
        self.store(state.records[-len(configs):])

    def store(self, records: Sequence[Record]) -> None:
        with transaction.atomic():
            # Locks the row (PostgreSQL) so a takeover cannot interleave with this batch.
            current = held(self.run.pk, self.token).select_for_update().values_list("state", flat=True).first()
            if current is None:
                raise ClaimLost(f"run {self.run.pk} was taken over by another worker")
            batch = open_batch(self.run)
            MeasurementRecord.objects.bulk_create([record_row(r, batch, self.catalog)[0] for r in records], ignore_conflicts=True)
            ImportBatch.objects.filter(pk=batch.pk).update(
                lines=F("lines") + len(records), imported=self.run.records().count()
            )
            held(self.run.pk, self.token).update(best_record=self.run.best())
        if current == State.CANCELLED:
            raise RunCancelled("cancelled")
