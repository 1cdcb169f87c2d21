"""Conditional GETs for the pages and JSON a browser asks for again and again (a job page's
poll, a leaderboard left open): each answer carries an ETag, and a request whose
If-None-Match names it is answered 304 with no body.

The ETag is a digest of the answer itself, as this reader is answered, not of a version of
the data behind it: the records versions (records.versions) count every record, private ones
included, so an ETag made from them would change for a reader who cannot see what changed,
and a 200 where a 304 was expected would tell them that something private moved. A digest of
what they read changes exactly when what they read does. (So it spares the transfer and the
browser's parsing, not the server's work; the cache keyed by the versions spares that.)

A logged-in reader's pages hold a CSRF token masked afresh each time, the same secret under a
new mask: the digest leaves the masked values out and takes the secret's place instead, so a
page kept by the browser still posts with its token, and a new secret (a new login) is a new ETag.
"""
from __future__ import annotations

import hashlib
import re
from functools import wraps

from django.utils.cache import get_conditional_response, patch_cache_control, patch_vary_headers

_MASKED_CSRF = re.compile(rb'name="csrfmiddlewaretoken" value="[^"]*"')


def answer_etag(request, content: bytes) -> str:
    """The ETag of `content` as answered to `request`'s reader (a strong one: byte for byte)."""
    digest = hashlib.blake2b(digest_size=16)
    masked_out, tokens = _MASKED_CSRF.subn(b'name="csrfmiddlewaretoken"', content)
    if tokens:
        # The secret itself never leaves in the header: only a digest that mixes it in.
        digest.update(request.META.get("CSRF_COOKIE", "").encode())
    digest.update(masked_out)
    return f'"{digest.hexdigest()}"'


def conditional(view):
    """`view`'s 200 answers to GET and HEAD with an ETag, and 304 for an If-None-Match that
    names it. Every answer is private to its reader and revalidated each time (no-cache):
    a browser keeps it, a shared cache does not."""

    @wraps(view)
    def answer(request, *args, **kwargs):
        response = view(request, *args, **kwargs)
        if request.method not in ("GET", "HEAD") or response.status_code != 200 or response.streaming:
            return response
        if hasattr(response, "render") and not getattr(response, "is_rendered", True):
            response.render()  # a REST framework answer is rendered after the view; its bytes are needed now
        response["ETag"] = answer_etag(request, response.content)
        patch_cache_control(response, private=True, no_cache=True)
        patch_vary_headers(response, ("Cookie", "Authorization"))  # who reads is in the answer
        return get_conditional_response(request, etag=response["ETag"], response=response)

    return answer
