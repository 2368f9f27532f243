"""Review meetings: the decision form by kind, closing with a confirmation, and a closed meeting that refuses every edit."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.test import APIClient

from themes import services
from themes.models import AgendaItem, Decision, Review, Snapshot, Theme

pytestmark = pytest.mark.django_db


@pytest.fixture
def meeting(project, owner, make_code):
    """An open meeting about two themes, with one decision recorded and not yet applied."""
    a = services.theme_create(project=project, actor=owner, name="Honesty about limits", definition="Models say what they cannot do.")
    b = services.theme_create(project=project, actor=owner, name="Friendship")
    code = make_code("admits uncertainty")
    services.theme_add_code(theme=a, actor=owner, code=code)
    review = services.review_create(project=project, actor=owner, title="Round 1", date="2026-11-22", attendees=[owner], themes=[a, b])
    decision = services.decision_record(review=review, theme=b, actor=owner, kind="rename", payload={"name": "Being a friend"})
    return {"a": a, "b": b, "code": code, "review": review, "decision": decision}


def u(name, project, *args) -> str:
    return reverse(f"themes:{name}", args=[project.uuid, *args])


def _closed(meeting, owner) -> Review:
    services.review_close(review=meeting["review"], actor=owner)
    return meeting["review"]


# ---------------------------------------------------------------- the decision form

def test_each_decision_field_says_which_kinds_it_is_for_and_the_page_explains_record_then_apply(meeting, project, analyst, client_for):
    html = client_for(analyst).get(u("review", project, meeting["review"].uuid)).content.decode()
    for kinds, name in (("rename split", 'name="name"'), ("merge", 'name="into"'), ("move_codes", 'name="to"'),
                        ("redefine", 'name="definition"'), ("status", 'name="status"')):
        block = html.split(f'data-kinds="{kinds}"', 1)[1].split("</div>", 1)[0]
        assert name in block, kinds
    assert 'data-kinds="split move_codes"' in html
    assert "the themes change only when someone clicks <strong>Apply</strong>" in html
    assert "js/themes_review.js" in html


@pytest.mark.parametrize("kind,data,message", [
    ("rename", {"name": "  "}, "New name: Give the new name."),
    ("split", {"name": "Part"}, "Codes for the new theme: Choose one or more codes of this project."),
    ("split", {"codes": "{code}"}, "Name of the new theme: Name the theme that is split off."),
    ("merge", {"into": ""}, "Merge into: Choose a theme of this project that is not in the trash."),
    ("move_codes", {"codes": "{code}", "to": ""}, "Move codes to: Choose a theme of this project that is not in the trash."),
    ("status", {"status": "nonsense"}, "New status: Choose a status."),
    ("", {}, "Decision: Choose what kind of decision this is."),
    ("promote", {}, "Decision: “promote” is not a kind of decision."),
])
def test_a_decision_missing_a_field_of_its_kind_is_refused_naming_that_field(kind, data, message, meeting, project, analyst, client_for):
    data = {k: str(meeting["code"].uuid) if v == "{code}" else v for k, v in data.items()}
    # Fields of other kinds are sent too (without JavaScript all are in the form); only the chosen kind's count.
    post = {"theme": meeting["a"].uuid, "kind": kind, "definition": "ignored", "status": "reviewed", **data}
    page = client_for(analyst).post(u("decision_create", project, meeting["review"].uuid), post, follow=True)
    assert f"Decision on “Honesty about limits” not recorded. {message}" in page.content.decode()
    assert Decision.objects.filter(review=meeting["review"]).count() == 1


def test_fields_of_other_kinds_are_ignored_when_a_decision_is_recorded(meeting, project, analyst, client_for):
    post = {"theme": meeting["a"].uuid, "kind": "status", "status": "reviewed", "name": "Not a rename",
            "definition": "Not a redefinition", "into": meeting["b"].uuid, "codes": meeting["code"].uuid}
    client_for(analyst).post(u("decision_create", project, meeting["review"].uuid), post)
    assert Decision.objects.get(theme=meeting["a"]).payload == {"status": "reviewed"}


# ---------------------------------------------------------------- closing asks first

def test_closing_without_ticking_the_confirmation_changes_nothing_and_says_why(meeting, project, analyst, client_for):
    review = meeting["review"]
    response = client_for(analyst).post(u("review_close", project, review.uuid), {})
    html = response.content.decode()
    assert response.status_code == 200
    assert "Tick the box to confirm: a closed meeting cannot be reopened." in html
    assert '<details class="card close-meeting" id="close-meeting" open>' in html  # the confirm step stays in view
    assert "1 decision recorded but not applied" in html
    review.refresh_from_db()
    assert review.status == Review.Status.OPEN and review.snapshots.count() == 1


def test_closing_with_the_confirmation_closes_and_takes_the_after_snapshot(meeting, project, analyst, client_for):
    review = meeting["review"]
    response = client_for(analyst).post(u("review_close", project, review.uuid), {"confirm": "on"})
    assert response.status_code == 302
    review.refresh_from_db()
    assert review.status == Review.Status.CLOSED and review.closed_at is not None
    assert list(review.snapshots.order_by("taken_at", "id").values_list("label", flat=True)) == ["Round 1: before", "Round 1: after"]


def test_closing_a_closed_meeting_again_is_refused(meeting, project, owner, analyst, client_for):
    _closed(meeting, owner)
    response = client_for(analyst).post(u("review_close", project, meeting["review"].uuid), {"confirm": "on"})
    assert response.status_code == 409
    assert "The meeting “Round 1” is closed; closing it again changes nothing." in response.content.decode()
    assert Snapshot.objects.filter(review=meeting["review"]).count() == 2


# ---------------------------------------------------------------- a closed meeting is read-only

def _closed_writes(m) -> list[tuple[str, list, dict, str]]:
    """(url name, args, POST data valid on an open meeting, what the refusal says) of every meeting write."""
    return [
        ("review_edit", [m["review"].uuid], {"title": "Renamed", "date": "2026-11-23", "attendees": "arjun", "themes": [m["b"].uuid]},
         "its title, date, attendees and agenda can no longer be changed"),
        ("review_notes", [m["review"].uuid], {"notes": "Later", "notes_version": "1"}, "its notes can no longer be changed"),
        ("decision_create", [m["review"].uuid], {"theme": m["a"].uuid, "kind": "status", "status": "reviewed"},
         "no more decisions can be recorded in it"),
        ("decision_apply", [m["decision"].uuid], {}, "its decisions can no longer be applied or set aside"),
        ("decision_decline", [m["decision"].uuid], {"reason": "Later"}, "its decisions can no longer be applied or set aside"),
        ("review_close", [m["review"].uuid], {"confirm": "on"}, "closing it again changes nothing"),
    ]


CLOSED_WRITES = ["review_edit", "review_notes", "decision_create", "decision_apply", "decision_decline", "review_close"]


@pytest.mark.parametrize("index", range(len(CLOSED_WRITES)), ids=CLOSED_WRITES)
def test_a_closed_meeting_refuses_every_edit(index, meeting, project, owner, analyst, viewer, outsider, client_for):
    name, args, data, refusal = _closed_writes(meeting)[index]
    review = _closed(meeting, owner)
    url = u(name, project, *args)
    assert client_for(outsider).post(url, data).status_code == 404
    assert client_for(viewer).post(url, data).status_code == 403
    response = client_for(analyst).post(url, data)
    assert response.status_code == 409
    assert f"The meeting “Round 1” is closed; {refusal}" in response.content.decode()
    review.refresh_from_db()
    assert (review.title, str(review.date), review.notes) == ("Round 1", "2026-11-22", "")
    assert list(review.attendees.values_list("username", flat=True)) == ["olivia"]
    assert list(AgendaItem.objects.filter(review=review).values_list("theme__name", flat=True)) == ["Honesty about limits", "Friendship"]
    assert list(Decision.objects.filter(review=review).values_list("kind", "applied_at", "declined_at")) == [("rename", None, None)]
    assert Theme.objects.get(pk=meeting["b"].pk).name == "Friendship"
    assert Snapshot.objects.filter(review=review).count() == 2


@pytest.mark.parametrize("name", ["review_edit", "decision_create", "decision_apply", "review_close"])
def test_an_open_meeting_still_takes_the_same_edits(name, meeting, project, analyst, client_for):
    name, args, data, _ = next(w for w in _closed_writes(meeting) if w[0] == name)
    assert client_for(analyst).post(u(name, project, *args), data).status_code == 302


def test_a_closed_meeting_page_has_no_edit_controls(meeting, project, owner, analyst, client_for):
    review = _closed(meeting, owner)
    html = client_for(analyst).get(u("review", project, review.uuid)).content.decode()
    for control in (u("review_edit", project, review.uuid), u("decision_create", project, review.uuid),
                    u("decision_apply", project, meeting["decision"].uuid), u("review_close", project, review.uuid),
                    u("review_notes", project, review.uuid), "Record a decision"):
        assert control not in html, control
    assert "the notes, agenda, attendees and decisions are kept as they were" in html
    assert "not applied before the meeting closed" in html
    presenter = client_for(analyst).get(u("present", project, review.uuid, 1)).content.decode()
    assert u("decision_create", project, review.uuid) not in presenter
    assert u("decision_apply", project, meeting["decision"].uuid) not in presenter


def test_an_open_meeting_page_has_its_controls_for_writers_only(meeting, project, analyst, viewer, client_for):
    review = meeting["review"]
    controls = (u("review_edit", project, review.uuid), u("decision_create", project, review.uuid),
                u("decision_apply", project, meeting["decision"].uuid), u("review_close", project, review.uuid))
    html = client_for(analyst).get(u("review", project, review.uuid)).content.decode()
    assert all(c in html for c in controls)
    html = client_for(viewer).get(u("review", project, review.uuid)).content.decode()
    assert not any(c in html for c in controls)


def test_the_api_refuses_decisions_on_a_closed_meeting(meeting, project, owner, analyst):
    review = _closed(meeting, owner)
    client = APIClient()
    client.force_authenticate(analyst)
    base = f"/api/projects/{project.uuid}/reviews/{review.uuid}/"
    for url, data in ((base + "decisions/", {"theme": str(meeting["a"].uuid), "kind": "status", "payload": {"status": "reviewed"}}),
                      (base + f"decisions/{meeting['decision'].uuid}/apply/", {}),
                      (base + f"decisions/{meeting['decision'].uuid}/decline/", {}),
                      (base + "close/", {})):
        response = client.post(url, data, format="json")
        assert response.status_code == 409, url
        assert response.json()["detail"].startswith("The meeting “Round 1” is closed;"), url
    assert Decision.objects.filter(review=review).count() == 1
    assert Theme.objects.get(pk=meeting["b"].pk).name == "Friendship"


def test_a_closed_meeting_page_costs_the_same_queries_with_more_agenda_items_and_decisions(project, owner, analyst, client_for,
                                                                                          django_assert_num_queries):
    def closed_meeting(size: int) -> str:
        themes = [services.theme_create(project=project, actor=owner, name=f"Theme {size}.{i}") for i in range(size)]
        review = services.review_create(project=project, actor=owner, title=f"Round {size}", date="2026-11-22",
                                        attendees=[owner, analyst], themes=themes)
        for theme in themes:
            services.decision_record(review=review, theme=theme, actor=owner, kind="status", payload={"status": "reviewed"})
            services.decision_record(review=review, theme=theme, actor=owner, kind="rename", payload={"name": theme.name + "!"})
        services.decision_apply(decision=review.decisions.filter(kind="status").first(), actor=owner)
        services.review_close(review=review, actor=owner)
        return u("review", project, review.uuid)

    client = client_for(analyst)
    small = closed_meeting(1)
    client.get(small)
    with CaptureQueriesContext(connection) as queries:
        assert client.get(small).status_code == 200
    large = closed_meeting(6)
    with django_assert_num_queries(len(queries.captured_queries)):
        html = client.get(large).content.decode()
    assert html.count("not applied before the meeting closed") == 11


def test_a_theme_sent_twice_for_the_agenda_is_on_it_once(meeting, project, owner, analyst):
    """The agenda holds a theme once (unique_agenda_theme): a repeated uuid, from a script or a form sent with a theme
    ticked twice, was a database error."""
    a, b, review = meeting["a"], meeting["b"], meeting["review"]
    client = APIClient()
    client.force_authenticate(analyst)
    created = client.post(f"/api/projects/{project.uuid}/reviews/", {
        "title": "Round 2", "date": "2026-11-29", "agenda": [str(b.uuid), str(a.uuid), str(b.uuid)]}, format="json")
    assert created.status_code == 201, created.content
    assert created.json()["agenda"] == [str(b.uuid), str(a.uuid)]
    third = services.theme_create(project=project, actor=owner, name="Care")
    services.review_update(review=review, actor=owner, title=review.title, date=review.date, attendees=[owner],
                           themes=[third, a, third])
    assert [item.theme for item in review.agenda.order_by("position")] == [third, a]
