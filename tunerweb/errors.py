"""Errors answered, never leaked: every API error is JSON with a `detail` line, and an
unreachable database answers 503 (JSON under /api/, a short page elsewhere) instead of a
traceback or Django's HTML error page.

`api_exception_handler` is DRF's EXCEPTION_HANDLER; `server_error` is Django's handler500
(errors outside DRF: pages, sessions); `ErrorMiddleware` turns the rest of the API's error
pages (unknown URLs, CSRF failures) into JSON and refuses bodies too big.
"""
from __future__ import annotations

import logging
import sys

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import InterfaceError, OperationalError
from django.http import HttpResponse, JsonResponse
from django.template.defaultfilters import filesizeformat
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

log = logging.getLogger(__name__)

DATABASE_DOWN = "The database is unreachable just now; nothing was changed. Try again in a moment."
UNEXPECTED = "Something went wrong on the server; it is logged. Try again, or tell the people who run this site."
_UNREACHABLE = (OperationalError, InterfaceError)


def body_too_big_message(size: int | None = None) -> str:
    limit = filesizeformat(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
    if size is None:
        return f"The request body is larger than the {limit} accepted."
    return f"The request body is {filesizeformat(size)}; the largest accepted is {limit}."


def is_api(request) -> bool:
    return request.path.startswith("/api/")


def api_exception_handler(exc, context):
    """DRF's handler, plus the errors DRF leaves to Django: a rule's ValidationError,
    an unreachable database, a body too big."""
    if isinstance(exc, DjangoValidationError):
        detail = exc.message_dict if hasattr(exc, "error_dict") else {"detail": exc.messages}
        return Response(detail, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, _UNREACHABLE):
        log.warning("database unreachable: %s", exc)
        return Response({"detail": DATABASE_DOWN}, status=status.HTTP_503_SERVICE_UNAVAILABLE)
    if isinstance(exc, RequestDataTooBig):
        return Response({"detail": body_too_big_message()}, status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
    return drf_exception_handler(exc, context)


class ErrorMiddleware:
    """Bodies over DATA_UPLOAD_MAX_MEMORY_SIZE answered 413 before they are read, and
    under /api/ any error page (an unknown URL, a CSRF failure) turned into JSON."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        too_big = _declared_too_big(request)
        if too_big is not None:
            return _answer(request, body_too_big_message(too_big), 413)
        response = self.get_response(request)
        if is_api(request) and response.status_code >= 400 and not _is_json(response):
            return JsonResponse({"detail": _reason(response)}, status=response.status_code)
        return response


def server_error(request):
    """handler500: the error being handled is sys.exc_info()'s; an unreachable database is a 503."""
    error = sys.exc_info()[1]
    if isinstance(error, _UNREACHABLE):
        log.warning("database unreachable: %s", error)
        return _answer(request, DATABASE_DOWN, 503)
    if isinstance(error, RequestDataTooBig):
        return _answer(request, body_too_big_message(), 413)
    return _answer(request, UNEXPECTED, 500)


def _declared_too_big(request) -> int | None:
    if request.content_type == "multipart/form-data":
        return None  # uploads have their own limit: records.uploads.UploadSizeLimitMiddleware
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return None
    return length if length > settings.DATA_UPLOAD_MAX_MEMORY_SIZE else None


def _answer(request, message: str, status_code: int):
    if is_api(request):
        return JsonResponse({"detail": message}, status=status_code)
    return HttpResponse(message + "\n", status=status_code, content_type="text/plain; charset=utf-8")


def _is_json(response) -> bool:
    return response.get("Content-Type", "").startswith("application/json")


def _reason(response) -> str:
    if response.status_code == 404:
        return "No such API endpoint or object."
    if response.status_code == 403:
        return "Forbidden (a write needs a login or a token, and a form post its CSRF token)."
    return response.reason_phrase
