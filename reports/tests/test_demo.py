from __future__ import annotations

import pytest

from coding.models import Code, Coding
from interviews.models import Interview, Segment
from reports.demo import demo_load
from themes.models import Theme

pytestmark = pytest.mark.django_db


def test_demo_has_three_chatbots_codes_of_both_kinds_and_a_candidate_theme():
    project = demo_load()
    interviews = Interview.objects.for_project(project)
    assert interviews.count() == 3
    assert len({i.participant.label for i in interviews}) == 3
    assert set(Code.objects.for_project(project).values_list("kind", flat=True)) == {"semantic", "latent"}
    assert Coding.objects.filter(interview__project=project).count() == 11
    theme = Theme.objects.get(project=project)
    assert theme.status == "candidate"
    assert theme.codes.count() == 3


def test_demo_segments_reproduce_turn_text_by_offsets():
    project = demo_load()
    for segment in Segment.objects.filter(interview__project=project).select_related("turn"):
        assert segment.turn.text[segment.start:segment.end] == segment.text


def test_loading_the_demo_twice_changes_nothing():
    first = demo_load()
    counts = (Interview.objects.count(), Segment.objects.count(), Coding.objects.count())
    second = demo_load()
    assert first == second
    assert (Interview.objects.count(), Segment.objects.count(), Coding.objects.count()) == counts
