"""Reading API requests: the JSON parser and OPTIONS metadata (set in REST_FRAMEWORK), and the JSON field
ModelSerializers use for models' JSONFields (registered in projects.apps)."""

from __future__ import annotations

from typing import IO, Any

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.http import Http404
from rest_framework import serializers
from rest_framework.exceptions import APIException, ParseError
from rest_framework.metadata import SimpleMetadata
from rest_framework.parsers import JSONParser
from rest_framework.request import Request, clone_request
from rest_framework.utils import json as drf_json

from projects import safejson


class SafeJSONParser(JSONParser):
    """DRF's JSON parser with the limits every other JSON input has: nesting depth and number size."""

    def parse(self, stream: IO[bytes], media_type: str | None = None, parser_context: dict[str, Any] | None = None) -> Any:
        # DRF hands JSON parsers the request body, which Django has already held to DATA_UPLOAD_MAX_MEMORY_SIZE
        # (a larger one is a 413: projects.api_exceptions).
        body = stream.read()
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            text = body.decode(encoding)
        except (LookupError, UnicodeDecodeError) as exc:
            raise ParseError(f"JSON parse error - the body is not {encoding} text: {exc}") from None
        try:
            return safejson.loads(text, parse_constant=drf_json.strict_constant if self.strict else None)
        except safejson.JSONInputError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
        except ValueError as exc:  # NaN or Infinity, which JSON does not have
            raise ParseError(f"JSON parse error - {exc}") from None


class SafeJSONField(serializers.JSONField):
    """A JSON field whose form-field text (multipart, urlencoded) is read with the JSON limits, and whose
    `null` there is refused like JSON's own null when the field does not allow it."""

    def to_internal_value(self, data: Any) -> Any:
        if not (self.binary or getattr(data, "is_json_string", False)):
            return super().to_internal_value(data)
        try:
            value = safejson.loads(data)
        except safejson.JSONInputError as exc:
            raise serializers.ValidationError(f"Value must be valid JSON: {exc}.") from None
        if value is None and not self.allow_null:
            self.fail("null")
        return value


class ActionAwareMetadata(SimpleMetadata):
    """OPTIONS for every view. A list-level route (notes/mine/) has no object to look up for PUT, and its
    body is described by the serializer of the action that method runs, not of the OPTIONS request."""

    def determine_actions(self, request: Request, view: Any) -> dict[str, Any]:
        if getattr(view, "detail", None) is not False:
            return super().determine_actions(request, view)
        actions = {}
        action = view.action
        for method in {"PUT", "POST"} & set(view.allowed_methods):
            view.request = clone_request(request, method)
            view.action = getattr(view, "action_map", {}).get(method.lower(), action)
            try:
                view.check_permissions(view.request)
                actions[method] = self.get_serializer_info(view.get_serializer())
            except (APIException, Http404, PermissionDenied):
                continue
            finally:
                view.request, view.action = request, action
        return actions
