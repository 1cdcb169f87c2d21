"""Jobs through the API: `POST /api/jobs/` submits, `GET /api/jobs/<id>/` reports state and
progress, `POST /api/jobs/<id>/cancel/` cancels; staff add a custom kernel with
`POST /api/custom-kernels/` ({"name", "spec"}). Authenticate with `Authorization: Token <key>`
(profile page or `manage.py create_token USER`). The rules are jobs.submission's and
jobs.custom_kernels'."""
from __future__ import annotations

from django.db.models import Prefetch
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.pagination import PageNumberPagination
from rest_framework.permissions import IsAdminUser, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from .custom_kernels import CustomKernelError, add_custom_kernel, check_new_kernel
from .models import Job, JobKind, JobRun
from .progress import job_progress, job_summary
from .submission import SEED_MAX, check_idempotency_key, check_remeasure_request, check_request, submit_job


class JobRequestSerializer(serializers.Serializer):
    template = serializers.CharField(help_text="template (task name), e.g. conv2d_nchw.cuda")
    preset = serializers.CharField(required=False, allow_blank=True, default="", help_text="workload preset, e.g. C12")
    args = serializers.JSONField(required=False, default=None, help_text="args as in a log's input, if no preset")
    tuner = serializers.CharField(default="xgb")
    n_trial = serializers.IntegerField(help_text="trial budget per GPU")
    early_stopping = serializers.IntegerField(required=False, allow_null=True, default=None)
    gpus = serializers.ListField(child=serializers.CharField(), help_text="GPU models, e.g. [\"h200\"]")
    seed = serializers.IntegerField(required=False, allow_null=True, default=None, min_value=0, max_value=SEED_MAX)
    private = serializers.BooleanField(default=False, help_text="only you and staff read the job's records")
    top_k = serializers.IntegerField(required=False, allow_null=True, default=None,
                                     help_text="distinct configs confirmed when the run ends (0: none; default 5)")
    rounds = serializers.IntegerField(required=False, allow_null=True, default=None,
                                      help_text="interleaved confirmation rounds (at least 5)")

    def validate(self, data):
        return check_request(**data)


def submission_response(submission, body: dict) -> Response:
    """201 with the job's progress (200: an earlier request with its Idempotency-Key made it); 503 naming the task queue's trouble when it is down (the job is kept)."""
    if submission.queue_errors:
        return Response({"detail": " ".join(submission.queue_errors), "job": body},
                        status=status.HTTP_503_SERVICE_UNAVAILABLE)
    return Response(body, status=status.HTTP_201_CREATED if submission.created else status.HTTP_200_OK)


class RemeasureRequestSerializer(serializers.Serializer):
    """`{"kind": "remeasure", ...}`: configs measured again by the confirmation protocol."""

    kind = serializers.ChoiceField(choices=["remeasure"])
    workload = serializers.IntegerField(help_text="workload id")
    from_batch = serializers.IntegerField(required=False, allow_null=True, default=None,
                                          help_text="an import batch: its best configs of the workload")
    from_device = serializers.CharField(required=False, allow_null=True, default=None,
                                        help_text="a GPU model: the top-k configs of its leaderboard")
    top_k = serializers.IntegerField(required=False, allow_null=True, default=None)
    rounds = serializers.IntegerField(required=False, allow_null=True, default=None)
    gpus = serializers.ListField(child=serializers.CharField(), help_text="GPU models to measure on")

    def validate(self, data):
        data = dict(data)
        data.pop("kind")
        return check_remeasure_request(**data)


IDEMPOTENCY_HEADER = OpenApiParameter(
    "Idempotency-Key", OpenApiTypes.STR, OpenApiParameter.HEADER,
    description="any string of yours (at most 128 characters): a retry with the same key returns "
                "the job the first request made instead of making another",
)
SUBMIT_RESPONSES = {
    201: OpenApiTypes.OBJECT,
    200: OpenApiResponse(OpenApiTypes.OBJECT, description="the job an earlier request with this Idempotency-Key made"),
    400: OpenApiResponse(OpenApiTypes.OBJECT, description="a field is wrong; the body names it and says why"),
    503: OpenApiResponse(OpenApiTypes.OBJECT, description="the job is saved and queued, but the task queue is unreachable"),
}


def idempotency_key_of(request) -> str:
    """The request's Idempotency-Key header ("" without one), or ValidationError (a JSON 400)."""
    return check_idempotency_key(request.headers.get("Idempotency-Key", ""))


class JobPages(PageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200


class JobListCreate(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(operation_id="jobs_list", responses={200: OpenApiTypes.OBJECT})
    def get(self, request):
        """Newest first, a page at a time (`?page=N&page_size=M`); each job's full progress is at its own URL."""
        jobs = Job.objects.visible_to(request.user).exclude(kind=JobKind.NETWORK).select_related("workload", "owner").prefetch_related(
            Prefetch("runs", queryset=JobRun.objects.with_figures())
        )
        paginator = JobPages()
        page = paginator.paginate_queryset(jobs, request, view=self)
        return paginator.get_paginated_response([job_summary(job, job.runs.all()) for job in page])

    @extend_schema(
        operation_id="jobs_create",
        request=JobRequestSerializer,
        description="A tuning job; or, with `\"kind\": \"remeasure\"` (RemeasureRequestSerializer's fields), "
                    "a re-measure job.",
        parameters=[IDEMPOTENCY_HEADER],
        responses=SUBMIT_RESPONSES,
    )
    def post(self, request):
        is_remeasure = isinstance(request.data, dict) and request.data.get("kind") == "remeasure"
        serializer = (RemeasureRequestSerializer if is_remeasure else JobRequestSerializer)(data=request.data)
        serializer.is_valid(raise_exception=True)
        submission = submit_job(request.user, serializer.validated_data, idempotency_key=idempotency_key_of(request))
        return submission_response(submission, job_progress(submission.job))


class JobDetail(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request, pk: int):
        jobs = Job.objects.visible_to(request.user).exclude(kind=JobKind.NETWORK).select_related("workload", "owner")
        return Response(job_progress(get_object_or_404(jobs, pk=pk)))


class JobCancel(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses={200: OpenApiTypes.OBJECT})
    def post(self, request, pk: int):
        job = get_object_or_404(Job.objects.visible_to(request.user).exclude(kind=JobKind.NETWORK), pk=pk)
        job.cancel(by=request.user.username)
        return Response(job_progress(job))


class CustomKernelSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    spec = serializers.JSONField(help_text="the kernel spec (engine/templates/custom.py), source included")

    def validate(self, data):
        try:
            return {"name": check_new_kernel(data["name"], data["spec"]), "spec": data["spec"]}
        except CustomKernelError as exc:
            raise serializers.ValidationError({exc.field: [str(exc)]}) from None


class CustomKernelCreate(APIView):
    permission_classes = [IsAdminUser]

    @extend_schema(
        operation_id="custom_kernels_create",
        request=CustomKernelSerializer,
        responses={201: OpenApiTypes.OBJECT, 400: OpenApiResponse(description="the spec field that is wrong, and why")},
    )
    def post(self, request):
        serializer = CustomKernelSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        kernel = add_custom_kernel(request.user, serializer.validated_data["name"], serializer.validated_data["spec"])
        return Response(
            {"id": kernel.pk, "name": kernel.name, "workload": kernel.workload_id,
             "url": request.build_absolute_uri(kernel.get_absolute_url())},
            status=status.HTTP_201_CREATED,
        )
