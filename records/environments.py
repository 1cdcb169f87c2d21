"""What measured a record: its environment's fields, as filters and as groups on the records page.

Records made by the engine keep the GPU board (its UUID), driver, CUDA runtime, NVRTC and
CuPy versions and the SM clock at the start of the batch (`MeasurementRecord.environment`);
imports without one group under "not recorded".
"""
from __future__ import annotations

import django_filters
from django.db.models import Count, Max, Min, QuerySet

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
    field = f"environment__{key}"
    rows = (
        records.order_by().values(field)
        .annotate(n=Count("id"), fastest=Min("mean_cost"), slowest=Max("mean_cost"))
        .order_by(field)
    )
    return [{"value": row[field], "n": row["n"], "fastest": row["fastest"], "slowest": row["slowest"]} for row in rows]
