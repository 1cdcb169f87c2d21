"""Job pages: list, submit, detail (with a JSON progress endpoint it polls), cancel,
the workers page, the profile page with the API token, and custom kernels (list, add
for staff, detail). Each view authorises, calls one jobs/ function and renders."""
from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Prefetch
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST
from rest_framework.authtoken.models import Token

from records.permissions import public_read
from records.columns import CONFIRMATION_COLUMNS
from records.sorting import sorting_from
from records.versions import viewer_key
from tunerweb.cache import ENTRY_SECONDS, cached
from tunerweb.conditional import conditional, kept_answer, kept_page

from .answer_keys import page_key, progress_key
from .custom_kernels import add_custom_kernel, summarize
from .forms import CustomKernelForm, JobForm, RemeasureForm, preset_availability
from .models import CustomKernel, Job, JobKind, JobRun, Worker
from .progress import job_page, job_progress, parse_since, progress_runs, progress_since
from .submission import submit_job
from .tokens import issue_token


def _job_for(request, pk: int, kinds=(JobKind.TUNE, JobKind.REMEASURE)) -> Job:
    """The job, if this user may see it; 404 otherwise (not 403: others' ids stay private)."""
    jobs = Job.objects.visible_to(request.user).filter(kind__in=kinds).select_related("workload", "owner")
    return get_object_or_404(jobs, pk=pk)


JOB_COLUMNS = {"job": "id", "state": Job.state_expression(), "task": "workload__task_name", "tuner": "tuner",
               "budget": "n_trial", "owner": "owner__username", "submitted": "created_at"}
# The workers page is a handful of rows with a computed status: sorted in Python.
WORKER_COLUMNS = {
    "gpu": lambda worker: worker.device.model, "status": lambda worker: worker.status,
    "worker": lambda worker: (worker.queue, worker.name), "device": lambda worker: worker.device.name,
    "running": lambda worker: worker.current_run.job_id if worker.current_run else None,
    "heartbeat": lambda worker: worker.last_heartbeat,
}
KERNEL_COLUMNS = {"name": "name", "by": "added_by__username", "added": "added_at"}


@login_required
def job_list(request):
    sorting = sorting_from(request.GET, JOB_COLUMNS)
    runs = Prefetch("runs", JobRun.objects.select_related("device", "best_record"))
    jobs = Job.objects.visible_to(request.user).select_related("workload", "owner").prefetch_related(runs)
    return render(request, "jobs/list.html", {
        "jobs": sorting.queryset(jobs)[:200], "sorting": sorting, "sort_error": sorting.error,
    }, status=400 if sorting.error else 200)


def _submit(request, form, template: str, extra: dict | None = None, submit=submit_job):
    """Queue the job a valid form asks for and show it; else the form again, with its messages."""
    if request.method == "POST" and form.is_valid():
        try:
            submission = submit(request.user, form.request, form.cleaned_data["idempotency_key"])
        except ValidationError as exc:  # the form's key was used for another kind of job
            form.add_error(None, exc.messages)
            return render(request, template, {"form": form, **(extra or {})}, status=400)
        if submission.queue_errors:
            # The form again, with its key: submitting it once more returns this job.
            context = {"form": form, "queued_job": submission.job, "queue_errors": submission.queue_errors, **(extra or {})}
            return render(request, template, context, status=503)
        if submission.created:
            # Said in the past tense: the message stays on the page while the job moves on.
            gpus = ", ".join(sorted({run.device.model for run in submission.job.runs.select_related("device")}))
            messages.success(request, f"Job {submission.job.pk} was submitted to {gpus}.")
        else:
            messages.info(request, f"Job {submission.job.pk} was submitted already; here it is.")
        return redirect(submission.job)
    status = 400 if request.method == "POST" else 200
    return render(request, template, {"form": form, **(extra or {})}, status=status)


@login_required
def submit(request):
    # GET parameters prefill the form: a custom kernel's "tune it" link names the template and kernel.
    return _submit(request, JobForm(request.POST or None, initial=request.GET.dict()), "jobs/submit.html",
                   {"presets": preset_availability()})


@login_required
def remeasure(request):
    # A leaderboard's "re-measure" link prefills the workload and the GPU.
    return _submit(request, RemeasureForm(request.POST or None, initial=request.GET.dict()), "jobs/remeasure.html")


@login_required
@conditional
def detail(request, pk: int):
    """The job's facts, state and confirmations; its script reads the progress from `progress`."""
    job = _job_for(request, pk)
    sorting = sorting_from(request.GET, CONFIRMATION_COLUMNS, name="confirmation_sort")
    page = job_page(job, sorting.rows)
    answer = lambda: render(request, "jobs/detail.html", {  # noqa: E731
        "job": job, **page, "confirmation_sorting": sorting, "sort_error": sorting.error,
    }, status=400 if sorting.error else 200)
    if sorting.error:  # made each time: made-up sorts must not fill the cache
        return answer()
    return kept_page(request, page_key(job, page, request.GET.dict()), answer)


ACTIVE_PROGRESS_SECONDS = 120  # a running job's state lasts about a batch: Redis need not keep it long


@login_required
@conditional
def progress(request, pk: int):
    """The job page's script reads it whole as the page opens, then `?since=<run>:<record>,...`,
    which leaves out what the page has. The whole is made once per state of the job; each poll is
    a slice of it."""
    job = _job_for(request, pk)
    try:
        since = parse_since(request.GET.get("since", ""))
    except ValueError as exc:
        return JsonResponse({"detail": str(exc)}, status=400)
    runs = progress_runs(job)
    key = progress_key(job, runs)
    seconds = ENTRY_SECONDS if all(run.settled for run in runs) else ACTIVE_PROGRESS_SECONDS
    whole = lambda: cached(key, lambda: job_progress(job, runs), seconds=seconds)  # noqa: E731
    if since:
        return JsonResponse(progress_since(whole(), since))
    # Read whole each time a job page opens: kept encoded, with its ETag. (The same for everyone
    # who may see the job, it is kept apart per reader all the same: no answer reaches one it was not made for.)
    return kept_answer(request, key, lambda: JsonResponse(whole()), reader=viewer_key(request.user), seconds=seconds)


@require_POST
@login_required
def cancel(request, pk: int):
    job = _job_for(request, pk, kinds=JobKind.values)
    if job.cancel(by=request.user.username):
        messages.success(request, f"Job {job.pk} is cancelled; a running GPU stops after its current batch.")
    else:
        messages.info(request, f"Job {job.pk} had already finished.")
    return redirect(job)


@public_read
def workers(request):
    sorting = sorting_from(request.GET, WORKER_COLUMNS)
    rows = sorting.rows(Worker.objects.select_related("device"))
    return render(request, "jobs/workers.html", {
        "workers": rows, "waiting": JobRun.objects.waiting_for_workers(), "sorting": sorting, "sort_error": sorting.error,
    }, status=400 if sorting.error else 200)


@login_required
def profile(request):
    # The new key is shown in this one answer only: just its hash is kept.
    replaced = Token.objects.filter(user=request.user).exists()
    new_key = issue_token(request.user) if request.method == "POST" else None
    online = sorted({worker.queue for worker in Worker.objects.online()})
    return render(request, "jobs/profile.html", {
        "token": Token.objects.filter(user=request.user).first(), "new_key": new_key, "replaced": replaced,
        "example_gpus": json.dumps(online[:1] or ["GPU-MODEL"]), "online_gpus": online,
    })


@login_required
def custom_kernel_list(request):
    sorting = sorting_from(request.GET, KERNEL_COLUMNS)
    kernels = sorting.queryset(CustomKernel.objects.select_related("added_by"))
    return render(request, "jobs/custom_kernel_list.html", {
        "kernels": kernels, "sorting": sorting, "sort_error": sorting.error,
    }, status=400 if sorting.error else 200)


@login_required
def custom_kernel_add(request):
    if not request.user.is_staff:
        raise PermissionDenied("adding custom kernels is for staff only")
    form = CustomKernelForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        kernel = add_custom_kernel(request.user, form.cleaned_data["name"], form.cleaned_data["spec"])
        messages.success(request, f"Custom kernel {kernel.name} is stored; tune it from here.")
        return redirect(kernel)
    status = 400 if request.method == "POST" else 200
    return render(request, "jobs/custom_kernel_add.html", {"form": form}, status=status)


@login_required
def custom_kernel_detail(request, pk: int):
    kernel = get_object_or_404(CustomKernel.objects.select_related("workload", "added_by"), pk=pk)
    return render(request, "jobs/custom_kernel_detail.html", {"kernel": kernel, "summary": summarize(kernel)})
