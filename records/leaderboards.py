"""The dashboard and a workload's leaderboard: who is best where, and everything ranked.

A workload's bests and its ranked configs are `records.standings` (one row per config,
GPU and code hash, with its spread); this module finds and summarises workloads.
"""
from __future__ import annotations

from collections import defaultdict

from django.db.models import Count, Max, OuterRef, Q, QuerySet, Subquery

from .models import BEST_ORDER, Device, MeasurementRecord, Workload, valid_filter
from .visibility import PUBLIC, records_q

_VALID = valid_filter("records__")


def _counted(viewer) -> Q:
    """The records of a workload or device that `viewer` may count."""
    return records_q(viewer, "records__")


def search_workloads(search: str = "", workloads: QuerySet | None = None) -> QuerySet:
    """Workloads (all, or of `workloads`) whose task name or shape text (`1,512,7,7` or
    `[1, 512, 7, 7]`) holds `search`."""
    workloads = Workload.objects.order_by("task_name", "id") if workloads is None else workloads
    search = search.strip()
    if not search:
        return workloads
    # args_json is canonical JSON without spaces, so spaces in the search are dropped.
    return workloads.filter(Q(task_name__icontains=search) | Q(args_json__icontains=search.replace(" ", "")))


SUMMARY_COLUMNS = ("record_count", "valid_count", "gpu_count", "best_gflops", "best_gpu")


def summarize(workloads: QuerySet, viewer=PUBLIC) -> QuerySet:
    """`workloads` with how many records (and valid ones) each has, on how many GPUs, its best
    GFLOPS and the GPU of that best (`best_gpu`), of the records `viewer` may read, in their
    order (summarized already, they come back as they are).

    Paginate first and summarize the page: the aggregate then reads only that page's records.
    """
    if "record_count" in workloads.query.annotations:
        return workloads
    counted = _counted(viewer)
    # One workload's FLOPs are fixed, so its best GFLOPS is its fastest record: the rank index's first row.
    fastest = MeasurementRecord.objects.visible_to(viewer).filter(workload=OuterRef("pk")).valid().order_by(*BEST_ORDER)
    return workloads.annotate(
        record_count=Count("records", filter=counted),
        valid_count=Count("records", filter=_VALID & counted),
        gpu_count=Count("records__device", filter=counted, distinct=True),
        best_gflops=Max("records__gflops", filter=_VALID & counted),
        best_gpu=Subquery(fastest.values("device__model")[:1]),
    )


def dashboard_workloads(search: str, sorting, viewer=PUBLIC) -> QuerySet:
    """The dashboard's workloads matching `search`, in `sorting`'s order. Ordering by a count
    or a best means summarizing every workload's records (seconds with a million); any other
    order leaves that to `workload_rows`, for one page."""
    workloads = search_workloads(search)
    if sorting.column is not None and sorting.columns[sorting.column] in SUMMARY_COLUMNS:
        workloads = summarize(workloads, viewer)
    return sorting.queryset(workloads, tiebreak=("task_name", "id"))


def workload_rows(page_of_workloads, viewer=PUBLIC) -> list[tuple[Workload, list[Device]]]:
    """A dashboard page, in the page's order: each workload summarized, with the GPUs that
    have records of it and the GPU of its best GFLOPS (`best_gpu`), of what `viewer` may read."""
    ids = [workload.pk for workload in page_of_workloads]
    gpus = devices_by_workload(ids, viewer)
    summarized = summarize(Workload.objects.filter(pk__in=ids), viewer)
    by_id = {workload.pk: workload for workload in summarized}
    return [(by_id[pk], gpus.get(pk, [])) for pk in ids]


def task_summaries(viewer=PUBLIC) -> list[dict]:
    """Per task name: how many workloads, records and GPUs it has (of what `viewer` may read)."""
    counted = _counted(viewer)
    return list(
        Workload.objects.values("task_name")
        .annotate(
            workload_count=Count("id", distinct=True),
            record_count=Count("records", filter=counted),
            device_count=Count("records__device", distinct=True, filter=counted),
        )
        .order_by("task_name")
    )


def device_summaries(viewer=PUBLIC) -> QuerySet:
    """Devices with how many records and workloads each has (of what `viewer` may read)."""
    counted = _counted(viewer)
    return Device.objects.annotate(
        record_count=Count("records", filter=counted),
        workload_count=Count("records__workload", distinct=True, filter=counted),
    ).order_by("model")


def devices_by_workload(workload_ids: list[int], viewer=PUBLIC) -> dict[int, list[Device]]:
    """The GPUs that have records (that `viewer` may read) of each workload, in one query."""
    pairs = (
        MeasurementRecord.objects.visible_to(viewer).filter(workload_id__in=workload_ids)
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
