"""What measured a record: its environment's fields, as filters and as groups on the records page.

Records made by the engine keep the GPU board (its UUID), driver, CUDA runtime, NVRTC and
CuPy versions and the SM clock at the start of the batch (`MeasurementRecord.environment`);
imports without one group under "not recorded".
"""
from __future__ import annotations

import django_filters
from django.db.models import Count, Max, Min, QuerySet
from django.db.models.fields.json import KT

# The fields a records page filters and groups by: environment key -> label.
GROUPABLE = [
    ("gpu_uuid", "GPU board (UUID)"), ("driver", "driver"), ("cuda_runtime", "CUDA runtime"),
    ("nvrtc", "NVRTC"), ("cupy", "CuPy"), ("sm_clock_mhz", "SM clock (MHz)"),
]


def environment_filter(key: str, label: str) -> django_filters.CharFilter:
    return django_filters.CharFilter(field_name=f"environment__{key}", label=label)


def environment_groups(records: QuerySet, key: str) -> list[dict]:
    """Per value of environment field `key` among `records`: how many, and the fastest and
    slowest valid time (seconds)."""
    if key not in dict(GROUPABLE):
        raise ValueError(f"cannot group by {key!r}; choose one of {', '.join(dict(GROUPABLE))}")
    # As text on every database (SQLite would read a version "590.10" back as the number 590.1).
    rows = (
        records.order_by().annotate(value=KT(f"environment__{key}")).values("value")
        .annotate(n=Count("id"), fastest=Min("mean_cost"), slowest=Max("mean_cost"))
        .order_by("value")
    )
    return [{"value": row["value"], "n": row["n"], "fastest": row["fastest"], "slowest": row["slowest"]} for row in rows]
