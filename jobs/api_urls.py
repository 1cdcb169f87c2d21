from django.urls import path

from tunerweb.conditional import conditional

from . import api, network_api

urlpatterns = [
    path("jobs/", api.JobListCreate.as_view(), name="api-jobs"),
    path("jobs/<int:pk>/", conditional(api.JobDetail.as_view()), name="api-job"),
    path("jobs/<int:pk>/cancel/", api.JobCancel.as_view(), name="api-job-cancel"),
    path("network-jobs/", network_api.NetworkJobListCreate.as_view(), name="api-network-jobs"),
    path("network-jobs/<int:pk>/", network_api.NetworkJobDetail.as_view(), name="api-network-job"),
    path("network-jobs/<int:pk>/best.log", network_api.NetworkJobBestLog.as_view(), name="api-network-job-best-log"),
    path("network-jobs/<int:pk>/cancel/", network_api.NetworkJobCancel.as_view(), name="api-network-job-cancel"),
    path("custom-kernels/", api.CustomKernelCreate.as_view(), name="api-custom-kernels"),
]
