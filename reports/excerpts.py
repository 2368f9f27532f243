"""Excerpt tables for papers: which coded text, under which theme/code/model, with provenance.

An excerpt is a run of contiguous coded segments of one turn under one code (DESIGN:
"contiguous coded segments of one turn read as one excerpt"); several coders on the
same segment make one excerpt with all their names. Quotes are the turn's exact text;
the only change ever made is a trim to a chosen length, always marked `[...]`.

Rows stream from one server-side cursor (values + iterator), so memory stays flat and
the number of queries does not depend on the number of excerpts.

With a theme column the rows follow the codes' places in themes: a code in two themes gives
its excerpts under each theme (that is what a theme → code → quote table in a paper shows),
and a code in no (live) theme gives them once under "(no theme)", so "all coded excerpts"
means all. A theme filter keeps only the chosen themes' codes.

"Include sub-codes" widens a code filter to the chosen codes' descendants.

Provenance columns for reproducibility: the turn number (as the transcript shows it), the
quote's character offsets in the turn's text (code points, end exclusive: turn.text[start:end]),
the interview's and the turn's ids (uuids), and the response id (a live turn's
chat-completions id; an imported turn's message ids from its export).

Context for a quote: the interviewer question it answers (the nearest interviewer turn before
the quoted turn) and up to MAX_CONTEXT neighbouring sentences (segments) of the same turn before
and after it, plain text as the reader saw it. Spreadsheet formats get them as separate columns;
Word, LaTeX and the preview set them lighter around the quote (`excerpt_columns`). They are loaded
in one query per CHUNK rows, so the table still costs a fixed number of queries per chunk.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import reduce
from itertools import islice
from operator import or_
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.postgres.fields import ArrayField
from django.db import connection
from django.db.models import (
    BigIntegerField,
    Case,
    Exists,
    F,
    FilteredRelation,
    Func,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    StringAgg,
    Subquery,
    TextField,
    Value,
    When,
)
from django.db.models.fields.json import KeyTextTransform, KeyTransform
from django.db.models.functions import Cast, Coalesce, Concat, Greatest, JSONObject, Least, Substr

from coding.models import Code, Coding
from coding.queries import cached_counts, live_interviews_digest, with_descendants
from interviews.models import Interview, Participant, Speaker, Turn, turn_number
from interviews.provenance import CITED_LIVE_KEYS, REQUEST_PARAMS, turn_citation
from interviews.rendering import MUTED, RichText, Run, quote_text
from projects.models import Project
from projects.text import cut_point
from reports.query_params import choice, flag, last
from themes.models import Exemplar, Theme, ThemeCode

COLUMNS: dict[str, str] = {
    "theme": "Theme",
    "subtheme": "Sub-theme",
    "code": "Code",
    "model": "Model",
    "interview": "Interview",
    "turn": "Turn",
    "quote": "Quote",
    "provenance": "Provenance",
    "offsets": "Offsets",
    "interview_id": "Interview id",
    "turn_id": "Turn id",
    "response_id": "Response id",
}
# Context columns: added by the builder's context options, never ticked as columns themselves.
CONTEXT_COLUMNS: dict[str, str] = {
    "question": "Interviewer question",
    "context_before": "Before the quote",
    "context_after": "After the quote",
}
HEADERS = {**COLUMNS, **CONTEXT_COLUMNS, "quote_in_context": COLUMNS["quote"]}
MAX_CONTEXT = 3  # neighbouring sentences on each side
QUESTION_MARK = "Q: "  # before the question, where it is set in the quote's cell
NO_THEME = "(no theme)"
DEFAULT_COLUMNS = ("theme", "code", "model", "quote")
TRIM_MARK = "[...]"
MIN_TRIM = 20
MAX_CAPTION = 300  # the builder's caption field holds as many
CHUNK = 500  # rows fetched per round trip: the most a table ever holds in memory
FIRST_ROWS_FETCH = 4  # codings fetched per excerpt wanted for a preview (runs of codings join into one excerpt)
SORTED_WHOLE = 10_000  # codings: a preview of a table this small sorts all of them in one query (tens of ms)
LEAD = 200
SOURCE_CACHE = 5000


class ExcerptSpecError(ValueError):
    """A builder choice that cannot be honoured (unknown column, theme, code...)."""


@dataclass(frozen=True)
class ExcerptSpec:
    """What goes into an excerpt table: filters (empty = all), columns in order, trimming."""

    columns: tuple[str, ...] = DEFAULT_COLUMNS
    themes: frozenset[int] = frozenset()
    codes: frozenset[int] = frozenset()
    participants: frozenset[int] = frozenset()
    coders: frozenset[int] = frozenset()
    exemplars_only: bool = False
    max_quote_chars: int | None = None
    caption: str = ""
    # Quotes show what the reader saw (Markdown rendered, markers gone); this keeps the Markdown source.
    markdown_source: bool = False
    # Codings a researcher made by accepting an AI suggestion (coding.Coding.Origin.SUGGESTION).
    with_suggestions: bool = True
    subcodes: bool = False  # recorded for the builder; `codes` already holds the descendants when on
    question: bool = False  # the interviewer question the quote answers
    context: int = 0  # neighbouring sentences of the same turn before and after the quote (0–MAX_CONTEXT)

    @property
    def has_context(self) -> bool:
        return self.question or self.context > 0

    @property
    def themed(self) -> bool:
        return bool(self.themes) or "theme" in self.columns or "subtheme" in self.columns

    @property
    def headers(self) -> list[str]:
        return [COLUMNS[c] for c in self.columns]


@dataclass
class ExcerptRow:
    theme: str
    subtheme: str
    code: str
    model: str
    interview: str
    interview_uuid: str
    turn: int
    quote: str
    provenance: str
    coders: list[str] = field(default_factory=list)
    segment_positions: tuple[int, int] = (0, 0)
    offsets: str = ""  # "start–end" in the turn's text
    interview_id: str = ""
    turn_id: str = ""
    response_id: str = ""
    turn_pk: int = 0
    span: tuple[int, int] = (0, 0)  # the quote's first and last character in the turn's text (end exclusive)
    question: str = ""
    context_before: str = ""
    context_after: str = ""

    def values(self, columns: tuple[str, ...]) -> list[Any]:
        return [getattr(self, c) for c in columns]

    @property
    def quote_in_context(self) -> str:
        """The quote with its context around it, the context muted (lighter) for Word, LaTeX and HTML."""
        if not (self.question or self.context_before or self.context_after):
            return self.quote
        runs = [Run(QUESTION_MARK + self.question, frozenset({MUTED})), Run("\n")] if self.question else []
        if self.context_before:
            runs += [Run(self.context_before, frozenset({MUTED})), Run(" ")]
        runs += self.quote.runs if isinstance(self.quote, RichText) else [Run(self.quote)]
        if self.context_after:
            runs += [Run(" "), Run(self.context_after, frozenset({MUTED}))]
        return RichText(runs)


def excerpt_columns(spec: ExcerptSpec, *, inline_context: bool) -> tuple[str, ...]:
    """The table's columns: the chosen ones with the context, set in the quote's cell or as columns after it."""
    extra = tuple(c for c, on in (("question", spec.question), ("context_before", spec.context),
                                  ("context_after", spec.context)) if on)
    if not extra:
        return spec.columns
    if "quote" not in spec.columns:
        return spec.columns + extra
    if inline_context:
        return tuple("quote_in_context" if c == "quote" else c for c in spec.columns)
    at = spec.columns.index("quote") + 1
    return spec.columns[:at] + extra + spec.columns[at:]


def excerpt_headers(columns: tuple[str, ...]) -> list[str]:
    return [HEADERS[c] for c in columns]


# --- the builder's choices -----------------------------------------------------------


@dataclass
class ExcerptOptions:
    """What a project offers to choose from, loaded in a fixed number of queries."""

    themes: list[Theme]
    codes: list[Code]
    participants: list[Participant]
    coders: list[Any]


def excerpt_options(project: Project) -> ExcerptOptions:
    """Themes (sub-themes after their parent), codes, participants and coders of the project."""
    themes = list(Theme.objects.for_project(project).exclude(status=Theme.Status.DISCARDED)
                  .select_related("parent").order_by("position", "name"))
    ids = {t.pk for t in themes}
    by_parent: dict[int | None, list[Theme]] = {}
    for t in themes:
        by_parent.setdefault(t.parent_id if t.parent_id in ids else None, []).append(t)
    ordered = [s for top in by_parent.get(None, []) for s in [top, *by_parent.get(top.pk, [])]]
    # Who coded is read from every coding of the project: kept under the version of its coding events, as the
    # counts are.
    coder_ids = cached_counts(project, "coders", (), lambda: sorted(
        Coding.objects.filter(interview__project=project).order_by().values_list("coder_id", flat=True).distinct()))
    coders = list(get_user_model().objects.filter(pk__in=coder_ids).order_by("username"))
    return ExcerptOptions(
        themes=ordered,
        codes=list(Code.objects.for_project(project).order_by("position", "name")),
        participants=list(Participant.objects.filter(project=project).order_by("label")),
        coders=coders,
    )


def spec_from_query(options: ExcerptOptions, query: Mapping[str, Any]) -> ExcerptSpec:
    """Read the builder's GET parameters (UUIDs and usernames) into a spec; unknown values are errors."""
    getlist = query.getlist if hasattr(query, "getlist") else (lambda k: list(query.get(k, [])))
    columns = tuple(c for c in getlist("columns") if c) or DEFAULT_COLUMNS
    unknown = [c for c in columns if c not in COLUMNS]
    if unknown:
        raise ExcerptSpecError(f"Unknown column {unknown[0]!r}; choose from {', '.join(COLUMNS)}.")
    if len(set(columns)) != len(columns):
        raise ExcerptSpecError("A column is chosen twice.")
    themes = _pick(getlist("themes"), {str(t.uuid): t for t in options.themes}, "theme")
    # A theme includes its sub-themes: choosing "Belonging" means all of it.
    theme_ids = {t.pk for t in themes} | {t.pk for t in options.themes if t.parent_id in {x.pk for x in themes}}
    trim = _positive_int(last(query, "trim"), "trim")
    if trim is not None and trim < MIN_TRIM:
        raise ExcerptSpecError(f"Trim quotes to at least {MIN_TRIM} characters (got {trim}).")
    subcodes = flag(query, "subcodes", False, ExcerptSpecError)
    codes = {c.pk for c in _pick(getlist("codes"), {str(c.uuid): c for c in options.codes}, "code")}
    if subcodes:
        codes = with_descendants(codes, options.codes)
    context = _positive_int(last(query, "context"), "context", zero=True) or 0
    if context > MAX_CONTEXT:
        raise ExcerptSpecError(f"context: show at most {MAX_CONTEXT} neighbouring sentences on each side (got {context}).")
    caption = (last(query, "caption") or "").strip()
    if len(caption) > MAX_CAPTION:
        raise ExcerptSpecError(f"caption: at most {MAX_CAPTION} characters (got {len(caption)}).")
    return ExcerptSpec(
        columns=columns,
        question=flag(query, "question", False, ExcerptSpecError),
        context=context,
        themes=frozenset(theme_ids),
        codes=frozenset(codes),
        subcodes=subcodes,
        participants=frozenset(p.pk for p in _pick(getlist("participants"),
                                                     {str(p.uuid): p for p in options.participants}, "participant")),
        coders=frozenset(u.pk for u in _pick(getlist("coders"), {u.username: u for u in options.coders}, "coder")),
        exemplars_only=choice(query, "rows", {"all": False, "exemplars": True}, False, ExcerptSpecError),
        max_quote_chars=trim,
        caption=caption,
        markdown_source=choice(query, "quotes", {"plain": False, "markdown": True}, False, ExcerptSpecError),
        with_suggestions=choice(query, "suggestions", {"include": True, "exclude": False}, True, ExcerptSpecError),
    )


def _pick(values: list[str], available: dict[str, Any], what: str) -> list[Any]:
    picked = []
    for v in values:
        if not v:
            continue
        if v not in available:
            raise ExcerptSpecError(f"There is no {what} {v!r} in this project (it may have been deleted).")
        picked.append(available[v])
    return picked


def _positive_int(value: str | None, name: str, *, zero: bool = False) -> int | None:
    unit = "sentences" if zero else "characters"
    if value in (None, ""):
        return None
    try:
        number = int(value)
    except ValueError:
        raise ExcerptSpecError(f"{name} must be a whole number of {unit}, not {value!r}.") from None
    if number < 0 or (number == 0 and not zero):
        raise ExcerptSpecError(f"{name} must be a positive number of {unit}.")
    return number


def chosen_codes(spec: ExcerptSpec, options: ExcerptOptions) -> list[Code]:
    """The codes ticked in the builder: with sub-codes on, `spec.codes` also holds their descendants."""
    return [c for c in options.codes if c.pk in spec.codes and not (spec.subcodes and c.parent_id in spec.codes)]


def spec_to_params(spec: ExcerptSpec, options: ExcerptOptions) -> dict[str, list[str]]:
    """The GET parameters that rebuild `spec` (stored on export jobs)."""
    return {
        "columns": list(spec.columns),
        "themes": [str(t.uuid) for t in options.themes if t.pk in spec.themes],
        "codes": [str(c.uuid) for c in chosen_codes(spec, options)],
        "subcodes": ["1"] if spec.subcodes else [],
        "participants": [str(p.uuid) for p in options.participants if p.pk in spec.participants],
        "coders": [u.username for u in options.coders if u.pk in spec.coders],
        "rows": ["exemplars" if spec.exemplars_only else "all"],
        "trim": [str(spec.max_quote_chars)] if spec.max_quote_chars else [],
        "caption": [spec.caption] if spec.caption else [],
        "quotes": ["markdown"] if spec.markdown_source else [],
        "suggestions": [] if spec.with_suggestions else ["exclude"],
        "question": ["1"] if spec.question else [],
        "context": [str(spec.context)] if spec.context else [],
    }


# --- rows ------------------------------------------------------------------------------


def excerpt_count(project: Project, spec: ExcerptSpec, options: ExcerptOptions | None = None) -> int:
    """An upper bound of the rows (codings before runs are joined); one query, two when counted (one more without `options`).

    Counting every coding of the project on each preview grew with the project (35 ms at 50× the peer corpus),
    so the count is kept under the version of the project's coding events (coding.queries.cached_counts) and
    what else it reads that changes without a coding write: the live interviews with their participants, the
    live codes.
    A theme filter reads the themes' codes, which change without one too: such a table is counted each time.
    """
    if spec.exemplars_only:
        return _exemplar_queryset(project, spec).count()
    count = _coding_queryset(project, spec).count
    if spec.themes:
        return count()
    codes = [c.pk for c in options.codes] if options else list(Code.objects.for_project(project).values_list("pk", flat=True))
    inputs = (sorted(spec.codes), sorted(spec.participants), sorted(spec.coders), spec.with_suggestions, sorted(codes),
              live_interviews_digest(project))
    return cached_counts(project, "excerpt-table", inputs, count)


def excerpt_rows(project: Project, spec: ExcerptSpec, *, limit: int | None = None,
                 options: ExcerptOptions | None = None, codings: int | None = None) -> Iterator[ExcerptRow]:
    """Excerpt rows in table order (theme, sub-theme, code, model, interview, position), streamed.

    `codings`: the table's `excerpt_count` when the caller has it, so a small table's first rows take one query.
    """
    if spec.exemplars_only:
        rows = _exemplar_rows(project, spec)
        rows = rows if limit is None else islice(rows, limit)
    elif limit is not None:
        rows = iter(_first_coding_rows(project, spec, options or excerpt_options(project), limit, codings=codings))
    else:
        rows = _coding_rows(project, spec, options or excerpt_options(project))
    yield from _with_context(rows, spec) if spec.has_context else rows


# --- context: the question a quote answers, its neighbouring sentences -------------------


def _with_context(rows: Iterator[ExcerptRow], spec: ExcerptSpec) -> Iterator[ExcerptRow]:
    """The rows with their context, loaded for CHUNK rows at a time in one query."""
    while chunk := list(islice(rows, CHUNK)):
        _add_context(chunk, spec)
        yield from chunk


def _add_context(rows: list[ExcerptRow], spec: ExcerptSpec) -> None:
    turns = Turn.objects.filter(pk__in={r.turn_pk for r in rows}).order_by()
    fields = ["pk"]
    if spec.question:
        previous = (Turn.objects.filter(interview_id=OuterRef("interview_id"), position__lt=OuterRef("position"),
                                        speaker=Speaker.INTERVIEWER).order_by("-position").values("text")[:1])
        turns = turns.annotate(question=Subquery(previous, output_field=TextField()))
        fields.append("question")
    if spec.context:
        # The turn's sentence boundaries as "start,end;start,end…": the neighbours are then sliced from the
        # turn's own text, so the context is exactly what the turn says. Unordered, and sorted by _neighbours:
        # SQLite before 3.44 (the laptop default) cannot order an aggregate.
        bounds = Concat(Cast("segments__start", TextField()), Value(","), Cast("segments__end", TextField()),
                        output_field=TextField())
        turns = turns.annotate(bounds=StringAgg(bounds, delimiter=Value(";")))
        fields += ["text", "bounds"]
    found = {t.pk: t for t in turns.values_list(*fields, named=True)}
    for row in rows:
        turn = found.get(row.turn_pk)
        if turn is None:
            continue
        if spec.question:
            row.question = _context_text(turn.question or "", spec)
        if spec.context and row.span[1] > 0:  # an exemplar without spans has no place in its turn to count from
            row.context_before, row.context_after = _neighbours(turn.text, turn.bounds or "", row.span, spec)


def _neighbours(text: str, bounds: str, span: tuple[int, int], spec: ExcerptSpec) -> tuple[str, str]:
    """Up to `spec.context` sentences of the turn before and after the quote's span, as plain text."""
    sentences = sorted(tuple(int(n) for n in b.split(",")) for b in bounds.split(";") if b)
    before = [s for s in sentences if s[1] <= span[0]][-spec.context:]
    after = [s for s in sentences if s[0] >= span[1]][:spec.context]
    return (_context_text(text[before[0][0]:before[-1][1]], spec) if before else "",
            _context_text(text[after[0][0]:after[-1][1]], spec) if after else "")


def _context_text(source: str, spec: ExcerptSpec) -> str:
    """Context as plain text: rendered by the one renderer like the quote (or the Markdown source, if chosen)."""
    return source.strip() if spec.markdown_source else str(quote_text(source))


FIELDS = (
    "segment_id", "segment__position", "segment__turn_id", "segment__text", "segment__start", "segment__end", "lead",
    "code_id", "coder_id", "origin", "interview_id", "segment__turn__position", "segment__turn__uuid",
)
PROVENANCE_FIELDS = ("segment__turn__model_slug", "segment__turn__timestamp", "live_record")
INTERVIEW_FIELDS = ("id", "uuid", "title", "conducted_at", "source_format", "source_filename", "source_sha256",
                    "participant_id")
INTERFACES = dict(Participant.Interface.choices)


def _live_record(turn: str) -> Case:
    """Only the keys of a live turn's record that its citation reads, picked in SQL; None for a turn without one.

    The whole record also holds every message sent and the raw response: moving it for
    each row would cost far more than the table itself. An imported turn has no record, and
    picking a dozen keys that are not there from every row of it cost a third of the table's query.
    """
    record = KeyTransform("provenance", f"{turn}__metadata")
    request = KeyTransform("request", record)
    picked = JSONObject(**{k: KeyTransform(k, record) for k in CITED_LIVE_KEYS},
                        request=JSONObject(**{k: KeyTransform(k, request) for k in REQUEST_PARAMS if k != "model"}))
    # Read as JSON text, parsed once per turn by _present: a JSONField here would convert every row of the table.
    return Case(When(**{f"{turn}__metadata__has_key": "provenance"}, then=picked), default=None, output_field=TextField())


def _response_id(turn: str) -> Coalesce:
    """A live turn's chat-completions id, else the message ids an imported turn's export gave (as JSON text)."""
    live = KeyTextTransform("response_id", KeyTransform("provenance", f"{turn}__metadata"))
    return Coalesce(live, KeyTextTransform("message_ids", f"{turn}__metadata"), Value(""), output_field=TextField())


def _response_text(value: str | None) -> str:
    """Message ids arrive as a JSON list: shown comma-separated."""
    if not value:
        return ""
    if value.startswith("["):
        try:
            return ", ".join(str(v) for v in json.loads(value))
        except ValueError:
            return value
    return value


def _present(record: str | None) -> dict[str, Any]:
    """The record (JSON text from _live_record) without the keys the turn does not have (an imported turn has none)."""
    out = {k: v for k, v in (json.loads(record) if record else {}).items() if v is not None}
    request = {k: v for k, v in (out.pop("request", None) or {}).items() if v is not None}
    return {**out, "request": request} if out or request else {}


def _via(provider: str, interface: str) -> str:
    return ", ".join(filter(None, [provider, INTERFACES.get(interface, interface)]))


def _coding_queryset(project: Project, spec: ExcerptSpec, live_themes: list[int] | None = None) -> QuerySet:
    """The codings in the table; with `live_themes` (ids), joined to the codes' places in those themes."""
    qs = Coding.objects.filter(interview__project=project, interview__deleted_at__isnull=True,
                               code__deleted_at__isnull=True, code__project=project)
    if spec.codes:
        qs = qs.filter(code_id__in=spec.codes)
    if spec.participants:
        qs = qs.filter(interview__participant_id__in=spec.participants)
    if spec.coders:
        qs = qs.filter(coder_id__in=spec.coders)
    if not spec.with_suggestions:
        qs = qs.filter(origin=Coding.Origin.HUMAN)
    if spec.themed and live_themes is not None:
        # The code's places in live themes, as a LEFT JOIN: one row per place, or one row with no
        # theme for a code in none (the values()/order_by() in _coding_rows reuse the same join).
        in_live = Q(code__theme_codes__theme_id__in=live_themes or [0])
        qs = qs.annotate(place=FilteredRelation("code__theme_codes", condition=in_live))
        if spec.themes:
            qs = qs.filter(place__theme_id__in=spec.themes)
    elif spec.themes:
        qs = qs.filter(code__theme_codes__theme_id__in=spec.themes)
    return qs


def _rank(field: str, ids: list[int]) -> Any:
    """The position of `field`'s value in `ids` (after them when absent), as SQL, so the database sorts integers, not names.

    One array_position() rather than a CASE with a WHEN per id: building and sending a WHEN for each of a
    hundred codes cost the preview more than its rows did at 50× the peer corpus.
    """
    if not ids:
        return Value(0)
    if connection.vendor != "postgresql":  # SQLite, the laptop default, has no arrays
        return Case(*[When(**{field: pk}, then=Value(i + 1)) for i, pk in enumerate(ids)], default=Value(len(ids) + 1),
                    output_field=IntegerField())
    return _ArrayRank(Value(ids, output_field=ArrayField(BigIntegerField())), F(field), absent=len(ids) + 1)


class _ArrayRank(Func):
    """COALESCE(array_position(ids, field), absent), PostgreSQL's integer as it is.

    Without a converter: the ranks are read by the sort, and Django's int() on each one was most of the work of
    converting every row of a table.
    """

    template = "COALESCE(%(function)s(%(expressions)s), %(absent)d)"
    function = "array_position"
    output_field = IntegerField()

    def get_db_converters(self, connection: Any) -> list:
        return []


@dataclass
class _Lookups:
    """Names for the ids the row query returns: codes, coders, models and theme placements are few."""

    codes: dict[int, str]
    coders: dict[int, str]
    participants: dict[int, Participant]
    placements: dict[int, tuple[str, str]]  # theme id -> (theme, sub-theme)
    interviews: dict[int, Any] = field(default_factory=dict)  # id -> the interview's columns (one query)
    turns: dict[int, tuple[str, str]] = field(default_factory=dict)  # turn id -> (its uuid, provenance of its quotes)
    interview_ids: dict[int, str] = field(default_factory=dict)  # interview id -> its uuid as text

    @classmethod
    def of(cls, options: ExcerptOptions) -> _Lookups:
        names = {t.pk: t for t in options.themes}
        placements = {}
        for t in options.themes:
            parent = names.get(t.parent_id)
            placements[t.pk] = (parent.name, t.name) if parent else (t.name, "")
        return cls(codes={c.pk: c.name for c in options.codes}, coders={u.pk: u.username for u in options.coders},
                   participants={p.pk: p for p in options.participants}, placements=placements)


def _coding_rows(project: Project, spec: ExcerptSpec, options: ExcerptOptions) -> Iterator[ExcerptRow]:
    values, names = _coding_values(project, spec, options)
    yield from _join_runs(values.iterator(chunk_size=CHUNK), spec, names)


def _first_coding_rows(project: Project, spec: ExcerptSpec, options: ExcerptOptions, limit: int, *,
                       codings: int | None) -> list[ExcerptRow]:
    """The first `limit` excerpts from LIMITed queries over the table's first groups (`_table_groups`).

    In a large table the database reads and sorts the codings of the first codes only, not every coding of
    the project; when those hold too few codings, four times as many groups are taken, up to the whole
    table. A table of at most SORTED_WHOLE `codings` is sorted whole at once. An excerpt joins a run of
    codings, so a few times `limit` codings are fetched; the last excerpt read may continue past the cut
    and counts only once more rows show it ended.
    """
    values, names = _coding_values(project, spec, options, every_interview=False)
    keyed, _ = _keyed_codings(project, spec, options)
    fetch = FIRST_ROWS_FETCH * (limit + 1)
    groups = [] if codings is not None and codings <= SORTED_WHOLE else _table_groups(spec, options)
    taken = 1
    while True:
        prefix = groups[:taken] if taken < len(groups) else None
        table, first = values, keyed
        if prefix is not None:
            in_prefix = _in_groups(prefix, spec)
            table, first = values.filter(in_prefix), keyed.filter(in_prefix)
        # The database sorts the codings on their keys alone and reads the quotes (segment text, the turn's lead) of
        # the first `fetch` only: reading them for every coding before the sort was half the preview's time. A
        # coding in several themes is several rows; the rows of the codings chosen are cut again in table order.
        fetched = list(table.filter(pk__in=first.values("pk")[:fetch])[:fetch])
        if len(fetched) < fetch and prefix is not None:
            taken *= FIRST_ROWS_FETCH
            continue
        _load_interviews(names, {v.interview_id for v in fetched})
        rows = list(_join_runs(iter(fetched), spec, names))
        if len(fetched) < fetch or len(rows) > limit:
            return rows[:limit]
        fetch *= FIRST_ROWS_FETCH


def _table_groups(spec: ExcerptSpec, options: ExcerptOptions) -> list[tuple[int | None, int]]:
    """The table's leading sort keys (`_coding_values`) as (theme, code) groups in table order, in one query.

    A themed table lists each theme's codes in their places, then each code with no theme (theme None: only
    codes in no theme have such rows); any other table lists each code (theme None). The codings of the
    first groups are the first rows of the table.
    """
    code_rank = {c.pk: i for i, c in enumerate(options.codes)}
    codes = [c.pk for c in options.codes if not spec.codes or c.pk in spec.codes]
    if not spec.themed:
        return [(None, c) for c in codes]
    theme_rank = {t.pk: i for i, t in enumerate(options.themes) if not spec.themes or t.pk in spec.themes}
    placements = ThemeCode.objects.filter(theme_id__in=theme_rank).values_list("theme_id", "position", "code_id")
    placed = sorted(placements, key=lambda p: (theme_rank[p[0]], p[1], code_rank.get(p[2], len(code_rank)), p[2]))
    groups = [(theme, code) for theme, _, code in placed if not spec.codes or code in spec.codes]
    return groups if spec.themes else groups + [(None, c) for c in codes]


def _in_groups(groups: list[tuple[int | None, int]], spec: ExcerptSpec) -> Q:
    """The codings of these (theme, code) groups; by code first, so the database reads them from its index.

    Themes are matched on the `placement_id` annotation: a new filter on `place__…` would join the code's
    places a second time.
    """
    by_code = Q(code_id__in={code for _, code in groups})
    if not spec.themed:
        return by_code
    by_theme: dict[int | None, list[int]] = {}
    for theme, code in groups:
        by_theme.setdefault(theme, []).append(code)
    return by_code & reduce(or_, (Q(placement_id=theme, code_id__in=codes) for theme, codes in by_theme.items()))


def _coding_values(project: Project, spec: ExcerptSpec, options: ExcerptOptions, *,
                   every_interview: bool = True) -> tuple[QuerySet, _Lookups]:
    """The codings of the table in table order (as named rows) and the names their ids stand for.

    `every_interview=False` leaves out the interviews' columns: a reader of a few rows loads its own (`_load_interviews`).
    """
    qs, keys = _keyed_codings(project, spec, options)
    # Up to LEAD characters of the turn before each segment: joining a run of segments
    # with the text between them gives the turn's exact text without loading whole turns
    # (or a per-row subquery for the previous segment).
    qs = qs.annotate(lead=Substr("segment__turn__text", Greatest(F("segment__start") - (LEAD - 1), 1),
                                 Least(F("segment__start"), LEAD)))
    if "provenance" in spec.columns:
        qs = qs.annotate(live_record=_live_record("segment__turn"))
    fields = list(FIELDS) + (list(PROVENANCE_FIELDS) if "provenance" in spec.columns else [])
    if "response_id" in spec.columns:
        qs = qs.annotate(response_id=_response_id("segment__turn"))
        fields.append("response_id")
    if spec.themed:
        fields.append("placement_id")
    # The sort keys are selected first. PostgreSQL's sort reads each key after the first from the sorted row itself,
    # and one behind the quote's text is found by stepping over that text in every comparison (the sort of the
    # peer corpus's 4,050 codings took 50 ms with the keys last, 15 ms with them first).
    values = qs.values_list(*keys, *fields, named=True)
    names = _Lookups.of(options)
    if every_interview:
        # Per-interview columns once per interview rather than on every row (titles and hashes
        # repeated 4,000 times were most of the bytes the row query moved).
        interviews = Interview.objects.filter(project=project, deleted_at__isnull=True)
        if spec.participants:
            interviews = interviews.filter(participant_id__in=spec.participants)
        names.interviews = {iv.id: iv for iv in interviews.values_list(*INTERVIEW_FIELDS, named=True)}
    return values, names


def _keyed_codings(project: Project, spec: ExcerptSpec, options: ExcerptOptions) -> tuple[QuerySet, list[str]]:
    """The codings of the table with their sort keys, in table order, and the keys' names."""
    qs = _coding_queryset(project, spec, live_themes=[t.pk for t in options.themes])
    keys: dict[str, Any] = {}
    if spec.themed:
        qs = qs.annotate(placement_id=F("place__theme_id"))
        keys |= {"by_theme": _rank("place__theme_id", [t.pk for t in options.themes]), "by_place": F("place__position")}
    keys |= {"by_code": _rank("code_id", [c.pk for c in options.codes]), "by_code_id": F("code_id"),
             "by_model": _rank("interview__participant_id", [p.pk for p in options.participants]),
             "by_conducted": F("interview__conducted_at"), "by_interview": F("interview_id"),
             "by_position": F("segment__position"), "by_coder": F("coder_id")}
    return qs.annotate(**keys).order_by(*keys), list(keys)


def _join_runs(values: Iterator[Any], spec: ExcerptSpec, names: _Lookups) -> Iterator[ExcerptRow]:
    """Join consecutive segments of one turn under one code (and placement) into excerpts."""
    run: dict[str, Any] | None = None
    for v in values:
        key = (getattr(v, "placement_id", None), v.code_id, v.segment__turn_id)
        if run is not None and run["key"] == key:
            if v.segment_id == run["last_segment"]:
                _add_coder(run, v, names)
                continue
            gap = _gap(v, run["last_end"])
            if v.segment__position == run["last_position"] + 1 and gap is not None:
                run["parts"] += [gap, v.segment__text]
                run["last_segment"], run["last_position"] = v.segment_id, v.segment__position
                run["last_end"] = v.segment__end
                _add_coder(run, v, names)
                continue
        if run is not None:
            yield _row(run, spec, names)
        run = {"key": key, "first": v, "parts": [v.segment__text], "last_segment": v.segment_id, "last_end": v.segment__end,
               "start": v.segment__start,
               "first_position": v.segment__position, "last_position": v.segment__position, "coders": [], "origins": set()}
        _add_coder(run, v, names)
    if run is not None:
        yield _row(run, spec, names)


def _gap(v: Any, previous_end: int) -> str | None:
    """The turn text between the previous segment and this one, if it is within the lead we loaded.

    A longer stretch (rare: a long table rule between two rows) ends the excerpt instead,
    so a quote never contains anything that is not in the turn.
    """
    length = v.segment__start - previous_end
    lead = v.lead or ""
    if length < 0 or length > len(lead):
        return None
    return lead[len(lead) - length:] if length else ""


def _add_coder(run: dict[str, Any], v: Any, names: _Lookups) -> None:
    name = names.coders.get(v.coder_id, "")
    if name not in run["coders"]:
        run["coders"].append(name)
    run["origins"].add(v.origin)


def _row(run: dict[str, Any], spec: ExcerptSpec, names: _Lookups) -> ExcerptRow:
    v = run["first"]
    run["coders"].sort()
    theme, subtheme = names.placements.get(getattr(v, "placement_id", None), (NO_THEME if spec.themed else "", ""))
    iv = names.interviews.get(v.interview_id) or _late_interview(names, v.interview_id)
    p = names.participants.get(iv.participant_id) or _late_participant(names, iv.participant_id)
    interview_id = names.interview_ids.get(iv.id)
    if interview_id is None:
        interview_id = names.interview_ids[iv.id] = str(iv.uuid)
    # The turn's uuid and the source part of the provenance repeat for every row of a turn: built once per turn.
    turn = names.turns.get(v.segment__turn_id)
    if turn is None:
        if len(names.turns) >= SOURCE_CACHE:
            names.turns.clear()  # bounded, so memory stays flat on any corpus
        source = _source(
            live=v.live_record, model_slug=v.segment__turn__model_slug or p.model_id,
            timestamp=v.segment__turn__timestamp or iv.conducted_at, via=_via(p.provider, p.interface),
            source_format=iv.source_format, source_filename=iv.source_filename, source_sha256=iv.source_sha256,
            turn_position=v.segment__turn__position) if "provenance" in spec.columns else ""
        turn = names.turns[v.segment__turn_id] = (str(v.segment__turn__uuid), source)
    turn_id, source = turn
    provenance = _coded_by(source, run["coders"], "suggestion" in run["origins"]) if "provenance" in spec.columns else ""
    return ExcerptRow(
        theme=theme, subtheme=subtheme, code=names.codes.get(v.code_id, ""), model=p.label,
        interview=iv.title, interview_uuid=interview_id, turn=turn_number(v.segment__turn__position),
        quote=excerpt_quote("".join(run["parts"]), spec), provenance=provenance,
        coders=list(run["coders"]), segment_positions=(run["first_position"], run["last_position"]),
        offsets=f"{run['start']}–{run['last_end']}", interview_id=interview_id, turn_id=turn_id,
        response_id=_response_text(getattr(v, "response_id", None)), turn_pk=v.segment__turn_id,
        span=(run["start"], run["last_end"]),
    )


def _load_interviews(names: _Lookups, interview_ids: set[int]) -> None:
    """The columns of these interviews, in one query: the first rows' few, not all of a large project's."""
    missing = interview_ids - names.interviews.keys()
    if missing:
        names.interviews.update((iv.id, iv) for iv in Interview.objects.filter(pk__in=missing).values_list(*INTERVIEW_FIELDS, named=True))


def _late_interview(names: _Lookups, interview_id: int) -> Any:
    """An interview created between loading the lookups and reading the rows (a rare race): fetch it alone."""
    iv = Interview.objects.filter(pk=interview_id).values_list(*INTERVIEW_FIELDS, named=True).get()
    names.interviews[interview_id] = iv
    return iv


def _late_participant(names: _Lookups, participant_id: int) -> Participant:
    names.participants[participant_id] = Participant.objects.get(pk=participant_id)
    return names.participants[participant_id]


def _source(*, live: dict[str, Any] | None, turn_position: int, **turn: Any) -> str:
    """Where a quote comes from, as interviews.provenance cites a turn, then the turn's number."""
    return "; ".join([*turn_citation(live=_present(live), **turn), f"turn {turn_number(turn_position)}"])


def _coded_by(source: str, coders: list[str], ai: bool) -> str:
    return f"{source}; coded by {', '.join(coders)}" + (" (accepted AI suggestion)" if ai else "")


def _provenance(*, coders: list[str], ai: bool, **source: Any) -> str:
    return _coded_by(_source(**source), coders, ai)


_WORD_END = re.compile(r"\s+\S*$")


def excerpt_quote(source: str, spec: ExcerptSpec) -> str:
    """A table's quote: the text as the reader saw it (styled runs kept for DOCX and LaTeX), or the Markdown source."""
    return trim_quote(source if spec.markdown_source else quote_text(source), spec.max_quote_chars)


def trim_quote(text: str, limit: int | None) -> str:
    """The quote, or its beginning cut at a word boundary with `[...]` when longer than `limit`.

    A styled quote (RichText) stays styled: its runs are cut at the same place.
    """
    if not limit or len(text) <= limit:
        return text
    head = text[:cut_point(text, limit)]
    cut = _WORD_END.search(head)
    if cut and cut.start() > limit // 2:
        head = head[: cut.start()]
    head = head.rstrip()
    if not isinstance(text, RichText):
        return head + " " + TRIM_MARK
    runs, left = [], len(head)
    for run in text.runs:
        if left <= 0:
            break
        runs.append(run._replace(text=run.text[:left]))
        left -= len(run.text)
    return RichText([*runs, Run(" " + TRIM_MARK)])


# --- exemplars (themes.Exemplar: quotes pinned to a theme, trimming already marked) ------


def _exemplar_queryset(project: Project, spec: ExcerptSpec) -> QuerySet:
    qs = Exemplar.objects.filter(theme__project=project, theme__deleted_at__isnull=True,
                                 turn__interview__deleted_at__isnull=True)
    if spec.themes:
        qs = qs.filter(theme_id__in=spec.themes)
    if spec.participants:
        qs = qs.filter(turn__interview__participant_id__in=spec.participants)
    segment_codings = Coding.objects.filter(segment_id=OuterRef("segment_id"), code__deleted_at__isnull=True)
    if spec.codes:
        qs = qs.filter(Exists(segment_codings.filter(code_id__in=spec.codes)))
    if spec.coders:
        qs = qs.filter(Q(created_by_id__in=spec.coders) | Exists(segment_codings.filter(coder_id__in=spec.coders)))
    return qs


# Names aggregated apart by the unit separator, then made distinct and sorted in Python: SQLite (the laptop default)
# can neither make an aggregate with a delimiter distinct nor, before 3.44, order it. No name holds the separator:
# code names are whitespace-normalised (it counts as whitespace; XML cannot carry it), usernames are \w.@+-.
_NAMES_APART = "\x1f"


def _names(aggregated: str | None) -> list[str]:
    return sorted(set((aggregated or "").split(_NAMES_APART)) - {""})


def _exemplar_rows(project: Project, spec: ExcerptSpec) -> Iterator[ExcerptRow]:
    # The codes shown for an exemplar: those on its first segment that belong to its theme.
    codes = (Coding.objects.filter(segment_id=OuterRef("segment_id"), code__deleted_at__isnull=True,
                                   code__theme_codes__theme_id=OuterRef("theme_id"))
             .order_by().values("segment_id")
             .annotate(names=StringAgg("code__name", delimiter=Value(_NAMES_APART)))
             .values("names"))
    coders = (Coding.objects.filter(segment_id=OuterRef("segment_id")).order_by().values("segment_id")
              .annotate(names=StringAgg("coder__username", delimiter=Value(_NAMES_APART)))
              .values("names"))
    qs = _exemplar_queryset(project, spec).annotate(
        code_names=Subquery(codes, output_field=TextField()), coder_names=Subquery(coders, output_field=TextField()),
        theme_name=Coalesce(F("theme__parent__name"), F("theme__name")),
        subtheme_name=Case(When(theme__parent__isnull=False, then=F("theme__name")), default=Value("")),
        live_record=_live_record("turn"), response_id=_response_id("turn"),
    ).order_by(
        Coalesce(F("theme__parent__position"), F("theme__position")), Coalesce(F("theme__parent__name"), F("theme__name")),
        F("theme__parent_id").asc(nulls_first=True), "theme__position", "theme__name", "theme_id", "position", "id",
    ).values_list(
        "uuid", "quote", "theme_name", "subtheme_name", "code_names", "coder_names", "created_by__username",
        "turn__position", "turn__model_slug", "turn__timestamp", "turn__interview__uuid", "turn__interview__title",
        "turn__interview__conducted_at", "turn__interview__source_format", "turn__interview__source_filename",
        "turn__interview__source_sha256", "live_record",
        "turn__interview__participant__label", "turn__interview__participant__provider",
        "turn__interview__participant__model_id", "turn__interview__participant__interface",
        "segment__position", "spans", "turn__uuid", "response_id", "turn_id", named=True,
    )
    for v in qs.iterator(chunk_size=CHUNK):
        coders_ = _names(v.coder_names)
        provenance = _provenance(
            live=v.live_record, model_slug=v.turn__model_slug or v.turn__interview__participant__model_id,
            timestamp=v.turn__timestamp or v.turn__interview__conducted_at,
            via=_via(v.turn__interview__participant__provider, v.turn__interview__participant__interface),
            source_format=v.turn__interview__source_format, source_filename=v.turn__interview__source_filename,
            source_sha256=v.turn__interview__source_sha256, turn_position=v.turn__position, coders=coders_, ai=False)
        if v.created_by__username:
            provenance += f"; exemplar chosen by {v.created_by__username}"
        yield ExcerptRow(
            theme=v.theme_name or "", subtheme=v.subtheme_name or "", code="; ".join(_names(v.code_names)),
            model=v.turn__interview__participant__label, interview=v.turn__interview__title,
            interview_uuid=str(v.turn__interview__uuid), turn=turn_number(v.turn__position),
            quote=excerpt_quote(v.quote, spec), provenance=provenance, coders=coders_,
            segment_positions=(v.segment__position or 0, v.segment__position or 0),
            offsets=_span_offsets(v.spans), interview_id=str(v.turn__interview__uuid), turn_id=str(v.turn__uuid),
            response_id=_response_text(v.response_id), turn_pk=v.turn_id, span=_span_extent(v.spans),
        )


def _span_extent(spans: Any) -> tuple[int, int]:
    """From an exemplar's first span's start to its last span's end."""
    pairs = [s for s in spans if isinstance(s, list) and len(s) == 2] if isinstance(spans, list) else []
    return (min(a for a, _ in pairs), max(b for _, b in pairs)) if pairs else (0, 0)


def _span_offsets(spans: Any) -> str:
    """An exemplar's spans ([[start, end], ...], gaps marked [...] in its quote) as "start–end[; start–end]"."""
    if not isinstance(spans, list):
        return ""
    return "; ".join(f"{a}–{b}" for a, b in (s for s in spans if isinstance(s, list) and len(s) == 2))
