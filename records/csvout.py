"""Every page's tables as CSV (`?format=csv`, and `&table=<name>` where a page has several).

Each `*_table` function turns the same objects the page shows into (header, rows);
`csv_response` writes any of them. Numbers use the pages' formats (µs, GFLOPS to one
decimal), so a CSV cell equals what the page shows.
"""
from __future__ import annotations

import csv
import json
from typing import Callable, Iterable, Iterator

from django.http import HttpResponseBadRequest, StreamingHttpResponse

from .compare import DeviceComparison, RecordsComparison, WorkloadComparison
from .diffs import ConfigDiff
from .models import MeasurementRecord
from .speedups import SpeedupTable
from .templatetags.records_format import gflops, usec

Table = tuple[list[str], Iterable[list]]
# Spreadsheets run a cell that starts with one of these as a formula.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def wants_csv(request) -> bool:
    return request.GET.get("format") == "csv"


def _cell(value) -> str:
    text = "" if value is None else str(value)
    if text.startswith(_FORMULA_START) and not _is_number(text):
        return "'" + text
    return text


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


class _Echo:
    def write(self, value: str) -> str:
        return value


def _lines(header: list[str], rows: Iterable[list]) -> Iterator[str]:
    writer = csv.writer(_Echo())
    yield writer.writerow(header)
    for row in rows:
        yield writer.writerow([_cell(value) for value in row])


def csv_response(request, name: str, tables: dict[str, Callable[[], Table]]):
    """The table `?table=` names (the first when absent) as a streamed CSV download."""
    table_name = request.GET.get("table") or next(iter(tables))
    if table_name not in tables:
        return HttpResponseBadRequest(
            f"Unknown table {table_name!r}; this page has: {', '.join(tables)}.", content_type="text/plain"
        )
    header, rows = tables[table_name]()
    response = StreamingHttpResponse(_lines(header, rows), content_type="text/csv; charset=utf-8")
    suffix = "" if len(tables) == 1 else f"-{table_name}"
    response["Content-Disposition"] = f'attachment; filename="{name}{suffix}.csv"'
    return response


def _knobs_json(record: MeasurementRecord) -> str:
    return json.dumps(record.knobs, separators=(",", ":"))


RECORD_HEADER = [
    "rank", "record_id", "task", "shape", "gpu", "replay", "config_index",
    "time_us", "gflops", "error_no", "error", "knobs",
]


def records_table(records: Iterable[MeasurementRecord]) -> Table:
    """Records with their workload and device loaded (select_related)."""
    rows = (
        [
            rank, r.pk, r.workload.task_name, r.workload.shape_summary, r.device.model, r.device.is_replay,
            r.config_index, usec(r.mean_cost) if r.ok else "", gflops(r.gflops) if r.ok else "",
            r.error_no, r.error.label, _knobs_json(r),
        ]
        for rank, r in enumerate(records, start=1)
    )
    return RECORD_HEADER, rows


STANDING_HEADER = [
    "rank", "record_id", "task", "shape", "gpu", "replay", "config_index", "median_us", "min_us", "max_us",
    "n_measurements", "confirmed", "rounds", "cold_median_us", "gflops", "code_status", "tie_with_best", "knobs",
]


def standings_table(standings) -> Table:
    """Configs grouped per GPU and code hash (`records.standings`)."""
    rows = (
        [
            rank, s.pk, s.workload.task_name, s.workload.shape_summary, s.device.model, s.device.is_replay,
            s.config_index, usec(s.median_cost), usec(s.min_cost), usec(s.max_cost), s.n_measurements,
            s.confirmed, s.rounds or "", usec(s.cold.median) if s.cold else "", gflops(s.gflops), s.code_status,
            s.tie_with_best, _knobs_json(s.record),
        ]
        for rank, s in enumerate(standings, start=1)
    )
    return STANDING_HEADER, rows


def workloads_table(workloads) -> Table:
    """Workloads annotated by `leaderboards.summarize`."""
    header = ["workload_id", "task", "shape", "flops", "records", "valid_records", "best_gflops"]
    rows = (
        [w.pk, w.task_name, w.shape_summary, w.flops, w.record_count, w.valid_count, gflops(w.best_gflops)]
        for w in workloads
    )
    return header, rows


def diff_table(diff: ConfigDiff, only_differences: bool) -> Table:
    header = ["knob", f"record_{diff.a.pk}", f"record_{diff.b.pk}", "differs"]
    rows = [
        [row.name, _json_or_empty(row.a), _json_or_empty(row.b), row.differs]
        for row in diff.shown_rows(only_differences)
    ]
    rows.append(["time_us", usec(diff.a.mean_cost), usec(diff.b.mean_cost), diff.a.mean_cost != diff.b.mean_cost])
    return header, rows


def _json_or_empty(value) -> str:
    return "" if value is None else json.dumps(value)


def workload_compare_table(comparison: WorkloadComparison) -> Table:
    header = ["row"] + [device.model for device in comparison.devices] + ["differs"]
    rows = [
        ["record_id"] + [best.pk for best in comparison.bests] + [""],
        ["median_us"] + [usec(best.median_cost) for best in comparison.bests] + [""],
        ["gflops"] + [gflops(best.gflops) for best in comparison.bests] + [""],
    ]
    rows += [[knob.name] + [_json_or_empty(v) for v in knob.values] + [knob.differs] for knob in comparison.knobs]
    return header, rows


def records_compare_table(comparison: RecordsComparison, only_differences: bool) -> Table:
    header = ["row"] + [f"record_{record.pk}" for record in comparison.records] + ["differs"]
    rows = [
        ["gpu"] + [record.device.model for record in comparison.records] + [""],
        ["workload_id"] + [record.workload_id for record in comparison.records] + [""],
        ["time_us"] + [usec(record.mean_cost) for record in comparison.records] + [""],
        ["time_over_first"] + ["" if r is None else f"{r:.3f}" for r in comparison.ratios()] + [""],
    ]
    rows += [[knob.name] + [_json_or_empty(v) for v in knob.values] + [knob.differs]
             for knob in comparison.shown_knobs(only_differences)]
    return header, rows


def devices_compare_table(comparison: DeviceComparison) -> Table:
    a, b = comparison.device_a.model, comparison.device_b.model
    header = ["workload_id", "task", "shape", f"{a}_median_us", f"{b}_median_us", f"speedup_{b}_over_{a}",
              "speedup_low", "speedup_high", "cold_speedup", "rounds"]
    rows = [
        [row.workload.pk, row.workload.task_name, row.workload.shape_summary,
         usec(row.best_a.median_cost), usec(row.best_b.median_cost), f"{row.speedup:.3f}",
         f"{row.warm.low:.3f}", f"{row.warm.high:.3f}", f"{row.cold.value:.3f}" if row.cold else "", row.rounds or ""]
        for row in comparison.rows
    ]
    if comparison.geomean is not None:
        rows.append(["", "geometric mean", "", "", "", f"{comparison.geomean:.3f}", "", "", "", ""])
    return header, rows


def speedup_rows_table(table: SpeedupTable) -> Table:
    header = ["workload_id", "task", "shape", f"{table.provider}_time_us", "tuned_median_us", "speedup",
              "speedup_low", "speedup_high", "cold_speedup", "cold_low", "cold_high", "rounds", "record_id"]
    rows = []
    for row in table.rows:
        cold = row.cold
        rows.append([
            row.workload.pk, row.workload.task_name, row.workload.shape_summary, usec(row.baseline.cost),
            usec(row.best.median_cost), f"{row.speedup:.3f}", f"{row.warm.low:.3f}", f"{row.warm.high:.3f}",
            *([f"{cold.value:.3f}", f"{cold.low:.3f}", f"{cold.high:.3f}"] if cold else ["", "", ""]),
            row.rounds or "", row.best.pk,
        ])
    if table.geomean is not None:
        cold_geomean = f"{table.cold_geomean:.3f}" if table.cold_geomean is not None else ""
        rows.append(["", "geometric mean", "", "", "", f"{table.geomean:.3f}", "", "", cold_geomean, "", "", "", ""])
    return header, rows


def without_baseline_table(table: SpeedupTable) -> Table:
    header = ["workload_id", "task", "shape", "tuned_time_us", "gflops", "record_id"]
    rows = [
        [r.workload.pk, r.workload.task_name, r.workload.shape_summary, usec(r.median_cost), gflops(r.gflops), r.pk]
        for r in table.without_baseline
    ]
    return header, rows


def devices_table(devices) -> Table:
    """Devices annotated with record and workload counts."""
    header = ["model", "name", "replay", "compute_capability", "sm_count", "memory_bytes",
              "driver_version", "cuda_version", "records", "workloads"]
    rows = (
        [d.model, d.name, d.is_replay, d.compute_capability, d.sm_count, d.memory_bytes,
         d.driver_version, d.cuda_version, d.record_count, d.workload_count]
        for d in devices
    )
    return header, rows


def batches_table(batches) -> Table:
    header = ["batch_id", "file_name", "kind", "source", "created_by", "created_at", "lines", "imported",
              "duplicates", "legacy_skipped", "malformed", "problems"]
    rows = (
        [b.pk, b.file_name, b.kind, b.source, b.created_by.username if b.created_by else "", b.created_at.isoformat(),
         b.lines, b.imported, b.duplicates, b.legacy_skipped, b.malformed, len(b.problems)]
        for b in batches
    )
    return header, rows


def problems_table(batch) -> Table:
    header = ["line", "reason"]
    return header, ([p.get("line", p.get("entry")), p.get("reason")] for p in batch.problems)

