"""Reading coded text back as excerpts: contiguous coded segments of one turn read as one excerpt.

Themes reuse `excerpts_for_codes`; it runs at most two queries whatever the number of codes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db import connection

from coding.models import Coding
from interviews.models import Turn
from projects.models import Project


@dataclass
class Excerpt:
    """Consecutive segments of one turn coded with one code (by any of `coder_ids`)."""

    code_id: int
    interview_id: int
    interview_uuid: Any
    interview_title: str
    participant_id: int
    participant_label: str
    turn_id: int
    turn_position: int
    start: int = 0
    end: int = 0
    segment_ids: list[int] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)
    # The exact quote: turn.text[start:end], with whatever stood between the sentences.
    text: str = ""
    coder_ids: set[int] = field(default_factory=set)
    # The interviewer's question this answer replied to, and the code's name and colour, when a page shows them.
    question: str = ""
    code_info: dict[str, Any] | None = None

    @property
    def first_segment_id(self) -> int:
        return self.segment_ids[0]

    @property
    def last_segment_id(self) -> int:
        return self.segment_ids[-1]


def excerpts_for_codes(project: Project, code_ids: Iterable[int], *, coder_ids: Iterable[int] | None = None,
                       interview_ids: Iterable[int] | None = None, quote: bool = True,
                       limit: int | None = None) -> list[Excerpt]:
    """All excerpts (or the first `limit`) of the codes across the project's live interviews, ordered by code,
    participant, interview, position.

    Segments several coders coded are one excerpt (their coders are collected); `coder_ids`
    limits to some coders' codings. Two queries: codings, then the texts of turns whose
    excerpts span several segments (a single segment's text is already the exact quote);
    callers that cut quotes themselves pass `quote=False` and skip the second.
    """
    code_ids = list(code_ids)
    coder_ids = None if coder_ids is None else list(coder_ids)
    interview_ids = None if interview_ids is None else list(interview_ids)
    if limit is None:
        excerpts = _join_codings(_rows(project, code_ids, coder_ids, interview_ids))
    else:
        # Excerpts join runs of codings, so a few times `limit` rows are read; the last excerpt read may go on
        # past the cut: it counts once a further excerpt shows it ended.
        fetch = 4 * (limit + 1)
        while True:
            fetched = _first_rows(project, code_ids, coder_ids, interview_ids, fetch)
            excerpts = _join_codings(fetched)
            if len(fetched) < fetch or len(excerpts) > limit:
                break
            fetch *= 4
        del excerpts[limit:]
    if quote:
        _quote_multi_segment_excerpts(excerpts)
    return excerpts


ROW_FIELDS = ("code_id", "interview_id", "interview__uuid", "interview__title", "interview__participant_id",
              "interview__participant__label", "segment__turn_id", "segment__turn__position", "segment_id",
              "segment__position", "segment__text", "segment__start", "segment__end", "coder_id")


def _rows(project: Project, code_ids: list[int], coder_ids: list[int] | None, interview_ids: list[int] | None):
    """The codings as rows for `_join_codings`, in excerpt order: code, participant, interview, position."""
    qs = Coding.objects.filter(code_id__in=code_ids, interview__project=project, interview__deleted_at__isnull=True,
                               code__deleted_at__isnull=True)
    if coder_ids is not None:
        qs = qs.filter(coder_id__in=coder_ids)
    if interview_ids is not None:
        qs = qs.filter(interview_id__in=interview_ids)
    return qs.order_by(
        "code_id", "interview__participant__label", "interview__title", "interview_id", "segment__position"
    ).values_list(*ROW_FIELDS)


# The first rows of `_rows`, reading one interview's codings at a time in excerpt order and stopping at the
# LIMIT, so its work grows with the rows read, not with the code's uses (sorting those all took 10 ms at 50×
# the peer corpus). OFFSET 0 keeps PostgreSQL from folding the per-interview read into one join it sorts whole.
_FIRST_ROWS_SQL = """
SELECT iv.code_id, iv.id, iv.uuid, iv.title, iv.participant_id, iv.label, x.turn_id, x.turn_position, x.segment_id,
       x.position, x.text, x.start, x."end", x.coder_id
FROM (
    SELECT cd.id AS code_id, i.id, i.uuid, i.title, i.participant_id, p.label
    FROM coding_code cd CROSS JOIN interviews_interview i JOIN interviews_participant p ON p.id = i.participant_id
    WHERE cd.id = ANY(%(codes)s) AND cd.deleted_at IS NULL AND i.project_id = %(project)s AND i.deleted_at IS NULL
      AND (%(interviews)s::bigint[] IS NULL OR i.id = ANY(%(interviews)s::bigint[]))
    ORDER BY cd.id, p.label, i.title, i.id
) iv CROSS JOIN LATERAL (
    SELECT c.coder_id, s.turn_id, t.position AS turn_position, c.segment_id, s.position, s.text, s.start, s."end"
    FROM coding_coding c JOIN interviews_segment s ON s.id = c.segment_id JOIN interviews_turn t ON t.id = s.turn_id
    WHERE c.code_id = iv.code_id AND c.interview_id = iv.id
      AND (%(coders)s::integer[] IS NULL OR c.coder_id = ANY(%(coders)s::integer[]))
    ORDER BY s.position OFFSET 0
) x
ORDER BY iv.code_id, iv.label, iv.title, iv.id, x.position
LIMIT %(limit)s
"""


def _first_rows(project: Project, code_ids: list[int], coder_ids: list[int] | None, interview_ids: list[int] | None,
                limit: int) -> list[tuple]:
    if connection.vendor != "postgresql":
        return list(_rows(project, code_ids, coder_ids, interview_ids)[:limit])
    with connection.cursor() as cursor:
        cursor.execute(_FIRST_ROWS_SQL, {"codes": code_ids, "project": project.pk, "interviews": interview_ids,
                                         "coders": coder_ids, "limit": limit})
        return cursor.fetchall()


def _join_codings(rows: Iterable[tuple]) -> list[Excerpt]:
    """Consecutive codings of one turn under one code become one excerpt (several coders' included once)."""
    excerpts: list[Excerpt] = []
    last: Excerpt | None = None
    for (code_id, iv_id, iv_uuid, title, p_id, p_label, turn_id, turn_pos, seg_id, pos, text, start, end, coder_id) in rows:
        if last is not None and last.code_id == code_id and last.turn_id == turn_id:
            if last.segment_ids[-1] == seg_id:  # the same segment coded by another coder
                last.coder_ids.add(coder_id)
                continue
            if pos == last.positions[-1] + 1:
                last.segment_ids.append(seg_id)
                last.positions.append(pos)
                last.end = end
                last.coder_ids.add(coder_id)
                continue
        last = Excerpt(code_id=code_id, interview_id=iv_id, interview_uuid=iv_uuid, interview_title=title,
                       participant_id=p_id, participant_label=p_label, turn_id=turn_id, turn_position=turn_pos,
                       start=start, end=end, segment_ids=[seg_id], positions=[pos], text=text, coder_ids={coder_id})
        excerpts.append(last)
    return excerpts


def _quote_multi_segment_excerpts(excerpts: list[Excerpt]) -> None:
    spanning = [e for e in excerpts if len(e.segment_ids) > 1]
    if not spanning:
        return
    turn_texts = dict(Turn.objects.filter(id__in={e.turn_id for e in spanning}).values_list("id", "text"))
    for excerpt in spanning:
        excerpt.text = turn_texts[excerpt.turn_id][excerpt.start:excerpt.end]


def excerpts_by_participant(excerpts: Iterable[Excerpt]) -> list[tuple[str, list[Excerpt]]]:
    """Group excerpts (already ordered by participant) as [(participant label, excerpts)]."""
    groups: list[tuple[str, list[Excerpt]]] = []
    for e in excerpts:
        if not groups or groups[-1][0] != e.participant_label:
            groups.append((e.participant_label, []))
        groups[-1][1].append(e)
    return groups
