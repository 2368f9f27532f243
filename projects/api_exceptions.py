"""The REST API's exception handler (DRF's, plus a 400 for a malformed parameter), and services' errors as 400s."""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import status
from rest_framework.exceptions import APIException, ValidationError
from rest_framework.response import Response
from rest_framework.views import exception_handler

from projects.middleware import malformed_parameter_message


class RequestBodyTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "request_too_large"


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """A Django ValidationError escaping a view (`filter(uuid="zzz")`) is the client's mistake: 400, naming it;
    a body over DATA_UPLOAD_MAX_MEMORY_SIZE is a 413 saying the limit."""
    if isinstance(exc, RequestDataTooBig):
        exc = RequestBodyTooLarge(f"The request body is larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE / (1024 * 1024):g} MB.")
    if isinstance(exc, DjangoValidationError):
        exc = ValidationError({"detail": malformed_parameter_message(exc, _parameters(context.get("request")))})
    response = exception_handler(exc, context)
    if response is not None:
        response.data = _encodable(response.data)
    return response


_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _encodable(value: Any) -> Any:
    """An error that quotes the request ("“\\ud800” is not a valid choice.") with each lone surrogate written as its
    code point: JSON's UTF-8 cannot carry one, and the answer would fail to encode (a 500) instead of saying what
    was wrong."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub(lambda m: f"U+{ord(m.group()):X}", value) if _LONE_SURROGATE.search(value) else value
    if isinstance(value, dict):
        return {_encodable(key): _encodable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_encodable(item) for item in value]
    return value


def drf_error(exc: DjangoValidationError) -> ValidationError:
    """A service's Django ValidationError as DRF's 400: field errors by field, others as `detail`."""
    return ValidationError(exc.message_dict if hasattr(exc, "error_dict") else {"detail": exc.messages})


def _parameters(request) -> list:
    if request is None:
        return []
    try:
        return [request.query_params, request.data]
    except APIException:  # a body DRF cannot parse names no parameter
        return [request.query_params]
