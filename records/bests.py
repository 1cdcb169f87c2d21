"""AutoTVM's best-config rule as one query: per (workload, device), the error-free
record of lowest mean cost; a tie keeps the earlier measurement.

Every page, API endpoint and download that speaks of "the best" goes through here.
"""
from __future__ import annotations

from django.db.models import F, QuerySet, Window
from django.db.models.functions import RowNumber

from .models import MeasurementRecord
from .visibility import PUBLIC

BEST_ORDER = ("mean_cost", "timestamp", "id")


def valid_records(records: QuerySet | None = None) -> QuerySet:
    records = MeasurementRecord.objects.all() if records is None else records
    return records.filter(error_no=0, mean_cost__isnull=False)


def best_records(records: QuerySet | None = None) -> QuerySet:
    """The best record of each (workload, device) among `records` (all when None)."""
    # Rank only the narrow indexed columns, then fetch the winners by key: ranking whole
    # rows (with their joins) made PostgreSQL sort every candidate row on disk.
    winners = (
        valid_records(records)
        .annotate(
            rank=Window(
                RowNumber(),
                partition_by=[F("workload_id"), F("device_id")],
                order_by=[F(name).asc() for name in BEST_ORDER],
            )
        )
        .filter(rank=1)
        .values("pk")
    )
    return (
        MeasurementRecord.objects.filter(pk__in=winners)
        .select_related("workload", "device")
        .order_by("workload_id", "mean_cost")
    )


def best_of(records: QuerySet) -> MeasurementRecord | None:
    """The single best record among `records` (one workload's, typically)."""
    return valid_records(records).order_by(*BEST_ORDER).select_related("workload", "device").first()


def best_config_for(workload, device, viewer=PUBLIC) -> MeasurementRecord | None:
    """The best record of `workload` on `device` among those `viewer` may read."""
    return best_of(MeasurementRecord.objects.visible_to(viewer).filter(workload=workload, device=device))
