from django.urls import path

from . import transfer

urlpatterns = [
    path("imports/", transfer.LogImportView.as_view(), name="api-imports"),
    path("baselines/import/", transfer.BaselineImportView.as_view(), name="api-baselines-import"),
    path("export/best/", transfer.BestExportView.as_view(), name="api-export-best"),
    path("export/records/", transfer.RecordExportView.as_view(), name="api-export-records"),
    path("export/kernel-tuner/", transfer.KernelTunerCacheExportView.as_view(), name="api-export-kernel-tuner"),
    path("export/t4/", transfer.T4ExportView.as_view(), name="api-export-t4"),
]
