"""The dashboard and a workload's leaderboard: who is best where, and everything ranked.

The best rule itself is `RecordQuerySet` (records/models.py); this module only chooses
what to ask it and shapes the answers for pages, the API and CSV.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from django.db.models import Count, Max, Q, QuerySet

from .models import BEST_ORDER, Device, MeasurementRecord, Workload, valid_filter

_VALID = valid_filter("records__")


def workload_bests(workload: Workload) -> list[MeasurementRecord]:
    """Each GPU's best record of `workload`, fastest GPU first.

    One indexed LIMIT 1 query per GPU model (`RecordQuerySet.best`) rather than one window
    over all the workload's records: a workload with half a million records still
    answers in milliseconds, and GPU models are few.
    """
    bests = [MeasurementRecord.objects.filter(workload=workload, device=device).best() for device in Device.objects.all()]
    return sorted((best for best in bests if best is not None), key=lambda r: tuple(getattr(r, f) for f in BEST_ORDER))


def workload_ranking(workload: Workload) -> QuerySet:
    """Every error-free record of `workload`, fastest first, with its device in the same query."""
    return MeasurementRecord.objects.filter(workload=workload).valid().ranked().select_related("device")


@dataclass
class Leaderboard:
    workload: Workload
    bests: list[MeasurementRecord]

    @property
    def best_by_device(self) -> dict[int, MeasurementRecord]:
        """Device id to its best record: lets each ranked row link to a diff without a query."""
        return {record.device_id: record for record in self.bests}

    @property
    def devices(self) -> list[Device]:
        return [record.device for record in self.bests]


def leaderboard(workload: Workload) -> Leaderboard:
    return Leaderboard(workload=workload, bests=workload_bests(workload))


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
