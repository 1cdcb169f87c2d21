"""Network jobs through the API: `POST /api/network-jobs/` submits ({"network": "resnet18"}
or {"tasks": [...]}, with tuner, n_trial, gpus, allocation, round_trials, seed),
`GET /api/network-jobs/` lists them, `GET /api/network-jobs/<id>/` reports per-task
progress and the network's estimated time, `GET /api/network-jobs/<id>/best.log` is its
best-config log, `POST /api/network-jobs/<id>/cancel/` cancels every task. An
Idempotency-Key header makes a retried submit return the first job, as for /api/jobs/.
The rules are jobs.network's."""
from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from engine import Strategy

from .api import IDEMPOTENCY_HEADER, SUBMIT_RESPONSES, JobPages, idempotency_key_of, submission_response
from .models import Job, JobKind
from .network import check_network_request, submit_network_job
from .network_progress import network_progress
from .network_views import best_log_response
from .progress import job_summary


class NetworkJobRequestSerializer(serializers.Serializer):
    network = serializers.CharField(required=False, allow_blank=True, default="",
                                    help_text="a network preset: resnet18, mobilenet, bert-layer")
    tasks = serializers.JSONField(
        required=False, default=None,
        help_text='instead of a preset: [{"template", "preset" or "args", "weight" (occurrences), "label"}]',
    )
    tuner = serializers.CharField(default="xgb")
    n_trial = serializers.IntegerField(help_text="trial budget per GPU model, shared by the tasks")
    allocation = serializers.CharField(default=Strategy.GRADIENT.value, help_text="gradient or round_robin")
    round_trials = serializers.IntegerField(required=False, allow_null=True, default=None,
                                            help_text="trials per round (default: the server's)")
    gpus = serializers.ListField(child=serializers.CharField(), help_text='GPU models, e.g. ["h200"]')
    seed = serializers.IntegerField(required=False, allow_null=True, default=None)

    def validate(self, data):
        return check_network_request(**data)


def _network_jobs(user):
    return Job.objects.visible_to(user).filter(kind=JobKind.NETWORK).select_related("owner")


class NetworkJobListCreate(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(operation_id="network_jobs_list", responses={200: OpenApiTypes.OBJECT})
    def get(self, request):
        """Newest first, a page at a time; each job's tasks and estimates are at its own URL."""
        paginator = JobPages()
        page = paginator.paginate_queryset(_network_jobs(request.user), request, view=self)
        return paginator.get_paginated_response([{**job_summary(job, []), "network": job.preset} for job in page])

    @extend_schema(
        operation_id="network_jobs_create",
        request=NetworkJobRequestSerializer,
        parameters=[IDEMPOTENCY_HEADER],
        responses=SUBMIT_RESPONSES,
    )
    def post(self, request):
        serializer = NetworkJobRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        submission = submit_network_job(request.user, serializer.validated_data, idempotency_key=idempotency_key_of(request))
        return submission_response(submission, network_progress(submission.job))


class NetworkJobDetail(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(operation_id="network_jobs_retrieve", responses={200: OpenApiTypes.OBJECT})
    def get(self, request, pk: int):
        return Response(network_progress(get_object_or_404(_network_jobs(request.user), pk=pk)))


class NetworkJobCancel(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(operation_id="network_jobs_cancel", request=None, responses={200: OpenApiTypes.OBJECT})
    def post(self, request, pk: int):
        job = get_object_or_404(_network_jobs(request.user), pk=pk)
        job.cancel(by=request.user.username)
        return Response(network_progress(job))


class NetworkJobBestLog(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(operation_id="network_jobs_best_log", responses={(200, "text/plain"): OpenApiTypes.STR})
    def get(self, request, pk: int):
        """The best config of each task on each GPU model, as one AutoTVM log."""
        return best_log_response(get_object_or_404(_network_jobs(request.user), pk=pk))
