# Fixtures are imported from tables_world and conduct's conftest; pytest injects them by argument name.
# ruff: noqa: F811
"""One turn numbering: the number an excerpt table cites is the number the transcript and the coding workspace
show, for imported and for live interviews alike (live ones once started at position 1, imports at 0)."""

from __future__ import annotations

import re

import pytest
from django.http import QueryDict
from django.urls import reverse

from conduct import services
from conduct.tests.conftest import fake_openai, fake_openai_server, guide, inline_answers, live  # noqa: F401
from interviews.models import Interview, Segment, Speaker
from reports.excerpts import excerpt_options, excerpt_rows, spec_from_query
from reports.tests.tables_world import code, world  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db


def cited_turn(project, code_obj) -> int:
    options = excerpt_options(project)
    spec = spec_from_query(options, QueryDict(f"codes={code_obj.uuid}&columns=turn&columns=provenance"))
    (row,) = excerpt_rows(project, spec, options=options)
    assert row.provenance.split("; turn ")[1].startswith(f"{row.turn};")  # the provenance cites the same number
    return row.turn


def shown_numbers(client, project, interview, turn) -> tuple[int, int]:
    """The number the transcript page and the coding workspace show for `turn`."""
    page = client.get(reverse("interviews:interview_detail", args=[project.uuid, interview.uuid])).content.decode()
    transcript = re.search(rf'id="turn-{turn.position}".*?class="turn-no"[^>]*>#(\d+)<', page, re.S)
    page = client.get(reverse("coding:workspace", args=[project.uuid, interview.uuid])).content.decode()
    workspace = re.search(rf'id="t-{turn.pk}".*?class="turn-no">#(\d+)<', page, re.S)
    return int(transcript.group(1)), int(workspace.group(1))


def test_imported_turns_are_cited_as_shown(world, client_for, owner):
    segment = Segment.objects.get(interview=world.interviews["claude"], text="I have no home.")
    assert segment.turn.position == 1  # question 0, answer 1
    cited = cited_turn(world.project, world.codes["AI self"])
    assert cited == 2 and shown_numbers(client_for(owner), world.project, world.interviews["claude"], segment.turn) == (2, 2)


def test_live_turns_are_numbered_like_imported_ones(project, owner, client_for, guide, live, fake_openai, inline_answers,
                                                    django_capture_on_commit_callbacks):
    from coding.models import Code

    fake_openai.script("model-a", answer="Fairness is equal treatment.")
    with django_capture_on_commit_callbacks(execute=True):
        session = services.session_start(project=project, user=owner, guide_version=guide.versions.get(),
                                         participants=[live("A", "model-a")])
    services.session_end(session=session)  # segments the interviews for coding
    interview = session.seats.get().interview
    assert interview.origin == Interview.Origin.LIVE
    assert [(t.position, t.speaker) for t in interview.turns.order_by("position")] == [(0, "interviewer"), (1, "participant")]
    segment = Segment.objects.get(interview=interview, speaker=Speaker.PARTICIPANT)
    fairness = Code.objects.create(project=project, name="Fairness")
    code(fairness, segment, owner)
    # The answer is the 2nd turn: cited as turn 2 (it was "turn 3" when live interviews started at position 1).
    assert cited_turn(project, fairness) == 2
    assert shown_numbers(client_for(owner), project, interview, segment.turn) == (2, 2)


def test_the_migration_moves_old_live_turns_down_by_one(project, owner):
    from importlib import import_module

    from django.apps import apps

    from interviews.models import Participant, Turn

    p = Participant.objects.create(project=project, label="Old live")
    old = Interview.objects.create(project=project, participant=p, title="Old", origin=Interview.Origin.LIVE)
    Turn.objects.bulk_create([Turn(interview=old, position=i, speaker="interviewer", text=str(i)) for i in (1, 2, 3)])
    imported = Interview.objects.create(project=project, participant=p, title="Imported")
    Turn.objects.create(interview=imported, position=1, speaker="interviewer", text="kept")
    import_module("conduct.migrations.0003_live_turns_number_from_zero").number_from_zero(apps, None)
    assert list(old.turns.order_by("position").values_list("position", "text")) == [(0, "1"), (1, "2"), (2, "3")]
    assert imported.turns.get().position == 1
