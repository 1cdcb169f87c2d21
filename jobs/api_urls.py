from django.urls import path

from . import api

urlpatterns = [
    path("jobs/", api.JobListCreate.as_view(), name="api-jobs"),
    path("jobs/<int:pk>/", api.JobDetail.as_view(), name="api-job"),
    path("jobs/<int:pk>/cancel/", api.JobCancel.as_view(), name="api-job-cancel"),
    path("custom-kernels/", api.CustomKernelCreate.as_view(), name="api-custom-kernels"),
]
