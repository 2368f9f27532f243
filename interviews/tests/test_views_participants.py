"""The participants page under interviews and the form describing an imported participant."""

from __future__ import annotations

import datetime as dt

import pytest
from django.urls import reverse

from interviews.models import Interview, Participant
from interviews.tests.factories import make_interview, make_participant
from projects.models import AuditEvent

pytestmark = pytest.mark.django_db


@pytest.fixture
def gpt(project) -> Participant:
    return make_participant(project, label="GPT-4o", attributes={"release": "2024-08", "params_b": 200})


def list_url(project) -> str:
    return reverse("interviews:participants", args=[project.uuid])


def edit_url(project, participant) -> str:
    return reverse("interviews:participant_edit", args=[project.uuid, participant.uuid])


def form_data(participant, rows: list[tuple[str, str]] | None = None, **changes) -> dict:
    data = {"label": participant.label, "provider": participant.provider, "model_id": participant.model_id,
            "interface": participant.interface, "snapshot_date": ""} | changes
    rows = rows if rows is not None else [(k, v if isinstance(v, str) else str(v)) for k, v in participant.attributes.items()]
    data |= {"attributes-TOTAL_FORMS": str(len(rows)), "attributes-INITIAL_FORMS": "0",
             "attributes-MIN_NUM_FORMS": "0", "attributes-MAX_NUM_FORMS": "1000"}
    for i, (key, value) in enumerate(rows):
        data |= {f"attributes-{i}-key": key, f"attributes-{i}-value": value}
    return data


def test_members_see_every_participant_with_interview_counts_and_links(client_for, viewer, analyst, project, gpt) -> None:
    live = make_participant(project, label="Live model", is_live=True)
    unused = make_participant(project, label="Unused")
    make_interview(project, gpt, [("participant", "One.")], title="A")
    make_interview(project, gpt, [("participant", "Two.")], title="B")
    trashed = make_interview(project, gpt, [("participant", "Three.")], title="C")
    Interview.objects.filter(pk=trashed.pk).update(deleted_at=dt.datetime.now(dt.UTC))
    make_interview(project, live, [("participant", "Live.")], title="D")
    response = client_for(viewer).get(list_url(project))
    assert response.status_code == 200
    rows = {p.label: p.interview_count for p in response.context["participants"]}
    assert rows == {"GPT-4o": 2, "Live model": 1, "Unused": 0}
    html = response.content.decode()
    assert "release: 2024-08" in html
    assert f'href="{edit_url(project, gpt)}"' not in html  # viewers get no edit links
    html = client_for(analyst).get(list_url(project)).content.decode()
    assert f'href="{edit_url(project, gpt)}"' in html and f'href="{edit_url(project, unused)}"' in html
    assert f'href="{reverse("conduct:participant_edit", args=[project.uuid, live.uuid])}"' in html
    assert f'href="{edit_url(project, live)}"' not in html
    assert f'{reverse("interviews:list", args=[project.uuid])}?participant={gpt.uuid}' in html


def test_the_interviews_list_links_to_the_participants(client_for, viewer, project) -> None:
    html = client_for(viewer).get(reverse("interviews:list", args=[project.uuid])).content.decode()
    assert f'href="{list_url(project)}"' in html


def test_outsiders_get_404(client_for, outsider, project, gpt) -> None:
    assert client_for(outsider).get(list_url(project)).status_code == 404
    assert client_for(outsider).get(edit_url(project, gpt)).status_code == 404
    assert client_for(outsider).post(edit_url(project, gpt), form_data(gpt, label="Hacked")).status_code == 404
    assert Participant.objects.get(pk=gpt.pk).label == "GPT-4o"


def test_viewers_get_403_on_the_form(client_for, viewer, project, gpt) -> None:
    assert client_for(viewer).get(edit_url(project, gpt)).status_code == 403
    assert client_for(viewer).post(edit_url(project, gpt), form_data(gpt, label="Hacked")).status_code == 403
    assert Participant.objects.get(pk=gpt.pk).label == "GPT-4o"


@pytest.mark.parametrize("role", ["owner", "analyst"])
def test_writers_describe_an_imported_participant(request, client_for, project, gpt, role) -> None:
    client = client_for(request.getfixturevalue(role))
    page = client.get(edit_url(project, gpt)).content.decode()
    assert 'value="release"' in page and 'value="200"' in page
    response = client.post(edit_url(project, gpt), form_data(
        gpt, [("release", "2024-08"), ("params_b", "200"), ("", ""), ("licence", "proprietary")],
        label="GPT-4o (2024-08-06)", provider="OpenAI", model_id="gpt-4o-2024-08-06", interface="api",
        snapshot_date="2024-08-06"), follow=True)
    assert response.redirect_chain[-1][0] == list_url(project)
    assert "Participant “GPT-4o (2024-08-06)” saved." in response.content.decode()
    gpt.refresh_from_db()
    assert (gpt.label, gpt.interface, gpt.snapshot_date) == ("GPT-4o (2024-08-06)", "api", dt.date(2024, 8, 6))
    # A value left as shown keeps its type: 200 stays a number.
    assert gpt.attributes == {"release": "2024-08", "params_b": 200, "licence": "proprietary"}
    assert AuditEvent.objects.filter(target_id=str(gpt.uuid), action="changed").count() == 1


def test_clearing_a_row_removes_the_attribute(client_for, analyst, project, gpt) -> None:
    client_for(analyst).post(edit_url(project, gpt), form_data(gpt, [("release", "2024-09"), ("", "")]))
    gpt.refresh_from_db()
    assert gpt.attributes == {"release": "2024-09"}


def test_a_label_another_participant_has_is_refused_with_a_clear_message(client_for, analyst, project, gpt) -> None:
    make_participant(project, label="Claude")
    response = client_for(analyst).post(edit_url(project, gpt), form_data(gpt, label="Claude", provider="Changed"))
    assert response.status_code == 400
    assert response.context["form"].errors["label"] == [
        "Another participant in this project is already called “Claude”; participant labels must be unique."]
    assert "already called “Claude”" in response.content.decode()
    gpt.refresh_from_db()
    assert (gpt.label, gpt.provider) == ("GPT-4o", "OpenAI")


@pytest.mark.parametrize(("rows", "message"), [
    ([("release", "a"), ("release", "b")], "Case attribute “release” appears twice (rows 1 and 2); names must be unique."),
    ([("release", "a"), ("", "orphan value")], "Row 2: give the value “orphan value” a name, or clear the row."),
])
def test_bad_attribute_rows_are_explained_and_nothing_is_saved(client_for, analyst, project, gpt, rows, message) -> None:
    response = client_for(analyst).post(edit_url(project, gpt), form_data(gpt, rows, label="Renamed"))
    assert response.status_code == 400
    assert message in response.content.decode()
    gpt.refresh_from_db()
    assert gpt.label == "GPT-4o" and gpt.attributes == {"release": "2024-08", "params_b": 200}


def test_live_participants_are_edited_on_the_conduct_page(client_for, analyst, project) -> None:
    live = make_participant(project, label="Live model", is_live=True)
    response = client_for(analyst).get(edit_url(project, live))
    assert response.status_code == 302
    assert response["Location"] == reverse("conduct:participant_edit", args=[project.uuid, live.uuid])
    client_for(analyst).post(edit_url(project, live), form_data(live, label="Renamed"))
    assert Participant.objects.get(pk=live.pk).label == "Live model"


def test_a_participant_of_another_project_is_404(client_for, owner, project) -> None:
    from projects.models import Project

    other = make_participant(Project.objects.create(name="Other", created_by=owner), label="Elsewhere")
    assert client_for(owner).get(edit_url(project, other)).status_code == 404


def test_the_list_uses_a_constant_number_of_queries(client_for, viewer, project, django_assert_num_queries) -> None:
    client = client_for(viewer)
    first = make_participant(project, label="First")
    make_interview(project, first, [("participant", "Hi.")])
    client.get(list_url(project))
    # session, user, membership (+project), participants with interview counts, unread-mentions badge
    with django_assert_num_queries(5):
        assert len(client.get(list_url(project)).context["participants"]) == 1
    for i in range(6):
        p = make_participant(project, label=f"Model {i}", attributes={"n": i})
        make_interview(project, p, [("participant", "Hi.")], title=f"Interview {i}")
    with django_assert_num_queries(5):
        assert len(client.get(list_url(project)).context["participants"]) == 7


def test_the_form_uses_a_constant_number_of_queries(client_for, analyst, project, gpt, django_assert_num_queries) -> None:
    client = client_for(analyst)
    client.get(edit_url(project, gpt))
    # session, user, membership (+project), participant, unread-mentions badge
    with django_assert_num_queries(5):
        assert client.get(edit_url(project, gpt)).status_code == 200


def test_the_interviews_list_says_which_interview_is_still_being_conducted(client_for, viewer, project, gpt) -> None:
    ended = make_interview(project, gpt, [("interviewer", "Hi?"), ("participant", "Hello.")], title="Ended")
    live = make_interview(project, gpt, [("interviewer", "Hi?")], title="Still going")
    Interview.objects.filter(pk=live.pk).update(status=Interview.Status.IN_PROGRESS)
    html = client_for(viewer).get(reverse("interviews:list", args=[project.uuid])).content.decode()
    workspace = reverse("coding:workspace", args=[project.uuid, live.uuid])
    assert f'<a href="{workspace}" title="Still being conducted: its sentences can be coded once it ends">Read</a>' in html
    assert html.count("in progress") == 1
    assert f'<a href="{reverse("coding:workspace", args=[project.uuid, ended.uuid])}">Code</a>' in html
