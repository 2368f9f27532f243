"""Turning turns into stored segments: shared by import, live conduct and the demo."""

from __future__ import annotations

from collections.abc import Iterable

from django.core.exceptions import ValidationError
from django.db import transaction

from interviews.models import Interview, Segment, Turn
from interviews.segmentation import segment_text


def segments_for_turns(interview: Interview, turns: Iterable[Turn], *, first_position: int = 0) -> list[Segment]:
    """Unsaved Segment rows for the turns, in order; positions continue from first_position."""
    segments: list[Segment] = []
    position = first_position
    for turn in turns:
        for span in segment_text(turn.text):
            segments.append(
                Segment(
                    interview=interview, turn=turn, position=position, start=span.start, end=span.end,
                    text=turn.text[span.start:span.end], kind=str(span.kind), speaker=turn.speaker,
                )
            )
            position += 1
    return segments


@transaction.atomic
def interview_segment(*, interview: Interview) -> int:
    """(Re)build every segment of an interview from its turns; returns the number of segments.

    Only for interviews without codings on their segments: codings cascade with segments, so
    re-segmenting a coded interview (after a segmenter change) is refused, never silent. Stored
    segments keep their offsets whatever the segmenter does later.
    """
    if Segment.objects.filter(interview=interview, codings__isnull=False).exists():
        raise ValidationError(f"“{interview.title}” has coded segments; re-segmenting it would drop those codings.")
    Segment.objects.filter(interview=interview).delete()
    turns = list(Turn.objects.filter(interview=interview).order_by("position"))
    segments = segments_for_turns(interview, turns)
    Segment.objects.bulk_create(segments, batch_size=2000)
    return len(segments)
