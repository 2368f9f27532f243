"""Applying and removing codes: one statement, duplicates ignored, others' codings untouched."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from coding.models import Coding
from coding.services import coding_apply, coding_remove
from interviews.models import Speaker

pytestmark = pytest.mark.django_db


def _url(name, project, interview):
    return reverse(f"coding:{name}", args=[project.uuid, interview.uuid])


def test_apply_creates_a_coding_and_returns_chips_and_counts(client_for, analyst, project, interview, participant_segments, make_code):
    code = make_code("Belonging takes time", colour="#112233")
    seg = participant_segments[1]
    r = client_for(analyst).post(_url("apply", project, interview), {"code": code.pk, "segments": str(seg.pk)})
    assert r.status_code == 200
    body = r.content.decode()
    assert f'id="chips-{seg.pk}" hx-swap-oob="true"' in body
    assert "Belonging takes time" in body and "--c:#112233" in body and "<small>AA</small>" in body
    assert "progress-interview" not in body  # the page counts its coded segments itself (static/js/coding.js)
    assert f'<span id="uses-{code.pk}" class="uses" hx-swap-oob="true">1</span>' in body
    assert json.loads(r["HX-Trigger"])["coding-changed"] == {"action": "apply", "code": code.pk, "segments": [seg.pk]}
    assert Coding.objects.get().coder == analyst


def test_a_double_click_does_not_duplicate(client_for, analyst, project, interview, participant_segments, make_code):
    code = make_code("Trust")
    c = client_for(analyst)
    for _ in range(2):
        r = c.post(_url("apply", project, interview), {"code": code.pk, "segments": str(participant_segments[0].pk)})
        assert r.status_code == 200
    assert Coding.objects.count() == 1
    assert json.loads(r["HX-Trigger"])["coding-changed"]["segments"] == []
    assert r.content.decode().count('data-c=') == 1


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the one-statement path is PostgreSQL's; SQLite uses the ORM")
def test_apply_is_one_statement_after_session_and_user(client_for, analyst, project, interview, participant_segments, make_code):
    code = make_code("Trust")
    c = client_for(analyst)
    with CaptureQueriesContext(connection) as ctx:
        c.post(_url("apply", project, interview), {"code": code.pk, "segments": f"{participant_segments[0].pk},{participant_segments[1].pk}"})
    # 1 session, 2 user, 3 the coding statement (membership + insert + chips + counts)
    assert len(ctx.captured_queries) == 3, [q["sql"][:80] for q in ctx.captured_queries]
    assert Coding.objects.count() == 2


def test_range_apply_and_remove_keep_other_coders(client_for, owner, analyst, project, interview, participant_segments, make_code):
    code = make_code("Trust")
    ids = ",".join(str(s.pk) for s in participant_segments[:3])
    client_for(owner).post(_url("apply", project, interview), {"code": code.pk, "segments": ids})
    client_for(analyst).post(_url("apply", project, interview), {"code": code.pk, "segments": ids})
    assert Coding.objects.count() == 6
    r = client_for(analyst).post(_url("remove", project, interview), {"code": code.pk, "segments": ids})
    assert r.status_code == 200
    assert set(Coding.objects.values_list("coder_id", flat=True)) == {owner.pk}
    # The owner's chips are still in the answer: nothing of theirs was overwritten.
    assert r.content.decode().count(f'data-u="{owner.pk}"') == 3 and 'chip mine' not in r.content.decode()
    assert sorted(json.loads(r["HX-Trigger"])["coding-changed"]["segments"]) == sorted(s.pk for s in participant_segments[:3])


def test_interviewer_segments_need_the_toggle(client_for, analyst, project, interview, make_code):
    code = make_code("Framing")
    question = interview.segments.filter(speaker=Speaker.INTERVIEWER).first()
    c = client_for(analyst)
    r = c.post(_url("apply", project, interview), {"code": code.pk, "segments": str(question.pk)})
    assert r.status_code == 400 and Coding.objects.count() == 0
    c.post(_url("speaker_toggle", project, interview), {"any_speaker": "1"})
    r = c.post(_url("apply", project, interview), {"code": code.pk, "segments": str(question.pk)})
    assert r.status_code == 200 and Coding.objects.count() == 1


@pytest.mark.parametrize("name", ["apply", "remove"])
def test_outsiders_get_404_and_viewers_403(client_for, outsider, viewer, project, interview, participant_segments, make_code, name):
    code = make_code("Trust")
    data = {"code": code.pk, "segments": str(participant_segments[0].pk)}
    assert client_for(outsider).post(_url(name, project, interview), data).status_code == 404
    assert client_for(viewer).post(_url(name, project, interview), data).status_code == 403
    assert Coding.objects.count() == 0


def test_a_code_or_segment_from_another_project_is_refused(client_for, owner, analyst, project, interview, participant_segments, make_code):
    from projects.models import Membership, Project, Role

    other = Project.objects.create(name="Other")
    Membership.objects.create(project=other, user=analyst, role=Role.ANALYST)
    from coding.services import code_create

    foreign = code_create(project=other, actor=analyst, name="Foreign")
    r = client_for(analyst).post(_url("apply", project, interview), {"code": foreign.pk, "segments": str(participant_segments[0].pk)})
    assert r.status_code == 400
    code = make_code("Mine")
    r = client_for(analyst).post(_url("apply", project, interview), {"code": code.pk, "segments": "999999"})
    assert r.status_code == 400
    assert Coding.objects.count() == 0


def test_archived_codes_cannot_be_applied(client_for, analyst, project, interview, participant_segments, make_code):
    from coding.services import code_archive

    code = code_archive(code=make_code("Old"), actor=analyst)
    r = client_for(analyst).post(_url("apply", project, interview), {"code": code.pk, "segments": str(participant_segments[0].pk)})
    assert r.status_code == 400


def test_service_reports_membership_for_outsiders(outsider, project, interview, participant_segments, make_code):
    code = make_code("Trust")
    result = coding_apply(project_uuid=project.uuid, interview_uuid=interview.uuid, user_id=outsider.pk, code_id=code.pk,
                          segment_ids=[participant_segments[0].pk])
    assert not result.is_member and result.changed == []
    result = coding_remove(project_uuid=project.uuid, interview_uuid=interview.uuid, user_id=outsider.pk, code_id=code.pk,
                           segment_ids=[participant_segments[0].pk])
    assert not result.is_member


def test_create_inline_creates_and_applies(client_for, analyst, project, interview, participant_segments):
    r = client_for(analyst).post(_url("create_inline", project, interview),
                                 {"name": "  Slow   belonging ", "kind": "latent", "segments": str(participant_segments[0].pk)})
    assert r.status_code == 200
    trigger = json.loads(r["HX-Trigger"])["coding-changed"]
    assert trigger["newCode"]["name"] == "Slow belonging" and trigger["newCode"]["kind"] == "latent"
    assert Coding.objects.get().code.name == "Slow belonging"
    r = client_for(analyst).post(_url("create_inline", project, interview), {"name": "slow belonging", "segments": ""})
    assert r.status_code == 400 and "already a code" in r.content.decode()


NOT_IDS = [str(2**63), str(10**30), "-1", "0", "1.5", "٣"]


@pytest.mark.parametrize("name", ["apply", "remove"])
@pytest.mark.parametrize("value", NOT_IDS)
def test_a_segment_number_that_is_no_id_is_refused_like_any_bad_id(client_for, analyst, project, interview,
                                                                    participant_segments, make_code, name, value):
    code = make_code("Trust")
    r = client_for(analyst).post(_url(name, project, interview),
                                 {"code": code.pk, "segments": f"{participant_segments[0].pk},{value}"})
    assert r.status_code == 400
    assert r.content.decode() == f"Segment ids must be numbers; “{value}” is not a segment id."
    assert Coding.objects.count() == 0


@pytest.mark.parametrize("name", ["apply", "remove"])
@pytest.mark.parametrize("value", [*NOT_IDS, "abc"])
def test_a_code_number_that_is_no_id_is_refused_like_a_missing_code(client_for, analyst, project, interview,
                                                                     participant_segments, name, value):
    r = client_for(analyst).post(_url(name, project, interview), {"code": value, "segments": str(participant_segments[0].pk)})
    assert r.status_code == 400 and r.content.decode() == "Choose a code and at least one segment."
    assert Coding.objects.count() == 0


@pytest.fixture
def uncodable_here(owner, make_interview) -> dict[str, str]:
    """Segment numbers the apply refuses: another project's segment, one that does not exist, one that is no id."""
    from projects.models import Project

    other = make_interview(project=Project.objects.create(name="Other", created_by=owner))
    return {"another project's": str(other.segments.filter(speaker=Speaker.PARTICIPANT).first().pk),
            "no such": str(2**62), "not an id": str(2**63)}


@pytest.mark.parametrize("which", ["another project's", "no such", "not an id"])
def test_creating_a_code_for_a_refused_apply_leaves_no_code_behind(client_for, analyst, project, interview,
                                                                   participant_segments, uncodable_here, which):
    from coding.models import Code, CodeEvent
    from projects.models import AuditEvent

    segment = uncodable_here[which]
    audited = AuditEvent.objects.filter(project=project).count()
    r = client_for(analyst).post(_url("create_inline", project, interview),
                                 {"name": "Slow belonging", "segments": f"{participant_segments[0].pk},{segment}"
                                  if which == "not an id" else segment})
    assert r.status_code == 400
    assert r.content.decode() == (f"Segment ids must be numbers; “{segment}” is not a segment id." if which == "not an id"
                                  else "None of the selected segments can be coded here.")
    assert not Code.objects.filter(project=project).exists()
    assert not CodeEvent.objects.filter(project=project).exists()
    assert AuditEvent.objects.filter(project=project).count() == audited
    assert not Coding.objects.exists()


def test_bringing_a_code_back_for_a_refused_apply_leaves_it_archived(client_for, analyst, project, interview,
                                                                     make_code, uncodable_here):
    from coding.models import CodeEvent
    from coding.services import code_archive

    code = code_archive(code=make_code("Home as habit"), actor=analyst)
    code.refresh_from_db()
    version, events = code.version, CodeEvent.objects.count()
    r = client_for(analyst).post(_url("create_inline", project, interview),
                                 {"bring_back": code.pk, "segments": uncodable_here["another project's"]})
    assert r.status_code == 400 and r.content.decode() == "None of the selected segments can be coded here."
    code.refresh_from_db()
    assert code.archived and code.version == version and CodeEvent.objects.count() == events
