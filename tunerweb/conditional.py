"""Conditional GETs for the pages and JSON a browser asks for again and again (a job page's
poll, a leaderboard left open): each answer carries an ETag, and a request whose
If-None-Match names it is answered 304 with no body.

The ETag is a digest of the answer itself, as this reader is answered, not of a version of
the data behind it: the records versions (records.versions) count every record, private ones
included, so an ETag made from them would change for a reader who cannot see what changed,
and a 200 where a 304 was expected would tell them that something private moved. A digest of
what they read changes exactly when what they read does. (So it spares the transfer and the
browser's parsing, not the server's work; the cache keyed by the versions spares that, and
`kept_answer` keeps an answer whole with its ETag, so a repeat in the same state is a cache read.)

A logged-in reader's pages hold a CSRF token masked afresh each time, the same secret under a
new mask: the digest leaves the masked values out and takes the secret's place instead, so a
page kept by the browser still posts with its token, and a new secret (a new login) is a new ETag.
"""
from __future__ import annotations

import hashlib
import re
from functools import lru_cache, wraps
from pathlib import Path

from django.conf import settings
from django.contrib.messages import get_messages
from django.http import HttpResponse
from django.middleware.csrf import get_token
from django.utils.cache import get_conditional_response, patch_cache_control, patch_vary_headers

from .cache import ENTRY_SECONDS, cached

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
        if not response.has_header("ETag"):  # `kept_answer`'s come with theirs
            if hasattr(response, "render") and not getattr(response, "is_rendered", True):
                response.render()  # a REST framework answer is rendered after the view; its bytes are needed now
            response["ETag"] = answer_etag(request, response.content)
        patch_cache_control(response, private=True, no_cache=True)
        patch_vary_headers(response, ("Cookie", "Authorization"))  # who reads is in the answer
        return get_conditional_response(request, etag=response["ETag"], response=response)

    return answer


def kept_answer(request, key: str | None, render, reader: str = "", seconds: int = ENTRY_SECONDS) -> HttpResponse:
    """`render()`'s answer with its ETag, kept (while a 200, `seconds` at most) under `key` and
    `reader`: asked again in the same state, it is one cache read, not a render and a digest.
    `key` names a version of everything the answer is made from (tunerweb.cache.cached), `reader`
    whatever the answer holds of who reads it; without a `key` it is rendered each time."""
    if key is None:
        return render()
    rendered = []

    def answer():
        response = render()
        rendered.append(response)
        if response.status_code != 200:
            return None
        return {"content": response.content, "type": response["Content-Type"], "etag": answer_etag(request, response.content)}

    # A reader's secrets never go to Redis, even in a key: a digest that mixes them in. The deployed
    # code is in it too: a deploy must not serve what the old views, templates or scripts made.
    reader_digest = hashlib.blake2b(f"{reader}:{deployed_version()}".encode(), digest_size=16).hexdigest()
    kept = cached(f"answer:{key}:{reader_digest}", answer, keep=lambda made: made is not None, seconds=seconds)
    response = rendered[0] if rendered else HttpResponse(kept["content"], content_type=kept["type"])
    if kept is not None:
        response["ETag"] = kept["etag"]
    return response


def kept_page(request, key: str | None, render) -> HttpResponse:
    """`kept_answer` for an HTML page, which holds its reader's name and CSRF tokens: kept for that
    reader (and the name the page shows), the CSRF secret its tokens were masked from (kept tokens
    still post for it: the same masked token is served again, safe while pages go uncompressed —
    a compressing proxy in front would want it masked afresh, BREACH). A page with messages waiting is rendered, not kept: showing them
    uses them up."""
    if key is None or len(get_messages(request)):
        return render()
    get_token(request)  # as the render would: a reader without a secret gets one, and its cookie
    return kept_answer(request, key, render, reader=f"{request.user.pk}:{request.user.get_username()}:{request.META['CSRF_COOKIE']}")


# What json_script escapes: none of them can stand outside a JSON string, where the escape reads the same.
_JSON_SCRIPT_ESCAPES = ((b"<", b"\\u003C"), (b">", b"\\u003E"), (b"&", b"\\u0026"))


def with_json_script(page: HttpResponse, element_id: str, json_answer: HttpResponse) -> HttpResponse:
    """`page` with `json_answer`'s bytes (kept encoded: not decoded and encoded again) put into its
    empty `<script id="element_id" type="application/json"></script>`, escaped as json_script escapes,
    and an ETag that names both (either changing is a new page). The element cannot come from what
    the page shows: that is HTML-escaped."""
    empty = f'<script id="{element_id}" type="application/json"></script>'.encode()
    content = json_answer.content
    for character, escape in _JSON_SCRIPT_ESCAPES:
        content = content.replace(character, escape)
    page.content = page.content.replace(empty, empty[:-len(b"</script>")] + content + b"</script>", 1)
    if page.has_header("ETag"):  # a kept page's: the page alone
        digest = hashlib.blake2b(f"{page['ETag']}{json_answer['ETag']}".encode(), digest_size=16)
        page["ETag"] = f'"{digest.hexdigest()}"'
    return page


@lru_cache(maxsize=1)
def deployed_version() -> str:
    """The web side's code as deployed, which kept answers are made by: the apps' Python, the
    templates and the scripts that read the answers (a new job.js fed an old-shaped progress breaks)."""
    digest = hashlib.blake2b(digest_size=16)
    base = Path(settings.BASE_DIR)
    apps = ("jobs", "records", "tunerweb")
    sources = [*(base / "templates").rglob("*.html"), *(path for app in apps for path in (base / app).rglob("*.py")),
               *(path for app in apps for path in (base / app / "static").rglob("*.js"))]
    for path in sorted(sources):
        digest.update(str(path.relative_to(base)).encode() + path.read_bytes())
    return digest.hexdigest()
