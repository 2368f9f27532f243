"""Query-string filters for API lists, declared once as a serializer.

The same serializer validates the query string (a malformed value is a 400 naming the
parameter, never a 500 from the database) and is given to drf-spectacular as the list's
`parameters`, so the schema documents every filter with its type (uuid, integer, enum)
and schemathesis sends valid and invalid values to it:

    class CodingFilter(serializers.Serializer):
        code = serializers.UUIDField(required=False, source="code__uuid")

    @extend_schema_view(list=extend_schema(parameters=[CodingFilter]))
    class CodingViewSet(...):
        def get_queryset(self):
            return codings.filter(**query_filters(self.request, CodingFilter))

A field's `source` is the lookup its value filters by (`code__uuid`); without one, its name.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers
from rest_framework.request import Request


def query_filters(request: Request, filter_class: type[serializers.Serializer]) -> dict[str, Any]:
    """The validated filters the request gives, keyed by lookup (an empty value means no filter); 400 on a malformed one."""
    fields = filter_class().fields
    # Only the declared names are read: other parameters (page) belong to someone else.
    given = {name: request.query_params.get(name) for name in fields}
    data = {name: value for name, value in given.items() if value not in (None, "")}
    checked = filter_class(data=data)
    checked.is_valid(raise_exception=True)
    return {fields[name].source: checked.validated_data[fields[name].source] for name in data}
