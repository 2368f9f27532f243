"""Project search: every way segments are written leaves them searchable, best matches first, pages in order.

On PostgreSQL search reads the english tsvector stored with each segment (a generated column, interviews
migration 0007), so what these tests pin is that no writer bypasses it: COPY in the file import, bulk inserts
in re-segmentation, a live interview's end, a branch import, the demo, REFI-QDA import and backup restore.
"""

from __future__ import annotations

import io
import json

import pytest
from django.db import connection
from django.urls import reverse

from coding.models import Coding
from coding.queries import search_segments
from coding.views import SEARCH_PAGE
from interviews.models import Interview, Speaker, Turn
from interviews.segment_store import interview_segment
from interviews.services import interview_import_branch
from interviews.services_import import import_paths
from interviews.tests.factories import make_interview, make_participant
from interviews.tests.test_views_branches import branching_export

pytestmark = pytest.mark.django_db


def found(project, q: str, **kw) -> list[str]:
    return [row["text"] for row in search_segments(project, q, **kw)]


def test_a_file_import_and_a_branch_import_are_searchable(project, owner, tmp_path):
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(branching_export()))
    import_paths(project=project, user=owner, paths=[str(path)])  # COPY on PostgreSQL
    assert found(project, "people") == ["Home is people."]
    assert found(project, "language") == []  # only in an alternative branch, not in the imported path
    interview = Interview.objects.get(project=project)
    index = next(i for i, b in enumerate(interview.alternative_branches())
                 if any("Language" in t["text"] for t in b["turns"]))
    branch, _ = interview_import_branch(interview=interview, index=index, actor=owner)
    assert [(r["text"], r["interview__uuid"]) for r in search_segments(project, "language")] == [
        ("Language matters most.", branch.uuid)]


def test_re_segmented_and_live_interviews_are_searchable(project, owner):
    from conduct.services import interview_finish

    participant = make_participant(project, "GPT-4o")
    imported = make_interview(project, participant, [(Speaker.PARTICIPANT, "Kinship is chosen. Roots matter.")])
    interview_segment(interview=imported)  # deletes and rewrites every segment
    assert found(project, "kinship") == ["Kinship is chosen."]
    live = Interview.objects.create(project=project, participant=participant, title="Live", origin=Interview.Origin.LIVE)
    Turn.objects.create(interview=live, position=0, speaker=Speaker.INTERVIEWER, text="What are roots?")
    Turn.objects.create(interview=live, position=1, speaker=Speaker.PARTICIPANT, text="Roots grow where we stay.")
    assert not live.segments.exists()  # a live interview's turns are segmented when it ends
    interview_finish(interview=live)
    assert sorted(found(project, "roots")) == ["Roots grow where we stay.", "Roots matter.", "What are roots?"]


def test_the_demo_a_refiqda_import_and_a_backup_restore_are_searchable(demo_project):
    from django.contrib.auth import get_user_model

    from reports.backup import project_backup, project_restore
    from reports.exchange import project_export_qdpx, project_import_qdpx

    owner = demo_project.memberships.get(role="owner").user
    expected = sorted(found(demo_project, "belonging"))
    assert expected  # the demo is about home and belonging
    qdpx = io.BytesIO()
    project_export_qdpx(project=demo_project, out=qdpx)
    imported = project_import_qdpx(source=qdpx.getvalue(), owner=owner, filename="demo.qdpx").project
    backup = io.BytesIO()
    project_backup(project=demo_project, out=backup)
    people = {u.username: u for u in get_user_model().objects.all()}
    restored = project_restore(source=backup.getvalue(), owner=owner, name="Restored", people=people).project
    assert sorted(found(restored, "belonging")) == expected
    # REFI-QDA import may cut segments at selection boundaries: every match still holds the word.
    assert found(imported, "belonging") and all("belong" in t.lower() for t in found(imported, "belonging"))


def test_results_come_best_first_then_in_reading_order_with_whether_each_is_coded(project, owner, make_code):
    participant = make_participant(project, "GPT-4o")
    first = make_interview(project, participant, [(Speaker.PARTICIPANT,
        "Trust grows slowly. Trust needs trust, and trust needs time. Nothing else here. "
        "Without trust nothing works, trust me. Trust is earned.")], title="First")
    second = make_interview(project, participant, [(Speaker.PARTICIPANT, "Trust, trust, trust, trust.")], title="Second")
    once = first.segments.get(text="Trust grows slowly.")
    Coding.objects.create(segment=once, code=make_code("Trust"), coder=owner, interview=first)
    rows = list(search_segments(project, "trust"))
    texts = [r["text"] for r in rows]
    if connection.vendor == "postgresql":
        # More occurrences rank higher; equal ranks keep the reading order (interview, then position).
        assert texts == ["Trust, trust, trust, trust.", "Trust needs trust, and trust needs time.",
                         "Without trust nothing works, trust me.", "Trust grows slowly.", "Trust is earned."]
    else:  # SQLite: substring matches in reading order
        assert texts == ["Trust grows slowly.", "Trust needs trust, and trust needs time.",
                         "Without trust nothing works, trust me.", "Trust is earned.", "Trust, trust, trust, trust."]
    assert [r["is_coded"] for r in rows if r["text"] == "Trust grows slowly."] == [True]
    assert sum(r["is_coded"] for r in rows) == 1
    assert {r["interview__uuid"] for r in rows} == {first.uuid, second.uuid}


def test_pages_follow_the_ranking_without_gaps_or_repeats(project, owner, client_for):
    participant = make_participant(project, "GPT-4o")
    answers = [(Speaker.PARTICIPANT, " ".join(["Hope"] * (1 + k % 4)) + f" says voice {k}") for k in range(SEARCH_PAGE + 7)]
    make_interview(project, participant, answers)
    everything = found(project, "hope")
    assert len(everything) == SEARCH_PAGE + 7
    client = client_for(owner)
    url = reverse("coding:search", args=[project.uuid])
    pages = [client.get(url, {"q": "hope", "page": n}).context["results"] for n in (1, 2)]
    assert pages[0].has_next and not pages[1].has_next
    assert [r["text"] for page in pages for r in page] == everything
