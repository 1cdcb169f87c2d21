"""Names for the state of what a cached answer is made from (`tunerweb.cache.cached` keys).

Records are only ever added or removed, never changed in place, except by staff in the admin,
whose saves bump the workload's `generation` (below), as do a batch's privacy changed and the
workload's own counts edited. So a workload's records are named by their count, newest id and
that generation: storing, importing or deleting one gives a new name, and the entries made
before it are not read again. Bumps happen once the change is committed, so no request can
cache the old rows under the new name. (An edit made while Redis is down is not counted: the
entries older than it live out ENTRY_SECONDS.)
"""
from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

from django.core.cache import cache
from django.db import transaction
from django.db.models import Count, Max
from django.db.models.signals import post_save, pre_delete, pre_save
from django.dispatch import receiver

import engine

from .models import Device, ImportBatch, MeasurementRecord, Workload

CACHED_LEADERBOARD_PAGES = 10  # the pages people read; later ones are worked out each time
LEADERBOARD_QUERY = ("device", "show_changed", "page", "sort", "best_sort")


def _generation_key(workload_id: int) -> str:
    return f"workload-generation:{workload_id}"


def workload_generation(workload_id: int) -> int:
    """How many times a record of the workload (or a batch holding one) was edited in place."""
    return cache.get(_generation_key(workload_id), 0)


def workload_records_version(workload_id: int, excluding_batch: int | None = None) -> str:
    """The state of a workload's records (all of them: what a viewer may read is keyed apart),
    or of those outside one batch: what a running job's own records do not change."""
    records = MeasurementRecord.objects.filter(workload_id=workload_id)
    if excluding_batch is not None:
        records = records.exclude(batch_id=excluding_batch)
    found = records.aggregate(n=Count("id"), last=Max("id"))
    return f"{found['n']}.{found['last']}.{workload_generation(workload_id)}"


def devices_version() -> str:
    """The GPUs' rows (names, architectures: pages show them, code status reads them)."""
    rows = Device.objects.order_by("pk").values_list(
        "pk", "model", "name", "compute_capability", "is_replay",
        "sm_count", "clock_mhz", "memory_clock_mhz", "memory_bus_bits",  # what a GPU's peaks are made from
    )
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


def leaderboard_key(workload, viewer, query) -> str | None:
    """A leaderboard as `viewer` reads it with `query` (its GPU, page, sorts and show_changed), in
    this state of the workload's records, the GPUs and the engine. None for any other parameter
    (the page's links repeat the query: no one else's answer may carry it) and for a page past
    CACHED_LEADERBOARD_PAGES: made-up queries must not fill the cache."""
    page = query.get("page", "1")
    if set(query) - set(LEADERBOARD_QUERY) or not (page.isdigit() and 1 <= int(page) <= CACHED_LEADERBOARD_PAGES):
        return None
    asked = sorted((name, query.get(name, "")) for name in LEADERBOARD_QUERY if name != "page")
    query_digest = hashlib.sha256(repr((int(page), asked)).encode()).hexdigest()[:16]
    return (f"leaderboard:{workload.pk}:{workload_records_version(workload.pk)}:{devices_version()}:"
            f"{engine_version()}:{viewer_key(viewer)}:{query_digest}")


# Bulk inserts and cascading deletes change the count or the newest id; these catch what
# does not: a record or a batch's privacy edited in place. (No post_delete receiver: it
# would make Django load every record of a deleted batch to send it.)
@receiver(post_save, sender=MeasurementRecord)
def _record_edited(sender, instance, created, **kwargs) -> None:
    _bump_on_commit([instance.workload_id])


@receiver(post_save, sender=Workload)
def _workload_edited(sender, instance, created, **kwargs) -> None:
    if not created:  # its FLOP and byte counts make GFLOPS, GB/s and % of peak
        _bump_on_commit([instance.pk])


@receiver(pre_save, sender=ImportBatch)
def _batch_saving(sender, instance, **kwargs) -> None:
    before = ImportBatch.objects.filter(pk=instance.pk).values_list("private_to_id", flat=True).first()
    instance._privacy_changed = instance.pk is not None and before != instance.private_to_id


@receiver(post_save, sender=ImportBatch)
def _batch_edited(sender, instance, created, **kwargs) -> None:
    if not created and getattr(instance, "_privacy_changed", False):
        _bump_on_commit(_workloads_of(instance))


@receiver(pre_delete, sender=ImportBatch)
def _batch_deleting(sender, instance, **kwargs) -> None:
    """A private batch takes its records with it: left without a batch they would be public."""
    workloads = _workloads_of(instance)
    if instance.private_to_id is not None:
        instance.records.all().delete()
    _bump_on_commit(workloads)


def _workloads_of(batch: ImportBatch) -> list[int]:
    return list(batch.records.values_list("workload_id", flat=True).distinct())


def _bump_on_commit(workload_ids) -> None:
    transaction.on_commit(lambda: [_bump(workload_id) for workload_id in workload_ids])


def _bump(workload_id: int) -> None:
    key = _generation_key(workload_id)
    if not cache.add(key, 1, None):
        cache.incr(key)
