from django.contrib import admin

from .models import CustomKernel, Job, JobRun, Worker


class JobRunInline(admin.TabularInline):
    model = JobRun
    extra = 0
    fields = ("device", "state", "trials_done", "best_gflops", "worker", "attempts", "started_at", "finished_at")
    readonly_fields = fields

    def get_queryset(self, request):
        return super().get_queryset(request).with_figures().select_related("worker")


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ("id", "owner", "workload", "tuner", "n_trial", "created_at")
    list_filter = ("tuner",)
    inlines = [JobRunInline]
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
