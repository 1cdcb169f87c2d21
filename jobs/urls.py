from django.urls import path

from . import network_views, views

app_name = "jobs"
urlpatterns = [
    path("jobs/", views.job_list, name="list"),
    path("jobs/new/", views.submit, name="submit"),
    path("jobs/remeasure/", views.remeasure, name="remeasure"),
    path("jobs/<int:pk>/", views.detail, name="detail"),
    path("jobs/<int:pk>/progress.json", views.progress, name="progress"),
    path("jobs/<int:pk>/cancel/", views.cancel, name="cancel"),
    path("jobs/network/new/", network_views.submit, name="network_submit"),
    path("jobs/network/<int:pk>/", network_views.detail, name="network_detail"),
    path("jobs/network/<int:pk>/progress.json", network_views.progress, name="network_progress"),
    path("jobs/network/<int:pk>/best.log", network_views.best_log, name="network_best_log"),
    path("workers/", views.workers, name="workers"),
    path("profile/", views.profile, name="profile"),
    path("custom-kernels/", views.custom_kernel_list, name="custom_kernels"),
    path("custom-kernels/new/", views.custom_kernel_add, name="custom_kernel_add"),
    path("custom-kernels/<int:pk>/", views.custom_kernel_detail, name="custom_kernel"),
]
