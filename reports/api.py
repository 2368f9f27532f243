"""REST API for the report tables (JSON), with the pages' rules: outsiders 404, members read.

    GET /api/projects/<uuid>/reports/excerpts/?columns=...&themes=...&offset=0&limit=100
    GET /api/projects/<uuid>/reports/frequency/?level=code|theme&by=<attribute>&a=<column key>&b=...
    GET /api/projects/<uuid>/reports/codebook/

Query parameters are the same as the pages'. JSON has no infinity, so a log ratio is a
number, "+inf", "-inf" or null (undefined).
"""

from __future__ import annotations

import itertools
import math

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from projects.api_permissions import ProjectScopedMixin
from reports import codebook_export, frequency
from reports.excerpts import (
    COLUMNS,
    CONTEXT_COLUMNS,
    MAX_CONTEXT,
    ExcerptSpecError,
    excerpt_columns,
    excerpt_count,
    excerpt_headers,
    excerpt_options,
    excerpt_rows,
    spec_from_query,
)

MAX_LIMIT = 1000
MAX_OFFSET = 10**9


class ExcerptTableSerializer(serializers.Serializer):
    columns = serializers.ListField(child=serializers.ChoiceField(choices=[*COLUMNS, *CONTEXT_COLUMNS]),
                                    help_text="The chosen columns, then the context ones asked for (question, context).")
    headers = serializers.ListField(child=serializers.CharField())
    matching_segments = serializers.IntegerField(help_text="Codings matching the choices (before runs are joined).")
    offset = serializers.IntegerField()
    limit = serializers.IntegerField()
    results = serializers.ListField(child=serializers.DictField(), help_text="One object per excerpt: the chosen "
                                    "columns (with the context asked for) plus interview_uuid and coders.")


class FrequencyColumnSerializer(serializers.Serializer):
    key = serializers.CharField(help_text="The participant's uuid when grouped by participant, else the value.")
    label = serializers.CharField()
    total = serializers.IntegerField(help_text="The column's denominator (see `denominator`).")


class FrequencyRowSerializer(serializers.Serializer):
    label = serializers.CharField()
    uuid = serializers.UUIDField()
    depth = serializers.IntegerField(help_text="0 for codes and themes, 1 for sub-themes.")
    counts = serializers.ListField(child=serializers.IntegerField())
    percents = serializers.ListField(child=serializers.FloatField(allow_null=True))
    count_a = serializers.IntegerField(required=False)
    count_b = serializers.IntegerField(required=False)
    log_ratio = serializers.JSONField(required=False, help_text='A number, "+inf", "-inf" or null (undefined).')
    ci_low = serializers.FloatField(required=False, allow_null=True, help_text="95 % interval of the log ratio.")
    ci_high = serializers.FloatField(required=False, allow_null=True)


class FrequencySectionSerializer(serializers.Serializer):
    label = serializers.CharField()
    totals = serializers.ListField(child=serializers.IntegerField(), help_text="Each column's denominator in the section.")
    rows = FrequencyRowSerializer(many=True)


class FrequencyTableSerializer(serializers.Serializer):
    level = serializers.ChoiceField(choices=list(frequency.LEVELS))
    by = serializers.CharField(help_text="The attribute the columns are grouped by.")
    by_label = serializers.CharField()
    denominator = serializers.ChoiceField(choices=list(frequency.DENOMINATORS))
    note = serializers.CharField(help_text="What n, % and the ratio mean, as printed under the table.")
    columns = FrequencyColumnSerializer(many=True)
    group_a = serializers.ListField(child=serializers.CharField())
    group_b = serializers.ListField(child=serializers.CharField())
    rows = FrequencyRowSerializer(many=True)
    sections = FrequencySectionSerializer(many=True, required=False,
                                          help_text="With `sections`: each value's own totals and rows (those found in it).")


class CodebookRowSerializer(serializers.Serializer):
    code = serializers.CharField()
    parent = serializers.CharField(allow_blank=True)
    kind = serializers.CharField()
    definition = serializers.CharField(allow_blank=True)
    include_when = serializers.CharField(allow_blank=True)
    exclude_when = serializers.CharField(allow_blank=True)
    example = serializers.CharField(allow_blank=True)
    colour = serializers.CharField()
    themes = serializers.CharField(allow_blank=True)
    coded_segments = serializers.IntegerField()
    archived = serializers.CharField(allow_blank=True)


class CodebookTableSerializer(serializers.Serializer):
    results = CodebookRowSerializer(many=True)


def _int(request: Request, name: str, default: int, maximum: int | None = None) -> int:
    raw = request.query_params.get(name, "")
    if raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValidationError({name: f"must be a whole number, not {raw!r}"}) from None
    if value < 0:
        raise ValidationError({name: "must not be negative"})
    return min(value, maximum) if maximum else value


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _ratio(value: float | None) -> float | str | None:
    if value is None or not math.isinf(value):
        return None if value is None else round(value, 4)
    return "+inf" if value > 0 else "-inf"


class ExcerptTableView(ProjectScopedMixin, APIView):
    """Excerpt table rows (columns as chosen) with offset/limit paging."""

    @extend_schema(parameters=[OpenApiParameter("columns", str, many=True, enum=list(COLUMNS)),
                               OpenApiParameter("rows", str, enum=["all", "exemplars"]),
                               OpenApiParameter("themes", OpenApiTypes.UUID, many=True, description="Theme uuids (a theme includes its sub-themes)."),
                               OpenApiParameter("codes", OpenApiTypes.UUID, many=True, description="Code uuids."),
                               OpenApiParameter("participants", OpenApiTypes.UUID, many=True, description="Participant uuids."),
                               OpenApiParameter("coders", str, many=True, description="Coders' usernames."),
                               OpenApiParameter("caption", str, description="The table's caption (up to 300 characters)."),
                               OpenApiParameter("trim", int, description="Trim quotes to this many characters."),
                               OpenApiParameter("question", str, enum=["1"], description="Add the interviewer question each quote answers."),
                               OpenApiParameter("context", int, description=f"Add up to this many neighbouring sentences of the same turn before and after each quote (0 to {MAX_CONTEXT})."),
                               OpenApiParameter("offset", int, description="Rows to skip (0 or more)."),
                               OpenApiParameter("limit", int, description=f"Rows to return (0 to {MAX_LIMIT}; default 100).")],
                   responses=ExcerptTableSerializer)
    def get(self, request: Request, project_uuid) -> Response:
        project = self.project
        options = excerpt_options(project)
        try:
            spec = spec_from_query(options, request.query_params)
        except ExcerptSpecError as e:
            raise ValidationError({"detail": str(e)}) from None
        offset, limit = _int(request, "offset", 0, MAX_OFFSET), _int(request, "limit", 100, MAX_LIMIT)
        matching = excerpt_count(project, spec, options)
        rows = itertools.islice(excerpt_rows(project, spec, options=options, limit=offset + limit, codings=matching),
                                offset, None)
        columns = excerpt_columns(spec, inline_context=False)
        results = []
        for r in rows:
            item = dict(zip(columns, r.values(columns), strict=True))
            item.update(interview_uuid=r.interview_uuid, coders=r.coders)
            results.append(item)
        return Response({"columns": list(columns), "headers": excerpt_headers(columns),
                         "matching_segments": matching, "offset": offset, "limit": limit,
                         "results": results})


class FrequencyTableView(ProjectScopedMixin, APIView):
    """Code (or theme) × model counts and shares, with the group log ratio."""

    @extend_schema(parameters=[
        OpenApiParameter("level", str, enum=list(frequency.LEVELS)),
        OpenApiParameter("by", str, description="participant (default), provider, interface, model_id, depth, origin, "
                                                 "case:<variable> or interview:<attribute>."),
        OpenApiParameter("a", str, many=True, description="Column keys of group A (participant uuids when by=participant)."),
        OpenApiParameter("b", str, many=True, description="Column keys of group B."),
        OpenApiParameter("denominator", str, enum=list(frequency.DENOMINATORS)),
        OpenApiParameter("rollup", bool, description="Parents include their children (default true)."),
        OpenApiParameter("correction", bool, description="Add 0.5 to each cell (default false)."),
        OpenApiParameter("suggestions", str, enum=["exclude"], description="Leave out accepted AI suggestions."),
        OpenApiParameter("sections", str, description="An attribute (as `by`, but another) splitting the interviews into "
                                                       "sections, each counted on its own."),
        OpenApiParameter("infinity", str, enum=list(frequency.INFINITIES),
                         description="How the downloads write an infinite ratio; JSON always gives \"+inf\"/\"-inf\"."),
    ], responses=FrequencyTableSerializer)
    def get(self, request: Request, project_uuid) -> Response:
        population = frequency.Population.of(self.project)
        try:
            spec = frequency.spec_from_query(population, request.query_params)
        except frequency.FrequencySpecError as e:
            raise ValidationError({"detail": str(e)}) from None
        table = frequency.frequency_table(self.project, spec, population)

        def rows(found: list[frequency.FrequencyRow]) -> list[dict]:
            return [{
                "label": r.label, "uuid": r.uuid, "depth": r.depth,
                "counts": r.counts, "percents": [None if p is None else round(p, 4) for p in r.percents],
                **({"count_a": r.count_a, "count_b": r.count_b, "log_ratio": _ratio(r.log_ratio),
                    "ci_low": _rounded(r.ratio.low), "ci_high": _rounded(r.ratio.high)} if spec.has_ratio else {}),
            } for r in found]

        sections = {"sections": [{"label": s.label, "totals": s.totals, "rows": rows(s.rows)} for s in table.sections]} \
            if table.sections else {}
        return Response({
            "level": table.level, "by": spec.by, "by_label": table.by_label, "denominator": spec.denominator,
            "note": table.note(),
            "columns": [{"key": c.key, "label": c.label, "total": n} for c, n in zip(table.columns, table.totals, strict=True)],
            "group_a": table.group_a_labels, "group_b": table.group_b_labels,
            "rows": rows(table.rows),
            **sections,
        })


class CodebookTableView(ProjectScopedMixin, APIView):
    """The codebook table (the rows of the DOCX/CSV export)."""

    @extend_schema(responses=CodebookTableSerializer)
    def get(self, request: Request, project_uuid) -> Response:
        keys = ["code", "parent", "kind", "definition", "include_when", "exclude_when", "example", "colour", "themes",
                "coded_segments", "archived"]
        rows = codebook_export.codebook_rows(self.project)
        return Response({"results": [dict(zip(keys, r, strict=True)) for r in rows]})
