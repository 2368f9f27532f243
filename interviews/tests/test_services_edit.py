"""interview_update and participant_update: what they change, what they refuse, what the audit log keeps."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.exceptions import ValidationError

from interviews.models import Interview, Participant
from interviews.services import interview_update, participant_create, participant_update
from interviews.tests.factories import make_interview, make_participant
from projects.models import AuditEvent, Project

pytestmark = pytest.mark.django_db


@pytest.fixture
def gpt(project) -> Participant:
    return make_participant(project, label="GPT-4o")


@pytest.fixture
def interview(project, gpt) -> Interview:
    return make_interview(project, gpt, [("interviewer", "Who are you?"), ("participant", "A model.")], title="Identity",
                          depth="comprehensive")


def _update(interview: Interview, actor, **changes) -> Interview:
    fields = {f: getattr(interview, f) for f in ("title", "conducted_at", "depth", "notes", "participant")}
    return interview_update(interview=interview, actor=actor, **(fields | changes))


def test_interview_update_saves_the_fields_and_audits_old_and_new_values(project, analyst, interview) -> None:
    claude = make_participant(project, label="Claude 3.5 Sonnet", provider="Anthropic")
    when = dt.datetime(2025, 11, 3, 14, 30, tzinfo=dt.UTC)
    _update(interview, analyst, title="  Identity, first round ", conducted_at=when, depth="brief", notes="Pilot.",
            participant=claude)
    interview.refresh_from_db()
    assert (interview.title, interview.conducted_at, interview.depth, interview.notes, interview.participant) == (
        "Identity, first round", when, "brief", "Pilot.", claude)
    event = AuditEvent.objects.get(target_id=str(interview.uuid))
    assert event.action == "changed" and event.actor == analyst and event.target_type == "interview"
    assert "title Identity → Identity, first round" in event.summary
    assert "depth comprehensive → brief" in event.summary and "participant GPT-4o → Claude 3.5 Sonnet" in event.summary
    assert "conducted at (empty) → 2025-11-03 14:30 UTC" in event.summary and "notes added" in event.summary
    assert event.data["changes"]["depth"] == ["comprehensive", "brief"]
    assert event.data["changes"]["participant"][1] == {"uuid": str(claude.uuid), "label": "Claude 3.5 Sonnet"}


def test_interview_update_without_changes_writes_no_audit_event(analyst, interview) -> None:
    _update(interview, analyst)
    assert not AuditEvent.objects.filter(target_id=str(interview.uuid)).exists()


@pytest.mark.parametrize(("changes", "field", "message"), [
    ({"title": "   "}, "title", "Give the interview a title."),
    ({"depth": "medium"}, "depth", "“medium” is not a depth"),
    ({"title": "x" * 301}, "title", "at most 300 characters"),
])
def test_interview_update_refuses_bad_values_and_changes_nothing(analyst, interview, changes, field, message) -> None:
    with pytest.raises(ValidationError) as raised:
        _update(interview, analyst, **changes, notes="Should not land.")
    assert message in " ".join(raised.value.message_dict[field])
    interview.refresh_from_db()
    assert (interview.title, interview.depth, interview.notes) == ("Identity", "comprehensive", "")
    assert not AuditEvent.objects.filter(target_id=str(interview.uuid)).exists()


def test_interview_update_refuses_a_participant_of_another_project(owner, analyst, interview) -> None:
    other = Project.objects.create(name="Other", created_by=owner)
    stranger = make_participant(other, label="Stranger")
    with pytest.raises(ValidationError) as raised:
        _update(interview, analyst, participant=stranger)
    assert raised.value.message_dict["participant"] == ["Choose a participant of this project."]
    assert Interview.objects.get(pk=interview.pk).participant_id != stranger.pk


def _describe(participant: Participant, actor, **changes) -> Participant:
    fields = {f: getattr(participant, f) for f in ("label", "provider", "model_id", "interface", "snapshot_date", "attributes")}
    return participant_update(participant=participant, actor=actor, **(fields | changes))


def test_participant_update_saves_the_description_and_audits_it(analyst, gpt) -> None:
    _describe(gpt, analyst, label="GPT-4o (Aug)", interface="api", snapshot_date=dt.date(2024, 8, 6),
              attributes={"release": "2024-08", "open_weights": False})
    gpt.refresh_from_db()
    assert (gpt.label, gpt.interface, gpt.snapshot_date) == ("GPT-4o (Aug)", "api", dt.date(2024, 8, 6))
    assert gpt.attributes == {"release": "2024-08", "open_weights": False}
    event = AuditEvent.objects.get(target_id=str(gpt.uuid))
    assert "label GPT-4o → GPT-4o (Aug)" in event.summary and "snapshot date (empty) → 2024-08-06" in event.summary
    assert "attributes +release, +open_weights" in event.summary
    assert event.data["changes"]["snapshot_date"] == [None, "2024-08-06"]


def test_participant_update_refuses_a_label_another_participant_has(project, analyst, gpt) -> None:
    make_participant(project, label="Claude")
    with pytest.raises(ValidationError) as raised:
        _describe(gpt, analyst, label="Claude", provider="Changed")
    assert raised.value.message_dict["label"] == [
        "Another participant in this project is already called “Claude”; participant labels must be unique."]
    gpt.refresh_from_db()
    assert (gpt.label, gpt.provider) == ("GPT-4o", "OpenAI")
    assert not AuditEvent.objects.filter(target_id=str(gpt.uuid)).exists()


def test_the_same_label_in_another_project_is_fine(owner, analyst, gpt) -> None:
    other = Project.objects.create(name="Other", created_by=owner)
    make_participant(other, label="Claude")
    assert _describe(gpt, analyst, label="Claude").label == "Claude"


def test_participant_update_refuses_an_unknown_interface_and_empty_attribute_names(analyst, gpt) -> None:
    with pytest.raises(ValidationError) as raised:
        _describe(gpt, analyst, interface="telepathy", attributes={" ": "x"})
    assert set(raised.value.message_dict) == {"interface", "attributes"}


def test_participant_create_refuses_what_an_edit_refuses_and_saves_nothing(project, analyst, gpt) -> None:
    with pytest.raises(ValidationError) as raised:
        participant_create(project=project, actor=analyst, label="GPT-4o", interface="telepathy", attributes={"k": "v\x00"})
    assert raised.value.message_dict == {
        "label": ["Another participant in this project is already called “GPT-4o”; participant labels must be unique."],
        "interface": ["“telepathy” is not an interface; choose one of web, api."],
        "attributes": ["Case attribute “k”: Null characters are not allowed."]}
    assert list(Participant.objects.filter(project=project)) == [gpt]
    assert not AuditEvent.objects.exists()


def test_interview_attributes_from_a_sheet_refuse_what_the_database_cannot_hold_and_save_none(project, analyst, gpt) -> None:
    from interviews.services import interview_attributes_set

    first = make_interview(project, gpt, [("participant", "Hello.")], title="First")
    second = make_interview(project, gpt, [("participant", "Hi.")], title="Second")
    with pytest.raises(ValidationError, match="Interview attribute “wave”: Null characters are not allowed."):
        interview_attributes_set(actor=analyst, attributes={first: {"wave": "1"}, second: {"wave": "2\x00"}})
    with pytest.raises(ValidationError, match="Interview attributes must be a mapping from non-empty names to values."):
        interview_attributes_set(actor=analyst, attributes={first: {" ": "1"}})
    assert [i.metadata for i in Interview.objects.order_by("title")] == [{}, {}]
