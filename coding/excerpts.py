"""Reading coded text back as excerpts: contiguous coded segments of one turn read as one excerpt.

Themes reuse `excerpts_for_codes`; it runs at most two queries whatever the number of codes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

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
    qs = Coding.objects.filter(code_id__in=list(code_ids), interview__project=project, interview__deleted_at__isnull=True,
                               code__deleted_at__isnull=True)
    if coder_ids is not None:
        qs = qs.filter(coder_id__in=list(coder_ids))
    if interview_ids is not None:
        qs = qs.filter(interview_id__in=list(interview_ids))
    rows = qs.order_by(
        "code_id", "interview__participant__label", "interview__title", "interview_id", "segment__position"
    ).values_list(
        "code_id", "interview_id", "interview__uuid", "interview__title", "interview__participant_id",
        "interview__participant__label", "segment__turn_id", "segment__turn__position", "segment_id",
        "segment__position", "segment__text", "segment__start", "segment__end", "coder_id",
    )
    if limit is None:
        excerpts = _join_codings(rows)
    else:
        # A LIMITed query sorts only the top of a code used thousands of times. Excerpts join runs of codings,
        # so a few times `limit` rows are read; the last excerpt read may go on past the cut: it counts once
        # a further excerpt shows it ended.
        fetch = 4 * (limit + 1)
        while True:
            fetched = list(rows[:fetch])
            excerpts = _join_codings(fetched)
            if len(fetched) < fetch or len(excerpts) > limit:
                break
            fetch *= 4
        del excerpts[limit:]
    if quote:
        _quote_multi_segment_excerpts(excerpts)
    return excerpts


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
