"""One-time submission keys: a form sent twice writes once, and the second send gets the first one's answer.

A double click, a resend after a slow answer or the browser's "send the form again" posts the same form twice; a
form that creates a row (a memo, a comment, a meeting, an API token) made two. Each rendered write form carries a
key of its own (`{% submission_key %}`, projects/templatetags/submissions.py); a view decorated with
`@submitted_once` claims the key in the cache (Redis: SET NX with a TTL, so every web process sees the claim) for
the user and the URL, runs, and keeps its answer under the key. A send of a key already claimed runs nothing: it
waits for the first send's answer if that is still being made, then answers as it did (the same redirect, the same
fragment). A refused send (4xx, an exception) frees its key, so the corrected form can be sent again.

The API's creates take the key from an `Idempotency-Key` header instead (a viewset decorated with
`@created_once`): a client that sends a create again after a timeout gets the
first answer (the same row, 201) instead of a second row.

A POST without a key (an older page, a script) is served as before, as it is while Redis is unreachable: the
guard is lost then, never the write.
"""

from __future__ import annotations

import functools
import hashlib
import time
import uuid
from collections.abc import Callable
from typing import Any

from django.core.cache import cache
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.utils.decorators import method_decorator
from rest_framework.request import Request
from rest_framework.response import Response

FIELD = "submission_key"
HEADER = "Idempotency-Key"
# Long enough for the browser's "send again" on a page left open over a day; short enough to forget them.
ANSWER_SECONDS = 24 * 60 * 60
# A claim whose request died (a killed worker) stops holding its key after this.
CLAIM_SECONDS = 5 * 60
# A second send waits this long for the first's answer before saying it is still being made (it holds a web thread
# meanwhile, as the first send does; a double click waits about as long as the first answer takes).
WAIT_SECONDS = 30.0
POLL_SECONDS = 0.05
# Answers bigger than this are not kept; a repeat of one says that the form was saved, without the page.
MAX_KEPT_BYTES = 512 * 1024
IN_FLIGHT = "in-flight"
# The headers that say where an answer leads; cookies and caching headers belong to the first answer only.
KEPT_HEADERS = ("Content-Type", "Location", "HX-Redirect", "HX-Location", "HX-Refresh", "HX-Retarget", "HX-Reswap",
                "HX-Trigger", "HX-Push-Url", "HX-Replace-Url")
# A view whose answer must not be kept (it shows a secret once) sets this attribute on its response to what the
# answer was about; a repeat is then answered by the decorator's `repeat(request, target, **view_kwargs)`.
TARGET_ATTRIBUTE = "submission_target"

type Repeat = Callable[..., HttpResponse]


def new_submission_key() -> str:
    return uuid.uuid4().hex


def submitted_once(view: Callable | None = None, *, repeat: Repeat | None = None) -> Callable:
    """Decorate a view that writes on POST so that a repeated submission key answers as the first send did."""

    def decorate(view: Callable) -> Callable:
        @functools.wraps(view)
        def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            slot = _slot(request)
            if slot is None:
                return view(request, *args, **kwargs)
            if not cache.add(slot, IN_FLIGHT, timeout=CLAIM_SECONDS):
                kept = _first_answer(slot)
                if kept is not None:
                    return _answer_again(kept, request, args, kwargs, repeat)
                # The claim was not there to read: Redis is down, or the claim just expired. Serve as without a key.
                return view(request, *args, **kwargs)
            try:
                response = view(request, *args, **kwargs)
            except BaseException:
                cache.delete(slot)
                raise
            if response.status_code >= 400:
                cache.delete(slot)
            else:
                cache.set(slot, _kept(response), timeout=ANSWER_SECONDS)
            return response

        return guarded

    return decorate(view) if view is not None else decorate


def created_once(viewset: type) -> type:
    """On an API viewset: its create, sent again with the same Idempotency-Key header, answers as the first did."""
    return method_decorator(submitted_once, name="create")(viewset)


def _slot(request: HttpRequest) -> str | None:
    """The cache key of this send: the form's key, for this user and this URL (a key reused elsewhere is another)."""
    key = (request.POST.get(FIELD, "") or request.headers.get(HEADER, "")) if request.method == "POST" else ""
    if not key or not request.user.is_authenticated:
        return None
    digest = hashlib.sha256(f"{request.user.pk}\0{request.path}\0{key}".encode()).hexdigest()[:40]
    return f"rta:submission:{digest}"


def _first_answer(slot: str) -> dict | str | None:
    """The first send's kept answer; IN_FLIGHT if it is still being made after WAIT_SECONDS; None if nothing is kept."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        kept = cache.get(slot)
        if kept != IN_FLIGHT or time.monotonic() >= deadline:
            return kept
        time.sleep(POLL_SECONDS)


def _kept(response: HttpResponse) -> dict:
    target = getattr(response, TARGET_ATTRIBUTE, None)
    if target is not None:
        return {"target": target}
    if isinstance(response, Response) and not response.is_rendered:
        # An API answer, not yet rendered for its client (the viewset renders it after this): its data is kept.
        return {"status": response.status_code, "data": response.data,
                "headers": {name: response[name] for name in KEPT_HEADERS if response.has_header(name)}}
    if not response.streaming and not getattr(response, "is_rendered", True):
        response.render()  # a TemplateResponse: what it will send is what is kept
    if response.streaming or len(response.content) > MAX_KEPT_BYTES:
        return {"sent": True}
    return {"status": response.status_code, "body": response.content,
            "headers": {name: response[name] for name in KEPT_HEADERS if response.has_header(name)}}


def _answer_again(kept: dict | str, request: HttpRequest, args: tuple, kwargs: dict, repeat: Repeat | None) -> HttpResponse:
    if kept == IN_FLIGHT:
        return _conflict(request, still_running=True)
    if "sent" in kept or ("target" in kept and repeat is None):
        return _conflict(request, still_running=False)
    if "target" in kept and repeat is not None:
        return repeat(request, kept["target"], *args, **kwargs)
    headers = kept["headers"]
    if "data" in kept:
        return Response(kept["data"], status=kept["status"], headers=headers)
    if "Location" in headers:
        response = HttpResponseRedirect(headers["Location"], kept["body"])
        response.status_code = kept["status"]
    else:
        response = HttpResponse(kept["body"], status=kept["status"])
    for name, value in headers.items():
        response[name] = value
    return response


def _conflict(request: HttpRequest, *, still_running: bool) -> HttpResponse:
    if isinstance(request, Request):
        said = (f"A request with this {HEADER} is still being handled; send it again in a moment for its answer."
                if still_running else f"A request with this {HEADER} was already handled; its answer is no longer kept.")
        return Response({"detail": said}, status=409)
    said = ("This form is still being saved from when you first sent it; reload the page in a moment to see the result."
            if still_running else "This form was already sent and saved; reload the page to see the result.")
    return HttpResponse(said, status=409, content_type="text/plain; charset=utf-8")
