from django.urls import path, register_converter

from ..converters import GPUModelConverter

from . import views

register_converter(GPUModelConverter, "gpu_model")

urlpatterns = [
    path("tasks/", views.TaskListView.as_view(), name="api-tasks"),
    path("workloads/", views.WorkloadListView.as_view(), name="api-workloads"),
    path("workloads/<int:pk>/", views.WorkloadDetailView.as_view(), name="api-workload"),
    path("devices/", views.DeviceListView.as_view(), name="api-devices"),
    path("devices/<gpu_model:model>/", views.DeviceDetailView.as_view(), name="api-device"),
    path("records/", views.RecordListView.as_view(), name="api-records"),
    path("records/<int:pk>/", views.RecordDetailView.as_view(), name="api-record"),
    path("leaderboard/<int:pk>/", views.LeaderboardView.as_view(), name="api-leaderboard"),
    path("diff/", views.DiffView.as_view(), name="api-diff"),
    path("compare/", views.CompareDevicesView.as_view(), name="api-compare-devices"),
    path("compare/<int:pk>/", views.CompareWorkloadView.as_view(), name="api-compare-workload"),
    path("speedups/", views.SpeedupView.as_view(), name="api-speedups"),
]
