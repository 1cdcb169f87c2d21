"""Names for the state of what a cached answer is made from (`tunerweb.cache.cached` keys).

Records are only ever added or removed, never changed in place, except by staff in the admin,
whose saves and deletes bump the workload's `generation` (below). So a workload's records
are named by their count, newest id and that generation: storing, importing or deleting
one gives a new name, and the entries made before it are not read again. (An edit made
while Redis is down is not counted: the entries older than it live out ENTRY_SECONDS.)
"""
from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

from django.core.cache import cache
from django.db.models import Count, Max
from django.db.models.signals import post_save
from django.dispatch import receiver

import engine

from .models import Device, ImportBatch, MeasurementRecord


def _generation_key(workload_id: int) -> str:
    return f"workload-generation:{workload_id}"


def workload_generation(workload_id: int) -> int:
    """How many times a record of the workload (or a batch holding one) was edited in place."""
    return cache.get(_generation_key(workload_id), 0)


def workload_records_version(workload_id: int) -> str:
    """The state of a workload's records (all of them: what a viewer may read is keyed apart)."""
    found = MeasurementRecord.objects.filter(workload_id=workload_id).aggregate(n=Count("id"), last=Max("id"))
    return f"{found['n']}.{found['last']}.{workload_generation(workload_id)}"


def devices_version() -> str:
    """The GPUs' rows (names, architectures: pages show them, code status reads them)."""
    rows = Device.objects.order_by("pk").values_list("pk", "model", "name", "compute_capability", "is_replay")
    return hashlib.sha256(repr(list(rows)).encode()).hexdigest()[:16]


@lru_cache(maxsize=1)
def engine_version() -> str:
    """The engine's source: a record's code status is today's engine's word on it."""
    digest = hashlib.sha256()
    for path in sorted(Path(engine.__file__).parent.rglob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def viewer_key(viewer) -> str:
    """Who reads: staff read every record, others the public ones and their own (records.visibility)."""
    if viewer.is_staff:
        return "staff"
    return f"user{viewer.pk}" if viewer.is_authenticated else "public"


def leaderboard_key(workload, viewer, query: str) -> str:
    """A leaderboard as `viewer` reads it with `query` (GPU, page, show_changed), in this state
    of the workload's records, the GPUs and the engine."""
    query_digest = hashlib.sha256(query.encode()).hexdigest()[:16]
    return (f"leaderboard:{workload.pk}:{workload_records_version(workload.pk)}:{devices_version()}:"
            f"{engine_version()}:{viewer_key(viewer)}:{query_digest}")


# Bulk inserts and cascading deletes change the count or the newest id; these catch what
# does not: a record or a batch's privacy edited in place. (No post_delete receiver: it
# would make Django load every record of a deleted batch to send it.)
@receiver(post_save, sender=MeasurementRecord)
def _record_edited(sender, instance, created, **kwargs) -> None:
    _bump(instance.workload_id)


@receiver(post_save, sender=ImportBatch)
def _batch_edited(sender, instance, created, **kwargs) -> None:
    if created:
        return
    for workload_id in instance.records.values_list("workload_id", flat=True).distinct():
        _bump(workload_id)


def _bump(workload_id: int) -> None:
    key = _generation_key(workload_id)
    if not cache.add(key, 1, None):
        cache.incr(key)
