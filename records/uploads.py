"""Upload size limits: refused before the body is read, so an oversized file never lands on disk."""
from __future__ import annotations

from django import forms
from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.template.defaultfilters import filesizeformat

# Multipart framing (boundaries, other fields) on top of the file itself.
_FORM_OVERHEAD_BYTES = 64 * 1024


def too_large_message(size: int) -> str:
    limit = settings.TUNERWEB_MAX_UPLOAD_BYTES
    return f"The upload is {filesizeformat(size)}; the largest accepted is {filesizeformat(limit)}."


def check_upload_size(upload) -> None:
    """Form and serializer validator: the file itself within the limit."""
    if upload.size > settings.TUNERWEB_MAX_UPLOAD_BYTES:
        raise forms.ValidationError(too_large_message(upload.size))


class UploadSizeLimitMiddleware:
    """Answers 413 to a multipart request whose declared length is over the limit.

    Django reads no more than CONTENT_LENGTH bytes of a body, so checking it here, before
    CSRF or any view touches request.POST, keeps the body from being spooled to disk.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.content_type == "multipart/form-data":
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = 0
            if length > settings.TUNERWEB_MAX_UPLOAD_BYTES + _FORM_OVERHEAD_BYTES:
                message = too_large_message(length)
                if request.path.startswith("/api/"):
                    return JsonResponse({"detail": message}, status=413)
                return HttpResponse(message, status=413, content_type="text/plain; charset=utf-8")
        return self.get_response(request)
