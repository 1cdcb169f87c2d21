"""Network job pages: submit, the job page (per-task progress, the network's estimated
time against the vendor's), its JSON progress and its best-config log. The rules are
jobs.network's; cancel is the job's own (jobs.views.cancel)."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import JsonResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, render

from .forms import NetworkJobForm
from .models import Job, JobKind
from .network import best_log_lines, submit_network_job
from .network_progress import network_progress
from .views import _submit


def _network_job_for(request, pk: int) -> Job:
    """The network job, if this user may see it; 404 otherwise."""
    jobs = Job.objects.visible_to(request.user).filter(kind=JobKind.NETWORK).select_related("owner")
    return get_object_or_404(jobs, pk=pk)


@login_required
def submit(request):
    form = NetworkJobForm(request.POST or None, initial=request.GET.dict())
    return _submit(request, form, "jobs/network_submit.html", submit=submit_network_job)


@login_required
def detail(request, pk: int):
    job = _network_job_for(request, pk)
    return render(request, "jobs/network_detail.html", {"job": job, "progress": network_progress(job)})


@login_required
def progress(request, pk: int):
    return JsonResponse(network_progress(_network_job_for(request, pk)))


def best_log_response(job: Job) -> StreamingHttpResponse:
    """The page's and the API's download of the network's best-config log."""
    response = StreamingHttpResponse(best_log_lines(job), content_type="text/plain; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="tunerweb-best-network-job-{job.pk}.log"'
    return response


@login_required
def best_log(request, pk: int):
    return best_log_response(_network_job_for(request, pk))
