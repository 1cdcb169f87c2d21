"""JSON shapes of the read pages. Each serializes an object a records/ module built;
none computes anything the pages do not also get from that module."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from ..models import Baseline, Device, MeasurementRecord, Workload


class DeviceSerializer(serializers.ModelSerializer):
    class Meta:
        model = Device
        fields = ["model", "name", "compute_capability", "sm_count", "memory_bytes",
                  "driver_version", "cuda_version", "is_replay"]


class DeviceSummarySerializer(DeviceSerializer):
    record_count = serializers.IntegerField(read_only=True)
    workload_count = serializers.IntegerField(read_only=True)

    class Meta(DeviceSerializer.Meta):
        fields = DeviceSerializer.Meta.fields + ["record_count", "workload_count"]


class WorkloadSerializer(serializers.ModelSerializer):
    args = serializers.JSONField(read_only=True)
    shape_summary = serializers.CharField(read_only=True)

    class Meta:
        model = Workload
        fields = ["id", "task_name", "args", "shape_summary", "flops", "bytes_moved"]


class WorkloadSummarySerializer(WorkloadSerializer):
    record_count = serializers.IntegerField(read_only=True)
    valid_count = serializers.IntegerField(read_only=True)
    best_gflops = serializers.FloatField(read_only=True, allow_null=True)

    class Meta(WorkloadSerializer.Meta):
        fields = WorkloadSerializer.Meta.fields + ["record_count", "valid_count", "best_gflops"]


class TaskSummarySerializer(serializers.Serializer):
    task_name = serializers.CharField()
    workload_count = serializers.IntegerField()
    record_count = serializers.IntegerField()
    device_count = serializers.IntegerField()


class RecordSerializer(serializers.ModelSerializer):
    device = serializers.SlugRelatedField(slug_field="model", read_only=True)
    device_is_replay = serializers.BooleanField(source="device.is_replay", read_only=True)
    knobs = serializers.JSONField(read_only=True, help_text="knob name to value, in definition order")
    time_us = serializers.SerializerMethodField()
    error = serializers.CharField(source="error.label", read_only=True)

    class Meta:
        model = MeasurementRecord
        fields = ["id", "workload", "device", "device_is_replay", "target", "config_index", "entity", "knobs",
                  "costs", "mean_cost", "time_us", "gflops", "error_no", "error", "error_msg", "all_cost",
                  "timestamp", "tvm_version", "code_hash", "kind", "cache", "rounds", "environment", "batch"]

    def get_time_us(self, record: MeasurementRecord) -> float | None:
        return None if record.mean_cost is None else record.mean_cost * 1e6


class BaselineSerializer(serializers.ModelSerializer):
    device = serializers.SlugRelatedField(slug_field="model", read_only=True)
    time_us = serializers.SerializerMethodField()

    class Meta:
        model = Baseline
        fields = ["workload", "device", "provider", "cost", "time_us", "note", "costs", "cold_cost", "cold_costs",
                  "rounds", "environment", "measured_at"]

    def get_time_us(self, baseline: Baseline) -> float:
        return baseline.cost * 1e6


class SpreadSerializer(serializers.Serializer):
    median = serializers.FloatField(help_text="seconds")
    min = serializers.FloatField()
    max = serializers.FloatField()
    n = serializers.IntegerField()


class StandingSerializer(serializers.Serializer):
    """One config on one GPU with one code hash: all its measurements summarised."""

    id = serializers.IntegerField(source="pk", help_text="its fastest record")
    workload = serializers.IntegerField(source="workload.pk")
    device = serializers.CharField(source="device.model")
    device_is_replay = serializers.BooleanField(source="device.is_replay")
    config_index = serializers.IntegerField()
    code_hash = serializers.CharField(allow_null=True)
    knobs = serializers.JSONField(help_text="knob name to value, in definition order")
    n_measurements = serializers.IntegerField(help_text="the measurements the figures rest on")
    median_cost = serializers.FloatField(help_text="seconds: the confirmed median where confirmations exist")
    min_cost = serializers.FloatField()
    max_cost = serializers.FloatField()
    time_us = serializers.SerializerMethodField(help_text="the median in microseconds")
    gflops = serializers.FloatField(allow_null=True, help_text="at the median")
    confirmed = serializers.BooleanField(help_text="the figures rest on interleaved confirmation rounds")
    rounds = serializers.IntegerField(allow_null=True)
    cold = SpreadSerializer(allow_null=True, help_text="confirmations with L2 flushed before each launch")
    code_status = serializers.ChoiceField(choices=["current", "changed", "unknown"])
    tie_with_best = serializers.BooleanField(help_text="its min-max interval overlaps the best's")
    ties = serializers.IntegerField(help_text="other configs on this GPU whose interval overlaps this one's")
    record = RecordSerializer()

    def get_time_us(self, standing) -> float:
        return standing.median_cost * 1e6


class LeaderboardSerializer(serializers.Serializer):
    workload = WorkloadSerializer()
    show_changed = serializers.BooleanField(help_text="bests may be of code changed since")
    bests = StandingSerializer(many=True, help_text="each GPU's best config, fastest first")


class KnobRowSerializer(serializers.Serializer):
    name = serializers.CharField()
    a = serializers.JSONField(allow_null=True, help_text="null when record a has no such knob")
    b = serializers.JSONField(allow_null=True)
    differs = serializers.BooleanField()


class DiffSerializer(serializers.Serializer):
    a = RecordSerializer()
    b = RecordSerializer()
    same_workload = serializers.BooleanField()
    same_device = serializers.BooleanField()
    ratio = serializers.FloatField(allow_null=True, help_text="time of b / time of a")
    faster = serializers.ChoiceField(choices=["a", "b", "same"], allow_null=True)
    speedup = serializers.FloatField(allow_null=True, help_text="how many times faster the faster one is")
    differing = serializers.SerializerMethodField(help_text="how many knobs differ")
    rows = serializers.SerializerMethodField()

    def get_differing(self, diff) -> int:
        return len(diff.differing_rows)

    @extend_schema_field(KnobRowSerializer(many=True))
    def get_rows(self, diff) -> list:
        rows = diff.shown_rows(self.context.get("only_differences", False))
        return KnobRowSerializer(rows, many=True).data


class KnobAcrossSerializer(serializers.Serializer):
    name = serializers.CharField()
    values = serializers.ListField(child=serializers.JSONField(allow_null=True), help_text="one per entry of bests")
    differs = serializers.BooleanField()


class WorkloadComparisonSerializer(serializers.Serializer):
    workload = WorkloadSerializer()
    devices = DeviceSerializer(many=True)
    bests = StandingSerializer(many=True)
    knobs = KnobAcrossSerializer(many=True)


class RatioSerializer(serializers.Serializer):
    value = serializers.FloatField(help_text="median over median")
    low = serializers.FloatField(help_text="slowest rounds of the numerator's side against the fastest of the other")
    high = serializers.FloatField()


class IntervalsSerializer(serializers.Serializer):
    """A speedup's intervals, warm and cold, and the interleaved rounds it rests on."""

    warm = RatioSerializer()
    cold = RatioSerializer(allow_null=True)
    rounds = serializers.IntegerField(allow_null=True, help_text="interleaved rounds it rests on (both confirmed)")


class HeadToHeadRowSerializer(IntervalsSerializer):
    workload = WorkloadSerializer()
    best_a = StandingSerializer()
    best_b = StandingSerializer()
    speedup = serializers.FloatField(help_text="median time on a / median time on b")


class DeviceComparisonSerializer(serializers.Serializer):
    device_a = DeviceSerializer()
    device_b = DeviceSerializer()
    rows = HeadToHeadRowSerializer(many=True)
    geomean = serializers.FloatField(allow_null=True)


class SpeedupRowSerializer(IntervalsSerializer):
    workload = WorkloadSerializer()
    baseline = BaselineSerializer()
    best = StandingSerializer()
    speedup = serializers.FloatField(help_text="baseline median / tuned median")


class SpeedupTableSerializer(serializers.Serializer):
    device = DeviceSerializer()
    provider = serializers.ChoiceField(choices=Baseline.Provider.choices)
    rows = SpeedupRowSerializer(many=True)
    geomean = serializers.FloatField(allow_null=True)
    cold_geomean = serializers.FloatField(allow_null=True)
    without_baseline = StandingSerializer(many=True, help_text="tuned workloads with no baseline of this provider")
    without_tuned = BaselineSerializer(many=True, help_text="baselines of workloads not tuned on this GPU")
