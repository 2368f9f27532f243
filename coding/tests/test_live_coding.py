"""Coding in real time: a change to an interview's codings is announced (ids only) to the project's open pages."""

from __future__ import annotations

import pytest
from django.urls import reverse

from projects import live

pytestmark = pytest.mark.django_db


def _url(name, project, interview):
    return reverse(f"coding:{name}", args=[project.uuid, interview.uuid])


def announced(project, since: str) -> list[dict]:
    return [event for _id, event in live.broker().read(str(project.uuid), since, timeout=0.1).events]


def test_applying_and_removing_a_code_announce_the_interview(client_for, analyst, project, interview, participant_segments,
                                                             make_code, django_capture_on_commit_callbacks):
    code, segment = make_code("Trust"), participant_segments[0]
    since = live.cursor(project.uuid)
    with django_capture_on_commit_callbacks(execute=True):
        assert client_for(analyst).post(_url("apply", project, interview), {"code": code.pk, "segments": segment.pk}).status_code == 200
        assert client_for(analyst).post(_url("remove", project, interview), {"code": code.pk, "segments": segment.pk}).status_code == 200
    assert announced(project, since) == [{"kind": "coding", "interview": str(interview.uuid)}] * 2


@pytest.mark.django_db(transaction=True)
def test_an_apply_that_commits_is_announced_once_its_answer_is_sent(client_for, analyst, project, interview,
                                                                    participant_segments, make_code):
    code, segment = make_code("Trust"), participant_segments[0]
    since = live.cursor(project.uuid)
    # Committed for real: the event waits for the answer (projects.live.hold_events_until_response_sent), which
    # the test client has closed by the time it returns.
    assert client_for(analyst).post(_url("apply", project, interview), {"code": code.pk, "segments": segment.pk}).status_code == 200
    assert announced(project, since) == [{"kind": "coding", "interview": str(interview.uuid)}]


def test_a_request_that_changes_nothing_announces_nothing(client_for, analyst, viewer, project, interview, participant_segments,
                                                          make_code, django_capture_on_commit_callbacks):
    code, segment = make_code("Trust"), participant_segments[0]
    since = live.cursor(project.uuid)
    with django_capture_on_commit_callbacks(execute=True):
        assert client_for(viewer).post(_url("apply", project, interview), {"code": code.pk, "segments": segment.pk}).status_code == 403
        assert client_for(analyst).post(_url("remove", project, interview), {"code": code.pk, "segments": segment.pk}).status_code == 200
    assert announced(project, since) == []


def test_codebook_changes_are_announced_so_open_workspaces_offer_the_new_code(owner, project, django_capture_on_commit_callbacks):
    from coding.services import code_archive, code_create

    since = live.cursor(project.uuid)
    with django_capture_on_commit_callbacks(execute=True):
        code = code_create(project=project, actor=owner, name="Quiet dissent")
        code_archive(code=code, actor=owner)
    assert announced(project, since) == [{"kind": "codebook"}] * 2
