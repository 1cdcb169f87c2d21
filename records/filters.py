"""What a page's query string may say: FilterSets for record tables and small forms for
the diff, compare and speedup parameters. Pages and the API validate through these."""
from __future__ import annotations

import django_filters
from django import forms

from engine import ErrorNo

from .environments import GROUPABLE, environment_filter
from .leaderboards import search_workloads
from .models import Baseline, Device, MeasurementRecord, Workload


def task_choices() -> list[tuple[str, str]]:
    names = Workload.objects.order_by("task_name").values_list("task_name", flat=True).distinct()
    return [(name, name) for name in names]


class Status:
    VALID = "valid"
    ERRORS = "errors"
    ALL = "all"
    CHOICES = [(VALID, "valid (no error)"), (ERRORS, "any error"), (ALL, "all")] + [
        (str(int(e)), f"{int(e)} {e.label}") for e in ErrorNo if e != ErrorNo.NO_ERROR
    ]


class RecordFilter(django_filters.FilterSet):
    """The ranked record table: valid configs unless `status` asks for errors."""

    task = django_filters.ChoiceFilter(field_name="workload__task_name", choices=task_choices, label="Task", empty_label="all tasks")
    device = django_filters.ModelChoiceFilter(
        field_name="device", to_field_name="model", queryset=Device.objects.all(), label="GPU model",
        empty_label="all GPUs",
    )
    workload = django_filters.NumberFilter(field_name="workload_id", label="Workload id")
    shape = django_filters.CharFilter(method="filter_shape", label="Shape contains", help_text="e.g. 1,512,7,7")
    status = django_filters.ChoiceFilter(choices=Status.CHOICES, method="filter_status", label="Status", empty_label="valid (no error)")
    kind = django_filters.ChoiceFilter(choices=MeasurementRecord.Kind.choices, label="Kind", empty_label="any kind")
    cache = django_filters.ChoiceFilter(choices=MeasurementRecord.Cache.choices, label="L2", empty_label="warm or cold")
    gpu_uuid = environment_filter("gpu_uuid", "GPU board (UUID)")
    driver = environment_filter("driver", "Driver")
    cuda_runtime = environment_filter("cuda_runtime", "CUDA runtime")
    nvrtc = environment_filter("nvrtc", "NVRTC")
    cupy = environment_filter("cupy", "CuPy")
    group_by = django_filters.ChoiceFilter(choices=GROUPABLE, method="keep_all", label="Group by",
                                           empty_label="no grouping")

    class Meta:
        model = MeasurementRecord
        fields = ["task", "device", "workload", "shape", "status", "kind", "cache", "gpu_uuid", "driver",
                  "cuda_runtime", "nvrtc", "cupy", "group_by"]

    def filter_shape(self, queryset, name, value):
        # args_json is canonical JSON without spaces, so "[1, 512, 7, 7]" finds "[1,512,7,7]".
        return queryset.filter(workload__args_json__icontains=value.replace(" ", ""))

    def keep_all(self, queryset, name, value):
        return queryset  # group_by shapes the page's summary, not which rows match

    def filter_status(self, queryset, name, value):
        return queryset  # applied in filter_queryset, which also covers the empty default

    def filter_queryset(self, queryset):
        queryset = super().filter_queryset(queryset)
        status = self.form.cleaned_data.get("status") or Status.VALID
        if status == Status.VALID:
            queryset = queryset.valid()
        elif status == Status.ERRORS:
            queryset = queryset.exclude(error_no=ErrorNo.NO_ERROR)
        elif status != Status.ALL:
            queryset = queryset.filter(error_no=int(status))
        return queryset.ranked().select_related("device", "workload")


class LeaderboardForm(forms.Form):
    """A leaderboard's options: the ranked table's GPU, and whether bests may be configs
    whose code changed since they were measured."""

    device = forms.ModelChoiceField(
        queryset=Device.objects.all(), to_field_name="model", required=False, label="GPU model",
        error_messages={"invalid_choice": "There is no GPU model of that name."},
    )
    show_changed = forms.BooleanField(required=False, label="Bests may be of code changed since")


class WorkloadFilter(django_filters.FilterSet):
    task = django_filters.CharFilter(field_name="task_name", label="Task")
    q = django_filters.CharFilter(method="filter_search", label="Search task or shape")

    class Meta:
        model = Workload
        fields = ["task", "q"]

    def filter_search(self, queryset, name, value):
        return search_workloads(value, queryset)


def _record_field(label: str) -> forms.ModelChoiceField:
    return forms.ModelChoiceField(
        queryset=MeasurementRecord.objects.select_related("workload", "device"),
        label=label,
        error_messages={"invalid_choice": "There is no record with that id."},
    )


def _device_field(label: str) -> forms.ModelChoiceField:
    return forms.ModelChoiceField(
        queryset=Device.objects.all(),
        to_field_name="model",
        label=label,
        error_messages={"invalid_choice": "There is no GPU model of that name."},
    )


class DiffForm(forms.Form):
    a = _record_field("Record A")
    b = _record_field("Record B")
    only = forms.BooleanField(required=False, label="Differences only")


class CompareDevicesForm(forms.Form):
    a = _device_field("GPU A")
    b = _device_field("GPU B")

    def clean(self):
        data = super().clean()
        if data.get("a") and data.get("a") == data.get("b"):
            raise forms.ValidationError("Choose two different GPU models.")
        return data


class SpeedupForm(forms.Form):
    device = _device_field("GPU")
    provider = forms.ChoiceField(choices=Baseline.Provider.choices, initial=Baseline.Provider.CUDNN, label="Baseline")
