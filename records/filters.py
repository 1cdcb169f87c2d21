"""What a page's query string may say: FilterSets for record tables and small forms for
the diff, compare and speedup parameters. Pages and the API validate through these."""
from __future__ import annotations

import django_filters
from django import forms

from engine import ErrorNo

from .environments import GROUPABLE, environment_filter
from .leaderboards import search_workloads
from .models import Baseline, Device, ImportBatch, MeasurementRecord, Workload


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


class IntegerFilter(django_filters.NumberFilter):
    """An id: whole numbers only (NumberFilter takes decimals)."""

    field_class = forms.IntegerField


class RecordFilter(django_filters.FilterSet):
    """The ranked record table: valid configs unless `status` asks for errors."""

    task = django_filters.ChoiceFilter(field_name="workload__task_name", choices=task_choices, label="Task", empty_label="all tasks")
    device = django_filters.ModelChoiceFilter(
        field_name="device", to_field_name="model", queryset=Device.objects.all(), label="GPU model",
        empty_label="all GPUs",
    )
    workload = IntegerFilter(field_name="workload_id", label="Workload id")
    shape = django_filters.CharFilter(method="filter_shape", label="Shape contains", help_text="e.g. 1,512,7,7")
    # No empty choice: "valid" comes first and is what an absent status means.
    status = django_filters.ChoiceFilter(choices=Status.CHOICES, method="filter_status", label="Status", empty_label=None)
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


class CompareRecordsForm(forms.Form):
    """`?r=ID&r=ID...`: the records ticked on a table, compared in the order given."""

    MAX_RECORDS = 20
    r = forms.ModelMultipleChoiceField(
        queryset=MeasurementRecord.objects.select_related("workload", "device"),
        label="Records",
        error_messages={
            "invalid_choice": "There is no record with id %(value)s.",
            "invalid_pk_value": "“%(pk)s” is not a record id (a whole number).",
            "required": "Tick at least two records to compare.",
        },
    )
    only = forms.BooleanField(required=False, label="Differences only")

    def clean_r(self):
        found = {record.pk: record for record in self.cleaned_data["r"]}
        ids = list(dict.fromkeys(int(value) for value in self.data.getlist("r")))
        if len(ids) < 2:
            raise forms.ValidationError("Tick at least two records to compare.")
        if len(ids) > self.MAX_RECORDS:
            raise forms.ValidationError(f"Compare at most {self.MAX_RECORDS} records at once ({len(ids)} ticked).")
        return [found[pk] for pk in ids]


class CompareDevicesForm(forms.Form):
    a = _device_field("GPU A")
    b = _device_field("GPU B")

    def clean(self):
        data = super().clean()
        if data.get("a") and data.get("a") == data.get("b"):
            raise forms.ValidationError("Choose two different GPU models.")
        return data


class KnobsForm(forms.Form):
    """Whose records a knob study reads: one GPU's, or one import's or job run's (both optional)."""

    device = forms.ModelChoiceField(
        queryset=Device.objects.all(), to_field_name="model", required=False, label="GPU model",
        error_messages={"invalid_choice": "There is no GPU model of that name."},
    )
    batch = forms.ModelChoiceField(
        queryset=ImportBatch.objects.all(), required=False, label="Import or job run",
        error_messages={"invalid_choice": "There is no import with that id."},
    )


class RooflineForm(forms.Form):
    device = _device_field("GPU")


class SpeedupForm(forms.Form):
    device = _device_field("GPU")
    provider = forms.ChoiceField(choices=Baseline.Provider.choices, initial=Baseline.Provider.CUDNN, label="Baseline")
