from django.urls import path

from . import views

app_name = "jobs"
urlpatterns = [
    path("jobs/", views.job_list, name="list"),
    path("jobs/new/", views.submit, name="submit"),
    path("jobs/remeasure/", views.remeasure, name="remeasure"),
    path("jobs/<int:pk>/", views.detail, name="detail"),
    path("jobs/<int:pk>/progress.json", views.progress, name="progress"),
    path("jobs/<int:pk>/cancel/", views.cancel, name="cancel"),
    path("workers/", views.workers, name="workers"),
    path("profile/", views.profile, name="profile"),
    path("custom-kernels/", views.custom_kernel_list, name="custom_kernels"),
    path("custom-kernels/new/", views.custom_kernel_add, name="custom_kernel_add"),
    path("custom-kernels/<int:pk>/", views.custom_kernel_detail, name="custom_kernel"),
]
