"""Excerpts under themes: contiguous coded segments of one turn read as one excerpt.

Every function issues a fixed number of queries, however many themes, codes or segments
there are.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass, field

from django.core.cache import cache
from django.db import connection
from django.db.models import Exists, F, OuterRef, QuerySet, Window
from django.db.models.functions import RowNumber

from coding.excerpts import excerpts_for_codes
from coding.models import Coding
from interviews.models import Interview, Participant, Turn
from themes.models import Theme, ThemeCode


@dataclass
class Excerpt:
    turn_id: int
    interview_uuid: str
    interview_title: str
    participant_label: str
    first_segment_id: int
    last_segment_id: int
    start: int
    end: int
    text: str
    code_ids: set[int] = field(default_factory=set)


@dataclass
class ModelGroup:
    label: str
    excerpts: list[Excerpt]
    interviews: int
    # The model's excerpts over the whole project, when `excerpts` are a sample of them.
    total: int = 0


def _group_contiguous(rows: list[tuple[int, int, int]]) -> list[list[tuple[int, int, int]]]:
    """Group (turn_id, position, segment_id) rows, sorted, into runs of consecutive positions in one turn."""
    runs: list[list[tuple[int, int, int]]] = []
    for row in rows:
        if runs and runs[-1][-1][0] == row[0] and runs[-1][-1][1] + 1 == row[1]:
            runs[-1].append(row)
        else:
            runs.append([row])
    return runs


def theme_interviews(theme: Theme) -> QuerySet[Interview]:
    """The project's live interviews where one of the theme's codes is used, in the order their excerpts are listed."""
    used = Coding.objects.filter(code__theme_codes__theme=theme, code__deleted_at__isnull=True, interview=OuterRef("pk"))
    return Interview.objects.for_project(theme.project).filter(Exists(used)).order_by("participant__label", "title", "pk")


# A run of consecutive coded positions in one turn is one excerpt: a segment starts one unless the
# segment just before it in its turn is coded under the theme too.
_SUMMARY_SQL = """
WITH coded AS (
    SELECT DISTINCT s.id, s.turn_id, s.position, s.interview_id, i.participant_id
    FROM coding_coding c
    JOIN interviews_segment s ON s.id = c.segment_id
    JOIN interviews_interview i ON i.id = c.interview_id
    WHERE {codes} AND i.project_id = %(project)s AND i.deleted_at IS NULL
), runs AS (
    SELECT participant_id, interview_id,
           LAG(position) OVER (PARTITION BY turn_id ORDER BY position) IS DISTINCT FROM position - 1 AS starts_run
    FROM coded
)
SELECT participant_id, COUNT(*) FILTER (WHERE starts_run), COUNT(DISTINCT interview_id) FROM runs GROUP BY participant_id
"""


def _live_code_ids(theme: Theme) -> list[int]:
    return list(ThemeCode.objects.filter(theme=theme, code__deleted_at__isnull=True).values_list("code_id", flat=True))


def theme_excerpt_summary(theme: Theme, *, code_ids: list[int] | None = None) -> dict[int, tuple[int, int]]:
    """participant id → (excerpts, interviews expressing the theme), over the whole project; two queries, one when
    the caller has the theme's live codes (`code_ids`)."""
    if code_ids is None:
        code_ids = _live_code_ids(theme)
    if not code_ids:
        return {}
    params = {"project": theme.project_id}
    with connection.cursor() as cur:
        cur.execute(_SUMMARY_SQL.format(codes=_one_of("c.code_id", "codes", code_ids, params)), params)
        return {participant: (excerpts, interviews) for participant, excerpts, interviews in cur.fetchall()}


def theme_excerpt_sample(theme: Theme, *, interviews_per_model: int = 5) -> list[ModelGroup]:
    """Excerpts from a few interviews of each model, each group's `total` the model's excerpts overall (6 queries)."""
    ranked = theme_interviews(theme).annotate(rank=Window(RowNumber(), partition_by=F("participant_id"),
                                                          order_by=[F("title").asc(), F("pk").asc()]))
    sample = list(ranked.filter(rank__lte=interviews_per_model).values_list("pk", flat=True))
    if not sample:
        return []
    code_ids = _live_code_ids(theme)
    groups = theme_excerpts(theme, interview_ids=sample, code_ids=code_ids)
    summary = theme_excerpt_summary(theme, code_ids=code_ids) if groups else {}
    labels = dict(Participant.objects.filter(pk__in=summary).values_list("label", "pk"))
    for group in groups:
        group.total = summary.get(labels.get(group.label), (len(group.excerpts), 0))[0]
    return groups


def theme_excerpts(theme: Theme, *, interview_ids: list[int] | None = None, code_ids: list[int] | None = None) -> list[ModelGroup]:
    """Every excerpt coded with one of the theme's codes (in these interviews), grouped by participant model (3 queries).

    Built on coding.excerpts.excerpts_for_codes (per-code excerpts); here runs of different codes
    that touch or overlap in one turn become one excerpt, and the text is cut from the turn itself
    so an exemplar pinned from it can be verified against the source character for character.
    """
    if code_ids is None:  # the theme's live codes, unless the caller has them
        code_ids = _live_code_ids(theme)
    if not code_ids:
        return []
    segments: dict[int, dict] = {}
    for ex in excerpts_for_codes(theme.project, code_ids, interview_ids=interview_ids, quote=False):
        for seg_id, position in zip(ex.segment_ids, ex.positions, strict=True):
            entry = segments.setdefault(seg_id, {
                "turn": ex.turn_id, "position": position, "label": ex.participant_label, "interview_id": ex.interview_id,
                "interview_uuid": str(ex.interview_uuid), "interview_title": ex.interview_title, "codes": set(),
            })
            entry["codes"].add(ex.code_id)
        # Where a theme excerpt starts, the segment before it is coded with none of the theme's codes, so every code
        # excerpt holding that segment starts there too (and likewise at the end): the bounds _build_groups reads.
        segments[ex.first_segment_id]["start"] = ex.start
        segments[ex.last_segment_id]["end"] = ex.end
    texts = dict(Turn.objects.filter(id__in={e["turn"] for e in segments.values()}).values_list("id", "text"))
    return _build_groups(segments, texts)


def _build_groups(segments: dict[int, dict], texts: dict[int, str]) -> list[ModelGroup]:
    order = sorted(segments, key=lambda i: (segments[i]["label"], segments[i]["interview_title"], segments[i]["interview_id"], segments[i]["position"]))
    groups: dict[str, list[Excerpt]] = {}
    interviews: dict[str, set[int]] = defaultdict(set)
    for run in _group_contiguous([(segments[i]["turn"], segments[i]["position"], i) for i in order]):
        first, last = segments[run[0][2]], segments[run[-1][2]]
        excerpt = Excerpt(
            turn_id=first["turn"], interview_uuid=first["interview_uuid"], interview_title=first["interview_title"],
            participant_label=first["label"], first_segment_id=run[0][2], last_segment_id=run[-1][2],
            start=first["start"], end=last["end"], text=texts[first["turn"]][first["start"]:last["end"]],
        )
        for _, _, seg_id in run:
            excerpt.code_ids |= segments[seg_id]["codes"]
        groups.setdefault(first["label"], []).append(excerpt)
        interviews[first["label"]].add(first["interview_id"])
    return [ModelGroup(label=label, excerpts=items, interviews=len(interviews[label])) for label, items in groups.items()]


# Both counts in PostgreSQL: fetching every coded (turn, position) to count in Python cost the board
# 35 ms at the peer corpus's 4,000 codings and grew with every coding. A theme's excerpts are its
# codes' coded segments taken together, a run of consecutive positions in one turn counting once.
_CODE_COUNTS_SQL = """
SELECT c.code_id, COUNT(DISTINCT c.segment_id)
FROM coding_coding c
JOIN coding_code k ON k.id = c.code_id
JOIN interviews_interview i ON i.id = c.interview_id
WHERE k.project_id = %(project)s AND k.deleted_at IS NULL AND i.deleted_at IS NULL {codes}
GROUP BY c.code_id
"""
_THEME_COUNTS_SQL = """
WITH coded AS (
    SELECT DISTINCT tc.theme_id, s.turn_id, s.position
    FROM themes_themecode tc
    JOIN themes_theme t ON t.id = tc.theme_id
    JOIN coding_code k ON k.id = tc.code_id
    JOIN coding_coding c ON c.code_id = tc.code_id
    JOIN interviews_segment s ON s.id = c.segment_id
    JOIN interviews_interview i ON i.id = c.interview_id
    WHERE t.project_id = %(project)s AND k.project_id = %(project)s AND t.deleted_at IS NULL AND k.deleted_at IS NULL
      AND i.deleted_at IS NULL {themes}
), runs AS (
    SELECT theme_id, LAG(position) OVER (PARTITION BY theme_id, turn_id ORDER BY position) IS DISTINCT FROM position - 1 AS starts_run
    FROM coded
)
SELECT theme_id, COUNT(*) FILTER (WHERE starts_run) FROM runs GROUP BY theme_id
"""


def excerpt_counts(project, *, theme_ids: list[int] | None = None, code_ids: list[int] | None = None,
                   ) -> tuple[dict[int, int], dict[int, int]]:
    """(excerpts per theme id, coded segments per code id) for a whole project, or only these themes and codes; 2 queries."""
    return _theme_excerpts(project, theme_ids), coded_segments(project, code_ids)


def _theme_excerpts(project, theme_ids: list[int] | None) -> dict[int, int]:
    params = {"project": project.pk}
    themes = "" if theme_ids is None else "AND " + _one_of("tc.theme_id", "themes", theme_ids, params)
    with connection.cursor() as cur:
        cur.execute(_THEME_COUNTS_SQL.format(themes=themes), params)
        return dict(cur.fetchall())


def coded_segments(project, code_ids: list[int] | None = None) -> dict[int, int]:
    """Code id → its coded segments (a segment coded by several coders counts once) in the project's live interviews,
    for every live code or only these; one query. The board, the map and the codebook table count with it."""
    params = {"project": project.pk}
    codes = "" if code_ids is None else "AND " + _one_of("c.code_id", "codes", code_ids, params)
    with connection.cursor() as cur:
        cur.execute(_CODE_COUNTS_SQL.format(codes=codes), params)
        return dict(cur.fetchall())


def _one_of(column: str, name: str, ids: list[int], params: dict) -> str:
    """SQL for `column` being one of `ids`, which it adds to `params`.

    PostgreSQL takes the list as one array (the statement's text is the same however many ids); SQLite, the
    laptop default, has no arrays and takes them one by one.
    """
    if connection.vendor == "postgresql":
        params[name] = ids
        return f"{column} = ANY(%({name})s)"
    params.update({f"{name}_{k}": pk for k, pk in enumerate(ids)})
    return f"{column} IN ({', '.join(f'%({name}_{k})s' for k in range(len(ids)))})"


RECENT_COUNTS_SECONDS = 60


def _digest(ids) -> str:
    return hashlib.sha256(repr(sorted(ids)).encode()).hexdigest()[:32]


def recent_excerpt_counts(project, placements: list[tuple[int, int]], code_ids: list[int], *,
                          themes: list[int] | None = None, codes: list[int] | None = None) -> tuple[dict[int, int], dict[int, int]]:
    """`excerpt_counts` as of at most a minute ago (the themes board's), counting only what changed since.

    Counting every coding grows with the project (the board took 765 ms at 50× the peer corpus), so the
    board reads copies kept a minute, as the project's coding progress is: each theme's count keyed by the
    codes it holds (`placements`, every (theme id, code id) the board shows), the codes' counts keyed by the
    codes shown (`code_ids`). A code moved, added or taken out is counted at once, in the themes it changed
    only; a new code at once; a new coding within the minute.
    `themes` and `codes`: only these (a drag's answer); codes not kept are then counted alone and not kept.
    """
    held: dict[int, list[int]] = defaultdict(list)
    for theme_id, code_id in placements:
        held[theme_id].append(code_id)
    theme_keys = {t: f"themes:theme-excerpts:{project.uuid}:{t}:{_digest(held[t])}" for t in (held if themes is None else themes)}
    codes_key = f"themes:code-segments:{project.uuid}:{_digest(code_ids)}"
    kept = cache.get_many([*theme_keys.values(), codes_key])
    theme_counts = {t: kept[key] for t, key in theme_keys.items() if key in kept}
    missing = [t for t in theme_keys if t not in theme_counts]
    if missing:
        fresh = _theme_excerpts(project, missing)
        theme_counts |= {t: fresh.get(t, 0) for t in missing}
        cache.set_many({theme_keys[t]: theme_counts[t] for t in missing}, RECENT_COUNTS_SECONDS)
    code_counts = kept.get(codes_key)
    if code_counts is None and codes is not None:
        code_counts = coded_segments(project, codes)
    elif code_counts is None:
        code_counts = coded_segments(project, None)
        cache.set(codes_key, code_counts, RECENT_COUNTS_SECONDS)
    return theme_counts, code_counts
