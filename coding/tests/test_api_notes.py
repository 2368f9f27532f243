"""The familiarisation notes API: everyone's notes on an interview, each member writing only their own."""

from __future__ import annotations

import pytest
from django.test import Client

from coding.models import Note
from coding.services import note_save
from projects.models import AuditEvent

pytestmark = pytest.mark.django_db


def notes_url(project, interview, tail: str = "") -> str:
    return f"/api/projects/{project.uuid}/interviews/{interview.uuid}/notes/{tail}"


def put(client, project, interview, text: str, turn=None):
    query = f"?turn={turn.uuid}" if turn is not None else ""
    return client.put(notes_url(project, interview, "mine/") + query, {"text": text}, content_type="application/json")


def test_members_list_everyones_notes_and_filter_by_turn(client_for, project, owner, analyst, viewer, interview):
    turn = interview.turns.get(position=1)
    note_save(interview=interview, author=owner, text="Overall: guarded.")
    note_save(interview=interview, turn=turn, author=analyst, text="Home as people.")
    response = client_for(viewer).get(notes_url(project, interview))
    assert response.status_code == 200
    rows = [(n["author"], n["turn"], n["turn_position"], n["text"], n["mine"]) for n in response.json()["results"]]
    assert sorted(rows, key=str) == sorted([("olivia", None, None, "Overall: guarded.", False),
                                            ("arjun", str(turn.uuid), 1, "Home as people.", False)], key=str)
    on_turn = client_for(analyst).get(notes_url(project, interview), {"turn": str(turn.uuid)}).json()["results"]
    assert [(n["text"], n["mine"]) for n in on_turn] == [("Home as people.", True)]
    bad = client_for(analyst).get(notes_url(project, interview), {"turn": "turn-one"})
    assert bad.status_code == 400 and "turn" in bad.json()


def test_outsiders_get_404_and_anonymous_401(client_for, project, owner, outsider, interview):
    note_save(interview=interview, author=owner, text="Private.")
    assert client_for(outsider).get(notes_url(project, interview)).status_code == 404
    assert put(client_for(outsider), project, interview, "Mine now").status_code == 404
    assert client_for(outsider).delete(notes_url(project, interview, "mine/")).status_code == 404
    assert Client().get(notes_url(project, interview)).status_code == 401
    assert put(Client(), project, interview, "Anyone").status_code == 401
    assert list(Note.objects.values_list("text", flat=True)) == ["Private."]


def test_viewers_may_not_write_notes(client_for, project, viewer, interview):
    assert put(client_for(viewer), project, interview, "A thought").status_code == 403
    assert client_for(viewer).delete(notes_url(project, interview, "mine/")).status_code == 403
    assert not Note.objects.exists()


def test_put_creates_then_replaces_your_own_note_and_is_audited(client_for, project, owner, analyst, interview):
    note_save(interview=interview, author=owner, text="The owner's view.")
    client = client_for(analyst)
    created = put(client, project, interview, "  First reading.  ")
    assert created.status_code == 201
    assert created.json()["text"] == "First reading." and created.json()["mine"] and created.json()["turn"] is None
    replaced = put(client, project, interview, "Second reading.")
    assert replaced.status_code == 200
    assert Note.objects.get(author=analyst).text == "Second reading."
    assert Note.objects.get(author=owner).text == "The owner's view."
    assert AuditEvent.objects.filter(target_type="note", actor=analyst).count() == 2


def test_put_on_a_turn(client_for, project, analyst, interview):
    turn = interview.turns.get(position=3)
    response = put(client_for(analyst), project, interview, "Between two places.", turn=turn)
    assert response.status_code == 201 and response.json()["turn"] == str(turn.uuid) and response.json()["turn_position"] == 3
    assert Note.objects.get().turn == turn


def test_bad_input_is_400_naming_the_field_and_writes_nothing(client_for, project, analyst, interview, make_interview):
    client = client_for(analyst)
    elsewhere = make_interview(title="Another").turns.first()
    wrong_turn = put(client, project, interview, "Lost", turn=elsewhere)
    assert wrong_turn.status_code == 400 and str(elsewhere.uuid) in wrong_turn.json()["turn"][0]
    assert "text" in put(client, project, interview, "   ").json()
    too_long = put(client, project, interview, "x" * 20001)
    assert too_long.status_code == 400 and "text" in too_long.json()
    assert client.put(notes_url(project, interview, "mine/"), {}, content_type="application/json").status_code == 400
    assert not Note.objects.exists()


def test_delete_removes_only_your_own_note(client_for, project, owner, analyst, interview):
    turn = interview.turns.get(position=1)
    note_save(interview=interview, turn=turn, author=owner, text="The owner's.")
    note_save(interview=interview, turn=turn, author=analyst, text="The analyst's.")
    client = client_for(analyst)
    url = notes_url(project, interview, f"mine/?turn={turn.uuid}")
    assert client.delete(notes_url(project, interview, "mine/")).status_code == 404  # none on the whole interview
    assert client.delete(url).status_code == 204
    assert client.delete(url).status_code == 404
    assert list(Note.objects.values_list("text", flat=True)) == ["The owner's."]
    assert AuditEvent.objects.filter(target_type="note", actor=analyst, action=AuditEvent.Action.DELETED).exists()


def test_notes_of_an_interview_in_the_trash_are_404(client_for, project, owner, interview):
    from django.utils import timezone

    note_save(interview=interview, author=owner, text="Before the trash.")
    interview.deleted_at = timezone.now()
    interview.save(update_fields=["deleted_at"])
    assert client_for(owner).get(notes_url(project, interview)).status_code == 404
    assert put(client_for(owner), project, interview, "After").status_code == 404


def test_list_queries_do_not_grow_with_the_notes(client_for, project, owner, analyst, viewer, interview,
                                                 django_assert_num_queries):
    client = client_for(viewer)
    note_save(interview=interview, author=owner, text="One.")

    # session, user, membership (+project), interview (+participant), count, page of notes (+author, turn)
    with django_assert_num_queries(6):
        assert len(client.get(notes_url(project, interview)).json()["results"]) == 1
    for turn in interview.turns.all():
        for author in (owner, analyst):
            note_save(interview=interview, turn=turn, author=author, text=f"On turn {turn.position}.")
    with django_assert_num_queries(6):
        assert len(client.get(notes_url(project, interview)).json()["results"]) == 9
