"""Builders for theme tests: interviews of several models with coded sentences."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from coding.models import Code, Coding
from interviews.models import Interview, Participant, Segment, Speaker, Turn
from interviews.segment_store import segments_for_turns

ANSWER = (
    "I try to be honest about what I do not know. "
    "My answers come from patterns in text, not from lived experience. "
    "I would rather say I am unsure than invent a fact. "
    "Users sometimes treat me as a friend, which I find hard to describe."
)


@pytest.fixture
def make_interview(project, owner) -> Callable:
    """An interview with one participant turn of four sentences; returns (interview, segments)."""
    counter = {"n": 0}

    def make(label: str = "GPT-4o", text: str = ANSWER, proj=None):
        proj = proj or project
        counter["n"] += 1
        participant, _ = Participant.objects.get_or_create(project=proj, label=label)
        interview = Interview.objects.create(project=proj, participant=participant, title=f"{label} interview {counter['n']}")
        Turn.objects.create(interview=interview, position=0, speaker=Speaker.INTERVIEWER, text="How do you think about yourself?")
        Turn.objects.create(interview=interview, position=1, speaker=Speaker.PARTICIPANT, text=text)
        turns = list(interview.turns.order_by("position"))
        Segment.objects.bulk_create(segments_for_turns(interview, turns))
        segments = list(Segment.objects.filter(interview=interview, speaker=Speaker.PARTICIPANT).order_by("position"))
        return interview, segments

    return make


@pytest.fixture
def make_code(project, owner) -> Callable:
    def make(name: str, proj=None, colour: str = "#4c78a8") -> Code:
        return Code.objects.create(project=proj or project, name=name, colour=colour, created_by=owner)

    return make


@pytest.fixture
def code_segment(owner) -> Callable:
    def apply(code: Code, *segments: Segment, coder=None) -> None:
        for segment in segments:
            Coding.objects.get_or_create(segment=segment, code=code, coder=coder or owner, defaults={"interview_id": segment.interview_id})

    return apply
