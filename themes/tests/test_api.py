from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from projects.models import AuditEvent
from themes import services
from themes.models import Memo, Theme, ThemeCode

pytestmark = pytest.mark.django_db


def api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def rows(response) -> list:
    """List endpoints are paginated (REST_FRAMEWORK settings)."""
    data = response.json()
    return data["results"] if isinstance(data, dict) else data


def base(project) -> str:
    return f"/api/projects/{project.uuid}"


@pytest.fixture
def theme(project, owner, make_code):
    theme = services.theme_create(project=project, actor=owner, name="Honesty")
    services.theme_add_code(theme=theme, actor=owner, code=make_code("admits uncertainty"))
    return theme


WRITES = [
    ("post", "/themes/", {"name": "New"}),
    ("patch", "/themes/{theme}/", {"name": "Renamed", "version": 1}),
    ("post", "/themes/{theme}/status/", {"status": "reviewed"}),
    ("post", "/themes/{theme}/codes/", {"code": "{code}", "action": "remove"}),
    ("delete", "/themes/{theme}/", None),
    ("post", "/memos/", {"title": "m", "body": "b", "kind": "analytic"}),
    ("post", "/comments/", {"theme": "{theme}", "body": "hi"}),
    ("post", "/reviews/", {"title": "R", "date": "2026-11-22", "agenda": ["{theme}"]}),
    ("put", "/reviews/{review}/notes/", {"notes": "We agreed", "notes_version": 1}),
    ("post", "/reviews/{review}/decisions/", {"theme": "{theme}", "kind": "rename", "payload": {"name": "Candour"}}),
]


@pytest.mark.parametrize("method,path,data", WRITES, ids=[f"{m} {p}" for m, p, _ in WRITES])
def test_api_writes_follow_page_permissions(method, path, data, project, theme, owner, analyst, viewer, outsider):
    code = theme.codes.first()
    review = services.review_create(project=project, actor=owner, title="Round 1", date="2026-11-22", themes=[theme])

    def fill(value):
        if isinstance(value, str):
            return (value.replace("{theme}", str(theme.uuid)).replace("{code}", str(code.uuid))
                    .replace("{review}", str(review.uuid)))
        if isinstance(value, list):
            return [fill(v) for v in value]
        if isinstance(value, dict):
            return {k: fill(v) for k, v in value.items()}
        return value

    url = base(project) + fill(path)
    body = fill(data)
    assert getattr(api(outsider), method)(url, body, format="json").status_code == 404
    assert getattr(api(viewer), method)(url, body, format="json").status_code == 403
    assert getattr(api(analyst), method)(url, body, format="json").status_code in (200, 201, 204)


def test_api_lists_themes_with_ordered_codes_for_viewers(project, theme, viewer, outsider):
    data = rows(api(viewer).get(base(project) + "/themes/"))
    assert data[0]["name"] == "Honesty" and data[0]["codes"][0]["name"] == "admits uncertainty"
    assert api(outsider).get(base(project) + "/themes/").status_code == 404


def test_api_theme_edit_needs_the_version_and_a_stale_one_is_409_with_the_newer_text(project, theme, owner, analyst):
    url = base(project) + f"/themes/{theme.uuid}/"
    unversioned = api(owner).patch(url, {"definition": "mine"}, format="json")
    assert unversioned.status_code == 400 and "Send the version you edited" in unversioned.json()["version"][0]
    fresh = api(analyst).patch(url, {"definition": "theirs", "version": 1}, format="json")
    assert fresh.status_code == 200 and fresh.json()["version"] == 2
    stale = api(owner).patch(url, {"name": "Candour", "definition": "mine", "version": 1}, format="json")
    assert stale.status_code == 409
    assert stale.json()["current"]["definition"] == "theirs" and stale.json()["current"]["version"] == 2
    theme.refresh_from_db()
    assert (theme.name, theme.definition, theme.version) == ("Honesty", "theirs", 2)


def test_api_theme_edit_with_a_refused_parent_saves_nothing(project, theme, owner):
    child = services.theme_create(project=project, actor=owner, name="Child", parent=theme)
    response = api(owner).patch(base(project) + f"/themes/{theme.uuid}/", {"name": "Renamed", "parent": str(child.uuid), "version": 1}, format="json")
    assert response.status_code == 400 and "parent" in response.json()
    theme.refresh_from_db()
    assert (theme.name, theme.version) == ("Honesty", 1)


def test_api_moves_codes_between_themes(project, theme, owner, analyst):
    other = services.theme_create(project=project, actor=owner, name="Other")
    code = theme.codes.first()
    response = api(analyst).post(base(project) + f"/themes/{theme.uuid}/codes/", {"code": str(code.uuid), "action": "move", "to": str(other.uuid)}, format="json")
    assert response.status_code == 200
    assert list(ThemeCode.objects.filter(theme=other).values_list("code__name", flat=True)) == ["admits uncertainty"]


def test_api_memo_update_conflict_is_409_with_the_newer_text(project, owner, analyst):
    memo = services.memo_create(project=project, actor=owner, title="t", body="v1", kind="analytic")
    url = base(project) + f"/memos/{memo.uuid}/"
    assert api(analyst).patch(url, {"body": "v2", "base_version": 1}, format="json").status_code == 200
    stale = api(owner).patch(url, {"body": "mine", "base_version": 1}, format="json")
    assert stale.status_code == 409 and stale.json()["latest"]["body"] == "v2"
    assert api(owner).patch(url, {"body": "mine"}, format="json").status_code == 400
    assert Memo.objects.get(pk=memo.pk).body == "v2"
    revisions = api(owner).get(url + "revisions/").json()
    assert [r["number"] for r in revisions] == [2, 1]


def test_api_memo_delete_is_soft(project, owner):
    memo = services.memo_create(project=project, actor=owner, title="t", body="", kind="analytic")
    assert api(owner).delete(base(project) + f"/memos/{memo.uuid}/").status_code == 204
    assert Memo.objects.get(pk=memo.pk).deleted_at is not None
    assert rows(api(owner).get(base(project) + "/memos/")) == []


def test_api_comments_mentions_and_resolve(project, theme, owner, analyst):
    created = api(owner).post(base(project) + "/comments/", {"theme": str(theme.uuid), "body": "@arjun look"}, format="json").json()
    assert created["mentions"] == ["arjun"]
    assert len(rows(api(analyst).get(base(project) + "/comments/?mentions=arjun"))) == 1
    resolved = api(analyst).post(base(project) + f"/comments/{created['uuid']}/resolve/", {"resolved": True}, format="json").json()
    assert resolved["resolved"] is True
    reopened = api(analyst).post(base(project) + f"/comments/{created['uuid']}/resolve/", {"resolved": "false"}).json()
    assert reopened["resolved"] is False


def test_api_review_meeting_flow(project, theme, owner, analyst):
    other = services.theme_create(project=project, actor=owner, name="Other")
    review = api(analyst).post(base(project) + "/reviews/", {"title": "R1", "date": "2026-11-22", "agenda": [str(theme.uuid), str(other.uuid)],
                                                             "attendees": ["olivia", "arjun"]}, format="json").json()
    assert review["agenda"] == [str(theme.uuid), str(other.uuid)] and sorted(review["attendees"]) == ["arjun", "olivia"]
    url = base(project) + f"/reviews/{review['uuid']}/"
    decision = api(analyst).post(url + "decisions/", {"theme": str(theme.uuid), "kind": "merge", "payload": {"into": str(other.uuid)}}, format="json")
    assert decision.status_code == 201
    bad = api(analyst).post(url + "decisions/", {"theme": str(theme.uuid), "kind": "merge", "payload": {"into": str(theme.uuid)}}, format="json")
    assert bad.status_code == 400 and bad.json() == {"payload": {"into": ["A theme cannot be merged into itself."]}}
    applied = api(analyst).post(url + f"decisions/{decision.json()['uuid']}/apply/", format="json")
    assert applied.status_code == 200 and applied.json()["applied_at"]
    assert Theme.objects.get(pk=theme.pk).deleted_at is not None
    after = api(analyst).post(url + "close/", format="json").json()["snapshot"]
    snaps = rows(api(analyst).get(base(project) + "/theme-snapshots/"))
    before = next(s["uuid"] for s in snaps if s["label"] == "R1: before")
    diff = api(analyst).get(base(project) + f"/theme-snapshots/compare/?a={before}&b={after}").json()
    assert [t["name"] for t in diff["removed"]] == ["Honesty"]


def test_a_meeting_with_an_attendee_who_is_no_member_is_refused_not_created_without_them(project, theme, analyst, outsider):
    from themes.models import Review

    response = api(analyst).post(base(project) + "/reviews/", {"title": "R1", "date": "2026-11-22",
                                                                "attendees": ["arjun", "oscar", "nobody", "oscar"]}, format="json")
    assert response.status_code == 400
    assert response.json() == {"attendees": ["“oscar” is not a member of this project.", "“nobody” is not a member of this project."]}
    assert not Review.objects.exists()


# --- exemplars ----------------------------------------------------------------------------


def exemplars(project, theme) -> str:
    return base(project) + f"/themes/{theme.uuid}/exemplars/"


@pytest.fixture
def pinned(project, theme, owner, make_interview):
    """Two exemplars of the theme: the first and the second sentence of one answer."""
    _, segments = make_interview()
    return [services.exemplar_pin(theme=theme, actor=owner, segment=s) for s in segments[:2]], segments


def test_members_list_a_themes_exemplars_in_order_with_their_source(project, theme, pinned, viewer, outsider):
    (first, second), segments = pinned
    listed = rows(api(viewer).get(exemplars(project, theme)))
    assert [e["uuid"] for e in listed] == [str(first.uuid), str(second.uuid)]
    assert listed[0]["quote"] == segments[0].text and listed[0]["verified"] is True
    assert listed[0]["segment"] == segments[0].pk and listed[0]["interview"] == str(segments[0].interview.uuid)
    assert listed[0]["theme"] == str(theme.uuid) and listed[0]["created_by"] == "olivia"
    assert api(outsider).get(exemplars(project, theme)).status_code == 404
    assert api(outsider).get(f"{exemplars(project, theme)}{first.uuid}/").status_code == 404
    assert APIClient().get(exemplars(project, theme)).status_code == 401


def test_exemplar_list_queries_do_not_grow(project, theme, owner, make_interview, django_assert_num_queries):
    _, segments = make_interview()
    services.exemplar_pin(theme=theme, actor=owner, segment=segments[0])
    client = api(owner)
    # membership (+project), theme, count, page of exemplars (+turn, interview, author)
    with django_assert_num_queries(4):
        assert len(rows(client.get(exemplars(project, theme)))) == 1
    for segment in segments[1:]:
        services.exemplar_pin(theme=theme, actor=owner, segment=segment)
    with django_assert_num_queries(4):
        assert len(rows(client.get(exemplars(project, theme)))) == 4


def test_analysts_pin_an_excerpt_trimmed_word_for_word(project, theme, analyst, make_interview):
    _, segments = make_interview()
    quote = "I try to be honest [...] what I do not know."
    response = api(analyst).post(exemplars(project, theme), {"segment": segments[0].pk, "quote": quote}, format="json")
    assert response.status_code == 201 and response.json()["quote"] == quote and response.json()["verified"] is True
    reworded = api(analyst).post(exemplars(project, theme), {"segment": segments[0].pk, "quote": "I am always honest"}, format="json")
    assert reworded.status_code == 400 and "word for word" in reworded.json()["quote"][0]
    elsewhere = api(analyst).post(exemplars(project, theme), {"segment": 10**9}, format="json")
    assert elsewhere.status_code == 400 and "segment" in elsewhere.json()
    assert theme.exemplars.count() == 1


def test_an_excerpt_from_another_project_cannot_be_pinned(project, theme, analyst, owner, make_interview):
    from projects.models import Membership, Project, Role

    other = Project.objects.create(name="Other")
    Membership.objects.create(project=other, user=analyst, role=Role.OWNER)
    _, segments = make_interview(proj=other)
    response = api(analyst).post(exemplars(project, theme), {"segment": segments[0].pk}, format="json")
    assert response.status_code == 400 and "segment" in response.json()
    assert theme.exemplars.count() == 0


def test_analysts_trim_reorder_and_unpin_exemplars(project, theme, pinned, analyst):
    (first, second), _ = pinned
    trimmed = api(analyst).patch(f"{exemplars(project, theme)}{first.uuid}/", {"quote": "I try to be honest", "note": "opening"}, format="json")
    assert trimmed.status_code == 200 and (trimmed.json()["quote"], trimmed.json()["note"]) == ("I try to be honest", "opening")
    moved = api(analyst).post(f"{exemplars(project, theme)}{second.uuid}/move/", {"offset": -1}, format="json")
    assert moved.status_code == 200 and [e["uuid"] for e in moved.json()] == [str(second.uuid), str(first.uuid)]
    assert list(theme.exemplars.order_by("position").values_list("uuid", flat=True)) == [second.uuid, first.uuid]
    assert api(analyst).delete(f"{exemplars(project, theme)}{first.uuid}/").status_code == 204
    assert list(theme.exemplars.values_list("uuid", flat=True)) == [second.uuid]
    assert {e.action for e in AuditEvent.objects.filter(target_type="exemplar")} == {"created", "changed", "deleted"}


@pytest.mark.parametrize("method,suffix,body", [
    ("post", "", {"segment": "{segment}"}),
    ("patch", "{exemplar}/", {"quote": "I try to be honest"}),
    ("post", "{exemplar}/move/", {"offset": 1}),
    ("delete", "{exemplar}/", None),
])
def test_exemplar_writes_are_403_for_viewers_and_404_for_outsiders(method, suffix, body, project, theme, pinned, viewer, outsider):
    (first, _), segments = pinned
    url = exemplars(project, theme) + suffix.replace("{exemplar}", str(first.uuid))
    data = {k: segments[2].pk if v == "{segment}" else v for k, v in (body or {}).items()}
    before = list(theme.exemplars.values_list("uuid", "quote", "position"))
    assert getattr(api(outsider), method)(url, data, format="json").status_code == 404
    assert getattr(api(viewer), method)(url, data, format="json").status_code == 403
    assert getattr(APIClient(), method)(url, data, format="json").status_code == 401
    assert list(theme.exemplars.values_list("uuid", "quote", "position")) == before


def test_exemplars_of_a_trashed_theme_are_404(project, theme, pinned, owner):
    services.theme_delete(theme=theme, actor=owner)
    assert api(owner).get(exemplars(project, theme)).status_code == 404


# --- filters ------------------------------------------------------------------------------


def test_list_filters_are_validated_and_name_the_bad_parameter(project, theme, owner):
    services.memo_create(project=project, actor=owner, title="t", body="", kind="analytic")
    assert len(rows(api(owner).get(base(project) + "/memos/", {"kind": "analytic", "author": "olivia"}))) == 1
    assert rows(api(owner).get(base(project) + "/memos/", {"kind": "reflexive"})) == []
    assert rows(api(owner).get(base(project) + "/memos/", {"kind": ""})) != []  # an empty filter is no filter
    bad = api(owner).get(base(project) + "/memos/", {"kind": "poem"})
    assert bad.status_code == 400 and "kind" in bad.json()
    bad = api(owner).get(base(project) + "/comments/", {"theme": "not-a-uuid"})
    assert bad.status_code == 400 and "theme" in bad.json()
    bad = api(owner).get(base(project) + "/theme-snapshots/compare/", {"a": "zzz"})
    assert bad.status_code == 400 and {"a", "b"} <= set(bad.json())


def test_api_applying_a_decision_to_a_theme_edited_since_is_409_until_the_current_version_is_confirmed(project, theme, owner, analyst):
    review = services.review_create(project=project, actor=owner, title="R1", date="2026-11-22", themes=[theme])
    decision = services.decision_record(review=review, theme=theme, actor=owner, kind="redefine", payload={"definition": "Meeting's"})
    services.theme_update(theme=theme, actor=owner, base_version=1, definition="Newer")
    url = base(project) + f"/reviews/{review.uuid}/decisions/{decision.uuid}/"
    refused = api(analyst).post(url + "apply/", format="json")
    assert refused.status_code == 409
    assert refused.json()["current"]["definition"] == "Newer" and refused.json()["current"]["version"] == 2
    assert refused.json()["current"]["codes"][0]["name"] == "admits uncertainty"
    assert Theme.objects.get(pk=theme.pk).definition == "Newer"
    assert api(analyst).post(url + "apply/", {"version": 1}, format="json").status_code == 409
    applied = api(analyst).post(url + "apply/", {"version": 2}, format="json")
    assert applied.status_code == 200 and applied.json()["applied_at"] and applied.json()["message"] == "Decision applied."
    assert Theme.objects.get(pk=theme.pk).definition == "Meeting's"


def test_api_a_decision_keeps_the_theme_version_the_caller_read_and_applying_then_asks(project, theme, owner, analyst):
    review = services.review_create(project=project, actor=owner, title="R1", date="2026-11-22", themes=[theme])
    url = base(project) + f"/reviews/{review.uuid}/decisions/"
    current = api(analyst).post(url, {"theme": str(theme.uuid), "kind": "rename", "payload": {"name": "Candour"}}, format="json")
    assert current.status_code == 201 and current.json()["theme_version"] == 1 and current.json()["notice"] == ""
    services.theme_update(theme=theme, actor=owner, base_version=1, definition="Newer")
    stale = api(analyst).post(url, {"theme": str(theme.uuid), "kind": "redefine", "payload": {"definition": "Meeting's"},
                                    "theme_version": 1}, format="json")
    assert stale.status_code == 201 and stale.json()["theme_version"] == 1
    assert stale.json()["notice"].startswith("The theme changed since you opened this page (now version 2)")
    assert api(analyst).post(url + f"{stale.json()['uuid']}/apply/", format="json").status_code == 409
    bad = api(analyst).post(url, {"theme": str(theme.uuid), "kind": "rename", "payload": {"name": "X"}, "theme_version": 3}, format="json")
    assert bad.status_code == 400 and "from 1 to 2" in bad.json()["theme_version"][0]


def test_api_declining_a_decision_keeps_the_theme(project, theme, owner, analyst, viewer):
    review = services.review_create(project=project, actor=owner, title="R1", date="2026-11-22", themes=[theme])
    decision = services.decision_record(review=review, theme=theme, actor=owner, kind="rename", payload={"name": "Candour"})
    url = base(project) + f"/reviews/{review.uuid}/decisions/{decision.uuid}/decline/"
    assert api(viewer).post(url, {}, format="json").status_code == 403
    declined = api(analyst).post(url, {"reason": "Honesty is the word."}, format="json")
    assert declined.status_code == 200 and declined.json()["declined_reason"] == "Honesty is the word."
    assert Theme.objects.get(pk=theme.pk).name == "Honesty"


def test_api_meeting_notes_refuse_a_stale_version_and_a_closed_meeting(project, theme, owner, analyst):
    review = services.review_create(project=project, actor=owner, title="Round 1", date="2026-11-22", themes=[theme])
    url = base(project) + f"/reviews/{review.uuid}/notes/"
    saved = api(owner).put(url, {"notes": "Owner's notes.", "notes_version": 1}, format="json")
    assert saved.status_code == 200 and saved.json()["notes"] == "Owner's notes." and saved.json()["notes_version"] == 2
    stale = api(analyst).put(url, {"notes": "Analyst's notes.", "notes_version": 1}, format="json")
    assert stale.status_code == 409
    assert "saved by someone else" in stale.json()["detail"]
    assert stale.json()["current"] == {"notes": "Owner's notes.", "notes_version": 2}
    missing = api(analyst).put(url, {"notes": "Blind."}, format="json")
    assert missing.status_code == 400 and "notes_version" in missing.json()
    services.review_close(review=review, actor=owner)
    closed = api(owner).put(url, {"notes": "After the meeting.", "notes_version": 2}, format="json")
    assert closed.status_code == 409 and "is closed" in closed.json()["detail"]
    review.refresh_from_db()
    assert review.notes == "Owner's notes." and review.notes_version == 2
