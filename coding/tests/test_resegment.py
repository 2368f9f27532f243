"""Re-segmenting an interview never drops codings silently."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from coding.models import Coding
from interviews.models import Segment
from interviews.segment_store import interview_segment

pytestmark = pytest.mark.django_db


def test_an_uncoded_interview_is_segmented_again(interview):
    before = list(Segment.objects.filter(interview=interview).order_by("position").values_list("text", flat=True))
    assert interview_segment(interview=interview) == len(before)
    assert list(Segment.objects.filter(interview=interview).order_by("position").values_list("text", flat=True)) == before


def test_a_coded_interview_is_refused_and_keeps_its_codings(interview, participant_segments, owner, make_code):
    Coding.objects.create(segment=participant_segments[0], code=make_code("Home"), coder=owner, interview=interview)
    segment_ids = set(Segment.objects.filter(interview=interview).values_list("pk", flat=True))
    with pytest.raises(ValidationError, match="would drop those codings"):
        interview_segment(interview=interview)
    assert set(Segment.objects.filter(interview=interview).values_list("pk", flat=True)) == segment_ids
    assert Coding.objects.count() == 1
