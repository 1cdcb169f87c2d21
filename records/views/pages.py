"""Server-rendered read pages. Each view fetches, calls one records/ function and renders;
`?format=csv` returns the page's table(s) through records.csvout instead."""
from __future__ import annotations

from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, render
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe

from tunerweb.cache import cached
from tunerweb.conditional import conditional

from .. import csvout
from ..charts import devices_chart, roofline_chart, speedups_chart, workload_chart
from ..columns import BATCH_COLUMNS, DEVICE_COLUMNS, HEAD_TO_HEAD_COLUMNS, SPEEDUP_COLUMNS, TASK_COLUMNS, WORKLOAD_COLUMNS
from ..columns import ENVIRONMENT_GROUP_COLUMNS, IMPORT_PROBLEM_COLUMNS, ROOFLINE_COLUMNS
from ..columns import record_columns
from ..code_status import CodeHashes
from ..compare import compare_devices as compare_two_devices
from ..compare import compare_records as compare_many_records
from ..compare import compare_workload as compare_one_workload
from ..diffs import config_diff
from ..environments import environment_groups
from ..filters import CompareDevicesForm, CompareRecordsForm, DiffForm, KnobsForm, LeaderboardForm, RecordFilter
from ..filters import RooflineForm, SpeedupForm
from ..knobs import study_knobs
from ..leaderboards import dashboard_workloads, device_summaries, summarize, task_summaries, workload_rows
from ..models import BEST_ORDER, Baseline, Device, ImportBatch, MeasurementRecord, Workload
from ..permissions import public_read
from ..ranking import best_columns, ranked_columns, with_peak_share
from ..roofline import device_peaks, roofline, with_percent_of_peak
from ..sorting import sorting_from
from ..portability import portability
from ..speedups import speedup_table
from ..standings import leaderboard as workload_leaderboard, ranked_standings, same_shape_bests
from ..versions import leaderboard_key

PAGE_SIZE = 50


def _page(request, items, per_page: int = PAGE_SIZE):
    return Paginator(items, per_page).get_page(request.GET.get("page"))


def _query_without_page(request) -> str:
    """The current filters, to carry into pager links."""
    query = request.GET.copy()
    query.pop("page", None)
    return query.urlencode()


def _param_form(form_class, request, defaults: dict | None = None, **kwargs):
    """A bound form when the query names any of its fields, else an empty one to fill in."""
    if not any(name in request.GET for name in form_class.base_fields):
        return form_class(initial=defaults, **kwargs)
    data = request.GET.copy()
    for name, value in (defaults or {}).items():
        data.setdefault(name, value)
    return form_class(data, **kwargs)


def _status(*problems) -> int:
    return 400 if any(problems) else 200


def _sorted_records(request, records):
    """The records table as `?sort=` asks, and the GPUs' peaks its "% of peak" reads."""
    peaks = device_peaks()
    sorting = sorting_from(request.GET, record_columns(peaks))
    return peaks, sorting, sorting.queryset(records, tiebreak=BEST_ORDER)


@public_read
def home(request):
    search = request.GET.get("q", "")
    sorting = sorting_from(request.GET, WORKLOAD_COLUMNS)
    task_sorting = sorting_from(request.GET, TASK_COLUMNS, name="task_sort")
    workloads = dashboard_workloads(search, sorting, request.user)
    if csvout.wants_csv(request) and not sorting.error:
        return csvout.csv_response(request, "workloads", {
            "workloads": lambda: csvout.workloads_table(summarize(workloads, request.user).iterator()),
        })
    page = _page(request, workloads)
    return render(request, "records/home.html", {
        "search": search, "tasks": task_sorting.rows(task_summaries(request.user)), "page": page,
        "rows": workload_rows(page, request.user), "query": _query_without_page(request),
        "sorting": sorting, "task_sorting": task_sorting, "sort_error": sorting.error or task_sorting.error,
    }, status=_status(sorting.error, task_sorting.error))


@public_read
@conditional
def leaderboard(request, pk: int):
    workload = get_object_or_404(Workload, pk=pk)
    form = LeaderboardForm(request.GET)
    options = form.cleaned_data if form.is_valid() else {}
    if csvout.wants_csv(request):
        board, groups, bests, sorting, best_sorting = _sorted_board(request, workload, options, device_peaks())
        if not (sorting.error or best_sorting.error):
            return csvout.csv_response(request, f"leaderboard-{workload.pk}", {
                "bests": lambda: csvout.standings_table(bests),
                "records": lambda: csvout.standings_table(ranked_standings(board, groups)),
            })
    key = leaderboard_key(workload, request.user, request.GET)
    board = lambda: _board_html(request, workload, form, options)  # noqa: E731
    # A query answered 400 (a bad sort or GPU) is worked out each time: made-up ones must not fill the cache.
    board_html, status, sort_error = cached(key, board, keep=lambda made: made[1] == 200) if key else board()
    return render(request, "records/leaderboard.html", {
        "workload": workload, "board_html": mark_safe(board_html), "sort_error": sort_error,
        "same_shape": same_shape_bests(workload, request.user),
    }, status=status)


def _sorted_board(request, workload, options, peaks):
    """The leaderboard, its ranked groups and bests in the order the query asks, and the two sorts."""
    board = workload_leaderboard(workload, show_changed=options.get("show_changed", False), viewer=request.user)
    sorting = sorting_from(request.GET, ranked_columns(board, peaks, request.user))
    best_sorting = sorting_from(request.GET, best_columns(peaks), name="best_sort")
    return board, sorting.rows(board.ranked(options.get("device"))), best_sorting.rows(board.bests), sorting, best_sorting


def _board_html(request, workload, form, options) -> tuple[str, int, str | None]:
    """The leaderboard's bests and ranked table, the page's status and its sort error: what
    costs a leaderboard page its time."""
    peaks = device_peaks()
    board, groups, bests, sorting, best_sorting = _sorted_board(request, workload, options, peaks)
    page = _page(request, groups)
    html = render_to_string("records/_leaderboard_board.html", {
        "workload": workload, "board": board, "form": form, "page": page, "bests": with_peak_share(bests, peaks),
        "rows": with_peak_share(ranked_standings(board, page), peaks), "first_rank": page.start_index(),
        "peaks": any(peaks.get(best.device.pk) for best in board.bests),
        "query": _query_without_page(request), "sorting": sorting, "best_sorting": best_sorting,
    }, request)
    sort_error = sorting.error or best_sorting.error
    return html, _status(form.errors, sorting.error, best_sorting.error), sort_error


def _with_workload(records, workload):
    """Attach the already-fetched workload so rows need no join and no extra query."""
    for record in records:
        record.workload = workload
        yield record


@public_read
def record_list(request):
    records = RecordFilter(request.GET, queryset=MeasurementRecord.objects.visible_to(request.user))
    peaks, sorting, ordered = _sorted_records(request, records.qs)
    if csvout.wants_csv(request) and not sorting.error:
        return csvout.csv_response(request, "records", {"records": lambda: csvout.records_table(ordered.iterator())})
    page = _page(request, ordered)
    group_by = records.form.cleaned_data.get("group_by") if not records.errors else None
    group_sorting = sorting_from(request.GET, ENVIRONMENT_GROUP_COLUMNS, name="group_sort")
    return render(request, "records/record_list.html", {
        "filter": records, "page": page, "rows": [(record, None) for record in with_percent_of_peak(page, peaks)],
        "first_rank": page.start_index(), "peaks": any(peaks.values()), "group_by": group_by,
        "groups": group_sorting.rows(environment_groups(records.qs, group_by)) if group_by else None,
        "query": _query_without_page(request), "sorting": sorting, "group_sorting": group_sorting,
        "sort_error": sorting.error or group_sorting.error,
    }, status=_status(records.errors, sorting.error, group_sorting.error))


@public_read
def record_detail(request, pk: int):
    readable = MeasurementRecord.objects.visible_to(request.user)
    record = get_object_or_404(readable.select_related("workload", "device", "batch"), pk=pk)
    if csvout.wants_csv(request):
        return csvout.csv_response(request, f"record-{record.pk}", {"record": lambda: csvout.records_table([record])})
    return render(request, "records/record_detail.html", {
        "record": record, "best": readable.filter(workload=record.workload, device=record.device).best(),
        "code_status": CodeHashes().status(record.workload, record.device, record.entity, record.code_hash),
    })


@public_read
def diff(request):
    form = _param_form(DiffForm, request, viewer=request.user)
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
def compare_records(request):
    form = _param_form(CompareRecordsForm, request, viewer=request.user)
    if not form.is_bound or not form.is_valid():
        return render(request, "records/compare_records.html", {"form": form}, status=_status(form.is_bound))
    comparison = compare_many_records(form.cleaned_data["r"])
    only = form.cleaned_data["only"]
    if csvout.wants_csv(request):
        return csvout.csv_response(request, "compare-records", {
            "knobs": lambda: csvout.records_compare_table(comparison, only),
        })
    return render(request, "records/compare_records.html", {
        "form": form, "comparison": comparison, "only": only, "knobs": comparison.shown_knobs(only),
        "ids": "&".join(f"r={record.pk}" for record in comparison.records),
    })


@public_read
def compare_workload(request, pk: int):
    workload = get_object_or_404(Workload, pk=pk)
    comparison = compare_one_workload(workload, request.user)
    if csvout.wants_csv(request):
        return csvout.csv_response(request, f"compare-{workload.pk}", {
            "bests": lambda: csvout.workload_compare_table(comparison),
        })
    return render(request, "records/compare_workload.html", {
        "workload": workload, "comparison": comparison, "chart": workload_chart(comparison),
        "portability": portability(workload),
    })


@public_read
def compare_devices(request):
    form = _param_form(CompareDevicesForm, request)
    context = {"form": form, "devices": Device.objects.all()}
    if not form.is_bound or not form.is_valid():
        return render(request, "records/compare_devices.html", context, status=400 if form.is_bound else 200)
    comparison = compare_two_devices(form.cleaned_data["a"], form.cleaned_data["b"], request.user)
    sorting = sorting_from(request.GET, HEAD_TO_HEAD_COLUMNS)
    comparison.rows = sorting.rows(comparison.rows)
    if csvout.wants_csv(request) and not sorting.error:
        name = f"compare-{comparison.device_a.model}-{comparison.device_b.model}"
        return csvout.csv_response(request, name, {"workloads": lambda: csvout.devices_compare_table(comparison)})
    return render(request, "records/compare_devices.html", {
        **context, "comparison": comparison, "chart": devices_chart(comparison),
        "sorting": sorting, "sort_error": sorting.error,
    }, status=_status(sorting.error))


@public_read
def speedups(request):
    form = _param_form(SpeedupForm, request, defaults={"provider": Baseline.Provider.CUDNN})
    context = {"form": form, "devices": Device.objects.all(), "providers": Baseline.Provider.choices}
    if not form.is_bound or not form.is_valid():
        return render(request, "records/speedups.html", context, status=400 if form.is_bound else 200)
    table = speedup_table(form.cleaned_data["device"], form.cleaned_data["provider"], request.user)
    sorting = sorting_from(request.GET, SPEEDUP_COLUMNS)
    table.rows = sorting.rows(table.rows)
    if csvout.wants_csv(request) and not sorting.error:
        return csvout.csv_response(request, f"speedups-{table.device.model}-{table.provider}", {
            "speedups": lambda: csvout.speedup_rows_table(table),
            "without_baseline": lambda: csvout.without_baseline_table(table),
        })
    return render(request, "records/speedups.html", {
        **context, "table": table, "chart": speedups_chart(table), "sorting": sorting, "sort_error": sorting.error,
    }, status=_status(sorting.error))


@public_read
def knobs(request, pk: int):
    workload = get_object_or_404(Workload, pk=pk)
    form = KnobsForm(request.GET)
    if not form.is_valid():
        return render(request, "records/knobs.html", {"workload": workload, "form": form}, status=400)
    records = workload.records.visible_to(request.user).valid()
    for name in ("device", "batch"):
        if form.cleaned_data[name] is not None:
            records = records.filter(**{name: form.cleaned_data[name]})
    study = study_knobs(records, workload.knob_defaults())
    return render(request, "records/knobs.html", {
        "workload": workload, "form": form, "study": study, "chart": study.chart(),
        "devices": Device.objects.filter(records__workload=workload).distinct(),
    })


@public_read
def roofline_page(request):
    form = _param_form(RooflineForm, request)
    context = {"form": form, "devices": Device.objects.all()}
    if not form.is_bound or not form.is_valid():
        return render(request, "records/roofline.html", context, status=_status(form.is_bound))
    plot = roofline(form.cleaned_data["device"], request.user)
    sorting = sorting_from(request.GET, ROOFLINE_COLUMNS)
    chart = roofline_chart(plot)
    plot.points = sorting.rows(plot.points)
    return render(request, "records/roofline.html", {
        **context, "roofline": plot, "chart": chart, "sorting": sorting, "sort_error": sorting.error,
    }, status=_status(sorting.error))


@public_read
def devices(request):
    sorting = sorting_from(request.GET, DEVICE_COLUMNS)
    listed = sorting.queryset(device_summaries(request.user), tiebreak=("model",))
    if csvout.wants_csv(request) and not sorting.error:
        return csvout.csv_response(request, "devices", {"devices": lambda: csvout.devices_table(listed)})
    return render(request, "records/devices.html", {
        "devices": listed, "sorting": sorting, "sort_error": sorting.error,
    }, status=_status(sorting.error))


@public_read
def batch_list(request):
    sorting = sorting_from(request.GET, BATCH_COLUMNS)
    batches = sorting.queryset(ImportBatch.objects.visible_to(request.user).select_related("created_by"), tiebreak=("-id",))
    if csvout.wants_csv(request) and not sorting.error:
        return csvout.csv_response(request, "imports", {"imports": lambda: csvout.batches_table(batches)})
    return render(request, "records/batch_list.html", {
        "page": _page(request, batches), "query": _query_without_page(request),
        "sorting": sorting, "sort_error": sorting.error,
    }, status=_status(sorting.error))


@public_read
def batch_detail(request, pk: int):
    batch = get_object_or_404(ImportBatch.objects.visible_to(request.user).select_related("created_by"), pk=pk)
    if csvout.wants_csv(request):
        return csvout.csv_response(request, f"import-{batch.pk}", {
            "summary": lambda: csvout.batches_table([batch]),
            "problems": lambda: csvout.problems_table(batch),
        })
    problem_sorting = sorting_from(request.GET, IMPORT_PROBLEM_COLUMNS, name="problem_sort")
    return render(request, "records/batch_detail.html", {
        "batch": batch, "records_now": batch.records.count(), "baselines_now": batch.baselines.count(),
        "problems": problem_sorting.rows(batch.problems), "problem_sorting": problem_sorting,
        "sort_error": problem_sorting.error,
    }, status=_status(problem_sorting.error))
