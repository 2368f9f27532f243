"""Undoing "create a code and apply it" in the workspace: the codings go, and so does the new code unless it is used."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from coding.models import Code, CodeEvent, Coding
from coding.services import UNDO_CREATE_REASON, coding_apply
from projects.models import AuditEvent

pytestmark = pytest.mark.django_db


def _url(name, project, interview):
    return reverse(f"coding:{name}", args=[project.uuid, interview.uuid])


def _create_inline(client, project, interview, name, segments) -> Code:
    r = client.post(_url("create_inline", project, interview), {"name": name, "segments": ",".join(str(s.pk) for s in segments)})
    assert r.status_code == 200, r.content
    return Code.objects.get(name=name)


def _undo(client, project, interview, code, segments):
    return client.post(_url("undo_create_inline", project, interview),
                       {"code": code.pk, "segments": ",".join(str(s.pk) for s in segments)})


def test_undo_removes_the_codings_and_archives_the_unused_new_code(client_for, analyst, project, interview,
                                                                    participant_segments):
    s = participant_segments[:2]
    c = client_for(analyst)
    code = _create_inline(c, project, interview, "Slow belonging", s)

    r = _undo(c, project, interview, code, s)

    assert r.status_code == 200
    trigger = json.loads(r["HX-Trigger"])["coding-changed"]
    assert trigger["action"] == "remove" and sorted(trigger["segments"]) == sorted(x.pk for x in s)
    assert trigger["undoneCreate"] == {"code": code.pk, "name": "Slow belonging", "archived": True, "keptBecause": ""}
    assert not Coding.objects.filter(code=code).exists()
    code.refresh_from_db()
    assert code.archived
    assert CodeEvent.objects.filter(code=code, action=CodeEvent.Action.ARCHIVED, reason=UNDO_CREATE_REASON).exists()
    assert AuditEvent.objects.filter(project=project, target_type="code", summary__contains="archived").exists()
    # The chips of the touched segments come back empty, out of band.
    assert f'id="chips-{s[0].pk}"' in r.content.decode()


def test_a_code_a_colleague_already_applied_is_kept(client_for, owner, analyst, project, interview, participant_segments):
    s = participant_segments
    c = client_for(analyst)
    code = _create_inline(c, project, interview, "Slow belonging", [s[0]])
    coding_apply(project_uuid=project.uuid, interview_uuid=interview.uuid, user_id=owner.pk, code_id=code.pk,
                 segment_ids=[s[1].pk])

    r = _undo(c, project, interview, code, [s[0]])

    undone = json.loads(r["HX-Trigger"])["coding-changed"]["undoneCreate"]
    assert undone["archived"] is False and undone["keptBecause"] == "it is still applied to 1 segment"
    code.refresh_from_db()
    assert not code.archived
    assert list(Coding.objects.filter(code=code).values_list("coder", flat=True)) == [owner.pk]


@pytest.mark.parametrize("change, reason", [
    ("edited", "it was edited after it was created"),
    ("someone_elses", "someone else created it"),
    ("has_child", "other codes sit under it or were merged into it"),
])
def test_a_code_that_is_used_otherwise_is_kept(client_for, owner, analyst, project, interview, participant_segments,
                                                 make_code, change, reason):
    c = client_for(analyst)
    code = _create_inline(c, project, interview, "Slow belonging", [participant_segments[0]])
    if change == "edited":
        Code.objects.filter(pk=code.pk).update(version=2, definition="Belonging that takes time")
    elif change == "someone_elses":
        Code.objects.filter(pk=code.pk).update(created_by=owner)
    else:
        make_code("Slower still", parent=code)

    r = _undo(c, project, interview, code, [participant_segments[0]])

    assert json.loads(r["HX-Trigger"])["coding-changed"]["undoneCreate"]["keptBecause"] == reason
    code.refresh_from_db()
    assert not code.archived and not Coding.objects.filter(code=code).exists()


def test_outsiders_get_404_and_viewers_403_and_nothing_changes(client_for, analyst, outsider, viewer, project, interview,
                                                             participant_segments):
    code = _create_inline(client_for(analyst), project, interview, "Slow belonging", [participant_segments[0]])
    assert _undo(client_for(outsider), project, interview, code, [participant_segments[0]]).status_code == 404
    assert _undo(client_for(viewer), project, interview, code, [participant_segments[0]]).status_code == 403
    code.refresh_from_db()
    assert not code.archived and Coding.objects.filter(code=code).count() == 1


def test_bad_input_is_named_and_changes_nothing(client_for, analyst, project, interview, participant_segments, make_interview):
    c = client_for(analyst)
    code = _create_inline(c, project, interview, "Slow belonging", [participant_segments[0]])
    url = _url("undo_create_inline", project, interview)
    assert c.post(url, {"code": code.pk, "segments": "x"}).content.decode() == "Segment ids must be numbers."
    assert c.post(url, {"code": code.pk, "segments": ""}).status_code == 400
    from projects.models import Project

    elsewhere = Project.objects.create(name="Another", created_by=analyst)
    foreign = Code.objects.create(project=elsewhere, name="Foreign", created_by=analyst)
    r = c.post(url, {"code": foreign.pk, "segments": str(participant_segments[0].pk)})
    assert r.status_code == 400 and r.content.decode() == "That code does not exist in this project."
    code.refresh_from_db()
    assert not code.archived and Coding.objects.filter(code=code).count() == 1
