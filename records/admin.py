from django.contrib import admin

from .models import Baseline, Device, ImportBatch, MeasurementRecord, Workload


@admin.register(Device)
class DeviceAdmin(admin.ModelAdmin):
    list_display = ["model", "name", "compute_capability", "sm_count", "is_replay", "created_at"]
    list_filter = ["is_replay"]
    search_fields = ["model", "name"]


@admin.register(Workload)
class WorkloadAdmin(admin.ModelAdmin):
    list_display = ["id", "task_name", "shape_summary", "flops", "created_at"]
    list_filter = ["task_name"]
    search_fields = ["task_name", "args_json"]


@admin.register(ImportBatch)
class ImportBatchAdmin(admin.ModelAdmin):
    list_display = ["id", "file_name", "kind", "source", "created_by", "created_at", "lines", "imported",
                    "duplicates", "legacy_skipped", "malformed"]
    list_filter = ["kind", "source"]
    search_fields = ["file_name", "sha256"]
    raw_id_fields = ["created_by"]
    list_select_related = ["created_by"]


@admin.register(MeasurementRecord)
class MeasurementRecordAdmin(admin.ModelAdmin):
    list_display = ["id", "workload", "device", "config_index", "mean_cost", "gflops", "error_no", "timestamp"]
    list_filter = ["device", "workload__task_name", "error_no"]
    search_fields = ["workload__task_name", "fingerprint", "target"]
    raw_id_fields = ["device", "workload", "batch"]
    list_select_related = ["workload", "device"]
    # A changelist of a million rows must not count them all for every page.
    show_full_result_count = False


@admin.register(Baseline)
class BaselineAdmin(admin.ModelAdmin):
    list_display = ["workload", "device", "provider", "cost", "note", "measured_at"]
    list_filter = ["provider", "device"]
    raw_id_fields = ["workload", "device", "batch"]
    list_select_related = ["workload", "device"]
