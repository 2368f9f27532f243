"""Query-string filters for API lists, declared once as a serializer.

The same serializer validates the query string (a malformed value is a 400 naming the
parameter, never a 500 from the database) and is given to drf-spectacular as the list's
`parameters`, so the schema documents every filter with its type (uuid, integer, enum)
and schemathesis sends valid and invalid values to it:

    @extend_schema_view(list=extend_schema(parameters=[CodingFilter]))
    class CodingViewSet(...):
        def get_queryset(self):
            wanted = query_filters(self.request, CodingFilter) if self.action == "list" else {}
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers
from rest_framework.request import Request


def query_filters(request: Request, filter_class: type[serializers.Serializer]) -> dict[str, Any]:
    """The validated filters the request gives (an empty value means no filter); 400 on a malformed one."""
    names = filter_class().fields
    # Only the declared names are read: other parameters (page) belong to someone else.
    given = {name: request.query_params.get(name) for name in names}
    data = {name: value for name, value in given.items() if value not in (None, "")}
    checked = filter_class(data=data)
    checked.is_valid(raise_exception=True)
    return {name: value for name, value in checked.validated_data.items() if name in data}
