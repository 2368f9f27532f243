"""Excerpts under themes: contiguous coded segments of one turn read as one excerpt.

Every function issues a fixed number of queries, however many themes, codes or segments
there are.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from coding.excerpts import excerpts_for_codes
from coding.models import Coding
from interviews.models import Segment, Turn
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
    """Every excerpt coded with one of the theme's codes, grouped by participant model (4 queries).

    Built on coding.excerpts.excerpts_for_codes (per-code excerpts); here runs of different codes
    that touch or overlap in one turn become one excerpt, and the text is cut from the turn itself
    so an exemplar pinned from it can be verified against the source character for character.
    """
    code_ids = list(ThemeCode.objects.filter(theme=theme, code__deleted_at__isnull=True).values_list("code_id", flat=True))
    if not code_ids:
        return []
    segments: dict[int, dict] = {}
    for ex in excerpts_for_codes(theme.project, code_ids, quote=False):
        for seg_id, position in zip(ex.segment_ids, ex.positions, strict=True):
            entry = segments.setdefault(seg_id, {
                "turn": ex.turn_id, "position": position, "label": ex.participant_label, "interview_id": ex.interview_id,
                "interview_uuid": str(ex.interview_uuid), "interview_title": ex.interview_title, "codes": set(),
            })
            entry["codes"].add(ex.code_id)
    for seg_id, start, end in Segment.objects.filter(id__in=list(segments)).values_list("id", "start", "end"):
        segments[seg_id]["start"], segments[seg_id]["end"] = start, end
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
