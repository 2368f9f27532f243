"""Fixtures for the coding app: an interview with turns and segments, codes."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from coding.models import Code
from interviews.models import Interview, Participant, Segment, Speaker, Turn
from interviews.segment_store import segments_for_turns

TURNS = [
    (Speaker.INTERVIEWER, "Tell me about home. What does belonging mean to you?"),
    (Speaker.PARTICIPANT, "Home is where people know you. Belonging grows slowly. It needs time and trust."),
    (Speaker.INTERVIEWER, "And for people from migrant families?"),
    (Speaker.PARTICIPANT, "They often feel between two places. Language matters a lot. Food too. Nobody chooses alone."),
]


@pytest.fixture
def make_interview(project) -> Callable[..., Interview]:
    def make(*, title: str = "GPT-4o on belonging", label: str = "GPT-4o", turns=TURNS, project=project) -> Interview:
        participant, _ = Participant.objects.get_or_create(project=project, label=label)
        interview = Interview.objects.create(project=project, participant=participant, title=title)
        rows = Turn.objects.bulk_create([Turn(interview=interview, position=i, speaker=s, text=t) for i, (s, t) in enumerate(turns)])
        Segment.objects.bulk_create(segments_for_turns(interview, rows))
        return interview

    return make


@pytest.fixture
def interview(make_interview) -> Interview:
    return make_interview()


@pytest.fixture
def participant_segments(interview) -> list[Segment]:
    return list(interview.segments.filter(speaker=Speaker.PARTICIPANT).order_by("position"))


@pytest.fixture
def make_code(project, owner) -> Callable[..., Code]:
    def make(name: str, **kw) -> Code:
        from coding.services import code_create

        return code_create(project=project, actor=owner, name=name, **kw)

    return make
