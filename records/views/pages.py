"""Server-rendered read pages. Each view fetches, calls one records/ function and renders;
`?format=csv` returns the page's table(s) through records.csvout instead."""
from __future__ import annotations

from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, render

from .. import csvout
from ..code_status import CodeHashes
from ..compare import compare_devices as compare_two_devices
from ..compare import compare_workload as compare_one_workload
from ..diffs import config_diff
from ..environments import environment_groups
from ..filters import CompareDevicesForm, DiffForm, LeaderboardForm, RecordFilter, SpeedupForm
from ..leaderboards import device_summaries, search_workloads, summarize, task_summaries, workload_rows
from ..models import Baseline, Device, ImportBatch, MeasurementRecord, Workload
from ..permissions import public_read
from ..speedups import speedup_table
from ..standings import leaderboard as workload_leaderboard, ranked_standings

PAGE_SIZE = 50


def _page(request, items, per_page: int = PAGE_SIZE):
    return Paginator(items, per_page).get_page(request.GET.get("page"))


def _query_without_page(request) -> str:
    """The current filters, to carry into pager links."""
    query = request.GET.copy()
    query.pop("page", None)
    return query.urlencode()


def _param_form(form_class, request, defaults: dict | None = None):
    """A bound form when the query names any of its fields, else an empty one to fill in."""
    if not any(name in request.GET for name in form_class.base_fields):
        return form_class(initial=defaults)
    data = request.GET.copy()
    for name, value in (defaults or {}).items():
        data.setdefault(name, value)
    return form_class(data)


@public_read
def home(request):
    search = request.GET.get("q", "")
    workloads = search_workloads(search)
    if csvout.wants_csv(request):
        return csvout.csv_response(request, "workloads", {
            "workloads": lambda: csvout.workloads_table(summarize(workloads).iterator()),
        })
    page = _page(request, workloads)
    return render(request, "records/home.html", {
        "search": search, "tasks": task_summaries(), "page": page, "rows": workload_rows(page),
        "query": _query_without_page(request),
    })


@public_read
def leaderboard(request, pk: int):
    workload = get_object_or_404(Workload, pk=pk)
    form = LeaderboardForm(request.GET)
    options = form.cleaned_data if form.is_valid() else {}
    board = workload_leaderboard(workload, show_changed=options.get("show_changed", False))
    groups = board.ranked(options.get("device"))
    if csvout.wants_csv(request):
        return csvout.csv_response(request, f"leaderboard-{workload.pk}", {
            "bests": lambda: csvout.standings_table(board.bests),
            "records": lambda: csvout.standings_table(ranked_standings(board, groups)),
        })
    page = _page(request, groups)
    return render(request, "records/leaderboard.html", {
        "workload": workload, "board": board, "form": form, "page": page,
        "rows": list(ranked_standings(board, page)), "first_rank": page.start_index(),
        "query": _query_without_page(request),
    }, status=400 if form.errors else 200)


def _with_workload(records, workload):
    """Attach the already-fetched workload so rows need no join and no extra query."""
    for record in records:
        record.workload = workload
        yield record


@public_read
def record_list(request):
    records = RecordFilter(request.GET, queryset=MeasurementRecord.objects.all())
    if csvout.wants_csv(request):
        return csvout.csv_response(request, "records", {"records": lambda: csvout.records_table(records.qs.iterator())})
    page = _page(request, records.qs)
    group_by = records.form.cleaned_data.get("group_by") if not records.errors else None
    return render(request, "records/record_list.html", {
        "filter": records, "page": page, "rows": [(record, None) for record in page],
        "first_rank": page.start_index(), "group_by": group_by,
        "groups": environment_groups(records.qs, group_by) if group_by else None,
        "query": _query_without_page(request),
    }, status=400 if records.errors else 200)


@public_read
def record_detail(request, pk: int):
    record = get_object_or_404(MeasurementRecord.objects.select_related("workload", "device", "batch"), pk=pk)
    if csvout.wants_csv(request):
        return csvout.csv_response(request, f"record-{record.pk}", {"record": lambda: csvout.records_table([record])})
    return render(request, "records/record_detail.html", {
        "record": record, "best": MeasurementRecord.objects.filter(workload=record.workload, device=record.device).best(),
        "code_status": CodeHashes().status(record.workload, record.device, record.entity, record.code_hash),
    })


@public_read
def diff(request):
    form = _param_form(DiffForm, request)
    if not form.is_bound or not form.is_valid():
        return render(request, "records/diff.html", {"form": form}, status=400 if form.is_bound else 200)
    only = form.cleaned_data["only"]
    result = config_diff(form.cleaned_data["a"], form.cleaned_data["b"])
    if csvout.wants_csv(request):
        return csvout.csv_response(request, f"diff-{result.a.pk}-{result.b.pk}", {
            "knobs": lambda: csvout.diff_table(result, only),
        })
    return render(request, "records/diff.html", {
        "form": form, "diff": result, "only": only, "rows": result.shown_rows(only),
    })


@public_read
def compare_workload(request, pk: int):
    workload = get_object_or_404(Workload, pk=pk)
    comparison = compare_one_workload(workload)
    if csvout.wants_csv(request):
        return csvout.csv_response(request, f"compare-{workload.pk}", {
            "bests": lambda: csvout.workload_compare_table(comparison),
        })
    return render(request, "records/compare_workload.html", {"workload": workload, "comparison": comparison})


@public_read
def compare_devices(request):
    form = _param_form(CompareDevicesForm, request)
    context = {"form": form, "devices": Device.objects.all()}
    if not form.is_bound or not form.is_valid():
        return render(request, "records/compare_devices.html", context, status=400 if form.is_bound else 200)
    comparison = compare_two_devices(form.cleaned_data["a"], form.cleaned_data["b"])
    if csvout.wants_csv(request):
        name = f"compare-{comparison.device_a.model}-{comparison.device_b.model}"
        return csvout.csv_response(request, name, {"workloads": lambda: csvout.devices_compare_table(comparison)})
    return render(request, "records/compare_devices.html", {**context, "comparison": comparison})


@public_read
def speedups(request):
    form = _param_form(SpeedupForm, request, defaults={"provider": Baseline.Provider.CUDNN})
    context = {"form": form, "devices": Device.objects.all(), "providers": Baseline.Provider.choices}
    if not form.is_bound or not form.is_valid():
        return render(request, "records/speedups.html", context, status=400 if form.is_bound else 200)
    table = speedup_table(form.cleaned_data["device"], form.cleaned_data["provider"])
    if csvout.wants_csv(request):
        return csvout.csv_response(request, f"speedups-{table.device.model}-{table.provider}", {
            "speedups": lambda: csvout.speedup_rows_table(table),
            "without_baseline": lambda: csvout.without_baseline_table(table),
        })
    return render(request, "records/speedups.html", {**context, "table": table})


@public_read
def devices(request):
    listed = device_summaries()
    if csvout.wants_csv(request):
        return csvout.csv_response(request, "devices", {"devices": lambda: csvout.devices_table(listed)})
    return render(request, "records/devices.html", {"devices": listed})


@public_read
def batch_list(request):
    batches = ImportBatch.objects.select_related("created_by")
    if csvout.wants_csv(request):
        return csvout.csv_response(request, "imports", {"imports": lambda: csvout.batches_table(batches)})
    return render(request, "records/batch_list.html", {"page": _page(request, batches), "query": ""})


@public_read
def batch_detail(request, pk: int):
    batch = get_object_or_404(ImportBatch.objects.select_related("created_by"), pk=pk)
    if csvout.wants_csv(request):
        return csvout.csv_response(request, f"import-{batch.pk}", {
            "summary": lambda: csvout.batches_table([batch]),
            "problems": lambda: csvout.problems_table(batch),
        })
    return render(request, "records/batch_detail.html", {
        "batch": batch, "records_now": batch.records.count(), "baselines_now": batch.baselines.count(),
    })
