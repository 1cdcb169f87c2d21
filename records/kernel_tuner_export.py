"""Records out as Kernel Tuner files: a cache file or T4 results of one workload on one GPU.

Kernel Tuner's own reader loads what this writes (tests/test_kernel_tuner_export.py), and
tunerweb reads it back as the same records. A workload of another task (conv2d, gemm) is
written with its knobs as tunable parameters and carries its own identity, so it comes
back onto that workload.
"""
from __future__ import annotations

import json

from engine import kernel_tuner_cache_document, kernel_tuner_export_view, kernel_tuner_t4_document

from .exporting import ExportFilter, ExportFilterError
from .models import Device

FORMATS = {"kernel-tuner": kernel_tuner_cache_document, "t4": kernel_tuner_t4_document}


def kernel_tuner_text(selection: ExportFilter, fmt: str) -> tuple[str, int]:
    """The file's text and how many records it holds; ExportFilterError when the selection is not
    exactly one workload on one GPU (a Kernel Tuner file holds one kernel on one device)."""
    if fmt not in FORMATS:
        raise ExportFilterError(f"format {fmt!r} is not one of autotvm, {', '.join(FORMATS)}")
    records = selection.records()
    pairs = list(records.order_by().values_list("workload_id", "device_id").distinct()[:2])
    if len(pairs) != 1:
        what = "no records" if not pairs else "several workloads or GPUs"
        raise ExportFilterError(f"a Kernel Tuner file holds one workload on one GPU, and {selection.describe()} "
                                f"selects {what}: name a workload (workload id or task) and a GPU model")
    rows = records.select_related("workload").order_by("id")
    engine_records = [row.to_record() for row in rows.iterator(chunk_size=2000)]
    workload, origin, fitting = kernel_tuner_export_view(engine_records)
    device = Device.objects.get(pk=pairs[0][1])
    document = FORMATS[fmt](workload, device.name or device.model, fitting, origin)
    return json.dumps(document, indent=None), len(fitting)


def file_name(selection: ExportFilter, fmt: str) -> str:
    return selection.file_name(f"{fmt}").removesuffix(".log") + ".json"
