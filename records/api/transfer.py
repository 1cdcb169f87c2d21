"""JSON API for moving records in and out: log imports, baseline imports, exports as AutoTVM
logs and as Kernel Tuner files (a cache file, T4 results)."""
from __future__ import annotations

from django.http import JsonResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view, inline_serializer
from rest_framework import renderers, serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from ..baselines import FORMATS, BaselineFileError, detect_format, import_baselines
from ..import_formats import import_file
from ..importing import NotALogError
from ..models import ImportBatch
from ..uploads import check_upload_size
from ..views.transfer import export_response, kernel_tuner_response


class LogUploadSerializer(serializers.Serializer):
    file = serializers.FileField(
        help_text="an AutoTVM JSON-lines log (plain or gzip), a Kernel Tuner cache file, T4 results or a Kernel "
                  "Tuner results file; the format is detected", validators=[check_upload_size])
    device = serializers.CharField(required=False, allow_blank=True, max_length=64,
                                   help_text="GPU model of a Kernel Tuner file (needed where it names none)")
    metadata = serializers.FileField(required=False, validators=[check_upload_size],
                                     help_text="for T4 results: its metadata file or the kernel's T1 file")


class BaselineUploadSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="CSV, JSON or engine log of baselines", validators=[check_upload_size])
    format = serializers.ChoiceField(choices=FORMATS, required=False, help_text="default: from the file extension")


class ImportResultSerializer(serializers.Serializer):
    batch = serializers.IntegerField(help_text="id of the import batch")
    file_name = serializers.CharField()
    lines = serializers.IntegerField()
    imported = serializers.IntegerField()
    duplicates = serializers.IntegerField()
    legacy_skipped = serializers.IntegerField(help_text="version 0.1 lines")
    malformed = serializers.IntegerField()
    problems = serializers.ListField(child=serializers.DictField(), help_text="[{line, reason}]")


class BaselineImportResultSerializer(serializers.Serializer):
    batch = serializers.IntegerField()
    file_name = serializers.CharField()
    rows = serializers.IntegerField()
    saved = serializers.IntegerField()
    problems = serializers.ListField(child=serializers.DictField(), help_text="[{line, reason}]")


ERROR = inline_serializer("ImportError", {"detail": serializers.CharField()})


def _upload_error(errors) -> Response:
    """The serializer's first complaint as one `detail` line, like the other API errors."""
    field, messages = next(iter(errors.items()))
    return Response({"detail": f"{field}: {' '.join(str(m) for m in messages)}"}, status=status.HTTP_400_BAD_REQUEST)


class LogImportView(APIView):
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        summary="Import tuning records (AutoTVM log, Kernel Tuner cache, T4 or results file)",
        request={"multipart/form-data": LogUploadSerializer},
        responses={201: ImportResultSerializer, 400: OpenApiResponse(ERROR, description="not a log, or too big")},
        tags=["imports"],
    )
    def post(self, request):
        upload = LogUploadSerializer(data=request.data)
        if not upload.is_valid():
            return _upload_error(upload.errors)
        file = upload.validated_data["file"]
        try:
            result = import_file(file, file.name, user=request.user, source=ImportBatch.Source.UPLOAD,
                                 device=upload.validated_data.get("device"),
                                 metadata=upload.validated_data.get("metadata"))
        except NotALogError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return Response(ImportResultSerializer(result.as_dict()).data, status=status.HTTP_201_CREATED)


class BaselineImportView(APIView):
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        summary="Import baseline times (CSV, JSON or engine log)",
        request={"multipart/form-data": BaselineUploadSerializer},
        responses={201: BaselineImportResultSerializer, 400: OpenApiResponse(ERROR, description="unreadable file")},
        tags=["imports"],
    )
    def post(self, request):
        upload = BaselineUploadSerializer(data=request.data)
        if not upload.is_valid():
            return _upload_error(upload.errors)
        file = upload.validated_data["file"]
        try:
            fmt = upload.validated_data.get("format") or detect_format(file.name)
            result = import_baselines(file, fmt, file_name=file.name, user=request.user, source=ImportBatch.Source.UPLOAD)
        except BaselineFileError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return Response(BaselineImportResultSerializer(result.as_dict()).data, status=status.HTTP_201_CREATED)


class PlainTextRenderer(renderers.BaseRenderer):
    """Lets clients ask for text/plain; the export responses are already text."""

    media_type = "text/plain"
    format = "txt"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return str(data).encode(self.charset)


EXPORT_PARAMETERS = [
    OpenApiParameter("workload", OpenApiTypes.INT, description="workload id"),
    OpenApiParameter("device", OpenApiTypes.STR, description="GPU model, as in -model= (e.g. v100)"),
    OpenApiParameter("batch", OpenApiTypes.INT, description="import batch id"),
    OpenApiParameter("task", OpenApiTypes.STR, description="task name, e.g. conv2d_nchw.cuda"),
]


class ExportView(APIView):
    renderer_classes = [PlainTextRenderer, renderers.JSONRenderer]
    kind: str  # "best" or "records"

    def get(self, request):
        return export_response(request.query_params, self.kind, request.user, error=_json_error)


def _json_error(message: str, status_code: int) -> JsonResponse:
    # Not a DRF Response: the view's first renderer is plain text, for the logs themselves.
    return JsonResponse({"detail": message}, status=status_code)


class BestExportView(ExportView):
    kind = "best"

    @extend_schema(
        summary="Best config per (GPU model, workload) as an AutoTVM log",
        parameters=EXPORT_PARAMETERS,
        responses={(200, "text/plain"): OpenApiTypes.STR, 400: ERROR, 404: ERROR},
        tags=["exports"],
    )
    def get(self, request):
        return super().get(request)


class RecordExportView(ExportView):
    kind = "records"

    @extend_schema(
        summary="Every selected record as an AutoTVM log",
        parameters=EXPORT_PARAMETERS,
        responses={(200, "text/plain"): OpenApiTypes.STR, 400: ERROR, 404: ERROR},
        tags=["exports"],
    )
    def get(self, request):
        return super().get(request)


KERNEL_TUNER_RESPONSES = {
    (200, "application/json"): OpenApiTypes.OBJECT,
    400: OpenApiResponse(ERROR, description="the filters select not exactly one workload on one GPU, or a value is malformed"),
    404: OpenApiResponse(ERROR, description="no such workload, GPU model, task or import batch"),
}


class KernelTunerExportView(APIView):
    """One workload on one GPU, of the records the caller may read, as a Kernel Tuner file."""

    renderer_classes = [renderers.JSONRenderer]
    fmt: str  # records.kernel_tuner_export.FORMATS

    def get(self, request):
        return kernel_tuner_response(request.query_params, self.fmt, request.user, error=_json_error)


KERNEL_TUNER_SCHEMA = {"parameters": EXPORT_PARAMETERS, "responses": KERNEL_TUNER_RESPONSES, "tags": ["exports"]}


@extend_schema_view(get=extend_schema(
    summary="One workload on one GPU as a Kernel Tuner cache file (times in ms; failures as Kernel Tuner's strings)",
    **KERNEL_TUNER_SCHEMA))
class KernelTunerCacheExportView(KernelTunerExportView):
    fmt = "kernel-tuner"


@extend_schema_view(get=extend_schema(
    summary="One workload on one GPU as T4 results (the FAIR autotuning results format 1.0.0)", **KERNEL_TUNER_SCHEMA))
class T4ExportView(KernelTunerExportView):
    fmt = "t4"
