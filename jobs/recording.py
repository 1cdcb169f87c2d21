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
from typing import Callable, Sequence

from django.db import transaction
from django.db.models import F

from engine import Record, StopTuning
from records.importing import record_row
from records.models import ImportBatch, MeasurementRecord, Workload

from .claims import ClaimLost, held
from .models import JobRun, State


class RunCancelled(StopTuning):
    """The run was cancelled; the batch just measured is stored, nothing more is measured."""


def open_batch(run: JobRun, field: str = "batch", source: str = ImportBatch.Source.ENGINE,
               prefix: str = "job") -> ImportBatch:
    """The ImportBatch in `run.<field>` (its tuning records, or its confirmations), made on first use."""
    batch = getattr(run, field)
    if batch is None:
        batch = ImportBatch.objects.create(
            file_name=f"{prefix}-{run.job_id}-{run.device.model}.log", source=source, created_by=run.job.owner,
        )
        setattr(run, field, batch)
        JobRun.objects.filter(pk=run.pk).update(**{field: batch})
    return batch


def stored_records(run: JobRun) -> list[Record]:
    """What this run measured before, to resume from."""
    return [row.to_record() for row in run.records().select_related("workload")]


class RunRecorder:
    """Tuning-loop callback: store each batch and the run's best record, stop on cancel."""

    def __init__(self, run: JobRun, token: uuid.UUID, environment: Callable[[], dict] = dict) -> None:
        self.run = run
        self.token = token
        self.catalog = Workload.objects.catalog()
        self.environment = environment  # what measured the batch: asked once per batch

    def __call__(self, state, configs, results) -> None:
        self.store(state.records[-len(configs):])

    def store(self, records: Sequence[Record]) -> None:
        environment = self.environment()
        with transaction.atomic():
            # Locks the row (PostgreSQL) so a takeover cannot interleave with this batch.
            current = held(self.run.pk, self.token).select_for_update().values_list("state", flat=True).first()
            if current is None:
                raise ClaimLost(f"run {self.run.pk} was taken over by another worker")
            batch = open_batch(self.run)
            rows = [record_row(r, batch, self.catalog)[0] for r in records]
            for row in rows:
                row.environment = environment
            MeasurementRecord.objects.bulk_create(rows, ignore_conflicts=True)
            ImportBatch.objects.filter(pk=batch.pk).update(
                lines=F("lines") + len(records), imported=self.run.records().count()
            )
            held(self.run.pk, self.token).update(best_record=self.run.best())
        if current == State.CANCELLED:
            raise RunCancelled("cancelled")
