"""Excerpts under themes: contiguous coded segments of one turn read as one excerpt.

The coding app has no shared excerpt function yet, so the theme pages build theirs here
from Coding rows. Every function issues a fixed number of queries, however many themes,
codes or segments there are.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from coding.models import Coding
from interviews.models import Segment
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


def _group_contiguous(rows: list[tuple[int, int, int]]) -> list[list[tuple[int, int, int]]]:
    """Group (turn_id, position, segment_id) rows, sorted, into runs of consecutive positions in one turn."""
    runs: list[list[tuple[int, int, int]]] = []
    for row in rows:
        if runs and runs[-1][-1][0] == row[0] and runs[-1][-1][1] + 1 == row[1]:
            runs[-1].append(row)
        else:
            runs.append([row])
    return runs


def theme_excerpts(theme: Theme) -> list[ModelGroup]:
    """Every excerpt coded with one of the theme's codes, grouped by participant model (3 queries)."""
    code_ids = list(ThemeCode.objects.filter(theme=theme, code__deleted_at__isnull=True).values_list("code_id", flat=True))
    if not code_ids:
        return []
    codings = list(
        Coding.objects.filter(code_id__in=code_ids, interview__deleted_at__isnull=True).values_list("segment_id", "code_id")
    )
    codes_by_segment: dict[int, set[int]] = defaultdict(set)
    for segment_id, code_id in codings:
        codes_by_segment[segment_id].add(code_id)
    segments = (
        Segment.objects.filter(id__in=list(codes_by_segment))
        .select_related("turn", "interview__participant")
        .defer("turn__metadata", "interview__metadata")
        .order_by("interview__participant__label", "interview__conducted_at", "interview_id", "position")
    )
    return _build_groups(list(segments), codes_by_segment)


def _build_groups(segments: list[Segment], codes_by_segment: dict[int, set[int]]) -> list[ModelGroup]:
    by_id = {s.id: s for s in segments}
    rows = [(s.turn_id, s.position, s.id) for s in segments]
    groups: dict[str, list[Excerpt]] = {}
    interviews: dict[str, set[int]] = defaultdict(set)
    for run in _group_contiguous(rows):
        first, last = by_id[run[0][2]], by_id[run[-1][2]]
        label = first.interview.participant.label
        excerpt = Excerpt(
            turn_id=first.turn_id, interview_uuid=str(first.interview.uuid), interview_title=first.interview.title,
            participant_label=label, first_segment_id=first.id, last_segment_id=last.id, start=first.start, end=last.end,
            text=first.turn.text[first.start:last.end],
        )
        for _, _, seg_id in run:
            excerpt.code_ids |= codes_by_segment[seg_id]
        groups.setdefault(label, []).append(excerpt)
        interviews[label].add(first.interview_id)
    return [ModelGroup(label=label, excerpts=items, interviews=len(interviews[label])) for label, items in groups.items()]


def excerpt_counts(project) -> tuple[dict[int, int], dict[int, int]]:
    """(excerpts per theme id, coded segments per code id) for a whole project, in 2 queries."""
    rows = (
        Coding.objects.filter(code__project=project, code__deleted_at__isnull=True, interview__deleted_at__isnull=True)
        .values_list("code_id", "segment__turn_id", "segment__position")
        .distinct()
    )
    by_code: dict[int, set[tuple[int, int]]] = defaultdict(set)
    for code_id, turn_id, position in rows:
        by_code[code_id].add((turn_id, position))
    placements = ThemeCode.objects.filter(theme__project=project, theme__deleted_at__isnull=True).values_list("theme_id", "code_id")
    by_theme: dict[int, set[tuple[int, int]]] = defaultdict(set)
    for theme_id, code_id in placements:
        by_theme[theme_id] |= by_code.get(code_id, set())
    theme_counts = {
        theme_id: len(_group_contiguous([(t, p, 0) for t, p in sorted(keys)])) for theme_id, keys in by_theme.items()
    }
    return theme_counts, {code_id: len(keys) for code_id, keys in by_code.items()}
