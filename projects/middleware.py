from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from django.core.exceptions import ValidationError
from django.db import InterfaceError, OperationalError, connections
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string

logger = logging.getLogger(__name__)


class DatabaseUnavailableMiddleware:
    """A lost database connection gives a clear 503 page; the next request reconnects."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, (OperationalError, InterfaceError)):
            return None
        logger.warning("Database unavailable: %s", exception)
        for connection in connections.all(initialized_only=True):
            connection.close_if_unusable_or_obsolete()
        html = render_to_string("503.html", {"reason": "database"})
        response = HttpResponse(html, status=503)
        response["Retry-After"] = "5"
        return response


class MalformedParameterMiddleware:
    """A malformed parameter gives a 400 naming it, not a 500 from the database.

    Two narrow cases, both the client's mistake whatever the view: a NUL character in a
    query-string or form value (PostgreSQL text cannot hold one; Django's forms refuse it,
    hand-read parameters did not), and a Django ValidationError escaping the view, which a
    query raises for a value its field cannot hold (`filter(uuid="zzz")`). Views still
    validate their input; this keeps a forgotten check a 400. The API has the same rules
    in projects/api_exceptions.py (DRF handles its views' exceptions itself).
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(self, request: HttpRequest, view_func, view_args, view_kwargs) -> HttpResponse | None:
        name = _nul_parameter(request)
        if name is None:
            return None
        return _bad_request(request, f"Parameter “{name}” contains a NUL character, which no text may hold.")

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, ValidationError):
            return None
        return _bad_request(request, malformed_parameter_message(exception, [request.GET, request.POST]))


def _nul_parameter(request: HttpRequest) -> str | None:
    """The first query or form parameter holding a NUL character, if any; cheap on every request.

    A raw query string or url-encoded body without "%00" or a NUL byte cannot decode (as UTF-8,
    the default) to a value holding one, so the parsed values are only scanned when it might.
    """
    sources = []
    if _may_hold_nul(request, request.META.get("QUERY_STRING", "")):
        sources.append(request.GET)
    # request.POST is only parsed for form posts (as CsrfViewMiddleware does); JSON bodies are DRF's.
    if request.method == "POST" and request.content_type == "multipart/form-data":
        sources.append(request.POST)  # its raw body holds files, which may hold NUL bytes
    elif request.method == "POST" and request.content_type == "application/x-www-form-urlencoded":
        if _may_hold_nul(request, request.body):
            sources.append(request.POST)
    return next((name for source in sources for name, values in source.lists() if any("\x00" in v for v in values)), None)


def _may_hold_nul(request: HttpRequest, raw: str | bytes) -> bool:
    if request.encoding is not None:  # a declared charset (UTF-7 can spell NUL without a NUL byte): look
        return True
    nul, escaped = ("\x00", "%00") if isinstance(raw, str) else (b"\x00", b"%00")
    return nul in raw or escaped in raw


def _bad_request(request: HttpRequest, problem: str) -> HttpResponse:
    logger.info("Malformed parameter on %s: %s", request.path, problem)
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": problem}, status=400)
    return HttpResponse(render_to_string("400.html", {"problem": problem}, request=request), status=400)


def malformed_parameter_message(exception: ValidationError, sources: Iterable[Mapping]) -> str:
    """“Parameter “code”: “zzz” is not a valid UUID.”, naming the parameter that holds the bad value."""
    reason = " ".join(exception.messages)
    value = (getattr(exception, "params", None) or {}).get("value")
    names = [name for source in sources if isinstance(source, Mapping) and value is not None
             for name in source if str(value) in _values(source, name)]
    if not names:
        return f"A parameter of this request is malformed: {reason}"
    return f"Parameter “{names[0]}”: {reason}"


def _values(source: Mapping, name: str) -> list[str]:
    values = source.getlist(name) if hasattr(source, "getlist") else source.get(name)
    values = values if isinstance(values, list) else [values]
    return [str(v) for v in values]
