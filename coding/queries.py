"""Reads for the codebook, the coding workspace, comparison and search: a fixed number of queries each."""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from django.contrib.postgres.search import SearchQuery, SearchRank, SearchVectorField
from django.core.cache import cache
from django.db import connection
from django.db.models import (
    BooleanField,
    Count,
    Exists,
    ExpressionWrapper,
    F,
    OuterRef,
    Q,
    QuerySet,
    StringAgg,
    Subquery,
    TextField,
    Value,
)
from django.db.models.expressions import RawSQL
from django.db.models.functions import MD5, Cast, Concat

from coding.models import Code, Coding, Note, Suggestion
from coding.render import CodeInfo, CoderInfo, initials
from interviews.models import Interview, Participant, Segment, Speaker, Turn, turn_number
from projects import live
from projects.models import Membership, Project


@dataclass
class CodeNode:
    code: Code
    depth: int
    total: int = 0
    per_participant: list[int] = field(default_factory=list)
    children: list[CodeNode] = field(default_factory=list)


def codebook_tree(project: Project, *, q: str = "", kind: str = "", archived: bool = False,
                  participants: list[Participant] | None = None) -> tuple[list[CodeNode], list[Participant]]:
    """Codes as a flattened tree (depth-first) with usage counts overall and per participant; four queries (three warm).

    A search or kind filter keeps the ancestors of matching codes so the tree still reads.
    `participants` (a page of them; default all) are the ones counted per participant.
    """
    codes = list(Code.objects.for_project(project).select_related("merged_into").order_by("position", "name"))
    if participants is None:
        participants = list(Participant.objects.filter(project=project).order_by("label", "pk"))
    shown = {p.pk for p in participants}
    totals: dict[int, int] = defaultdict(int)
    counts: dict[tuple[int, int], int] = {}
    for (code_id, participant_id), n in code_participant_counts(project).items():
        totals[code_id] += n
        if participant_id in shown:
            counts[(code_id, participant_id)] = n
    by_parent: dict[int | None, list[Code]] = defaultdict(list)
    ids = {c.pk for c in codes}
    for c in codes:
        by_parent[c.parent_id if c.parent_id in ids else None].append(c)
    needle = q.strip().lower()

    def matches(c: Code) -> bool:
        if not archived and c.archived:
            return False
        if kind and c.kind != kind:
            return False
        return not needle or needle in c.name.lower() or needle in c.definition.lower()

    def build(parent: int | None, depth: int) -> list[CodeNode]:
        nodes = []
        for c in by_parent.get(parent, []):
            children = build(c.pk, depth + 1)
            if not matches(c) and not children:
                continue
            per = [counts.get((c.pk, p.pk), 0) for p in participants]
            nodes.append(CodeNode(code=c, depth=depth, total=totals[c.pk], per_participant=per, children=children))
        return nodes

    flat: list[CodeNode] = []

    def walk(nodes: list[CodeNode]) -> None:
        for n in nodes:
            flat.append(n)
            walk(n.children)

    walk(build(None, 0))
    return flat, participants


def coders_of(project: Project) -> dict[int, CoderInfo]:
    """Every member of the project as a coder (initials and display name); one query."""
    out = {}
    for user_id, username, first, last in Membership.objects.filter(project=project).values_list(
        "user_id", "user__username", "user__first_name", "user__last_name"
    ):
        out[user_id] = CoderInfo(user_id, initials(username, first, last), f"{first} {last}".strip() or username)
    return out


def codes_with_counts(project: Project) -> list[dict[str, Any]]:
    """The project's codes with how often each is used (project-wide), for the picker and panel; one query."""
    return list(
        Code.objects.for_project(project).annotate(uses=Count("codings")).order_by("position", "name")
        .values("id", "uuid", "name", "colour", "kind", "archived", "definition", "parent_id", "uses")
    )


def workspace_codes(project: Project) -> list[dict[str, Any]]:
    """The project's codes (archived included, for their chips and for the picker to offer an archived name back)
    for the coding page; one query, no counts."""
    return list(
        Code.objects.for_project(project).order_by("position", "name")
        .values("id", "uuid", "name", "colour", "kind", "archived", "definition", "parent_id", "merged_into_id")
    )


def interview_being_conducted(interview: Interview) -> tuple[Any, list[dict[str, Any]]]:
    """An interview still being conducted: its live session (None without one) and its turns so far, to read.

    Such an interview has no segments yet (conduct.services.session_end makes them), so nothing of it can be coded.
    Two queries.
    """
    from conduct.models import ConductSession

    session = ConductSession.objects.filter(seats__interview=interview).first()
    turns = list(interview.turns.order_by("position").values("id", "position", "speaker", "text", "status"))
    return session, turns


# Project-wide counts (the codebook's, the frequency table's, the codings API's pages) are kept a minute
# in one shared way, keyed by
# - the version of the project's "coding" and "codebook" live events (projects.live.version): every coding write
#   in coding.services (apply, remove, undo, accepted suggestions) and every codebook change (merge, split, a code
#   purged from the trash) publishes one, so it changes with them, at no extra round trip;
# - a digest of whatever else they depend on: which interviews are live and whose they are, the table's options.
# So one's own write, a trashed interview or a moved code shows on the next request; the minute only bounds
# writes made elsewhere (a database shell, a deleted user account taking its codings along).
COUNTS_SECONDS = 60
COUNTED_KINDS = ("coding", "codebook")


def forget_purged_code(sender: Any, instance: Code, **kwargs: Any) -> None:
    """post_delete of a Code: its codings went with it."""
    project_uuid = Project.objects.filter(pk=instance.project_id).values_list("uuid", flat=True).first()
    if project_uuid is not None:
        live.publish(project_uuid, "codebook")


def live_interviews(project: Project) -> list[tuple[int, int]]:
    """(id, participant id) of the project's live interviews in id order: what project-wide counts are keyed by
    besides the coding events (trashing or moving an interview changes them without a coding write)."""
    return list(_live_interviews(project).order_by("pk").values_list("pk", "participant_id"))


def _live_interviews(project: Project) -> QuerySet[Interview]:
    return Interview.objects.alive().filter(project=project)


def live_interviews_digest(project: Project) -> str:
    """A digest of live_interviews(project), for cache keys.

    Made by the database where it can order an aggregate: a bounded page keyed by it (a page of the codes API)
    otherwise fetched and hashed every interview of the project, 1.6 against 0.6 ms at 1,000 interviews.
    """
    if not connection.features.supports_aggregate_order_by_clause:  # SQLite before 3.44, the laptop default
        return hashlib.sha256(repr(live_interviews(project)).encode()).hexdigest()
    pair = Concat(Cast("pk", TextField()), Value(":"), Cast("participant_id", TextField()), output_field=TextField())
    pairs = StringAgg(pair, delimiter=Value(","), order_by="pk")
    return _live_interviews(project).aggregate(digest=MD5(pairs))["digest"] or ""


def cached_counts[T](project: Project, name: str, inputs: Any, count: Callable[[], T]) -> T:
    """`count()`, kept COUNTS_SECONDS under the version of the project's coding events and a digest of `inputs` (its
    other inputs)."""
    version = live.version(project.uuid, *COUNTED_KINDS)
    if version is None:  # the broker (Redis) is down: count every time
        return count()
    digest = hashlib.sha256(repr(inputs).encode()).hexdigest()[:32]
    key = f"coding:counts:{name}:{project.uuid}:{version}:{digest}"
    value = cache.get(key)
    if value is None:
        value = count()
        cache.set(key, value, COUNTS_SECONDS)
    return value


def code_participant_counts(project: Project) -> dict[tuple[int, int], int]:
    """(code id, participant id) → codings of the code in the project's live interviews; one query, two when counted.

    The codebook (page and API) reads this one cached copy.
    """
    return cached_counts(project, "code-participant", live_interviews_digest(project), lambda: {
        (code_id, participant_id): n for code_id, participant_id, n in
        Coding.objects.filter(code__project=project, interview__project=project, interview__deleted_at__isnull=True)
        .values_list("code_id", "interview__participant_id").annotate(n=Count("id")).order_by()})


def interview_coding_counts(project: Project) -> list[tuple[int, int]]:
    """(interview id, codings) for each live interview of the project, in id order; one query, two when counted.

    The codings API's pages follow these counts to the few interviews a page holds (coding.api.CodingPagination).
    """
    interviews = live_interviews(project)
    counted = cached_counts(project, "interview-codings", interviews, lambda: dict(
        Coding.objects.filter(interview__project=project, interview__deleted_at__isnull=True)
        .values_list("interview_id").annotate(n=Count("id")).order_by()))
    return [(pk, counted.get(pk, 0)) for pk, _ in interviews]


PROGRESS_TTL = 60


def project_progress(project: Project) -> tuple[int, int]:
    """(coded, codable) participant segments across the project's live interviews; one query, cached a minute.

    Counting grows with the project, so the coding page reads it from the cache: the
    interview's own progress is exact and live, the project's may lag by up to a minute.
    """
    key = f"coding:progress:{project.uuid}"
    cached = cache.get(key)
    if cached is not None:
        return tuple(cached)  # type: ignore[return-value]
    value = _coded_and_codable(Segment.objects.filter(interview__project=project, interview__deleted_at__isnull=True))
    cache.set(key, value, PROGRESS_TTL)
    return value


def interview_segment_progress(interview_id: int) -> tuple[int, int]:
    """(coded, codable) participant segments of one interview; one query."""
    return _coded_and_codable(Segment.objects.filter(interview_id=interview_id))


def _coded_and_codable(segments) -> tuple[int, int]:
    coded_exists = Exists(Coding.objects.filter(segment_id=OuterRef("pk")))
    agg = segments.filter(speaker=Speaker.PARTICIPANT).aggregate(codable=Count("id"), coded=Count("id", filter=Q(coded_exists)))
    return agg["coded"], agg["codable"]


def interview_codings(interview: Interview, code_order: dict[int, int]) -> dict[int, list[tuple[int, int]]]:
    """segment id → [(code id, coder id)] for the interview, in codebook order; one query (no join)."""
    out: dict[int, list[tuple[int, int]]] = {}
    for seg, code, coder in Coding.objects.filter(interview=interview).order_by().values_list("segment_id", "code_id", "coder_id"):
        out.setdefault(seg, []).append((code, coder))
    last = len(code_order)
    for pairs in out.values():
        if len(pairs) > 1:
            pairs.sort(key=lambda p: (code_order.get(p[0], last), p[1]))
    return out


def interview_segments(interview: Interview) -> list[tuple[int, int, int, str, str, str]]:
    return list(
        Segment.objects.filter(interview=interview).order_by("position")
        .values_list("id", "turn_id", "position", "text", "speaker", "kind")
    )


def familiarisation_notes(interview: Interview) -> list[Note]:
    """The coding workspace's familiarisation notes on an interview, the whole interview's first, then by turn, each
    with its turn's number (`turn_no`, None for the interview) and author (one query): the journal shows them beside
    its familiarisation memos on the same interview."""
    notes = list(Note.objects.for_interview(interview).select_related("turn").order_by(
        F("turn__position").asc(nulls_first=True), "created_at"))
    for note in notes:
        note.turn_no = turn_number(note.turn.position) if note.turn_id else None
    return notes


def interview_with_note_count(project: Project, interview_uuid: str) -> Interview | None:
    """The project's interview (not in the trash) with its number of familiarisation notes as `note_count`, or None."""
    return (Interview.objects.for_project(project).filter(uuid=interview_uuid)
            .annotate(note_count=Count("familiarisation_notes")).first())


def interview_notes(interview: Interview) -> dict[int | None, list[Note]]:
    out: dict[int | None, list[Note]] = defaultdict(list)
    for note in Note.objects.filter(interview=interview).order_by("created_at"):
        out[note.turn_id].append(note)
    return out


def code_infos(codes: list[dict[str, Any]]) -> dict[int, CodeInfo]:
    return {c["id"]: CodeInfo(c["id"], c["name"], c["colour"], c["kind"]) for c in codes}


@dataclass
class Difference:
    segment_id: int
    position: int
    text: str
    only_a: list[int]
    only_b: list[int]
    both: list[int]


def compare_coders(interview: Interview, coder_a: int, coder_b: int) -> tuple[list[Difference], dict[str, int]]:
    """Where two coders differ on an interview's segments; one query for codings and segment texts."""
    rows = (
        Coding.objects.filter(interview=interview, coder_id__in=[coder_a, coder_b])
        .order_by("segment__position", "code_id")
        .values_list("segment_id", "segment__position", "segment__text", "code_id", "coder_id")
    )
    per_segment: dict[int, dict[str, Any]] = {}
    for seg, pos, text, code, coder in rows:
        entry = per_segment.setdefault(seg, {"pos": pos, "text": text, "a": set(), "b": set()})
        entry["a" if coder == coder_a else "b"].add(code)
    diffs = []
    summary = {"only_a": 0, "only_b": 0, "different": 0, "same": 0}
    for seg, e in per_segment.items():
        a, b = e["a"], e["b"]
        if a == b:
            summary["same"] += 1
            continue
        if not b:
            summary["only_a"] += 1
        elif not a:
            summary["only_b"] += 1
        else:
            summary["different"] += 1
        diffs.append(Difference(seg, e["pos"], e["text"], sorted(a - b), sorted(b - a), sorted(a & b)))
    return diffs, summary


def interview_coders(interview: Interview) -> list[int]:
    """Ids of users who coded in the interview; one query."""
    return list(Coding.objects.filter(interview=interview).values_list("coder_id", flat=True).distinct().order_by("coder_id"))


_WEBSEARCH_TERM = re.compile(r'(-?)"([^"]*)"?|(-?)(\S+)')


def _websearch_terms(q: str) -> list[tuple[str, bool]]:
    """(term, excluded) for each word or "quoted phrase" of a query, `-` excluding it: the search box's syntax,
    as PostgreSQL's websearch reads it, for databases without it (SQLite: substrings, no stemming)."""
    terms = [(m[2], bool(m[1])) if m[2] is not None else (m[4], bool(m[3])) for m in _WEBSEARCH_TERM.finditer(q)]
    return [(term, excluded) for term, excluded in terms if term.strip() and term.lower() != "or"]


def search_is_ranked() -> bool:
    """Whether search_segments puts the best match first (PostgreSQL) or answers in reading order."""
    return connection.vendor == "postgresql"


def search_segments(project: Project, q: str, *, coded: str = "") -> QuerySet:
    """Segments matching a full-text query, best first, as a lazy QuerySet of dicts for a page to slice.

    PostgreSQL: the stored, GIN-indexed english tsvector (interviews migration 0007), ranked by
    ts_rank, ties in reading order; SQLite: each word or phrase as a substring, in reading order.
    """
    qs = Segment.objects.filter(interview__project=project, interview__deleted_at__isnull=True)
    coded_exists = Exists(Coding.objects.filter(segment_id=OuterRef("pk")))
    if coded == "coded":
        qs = qs.filter(coded_exists)
    elif coded == "uncoded":
        qs = qs.filter(~coded_exists)
    if search_is_ranked():
        query = SearchQuery(q, config="english", search_type="websearch")
        # Not a model field (SQLite has no tsvector); the segment table is this query's base table.
        vector = RawSQL(f"{connection.ops.quote_name(Segment._meta.db_table)}.search_vector", (),
                        output_field=SearchVectorField())
        qs = qs.annotate(v=vector).filter(v=query).annotate(rank=SearchRank(F("v"), query)).order_by(
            "-rank", "interview_id", "position")
    else:
        for term, excluded in _websearch_terms(q):
            qs = qs.exclude(text__icontains=term) if excluded else qs.filter(text__icontains=term)
        qs = qs.order_by("interview_id", "position")
    # A scalar subquery rather than EXISTS: PostgreSQL plans EXISTS for every match (not the page's
    # rows) and so hashes every coding in the database first (170 ms at 200,000 codings).
    first_coding = Subquery(Coding.objects.filter(segment_id=OuterRef("pk")).values("pk")[:1])
    return qs.annotate(first_coding=first_coding).values(
        "id", "text", "position", "speaker", "interview__uuid", "interview__title", "interview__participant__label",
        is_coded=ExpressionWrapper(Q(first_coding__isnull=False), output_field=BooleanField()),
    )


def interviews_with_codes(project: Project, code_ids: list[int], *, coder_ids: list[int] | None = None) -> QuerySet:
    """The project's live interviews where any of the codes is used (by these coders), in the order excerpts are listed."""
    codings = Coding.objects.filter(code_id__in=code_ids, interview=OuterRef("pk"))
    if coder_ids is not None:
        codings = codings.filter(coder_id__in=coder_ids)
    return Interview.objects.for_project(project).filter(Exists(codings)).order_by("participant__label", "title", "pk")


def code_with_descendants(code: Code) -> list[dict[str, Any]]:
    """The code, then its sub-codes at every depth (alive ones), as {id, name, colour}; one query over the codebook."""
    rows = {pk: {"id": pk, "name": name, "colour": colour, "parent": parent_id} for pk, parent_id, name, colour in
            Code.objects.for_project(code.project_id).values_list("pk", "parent_id", "name", "colour").order_by("position", "name")}
    family, frontier = [code.pk], [code.pk]
    while frontier:
        frontier = [pk for pk, row in rows.items() if row["parent"] in frontier and pk not in family]
        family.extend(frontier)
    return [rows[pk] for pk in family if pk in rows]


def questions_before(turn_ids: Iterable[int]) -> dict[int, str]:
    """For each turn, the text of the interviewer turn it answers (the nearest one before it); one query."""
    asked = Turn.objects.filter(interview_id=OuterRef("interview_id"), position__lt=OuterRef("position"),
                                speaker=Speaker.INTERVIEWER).order_by("-position").values("text")[:1]
    rows = Turn.objects.filter(pk__in=list(turn_ids)).annotate(question=Subquery(asked)).values_list("pk", "question")
    return {pk: question for pk, question in rows if question}


def excerpt_context(interview: Interview, first_segment_id: int, last_segment_id: int, *, around: int) -> list[Segment]:
    """An excerpt's segments with `around` segments before and after, in order, with their turns; one query."""
    positions = Segment.objects.filter(interview=interview, pk__in=[first_segment_id, last_segment_id])
    low = Subquery(positions.order_by("position").values("position")[:1])
    high = Subquery(positions.order_by("-position").values("position")[:1])
    return list(Segment.objects.filter(interview=interview, position__gte=low - around, position__lte=high + around)
                .select_related("turn").order_by("position"))


# The page's coded segments are read from the codings' (interview, segment) index. As one FILTER (WHERE
# EXISTS …) over the segments, PostgreSQL hashed every coding of the project first (47 ms at 50× the peer
# corpus, growing with it).
_INTERVIEW_PROGRESS_SQL = """
SELECT s.interview_id, COUNT(*), COUNT(coded.segment_id)
FROM interviews_segment s
LEFT JOIN (SELECT DISTINCT segment_id FROM coding_coding WHERE interview_id IN ({ids})) coded ON coded.segment_id = s.id
WHERE s.speaker = %s AND s.interview_id IN ({ids})
GROUP BY s.interview_id
"""


def interview_progress(interviews: list[Interview]) -> list[dict[str, Any]]:
    """These interviews (a page of them, participant selected) with (coded, codable) participant segments; one query.

    For the codebook's "code an interview" panel; rows keep the order of `interviews`.
    """
    ids = [i.pk for i in interviews]
    counts = {}
    if ids:
        marks = ", ".join(["%s"] * len(ids))
        with connection.cursor() as cur:
            cur.execute(_INTERVIEW_PROGRESS_SQL.format(ids=marks), [*ids, Speaker.PARTICIPANT, *ids])
            counts = {pk: (coded, codable) for pk, codable, coded in cur.fetchall()}
    rows = []
    for interview in interviews:
        coded, codable = counts.get(interview.pk, (0, 0))
        # Still being conducted: no segments until it ends, so "0 / 0" would read as an empty interview.
        rows.append({"id": interview.pk, "uuid": interview.uuid, "title": interview.title,
                     "participant": interview.participant.label, "coded": coded, "codable": codable,
                     "percent": round(100 * coded / codable) if codable else 0,
                     "in_progress": interview.status == Interview.Status.IN_PROGRESS})
    return rows


def interview_codings_state(interview: Interview) -> tuple[list[tuple[int, int, int]], dict[int, list]]:
    """([segment, code, coder] of every coding, {code id: [name, colour, kind, archived, merged into]}) for the interview.

    The codes are every live code of the project (a colleague's new code becomes usable without a
    reload, a code merged since leads to the code it went into) plus those of the interview's codings. Two queries.
    """
    codes: dict[int, list] = {
        pk: [name, colour, kind, archived, merged_into] for pk, name, colour, kind, archived, merged_into in
        Code.objects.filter(project_id=interview.project_id, deleted_at__isnull=True)
        .values_list("pk", "name", "colour", "kind", "archived", "merged_into_id")
    }
    codings = []
    for seg, code, coder, name, colour, kind, archived, merged_into in (
        Coding.objects.filter(interview=interview).order_by("segment_id", "code__position", "code__name", "coder_id")
        .values_list("segment_id", "code_id", "coder_id", "code__name", "code__colour", "code__kind", "code__archived",
                     "code__merged_into_id")
    ):
        codings.append((seg, code, coder))
        codes.setdefault(code, [name, colour, kind, archived, merged_into])
    return codings, codes


# The interview's segments and codings are read through its own indexes whatever the table
# statistics say: with stale statistics (after a large import) the planner once scanned every
# segment of every interview, and looked up each segment's codings one by one (4.5 ms, now 1.7).
_TRANSCRIPT_SQL = """
WITH s AS MATERIALIZED (
    SELECT id, turn_id, position, text, speaker, kind FROM interviews_segment WHERE interview_id = %(interview)s
), pairs AS (
    SELECT segment_id, array_agg(ARRAY[code_id, coder_id]) AS pairs FROM coding_coding
    WHERE interview_id = %(interview)s GROUP BY segment_id
)
SELECT t.id, t.position, t.speaker, s.id, s.position, s.text, s.speaker, s.kind, pairs.pairs
FROM interviews_turn t LEFT JOIN s ON s.turn_id = t.id LEFT JOIN pairs ON pairs.segment_id = s.id
WHERE t.interview_id = %(interview)s
ORDER BY t.position, s.position
"""


def interview_transcript(interview: Interview, code_order: dict[int, int]
                         ) -> tuple[list[tuple[int, int, str]], list[tuple[int, int, int, str, str, str]],
                                    dict[int, list[tuple[int, int]]]]:
    """Turns, segments and codings of an interview for the coding page: ONE query on PostgreSQL.

    Round trips, not rows, are what a busy two-core server pays for; three reads become one.
    Returns the shapes render_transcript takes; codings are in codebook order.
    """
    if connection.vendor != "postgresql":
        turns = list(interview.turns.order_by("position").values_list("id", "position", "speaker"))
        return turns, interview_segments(interview), interview_codings(interview, code_order)
    turns: list[tuple[int, int, str]] = []
    segments: list[tuple[int, int, int, str, str, str]] = []
    codings: dict[int, list[tuple[int, int]]] = {}
    last = len(code_order)
    with connection.cursor() as cur:
        cur.execute(_TRANSCRIPT_SQL, {"interview": interview.pk})
        for turn_id, turn_pos, turn_speaker, seg_id, seg_pos, text, seg_speaker, kind, pairs in cur.fetchall():
            if not turns or turns[-1][0] != turn_id:
                turns.append((turn_id, turn_pos, turn_speaker))
            if seg_id is None:
                continue
            segments.append((seg_id, turn_id, seg_pos, text, seg_speaker, kind))
            if pairs:
                chips = [(code, coder) for code, coder in pairs]
                if len(chips) > 1:  # most coded segments carry one chip: no sort to pay for
                    chips.sort(key=lambda p: (code_order.get(p[0], last), p[1]))
                codings[seg_id] = chips
    return turns, segments, codings


def interview_suggestions(interview_id: int) -> dict[int, list[tuple[str, int, str]]]:
    """Pending AI suggestions the critic did not reject, per segment: (uuid, code id, why); one indexed query."""
    rows = (Suggestion.objects.filter(interview_id=interview_id, status=Suggestion.Status.PENDING)
            .exclude(critic_verdict=Suggestion.Verdict.REJECTED)
            .order_by("segment_id", "code_id")
            .values_list("segment_id", "uuid", "code_id", "rationale", "critic_verdict", "critic_reason"))
    by_segment: dict[int, list[tuple[str, int, str]]] = {}
    for segment_id, uuid, code_id, rationale, verdict, critic in rows:
        why = f"Model: {rationale}" + (f"\nCritic ({verdict}): {critic}" if verdict else "")
        by_segment.setdefault(segment_id, []).append((str(uuid), code_id, why))
    return by_segment


def with_descendants(chosen: set[int], codes: Iterable[Code]) -> set[int]:
    """The chosen code ids and those of all their sub-codes (at any depth), among `codes` (e.g. the codebook)."""
    children: dict[int | None, list[int]] = defaultdict(list)
    for c in codes:
        children[c.parent_id].append(c.pk)
    found, todo = set(chosen), list(chosen)
    while todo:
        for child in children[todo.pop()]:
            if child not in found:
                found.add(child)
                todo.append(child)
    return found
