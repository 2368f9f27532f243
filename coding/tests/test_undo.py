"""Undo in the coding workspace, kept on the server: the user's own latest applies and removes in one interview."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from coding.models import Code, CodeEvent, Coding
from coding.services import (
    UNDO_CREATE_REASON,
    UNDO_DEPTH,
    code_archive,
    code_split,
    coding_apply,
    coding_remove,
    coding_undo,
)
from projects.models import AuditEvent, Membership

pytestmark = pytest.mark.django_db


def _url(name, project, interview):
    return reverse(f"coding:{name}", args=[project.uuid, interview.uuid])


def _post(client, name, project, interview, code, segments):
    r = client.post(_url(name, project, interview), {"code": code.pk, "segments": ",".join(str(s.pk) for s in segments)})
    assert r.status_code == 200, r.content
    return r


def _undo(client, project, interview):
    return client.post(_url("undo", project, interview))


def _undone(response) -> dict:
    assert response.status_code == 200, response.content
    return json.loads(response["HX-Trigger"])["coding-changed"]


def _nothing(response) -> str:
    assert response.status_code == 200, response.content
    return json.loads(response["HX-Trigger"])["coding-undo"]["message"]


def _mine(user, code) -> set[int]:
    return set(Coding.objects.filter(coder=user, code=code).values_list("segment_id", flat=True))


def test_undo_takes_back_my_last_apply_but_never_a_colleagues_coding(client_for, owner, analyst, project, interview,
                                                                     participant_segments, make_code):
    s = participant_segments
    trust = make_code("Trust")
    c = client_for(analyst)
    _post(c, "apply", project, interview, trust, s[:2])
    _post(client_for(owner), "apply", project, interview, trust, s[1:3])  # a colleague, later: not on my stack

    trigger = _undone(_undo(c, project, interview))

    assert trigger["action"] == "remove" and sorted(trigger["segments"]) == [s[0].pk, s[1].pk]
    assert trigger["undo"] == {"message": "Undone: removed “Trust” from 2 segments.", "archivedCode": None}
    assert _mine(analyst, trust) == set() and _mine(owner, trust) == {s[1].pk, s[2].pk}
    undo_event = AuditEvent.objects.filter(actor=analyst, target_type="coding").latest("id")
    assert undo_event.summary == "Undone: Code “Trust” removed from 2 segments"
    assert undo_event.data["undoes"] == AuditEvent.objects.filter(actor=analyst, action="created").get().pk


def test_repeated_undo_walks_back_through_applies_and_removes_without_redoing(client_for, analyst, project, interview,
                                                                               participant_segments, make_code):
    s = participant_segments
    trust, home = make_code("Trust"), make_code("Home")
    c = client_for(analyst)
    _post(c, "apply", project, interview, trust, [s[0]])
    _post(c, "remove", project, interview, trust, [s[0]])
    _post(c, "apply", project, interview, home, [s[1]])

    assert _undone(_undo(c, project, interview))["undo"]["message"] == "Undone: removed “Home” from 1 segment."
    assert _mine(analyst, home) == set()
    assert _undone(_undo(c, project, interview))["undo"]["message"] == "Undone: applied “Trust” again to 1 segment."
    assert _mine(analyst, trust) == {s[0].pk}
    assert _undone(_undo(c, project, interview))["undo"]["message"] == "Undone: removed “Trust” from 1 segment."
    assert _mine(analyst, trust) == set()
    assert _nothing(_undo(c, project, interview)).startswith("Nothing to undo")
    assert not Coding.objects.exists()


def test_nothing_to_undo_when_only_a_colleague_coded_here(client_for, owner, analyst, project, interview,
                                                          participant_segments, make_code):
    trust = make_code("Trust")
    _post(client_for(owner), "apply", project, interview, trust, participant_segments[:1])
    assert _nothing(_undo(client_for(analyst), project, interview)).startswith("Nothing to undo")
    assert _mine(owner, trust) == {participant_segments[0].pk}


def test_codings_changed_by_someone_else_since_are_left_alone_and_named(client_for, owner, analyst, project, interview,
                                                                        participant_segments, make_code):
    s = participant_segments
    trust = make_code("Trust")
    c = client_for(analyst)
    _post(c, "apply", project, interview, trust, s[:2])
    # The owner splits the code: the analyst's coding of the second segment moves to a new code.
    new = code_split(code=trust, actor=owner, names=["Trust in people", "Trust in machines"], assignments={s[1].pk: 1})

    message = _undone(_undo(c, project, interview))["undo"]["message"]

    assert message == ("Undone: removed “Trust” from 1 of 2 segments; the other 1 had changed since (the code merged "
                       "or split, or the answer re-segmented).")
    assert _mine(analyst, trust) == set() and _mine(analyst, new[1]) == {s[1].pk}


def test_an_undo_that_can_no_longer_apply_says_why_and_the_next_undo_goes_further(client_for, owner, analyst, project,
                                                                                   interview, participant_segments,
                                                                                   make_code):
    s = participant_segments
    trust, home = make_code("Trust"), make_code("Home")
    c = client_for(analyst)
    _post(c, "apply", project, interview, home, [s[1]])
    _post(c, "apply", project, interview, trust, [s[0]])
    _post(c, "remove", project, interview, trust, [s[0]])
    code_archive(code=trust, actor=owner, reason="Folded into Home")

    assert _undone(_undo(c, project, interview))["undo"]["message"] == (
        "Could not undo removing “Trust”: the code was archived or deleted since.")
    assert _mine(analyst, trust) == set()
    # The apply before the remove: its coding is gone already; then the apply of Home.
    assert _undone(_undo(c, project, interview))["undo"]["message"].startswith("Nothing to take back: your “Trust”")
    assert _undone(_undo(c, project, interview))["undo"]["message"] == "Undone: removed “Home” from 1 segment."


def test_undo_reaches_back_a_bounded_number_of_actions_in_a_row(analyst, project, interview, participant_segments,
                                                                 make_code):
    trust = make_code("Trust")
    oldest, *rest = [s.pk for s in participant_segments]
    scope = {"project_uuid": project.uuid, "interview_uuid": interview.uuid, "user_id": analyst.pk, "code_id": trust.pk}
    coding_apply(**scope, segment_ids=[oldest])
    for i in range(UNDO_DEPTH):  # applies and removes, one after another
        (coding_remove if i % 2 else coding_apply)(**scope, segment_ids=[rest[0]])

    for _ in range(UNDO_DEPTH):
        assert coding_undo(project_uuid=project.uuid, interview_uuid=interview.uuid, user=analyst).result.changed
    # The oldest action is beyond the reach: it stays.
    assert coding_undo(project_uuid=project.uuid, interview_uuid=interview.uuid, user=analyst) is None
    assert _mine(analyst, trust) == {oldest}


def test_undo_is_two_queries(analyst, project, interview, participant_segments, make_code, django_assert_num_queries):
    trust = make_code("Trust")
    coding_apply(project_uuid=project.uuid, interview_uuid=interview.uuid, user_id=analyst.pk, code_id=trust.pk,
                 segment_ids=[s.pk for s in participant_segments])
    # 1. the action to undo (with its code's name), 2. the reverse remove with its audit event
    with django_assert_num_queries(2):
        outcome = coding_undo(project_uuid=project.uuid, interview_uuid=interview.uuid, user=analyst)
    assert len(outcome.result.changed) == len(participant_segments)


def test_outsiders_get_404_and_viewers_403_and_nothing_changes(client_for, analyst, outsider, viewer, project, interview,
                                                             participant_segments, make_code):
    trust = make_code("Trust")
    _post(client_for(analyst), "apply", project, interview, trust, participant_segments[:1])
    assert _undo(client_for(outsider), project, interview).status_code == 404
    assert _undo(client_for(viewer), project, interview).status_code == 403
    # A viewer who coded as an analyst before, and a former member, cannot undo either.
    Membership.objects.filter(project=project, user=analyst).update(role="viewer")
    assert _undo(client_for(analyst), project, interview).status_code == 403
    Membership.objects.filter(project=project, user=analyst).delete()
    assert _undo(client_for(analyst), project, interview).status_code == 404
    assert _mine(analyst, trust) == {participant_segments[0].pk}
    assert not AuditEvent.objects.filter(summary__startswith="Undone").exists()


def test_undo_in_another_projects_interview_is_404(client_for, analyst, project, interview, make_interview, owner):
    from projects.models import Project

    elsewhere = Project.objects.create(name="Another", created_by=owner)
    foreign = make_interview(project=elsewhere)
    r = client_for(analyst).post(reverse("coding:undo", args=[project.uuid, foreign.uuid]))
    assert r.status_code == 404


def test_undo_needs_post(client_for, analyst, project, interview):
    assert client_for(analyst).get(_url("undo", project, interview)).status_code == 405


# --- undoing "create a code and apply it" (the picker's create) -------------------------------------------


def _create_inline(client, project, interview, name, segments) -> Code:
    r = client.post(_url("create_inline", project, interview), {"name": name, "segments": ",".join(str(s.pk) for s in segments)})
    assert r.status_code == 200, r.content
    return Code.objects.get(name=name)


def test_undoing_an_inline_create_removes_the_codings_and_archives_the_unused_code(client_for, analyst, project, interview,
                                                                                    participant_segments):
    s = participant_segments[:2]
    c = client_for(analyst)
    code = _create_inline(c, project, interview, "Slow belonging", s)

    r = _undo(c, project, interview)

    trigger = _undone(r)
    assert trigger["action"] == "remove" and sorted(trigger["segments"]) == sorted(x.pk for x in s)
    assert trigger["undo"] == {"archivedCode": code.pk, "message": "Undone: removed “Slow belonging” from 2 segments, "
                                                                   "and archived the new code “Slow belonging” (nobody had used it)."}
    assert not Coding.objects.filter(code=code).exists()
    code.refresh_from_db()
    assert code.archived
    assert CodeEvent.objects.filter(code=code, action=CodeEvent.Action.ARCHIVED, reason=UNDO_CREATE_REASON).exists()
    # The chips of the touched segments come back empty, out of band.
    assert f'id="chips-{s[0].pk}"' in r.content.decode()


def test_a_new_code_a_colleague_already_applied_is_kept(client_for, owner, analyst, project, interview, participant_segments):
    s = participant_segments
    c = client_for(analyst)
    code = _create_inline(c, project, interview, "Slow belonging", [s[0]])
    coding_apply(project_uuid=project.uuid, interview_uuid=interview.uuid, user_id=owner.pk, code_id=code.pk,
                 segment_ids=[s[1].pk])

    undo = _undone(_undo(c, project, interview))["undo"]

    assert undo["archivedCode"] is None
    assert undo["message"].endswith("; the new code “Slow belonging” stays in the codebook because it is still applied "
                                    "to 1 segment.")
    code.refresh_from_db()
    assert not code.archived
    assert list(Coding.objects.filter(code=code).values_list("coder", flat=True)) == [owner.pk]


@pytest.mark.parametrize("change, reason", [
    ("edited", "it was edited after it was created"),
    ("someone_elses", "someone else created it"),
    ("has_child", "other codes sit under it or were merged into it"),
])
def test_a_new_code_that_is_used_otherwise_is_kept(client_for, owner, analyst, project, interview, participant_segments,
                                                   make_code, change, reason):
    c = client_for(analyst)
    code = _create_inline(c, project, interview, "Slow belonging", [participant_segments[0]])
    if change == "edited":
        Code.objects.filter(pk=code.pk).update(version=2, definition="Belonging that takes time")
    elif change == "someone_elses":
        Code.objects.filter(pk=code.pk).update(created_by=owner)
    else:
        make_code("Slower still", parent=code)

    assert _undone(_undo(c, project, interview))["undo"]["message"].endswith(f"because {reason}.")
    code.refresh_from_db()
    assert not code.archived and not Coding.objects.filter(code=code).exists()


def test_undoing_a_plain_apply_of_a_code_created_inline_earlier_keeps_the_code(client_for, analyst, project, interview,
                                                                               participant_segments):
    c = client_for(analyst)
    code = _create_inline(c, project, interview, "Slow belonging", [participant_segments[0]])
    _post(c, "apply", project, interview, code, [participant_segments[1]])

    assert _undone(_undo(c, project, interview))["undo"]["archivedCode"] is None
    code.refresh_from_db()
    assert not code.archived and _mine(analyst, code) == {participant_segments[0].pk}
