"""The dashboard and a workload's leaderboard: who is best where, and everything ranked.

A workload's bests and its ranked configs are `records.standings` (one row per config,
GPU and code hash, with its spread); this module finds and summarises workloads.
"""
from __future__ import annotations

from collections import defaultdict

from django.db.models import Count, Max, Q, QuerySet

from .models import Device, MeasurementRecord, Workload, valid_filter

_VALID = valid_filter("records__")


def search_workloads(search: str = "", workloads: QuerySet | None = None) -> QuerySet:
    """Workloads (all, or of `workloads`) whose task name or shape text (`1,512,7,7` or
    `[1, 512, 7, 7]`) holds `search`."""
    workloads = Workload.objects.order_by("task_name", "id") if workloads is None else workloads
    search = search.strip()
    if not search:
        return workloads
    # args_json is canonical JSON without spaces, so spaces in the search are dropped.
    return workloads.filter(Q(task_name__icontains=search) | Q(args_json__icontains=search.replace(" ", "")))


def summarize(workloads: QuerySet) -> QuerySet:
    """`workloads` with how many records (and valid ones) each has and its best GFLOPS.

    Paginate first and summarize the page: the aggregate then reads only that page's records.
    """
    return workloads.annotate(
        record_count=Count("records"),
        valid_count=Count("records", filter=_VALID),
        best_gflops=Max("records__gflops", filter=_VALID),
    ).order_by("task_name", "id")


def workload_rows(page_of_workloads) -> list[tuple[Workload, list[Device]]]:
    """A dashboard page: each workload summarized, with the GPUs that have records of it."""
    ids = [workload.pk for workload in page_of_workloads]
    gpus = devices_by_workload(ids)
    return [(workload, gpus.get(workload.pk, [])) for workload in summarize(Workload.objects.filter(pk__in=ids))]


def task_summaries() -> list[dict]:
    """Per task name: how many workloads, records and GPUs it has."""
    return list(
        Workload.objects.values("task_name")
        .annotate(
            workload_count=Count("id", distinct=True),
            record_count=Count("records"),
            device_count=Count("records__device", distinct=True),
        )
        .order_by("task_name")
    )


def device_summaries() -> QuerySet:
    """Devices with how many records and workloads each has."""
    return Device.objects.annotate(
        record_count=Count("records"), workload_count=Count("records__workload", distinct=True)
    ).order_by("model")


def devices_by_workload(workload_ids: list[int]) -> dict[int, list[Device]]:
    """The GPUs that have records of each workload, in one query."""
    pairs = (
        MeasurementRecord.objects.filter(workload_id__in=workload_ids)
        .values_list("workload_id", "device_id")
        .order_by()  # the model's default ordering would widen DISTINCT
        .distinct()
    )
    devices = {device.pk: device for device in Device.objects.all()}
    found: dict[int, list[Device]] = defaultdict(list)
    for workload_id, device_id in pairs:
        found[workload_id].append(devices[device_id])
    for listed in found.values():
        listed.sort(key=lambda device: device.model)
    return found
