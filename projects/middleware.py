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
        # request.POST is only parsed for form posts (as CsrfViewMiddleware does); JSON bodies are DRF's.
        sources = [request.GET] + ([request.POST] if request.method == "POST" and _is_form(request) else [])
        name = next((name for source in sources for name, values in source.lists() if any("\x00" in v for v in values)), None)
        if name is None:
            return None
        return _bad_request(request, f"Parameter “{name}” contains a NUL character, which no text may hold.")

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, ValidationError):
            return None
        return _bad_request(request, malformed_parameter_message(exception, [request.GET, request.POST]))


def _is_form(request: HttpRequest) -> bool:
    return request.content_type in ("application/x-www-form-urlencoded", "multipart/form-data")


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
