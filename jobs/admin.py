from django.contrib import admin

from .models import CustomKernel, Job, JobRun, NetworkTask, Worker


class NetworkTaskInline(admin.TabularInline):
    model = NetworkTask
    extra = 0
    fields = ("position", "label", "workload", "weight")
    readonly_fields = fields


class JobRunInline(admin.TabularInline):
    model = JobRun
    extra = 0
    fields = ("device", "task", "state", "trials_done", "trials_allotted", "best_gflops", "worker", "attempts",
              "started_at", "finished_at")
    readonly_fields = fields

    def get_queryset(self, request):
        return super().get_queryset(request).with_figures().select_related("worker", "task")


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ("id", "kind", "owner", "workload", "preset", "tuner", "n_trial", "created_at")
    list_filter = ("kind", "tuner")
    inlines = [NetworkTaskInline, JobRunInline]
    # Hundreds of workloads: a search box, not a dropdown of every one.
    autocomplete_fields = ("workload",)


@admin.register(Worker)
class WorkerAdmin(admin.ModelAdmin):
    list_display = ("name", "queue", "is_replay", "last_heartbeat", "status")
    list_filter = ("queue", "is_replay")


@admin.register(CustomKernel)
class CustomKernelAdmin(admin.ModelAdmin):
    list_display = ("name", "workload", "added_by", "added_at")
    raw_id_fields = ("workload",)
