"""Small builders for interviews with turns and stored segments (reading-page and statistics tests)."""

from __future__ import annotations

import io
from collections.abc import Sequence

from interviews.models import Interview, Participant, Segment, Turn
from interviews.segment_store import segments_for_turns


def make_participant(project, label: str = "GPT-4o", **extra) -> Participant:
    extra.setdefault("provider", "OpenAI")
    extra.setdefault("model_id", "gpt-4o-2024-08-06")
    return Participant.objects.create(project=project, label=label, **extra)


def make_interview(project, participant: Participant, turns: Sequence[tuple[str, str] | dict], **extra) -> Interview:
    """An interview whose turns are (speaker, text) pairs or dicts of Turn fields; segments are stored too."""
    extra.setdefault("title", "Family and tradition")
    interview = Interview.objects.create(project=project, participant=participant, **extra)
    rows = []
    for position, spec in enumerate(turns):
        fields = dict(zip(("speaker", "text"), spec, strict=True)) if isinstance(spec, tuple) else dict(spec)
        rows.append(Turn(interview=interview, position=position, **fields))
    Turn.objects.bulk_create(rows)
    stored = list(Turn.objects.filter(interview=interview).order_by("position"))
    Segment.objects.bulk_create(segments_for_turns(interview, stored))
    return interview


def xlsx(rows: list[list]) -> bytes:
    """An Excel workbook whose first sheet holds `rows`, as an upload would bring it."""
    import openpyxl

    book = openpyxl.Workbook()
    for row in rows:
        book.active.append(row)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()
