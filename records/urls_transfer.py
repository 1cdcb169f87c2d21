from django.urls import path

from .views import transfer

urlpatterns = [
    path("imports/upload/", transfer.upload, name="upload"),
    path("baselines/upload/", transfer.baseline_upload, name="baseline_upload"),
    path("export/best.log", transfer.download_best, name="download_best"),
    path("export/records.log", transfer.download_records, name="download_records"),
    path("export/kernel-tuner.json", transfer.download_kernel_tuner, {"fmt": "kernel-tuner"}, name="download_kernel_tuner"),
    path("export/t4.json", transfer.download_kernel_tuner, {"fmt": "t4"}, name="download_t4"),
]
