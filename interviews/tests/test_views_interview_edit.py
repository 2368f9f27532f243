"""The interview "Edit details" page: owners and analysts edit, viewers get 403, outsiders 404."""

from __future__ import annotations

import datetime as dt

import pytest
from django.urls import reverse

from interviews.models import Interview
from interviews.tests.factories import make_interview, make_participant
from projects.models import AuditEvent

pytestmark = pytest.mark.django_db


@pytest.fixture
def interview(project) -> Interview:
    return make_interview(project, make_participant(project, label="GPT-4o"), [("participant", "Hello.")], title="Identity")


def edit_url(project, interview) -> str:
    return reverse("interviews:interview_edit", args=[project.uuid, interview.uuid])


def detail_url(project, interview) -> str:
    return reverse("interviews:interview_detail", args=[project.uuid, interview.uuid])


def form_data(interview, **changes) -> dict:
    return {"title": interview.title, "conducted_at": "", "depth": interview.depth,
            "participant": str(interview.participant.uuid), "notes": interview.notes} | changes


@pytest.mark.parametrize("role", ["owner", "analyst"])
def test_members_who_write_edit_the_details(request, client_for, project, interview, role) -> None:
    claude = make_participant(project, label="Claude")
    client = client_for(request.getfixturevalue(role))
    page = client.get(edit_url(project, interview))
    assert page.status_code == 200
    assert 'value="Identity"' in page.content.decode() and "Claude" in page.content.decode()
    response = client.post(edit_url(project, interview), form_data(
        interview, title="Identity, pilot", conducted_at="2025-11-03T14:30", depth="brief", notes="Asked twice.",
        participant=str(claude.uuid)), follow=True)
    assert response.redirect_chain[-1][0] == detail_url(project, interview)
    assert "Details of “Identity, pilot” saved." in response.content.decode()
    interview.refresh_from_db()
    assert (interview.title, interview.depth, interview.notes, interview.participant) == (
        "Identity, pilot", "brief", "Asked twice.", claude)
    assert interview.conducted_at == dt.datetime(2025, 11, 3, 14, 30, tzinfo=dt.UTC)
    assert AuditEvent.objects.filter(target_id=str(interview.uuid), action="changed").count() == 1


def test_viewers_get_403_and_change_nothing(client_for, viewer, project, interview) -> None:
    client = client_for(viewer)
    assert client.get(edit_url(project, interview)).status_code == 403
    assert client.post(edit_url(project, interview), form_data(interview, title="Hacked")).status_code == 403
    assert Interview.objects.get(pk=interview.pk).title == "Identity"


def test_outsiders_get_404_and_change_nothing(client_for, outsider, project, interview) -> None:
    client = client_for(outsider)
    assert client.get(edit_url(project, interview)).status_code == 404
    assert client.post(edit_url(project, interview), form_data(interview, title="Hacked")).status_code == 404
    assert Interview.objects.get(pk=interview.pk).title == "Identity"


def test_an_interview_in_the_trash_cannot_be_edited(client_for, owner, project, interview) -> None:
    Interview.objects.filter(pk=interview.pk).update(deleted_at=dt.datetime.now(dt.UTC))
    assert client_for(owner).get(edit_url(project, interview)).status_code == 404


def test_bad_input_is_shown_next_to_its_field_and_saves_nothing(client_for, analyst, owner, project, interview) -> None:
    from projects.models import Project

    other = make_participant(Project.objects.create(name="Other", created_by=owner), label="Elsewhere")
    response = client_for(analyst).post(edit_url(project, interview), form_data(
        interview, title="", depth="medium", conducted_at="yesterday", participant=str(other.uuid), notes="lost"))
    assert response.status_code == 400
    form = response.context["form"]
    assert set(form.errors) == {"title", "depth", "conducted_at", "participant"}
    assert "Elsewhere" not in response.content.decode()  # another project's participants are not offered
    assert 'role="alert"' in response.content.decode()
    interview.refresh_from_db()
    assert (interview.title, interview.notes) == ("Identity", "")
    assert not AuditEvent.objects.filter(target_id=str(interview.uuid)).exists()


def test_the_transcript_page_links_to_the_form_for_writers_only(client_for, analyst, viewer, project, interview) -> None:
    link = f'href="{edit_url(project, interview)}"'
    assert link in client_for(analyst).get(detail_url(project, interview)).content.decode()
    assert link not in client_for(viewer).get(detail_url(project, interview)).content.decode()


def test_the_form_page_uses_a_constant_number_of_queries(client_for, analyst, project, interview, django_assert_num_queries) -> None:
    client = client_for(analyst)
    client.get(edit_url(project, interview))
    for i in range(5):
        make_participant(project, label=f"Model {i}")
    # session, user, membership (+project), interview (+participant), the participants for the choice, and
    # their first row again (Django's Select looks at the first option to decide on the required attribute), unread-mentions badge
    with django_assert_num_queries(7):
        html = client.get(edit_url(project, interview)).content.decode()
    assert html.count("<option") == 2 + 6  # the two depths, the six participants
