"""Job pages: list, submit, detail (with a JSON progress endpoint it polls), cancel,
the workers page and the profile page with the API token. Each view authorises,
calls one jobs/ function and renders."""
from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST
from rest_framework.authtoken.models import Token

from records.permissions import public_read

from .forms import JobForm
from .models import Job, Worker
from .progress import job_progress
from .submission import submit_job
from .tokens import token_for


def _job_for(request, pk: int) -> Job:
    """The job, if this user may see it; 404 otherwise (not 403: others' ids stay private)."""
    return get_object_or_404(Job.objects.visible_to(request.user).select_related("workload", "owner"), pk=pk)


@login_required
def job_list(request):
    jobs = Job.objects.visible_to(request.user).select_related("workload", "owner").prefetch_related("runs__device")
    return render(request, "jobs/list.html", {"jobs": jobs[:200]})


@login_required
def submit(request):
    form = JobForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        submission = submit_job(request.user, form.request)
        for error in submission.queue_errors:
            messages.error(request, error)
        if not submission.queue_errors:
            messages.success(request, f"Job {submission.job.pk} is queued.")
        return redirect(submission.job)
    status = 400 if request.method == "POST" else 200
    return render(request, "jobs/submit.html", {"form": form}, status=status)


@login_required
def detail(request, pk: int):
    job = _job_for(request, pk)
    return render(request, "jobs/detail.html", {"job": job, "progress": job_progress(job)})


@login_required
def progress(request, pk: int):
    return JsonResponse(job_progress(_job_for(request, pk)))


@require_POST
@login_required
def cancel(request, pk: int):
    job = _job_for(request, pk)
    if job.cancel(by=request.user.username):
        messages.success(request, f"Job {job.pk} is cancelled; a running GPU stops after its current batch.")
    else:
        messages.info(request, f"Job {job.pk} had already finished.")
    return redirect(job)


@public_read
def workers(request):
    rows = Worker.objects.select_related("device")
    return render(request, "jobs/workers.html", {"workers": rows})


@login_required
def profile(request):
    if request.method == "POST":
        token_for(request.user, renew=True)
        messages.success(request, "A new API token is made; the old one no longer works.")
        return redirect("jobs:profile")
    return render(request, "jobs/profile.html", {"token": Token.objects.filter(user=request.user).first()})
