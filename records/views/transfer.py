"""Pages that move records in and out: log upload, baseline upload, log downloads."""
from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

from ..baselines import FORMATS, BaselineFileError, detect_format, import_baselines
from ..exporting import ExportFilter, ExportFilterError, UnknownFilterTarget, best_lines, record_lines
from ..import_formats import import_file
from ..importing import NotALogError
from ..kernel_tuner_export import file_name, kernel_tuner_text
from ..models import Baseline, ImportBatch
from ..permissions import public_read
from ..uploads import check_upload_size


class LogUploadForm(forms.Form):
    file = forms.FileField(label="Records file", validators=[check_upload_size],
                           help_text="AutoTVM log (plain or .gz), Kernel Tuner cache, T4 results or results file")
    device = forms.CharField(label="GPU model", required=False, max_length=64,
                             help_text="for a Kernel Tuner file that names no GPU (e.g. mi250x); overrides its name")
    metadata = forms.FileField(label="T4 metadata or T1 file", required=False, validators=[check_upload_size],
                               help_text="for T4 results: names the GPU or the kernel")


class BaselineUploadForm(forms.Form):
    file = forms.FileField(label="Baseline file", validators=[check_upload_size])
    format = forms.ChoiceField(
        choices=[("", "from the file name (.csv, .json, .log)")] + [(f, f) for f in FORMATS], required=False
    )


@login_required
def upload(request):
    form = LogUploadForm(request.POST, request.FILES) if request.method == "POST" else LogUploadForm()
    if form.is_bound and form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            result = import_file(upload, upload.name, user=request.user, source=ImportBatch.Source.UPLOAD,
                                 device=form.cleaned_data["device"], metadata=form.cleaned_data["metadata"])
        except NotALogError as exc:
            form.add_error("file", str(exc))
        else:
            messages.success(request, f"{upload.name}: {result.summary()}.")
            return redirect("records:batch_detail", pk=result.pk)
    status = 400 if form.errors else 200
    return render(request, "records/upload.html", {"form": form, "max_bytes": settings.TUNERWEB_MAX_UPLOAD_BYTES}, status=status)


@login_required
def baseline_upload(request):
    form = BaselineUploadForm(request.POST, request.FILES) if request.method == "POST" else BaselineUploadForm()
    result = None
    if form.is_bound and form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            fmt = form.cleaned_data["format"] or detect_format(upload.name)
            result = import_baselines(upload, fmt, file_name=upload.name, user=request.user, source=ImportBatch.Source.UPLOAD)
        except BaselineFileError as exc:
            form.add_error("file", str(exc))
    context = {
        "form": form,
        "result": result,
        "providers": Baseline.Provider.choices,
        "max_bytes": settings.TUNERWEB_MAX_UPLOAD_BYTES,
    }
    return render(request, "records/baseline_upload.html", context, status=400 if form.errors else 200)


def text_error(message: str, status: int) -> HttpResponse:
    return HttpResponse(f"{message}\n", status=status, content_type="text/plain; charset=utf-8")


def export_response(params, kind: str, viewer, error=text_error) -> HttpResponse:
    """A streamed log download of the records `params` select that `viewer` may read, or
    `error(message, status)` (plain text for the pages; the API answers JSON)."""
    try:
        selection = ExportFilter.from_params(params, viewer)
    except UnknownFilterTarget as exc:
        return error(str(exc), 404)
    except ExportFilterError as exc:
        return error(str(exc), 400)
    lines = best_lines(selection) if kind == "best" else record_lines(selection)
    response = StreamingHttpResponse(lines, content_type="text/plain; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{selection.file_name(kind)}"'
    return response


@require_GET
@public_read
def download_best(request):
    return export_response(request.GET, "best", request.user)


@require_GET
@public_read
def download_records(request):
    return export_response(request.GET, "records", request.user)


def kernel_tuner_response(params, fmt: str, viewer, error=text_error) -> HttpResponse:
    """One workload on one GPU as a Kernel Tuner cache file (`kernel-tuner`) or T4 results
    (`t4`), of the records `viewer` may read; or `error(message, status)`, as export_response."""
    try:
        selection = ExportFilter.from_params(params, viewer)
        text, _ = kernel_tuner_text(selection, fmt)
    except UnknownFilterTarget as exc:
        return error(str(exc), 404)
    except ExportFilterError as exc:
        return error(str(exc), 400)
    response = HttpResponse(text, content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="{file_name(selection, fmt)}"'
    return response


@require_GET
@public_read
def download_kernel_tuner(request, fmt: str):
    return kernel_tuner_response(request.GET, fmt, request.user)
