from __future__ import annotations

import logging

from django.db import InterfaceError, OperationalError, connections
from django.http import HttpRequest, HttpResponse
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
