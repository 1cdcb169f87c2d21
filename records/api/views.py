"""The read pages as JSON. Same records/ functions and filters as the pages; bad
query parameters answer 400 with the form's messages."""
from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from ..compare import compare_devices, compare_workload
from ..diffs import config_diff
from ..filters import CompareDevicesForm, DiffForm, LeaderboardForm, RecordFilter, SpeedupForm, WorkloadFilter
from ..leaderboards import device_summaries, summarize, task_summaries
from ..models import Baseline, MeasurementRecord, Workload
from ..speedups import speedup_table
from ..standings import leaderboard
from . import serializers as s


def _valid(form_class, request, defaults: dict | None = None):
    data = request.query_params.copy()
    for name, value in (defaults or {}).items():
        data.setdefault(name, value)
    form = form_class(data)
    if not form.is_valid():
        raise ValidationError(form.errors)
    return form.cleaned_data


class TaskListView(generics.GenericAPIView):
    """Task names with their workload, record and GPU counts (the dashboard's first table)."""

    serializer_class = s.TaskSummarySerializer
    pagination_class = None

    def get(self, request):
        return Response(self.get_serializer(task_summaries(), many=True).data)


class WorkloadListView(generics.ListAPIView):
    """Workloads with record counts and best GFLOPS; `q` searches task name or shape."""

    serializer_class = s.WorkloadSummarySerializer
    filterset_class = WorkloadFilter
    queryset = Workload.objects.order_by("task_name", "id")

    def paginate_queryset(self, queryset):
        # Count and slice plain workloads; summarize only the page's.
        page = super().paginate_queryset(queryset)
        return list(summarize(Workload.objects.filter(pk__in=[workload.pk for workload in page])))


class WorkloadDetailView(generics.RetrieveAPIView):
    serializer_class = s.WorkloadSummarySerializer

    def get_queryset(self):
        return summarize(Workload.objects.all())


class DeviceListView(generics.ListAPIView):
    serializer_class = s.DeviceSummarySerializer
    pagination_class = None

    def get_queryset(self):
        return device_summaries()


class DeviceDetailView(generics.RetrieveAPIView):
    serializer_class = s.DeviceSummarySerializer
    lookup_field = "model"

    def get_queryset(self):
        return device_summaries()


class RecordListView(generics.ListAPIView):
    """Records ranked by time: valid ones unless `status` asks for errors."""

    serializer_class = s.RecordSerializer
    filterset_class = RecordFilter
    queryset = MeasurementRecord.objects.all()


class RecordDetailView(generics.RetrieveAPIView):
    serializer_class = s.RecordSerializer
    queryset = MeasurementRecord.objects.select_related("device")


class LeaderboardView(generics.GenericAPIView):
    """Each GPU's best config of a workload, with its spread, code status and ties.
    The records themselves are /api/records/?workload=<pk>."""

    serializer_class = s.LeaderboardSerializer
    queryset = Workload.objects.all()

    @extend_schema(parameters=[
        OpenApiParameter("show_changed", OpenApiTypes.BOOL, description="bests may be of code changed since"),
    ])
    def get(self, request, pk: int):
        workload = get_object_or_404(Workload, pk=pk)
        params = _valid(LeaderboardForm, request)
        return Response(self.get_serializer(leaderboard(workload, show_changed=params["show_changed"])).data)


class DiffView(generics.GenericAPIView):
    """Two records knob by knob, with the ratio of their times."""

    serializer_class = s.DiffSerializer

    @extend_schema(parameters=[
        OpenApiParameter("a", OpenApiTypes.INT, required=True, description="record id"),
        OpenApiParameter("b", OpenApiTypes.INT, required=True, description="record id"),
        OpenApiParameter("only", OpenApiTypes.BOOL, description="only the knobs that differ"),
    ])
    def get(self, request):
        params = _valid(DiffForm, request)
        diff = config_diff(params["a"], params["b"])
        return Response(s.DiffSerializer(diff, context={"only_differences": params["only"]}).data)


class CompareWorkloadView(generics.GenericAPIView):
    """One workload's best config on every GPU, knobs aligned."""

    serializer_class = s.WorkloadComparisonSerializer
    queryset = Workload.objects.all()

    @extend_schema(operation_id="compare_workload")
    def get(self, request, pk: int):
        workload = get_object_or_404(Workload, pk=pk)
        return Response(self.get_serializer(compare_workload(workload)).data)


class CompareDevicesView(generics.GenericAPIView):
    """Every workload two GPUs both have bests for, with b's speedup over a and the geometric mean."""

    serializer_class = s.DeviceComparisonSerializer

    @extend_schema(operation_id="compare_devices", parameters=[
        OpenApiParameter("a", OpenApiTypes.STR, required=True, description="GPU model, e.g. v100"),
        OpenApiParameter("b", OpenApiTypes.STR, required=True, description="GPU model"),
    ])
    def get(self, request):
        params = _valid(CompareDevicesForm, request)
        return Response(self.get_serializer(compare_devices(params["a"], params["b"])).data)


class SpeedupView(generics.GenericAPIView):
    """Baseline time against best tuned time per workload on one GPU, with the geometric mean."""

    serializer_class = s.SpeedupTableSerializer

    @extend_schema(parameters=[
        OpenApiParameter("device", OpenApiTypes.STR, required=True, description="GPU model"),
        OpenApiParameter("provider", OpenApiTypes.STR, enum=Baseline.Provider.values,
                         description="baseline provider (default cudnn)"),
    ])
    def get(self, request):
        params = _valid(SpeedupForm, request, defaults={"provider": Baseline.Provider.CUDNN})
        return Response(self.get_serializer(speedup_table(params["device"], params["provider"])).data)
