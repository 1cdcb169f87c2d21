"""Jobs through the API: `POST /api/jobs/` submits, `GET /api/jobs/<id>/` reports state and
progress, `POST /api/jobs/<id>/cancel/` cancels. Authenticate with `Authorization: Token <key>`
(profile page or `manage.py create_token USER`). The rules are jobs.submission's."""
from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from .models import Job
from .progress import job_progress
from .submission import check_request, submit_job


class JobRequestSerializer(serializers.Serializer):
    template = serializers.CharField(help_text="template (task name), e.g. conv2d_nchw.cuda")
    preset = serializers.CharField(required=False, allow_blank=True, default="", help_text="workload preset, e.g. C12")
    args = serializers.JSONField(required=False, default=None, help_text="args as in a log's input, if no preset")
    tuner = serializers.CharField(default="xgb")
    n_trial = serializers.IntegerField(help_text="trial budget per GPU")
    early_stopping = serializers.IntegerField(required=False, allow_null=True, default=None)
    gpus = serializers.ListField(child=serializers.CharField(), help_text="GPU models, e.g. [\"h200\"]")
    seed = serializers.IntegerField(required=False, allow_null=True, default=None)

    def validate(self, data):
        return check_request(**data)


class JobListCreate(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(operation_id="jobs_list", responses={200: OpenApiTypes.OBJECT})
    def get(self, request):
        jobs = Job.objects.visible_to(request.user).select_related("workload", "owner")[:100]
        return Response({"results": [job_progress(job) for job in jobs]})

    @extend_schema(
        operation_id="jobs_create",
        request=JobRequestSerializer,
        responses={
            201: OpenApiTypes.OBJECT,
            400: OpenApiResponse(description="a field is wrong; the body names it and says why"),
            503: OpenApiResponse(description="the job is saved and queued, but the task queue is unreachable"),
        },
    )
    def post(self, request):
        serializer = JobRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        submission = submit_job(request.user, serializer.validated_data)
        body = job_progress(submission.job)
        if submission.queue_errors:
            return Response(
                {"detail": " ".join(submission.queue_errors), "job": body}, status=status.HTTP_503_SERVICE_UNAVAILABLE
            )
        return Response(body, status=status.HTTP_201_CREATED)


class JobDetail(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request, pk: int):
        return Response(job_progress(get_object_or_404(Job.objects.visible_to(request.user), pk=pk)))


class JobCancel(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses={200: OpenApiTypes.OBJECT})
    def post(self, request, pk: int):
        job = get_object_or_404(Job.objects.visible_to(request.user), pk=pk)
        job.cancel(by=request.user.username)
        return Response(job_progress(job))
