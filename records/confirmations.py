"""Confirmations into the records app: per config a warm and a cold record (one cost per
interleaved round), per baseline the provider's Baseline row.

A vendor baseline keeps the fastest process's rounds while the library stays the same:
cuDNN's exhaustive search does not pick the same algorithm in every fresh process (ResNet-18
C11 on the H200: 8.55 µs in one, 13.88 µs in the next), and a speedup over whichever process
came last would flatter us. A new library version, or the untuned default config (our own
code, which changes), is replaced by the newer confirmation.

A tuning job's confirmation step, a re-measure job and `manage.py import_confirmations`
(the JSON `benchmarks/verify_bests.py` writes) all store through `store_confirmation`.
"""
from __future__ import annotations

import hashlib

from django.db import transaction
from django.db.models import F

from engine import Confirmation, Record, Role, Timing, same_vendor_library, target_model

from .importing import record_row
from .models import Baseline, Catalog, ImportBatch, MeasurementRecord, Workload

Kind, Cache = MeasurementRecord.Kind, MeasurementRecord.Cache
PRODUCER = "tunerweb-confirmation"


def store_confirmation(confirmation: Confirmation, batch: ImportBatch, catalog: Catalog | None = None) -> int:
    """Store one confirmation in `batch`; how many records it added."""
    catalog = catalog or Workload.objects.catalog()
    with transaction.atomic():
        rows = []
        for timing in confirmation.timings:
            if timing.contender.role != Role.VENDOR:
                rows += _config_rows(confirmation, timing, batch, catalog)
            if timing.contender.role != Role.TUNED and timing.ok:
                _store_baseline(confirmation, timing, batch, catalog)
        before = MeasurementRecord.objects.filter(batch=batch).count()
        MeasurementRecord.objects.bulk_create(rows, ignore_conflicts=True)
        now = MeasurementRecord.objects.filter(batch=batch).count()
        ImportBatch.objects.filter(pk=batch.pk).update(lines=F("lines") + len(rows), imported=now)
    return now - before


def environment_of(confirmation: Confirmation, timing: Timing) -> dict:
    return {**confirmation.environment, **timing.details, "session": confirmation.session,
            "role": timing.contender.role.value, "protocol": "interleaved rounds, fresh process"}


def _config_rows(confirmation: Confirmation, timing: Timing, batch: ImportBatch, catalog: Catalog) -> list:
    # A contender that could not be timed is one failed record (its error number and message).
    sides = [(Cache.WARM, timing.warm), (Cache.COLD, timing.cold)] if timing.ok else [(Cache.WARM, [])]
    rows = []
    for cache, costs in sides:
        record = Record(
            target=confirmation.target, task_name=confirmation.task_name, args=confirmation.args,
            config_index=timing.contender.config_index, entity=list(timing.contender.entity),
            costs=tuple(costs), error_no=timing.error_no,
            all_cost=confirmation.finished_at - confirmation.started_at, timestamp=confirmation.finished_at,
            tvm_version=PRODUCER, error_msg=timing.error, code_hash=timing.details.get("code_hash"),
        )
        key = hashlib.sha256(f"{confirmation.session}:{timing.contender.label}:{cache}".encode()).hexdigest()
        row, _ = record_row(record, batch, catalog, key=key)
        row.kind, row.cache, row.rounds = Kind.CONFIRMATION, cache, confirmation.rounds
        row.environment = environment_of(confirmation, timing)
        rows.append(row)
    return rows


KEPT_SESSIONS = 50


def _store_baseline(confirmation: Confirmation, timing: Timing, batch: ImportBatch, catalog: Catalog) -> None:
    warm, cold = timing.warm_spread, timing.cold_spread
    details = timing.details
    said = " ".join(str(details[k]) for k in ("library", "library_version", "search") if details.get(k))
    workload, _ = catalog.workload(confirmation.task_name, confirmation.args)
    key = {"workload": workload, "device_id": catalog.device_id(target_model(confirmation.target)),
           "provider": timing.contender.provider}
    environment = environment_of(confirmation, timing)
    existing = Baseline.objects.select_for_update().filter(**key).first()  # two confirmations at once: one waits
    sessions = [confirmation.session]
    if existing and timing.contender.role == Role.VENDOR and same_vendor_library(existing.environment, environment):
        sessions = list(dict.fromkeys(existing.environment.get("sessions", []) + sessions))[-KEPT_SESSIONS:]
        if existing.rounds and existing.cost <= warm.median:  # the faster process stays
            existing.environment = {**existing.environment, "sessions": sessions}
            existing.note = _note(existing.rounds, len(sessions), existing.note.partition("; ")[2])
            existing.save(update_fields=["environment", "note"])
            return
    Baseline.objects.update_or_create(**key, defaults={
        "cost": warm.median, "costs": timing.warm, "cold_cost": cold.median if cold else None,
        "cold_costs": timing.cold, "rounds": confirmation.rounds, "batch": batch,
        "environment": {**environment, "sessions": sessions},
        "note": _note(confirmation.rounds, len(sessions), said),
    })


def _note(rounds: int, processes: int, said: str) -> str:
    fastest = f", the fastest of {processes} fresh processes" if processes > 1 else ""
    return f"confirmed, {rounds} interleaved rounds{fastest}{'; ' + said if said else ''}"[:255]


class ConfirmationFileError(ValueError):
    """A confirmations file that cannot be read; the message says why."""


def read_confirmations(text: str) -> list[Confirmation]:
    """The confirmations of a `verify_bests.py --json` file (`{"confirmations": [...]}`)."""
    import json

    try:
        data = json.loads(text)
        return [Confirmation.from_dict(item) for item in data["confirmations"]]
    except json.JSONDecodeError as exc:
        raise ConfirmationFileError(f"not JSON ({exc.msg} at line {exc.lineno})") from None
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfirmationFileError(f"not a confirmations file ({type(exc).__name__}: {exc})") from None


def import_confirmations(text: str, file_name: str, user=None) -> ImportBatch:
    """Every confirmation of a file into one new batch (source "confirmation")."""
    confirmations = read_confirmations(text)
    batch = ImportBatch.objects.create(file_name=file_name[-255:], source=ImportBatch.Source.CONFIRMATION,
                                       created_by=user)
    catalog = Workload.objects.catalog()
    for confirmation in confirmations:
        store_confirmation(confirmation, batch, catalog)
    batch.refresh_from_db()
    return batch
