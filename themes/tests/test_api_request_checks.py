"""What the themes API refuses in a request body, and how: a 400 naming the field (or the payload key), nothing saved."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from projects.models import AuditEvent, Membership, Project, Role
from themes import services
from themes.models import Decision, Theme, ThemeCode

pytestmark = pytest.mark.django_db

NO_THEME = "No theme with this id in this project."
NO_CODE = "No code with this id in this project."
UNKNOWN = "00000000-0000-0000-0000-000000000000"


def api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def base(project) -> str:
    return f"/api/projects/{project.uuid}"


@pytest.fixture
def theme(project, owner, make_code) -> Theme:
    theme = services.theme_create(project=project, actor=owner, name="Honesty")
    services.theme_add_code(theme=theme, actor=owner, code=make_code("admits uncertainty"))
    return theme


@pytest.fixture
def elsewhere(owner, make_code):
    """A theme and a code of another project the same people work in."""
    other = Project.objects.create(name="Other")
    Membership.objects.create(project=other, user=owner, role=Role.OWNER)
    return {"theme": services.theme_create(project=other, actor=owner, name="Elsewhere"), "code": make_code("far away", proj=other)}


@pytest.fixture
def review(project, owner, theme):
    return services.review_create(project=project, actor=owner, title="Round 1", date="2026-11-22", themes=[theme])


def _state(project) -> list:
    """Everything a refused request must leave as it was."""
    themes = list(Theme.objects.filter(project=project).order_by("pk").values_list("name", "definition", "colour", "parent_id", "version"))
    return [themes, list(ThemeCode.objects.order_by("pk").values_list("theme_id", "code_id", "position")),
            Decision.objects.count(), AuditEvent.objects.count()]


# ---------------------------------------------------------------- decisions: the payload is checked when recorded

LONG = "x" * 1000

BAD_PAYLOADS = [
    ("rename", {"name": "a\u0000b"}, "name", "Null characters are not allowed."),
    ("rename", {"name": "a\ud800b"}, "name", "Surrogate characters are not allowed: U+D800."),
    ("rename", {"name": {"a": 1}}, "name", "Must be text, not an object."),
    ("rename", {"name": ["Candour"]}, "name", "Must be text, not a list."),
    ("rename", {"name": LONG}, "name", "Ensure this value has at most 200 characters (it has 1000)."),
    ("rename", {}, "name", "Give the new name."),
    ("split", {"name": LONG, "codes": ["{code}"]}, "name", "Ensure this value has at most 200 characters (it has 1000)."),
    ("split", {"name": "Part", "codes": "{code}"}, "codes", "Choose one or more codes of this project."),
    ("split", {"name": "Part", "codes": ["not-a-uuid"]}, "codes", "Choose one or more codes of this project."),
    ("redefine", {"definition": 5}, "definition", "Must be text, not a number."),
    ("redefine", {"definition": True}, "definition", "Must be text, not true or false."),
    ("redefine", {"definition": "so\u0000me"}, "definition", "Null characters are not allowed."),
    ("redefine", {"name": "a definition under the wrong key"}, "definition", "Give the new definition (an empty text clears it)."),
    ("status", {"status": {"a": 1}}, "status", "Choose a status."),
    ("merge", {"into": 123}, "into", "Choose a theme of this project that is not in the trash."),
    ("move_codes", {"to": "{other}", "codes": [7]}, "codes", "Choose one or more codes of this project."),
]


@pytest.mark.parametrize("kind,payload,key,message", BAD_PAYLOADS, ids=[f"{k} {key}: {m[:30]}" for k, _, key, m in BAD_PAYLOADS])
def test_a_decision_payload_the_theme_could_not_hold_is_refused_naming_the_key(kind, payload, key, message, project, theme, owner,
                                                                               review, analyst):
    other = services.theme_create(project=project, actor=owner, name="Other")
    fill = {"{code}": str(theme.codes.get().uuid), "{other}": str(other.uuid)}
    payload = {k: ([fill.get(x, x) for x in v] if isinstance(v, list) else fill.get(v, v) if isinstance(v, str) else v)
               for k, v in payload.items()}
    before = _state(project)
    body = json.dumps({"theme": str(theme.uuid), "kind": kind, "payload": payload})  # ASCII: a lone surrogate as a \u escape
    response = api(analyst).post(base(project) + f"/reviews/{review.uuid}/decisions/", body, content_type="application/json")
    assert response.status_code == 400
    assert response.json() == {"payload": {key: [message]}}
    assert _state(project) == before


def test_a_full_length_name_is_recorded_and_applied_whole(project, theme, review, analyst):
    name = "n" * 200
    url = base(project) + f"/reviews/{review.uuid}/decisions/"
    recorded = api(analyst).post(url, {"theme": str(theme.uuid), "kind": "rename", "payload": {"name": f"  {name}  "}}, format="json")
    assert recorded.status_code == 201 and recorded.json()["payload"] == {"name": name}
    assert api(analyst).post(url + f"{recorded.json()['uuid']}/apply/", format="json").status_code == 200
    assert Theme.objects.get(pk=theme.pk).name == name


def test_a_redefinition_keeps_its_text_as_written_and_may_clear_it(project, theme, review, owner):
    decision = services.decision_record(review=review, theme=theme, actor=owner, kind="redefine", payload={"definition": "  Says so.\n"})
    assert decision.payload == {"definition": "  Says so.\n"}
    cleared = services.decision_record(review=review, theme=theme, actor=owner, kind="redefine", payload={"definition": ""})
    assert cleared.payload == {"definition": ""}


def test_the_web_decision_form_refuses_a_name_the_theme_could_not_hold(project, theme, review, analyst, client_for):
    url = reverse("themes:decision_create", args=[project.uuid, review.uuid])
    page = client_for(analyst).post(url, {"theme": theme.uuid, "kind": "rename", "name": "y" * 201}, follow=True)
    assert "New name: Ensure this value has at most 200 characters (it has 201)." in page.content.decode()
    assert not Decision.objects.exists()


def test_a_decision_on_an_unknown_theme_is_a_400_naming_theme(project, theme, review, analyst, elsewhere):
    url = base(project) + f"/reviews/{review.uuid}/decisions/"
    for value in (UNKNOWN, str(elsewhere["theme"].uuid)):
        response = api(analyst).post(url, {"theme": value, "kind": "status", "payload": {"status": "reviewed"}}, format="json")
        assert response.status_code == 400 and response.json() == {"theme": [NO_THEME]}
    assert not Decision.objects.exists()


# ---------------------------------------------------------------- ids in the body: a 400 naming the field, never a 404

PLACEMENTS = [
    ({"code": UNKNOWN}, "code", NO_CODE),
    ({"code": "{far code}"}, "code", NO_CODE),
    ({"code": 123}, "code", "Send the code's id: a uuid, as text."),
    ({"code": "{code}", "before": UNKNOWN}, "before", NO_CODE),
    ({"code": "{code}", "before": "{far code}"}, "before", NO_CODE),
    ({"code": "{code}", "action": "move", "to": UNKNOWN}, "to", NO_THEME),
    ({"code": "{code}", "action": "move", "to": "{far theme}"}, "to", NO_THEME),
    ({"code": "{code}", "action": "move", "to": 123}, "to", "Send the theme's id: a uuid, as text."),
    ({"code": "{code}", "action": "move", "to": True}, "to", "Send the theme's id: a uuid, as text."),
    ({"code": "{spare}", "action": "remove"}, "code", "“spare” is not in theme “Honesty”."),
]


@pytest.mark.parametrize("body,field,message", PLACEMENTS, ids=[f"{f}={b.get(f)}" for b, f, _ in PLACEMENTS])
def test_placing_a_code_names_the_field_that_is_wrong_and_changes_nothing(body, field, message, project, theme, analyst, elsewhere,
                                                                          make_code):
    services.theme_create(project=project, actor=analyst, name="Target")
    fill = {"{code}": str(theme.codes.get().uuid), "{far code}": str(elsewhere["code"].uuid),
            "{far theme}": str(elsewhere["theme"].uuid), "{spare}": str(make_code("spare").uuid)}
    body = {k: fill.get(v, v) if isinstance(v, str) else v for k, v in body.items()}
    before = _state(project)
    response = api(analyst).post(base(project) + f"/themes/{theme.uuid}/codes/", body, format="json")
    assert response.status_code == 400 and response.json() == {field: [message]}
    assert _state(project) == before


def test_a_new_theme_under_an_unknown_parent_is_a_400_naming_parent(project, theme, analyst, elsewhere):
    for parent in (UNKNOWN, str(elsewhere["theme"].uuid)):
        response = api(analyst).post(base(project) + "/themes/", {"name": "Child", "parent": parent}, format="json")
        assert response.status_code == 400 and response.json() == {"parent": [NO_THEME]}
    assert list(Theme.objects.for_project(project)) == [theme]


def test_a_theme_edit_with_an_unknown_parent_is_a_400_naming_parent_and_saves_nothing(project, theme, analyst):
    before = _state(project)
    response = api(analyst).patch(base(project) + f"/themes/{theme.uuid}/", {"name": "Renamed", "parent": UNKNOWN, "version": 1},
                                  format="json")
    assert response.status_code == 400 and response.json() == {"parent": [NO_THEME]}
    assert _state(project) == before


def test_a_theme_parent_can_still_be_set_and_cleared(project, theme, analyst):
    child = services.theme_create(project=project, actor=analyst, name="Child")
    url = base(project) + f"/themes/{child.uuid}/"
    assert api(analyst).patch(url, {"parent": str(theme.uuid), "version": 1}, format="json").json()["parent"] == str(theme.uuid)
    assert api(analyst).patch(url, {"parent": None, "version": 1}, format="json").json()["parent"] is None


def test_comparing_snapshots_names_a_missing_or_unknown_one(project, owner, analyst, elsewhere):
    mine = services.snapshot_take(project=project, actor=owner, label="Now")
    theirs = services.snapshot_take(project=elsewhere["theme"].project, actor=owner, label="Theirs")
    url = base(project) + "/theme-snapshots/compare/"
    missing = api(analyst).get(url)
    assert missing.status_code == 400 and missing.json() == {"a": ["This field is required."], "b": ["This field is required."]}
    unknown = api(analyst).get(url, {"a": str(mine.uuid), "b": str(theirs.uuid)})
    assert unknown.status_code == 400 and unknown.json() == {"b": ["No snapshot with this id in this project."]}
    assert api(analyst).get(url, {"a": str(mine.uuid), "b": str(mine.uuid)}).status_code == 200


def test_a_memo_or_comment_about_an_unknown_theme_says_so_in_the_same_words(project, analyst):
    memo = api(analyst).post(base(project) + "/memos/", {"title": "t", "theme": UNKNOWN}, format="json")
    comment = api(analyst).post(base(project) + "/comments/", {"body": "b", "theme": UNKNOWN}, format="json")
    assert memo.json() == comment.json() == {"theme": [NO_THEME]}


# ---------------------------------------------------------------- colour

def test_a_theme_colour_is_refused_in_the_codebooks_words(project, theme, analyst):
    created = api(analyst).post(base(project) + "/themes/", {"name": "Red", "colour": "red"}, format="json")
    assert created.status_code == 400 and created.json() == {"colour": ["“red” is not a colour like #4c78a8."]}
    before = _state(project)
    edited = api(analyst).patch(base(project) + f"/themes/{theme.uuid}/", {"name": "Renamed", "colour": "#12345", "version": 1},
                                format="json")
    assert edited.status_code == 400 and edited.json() == {"colour": ["“#12345” is not a colour like #4c78a8."]}
    assert _state(project) == before
    recoloured = api(analyst).patch(base(project) + f"/themes/{theme.uuid}/", {"colour": "#4C78A8", "version": 1}, format="json")
    assert recoloured.status_code == 200 and recoloured.json()["colour"] == "#4c78a8"


def test_the_theme_edit_page_refuses_a_colour_that_is_not_one(project, theme, analyst, client_for):
    url = reverse("themes:edit", args=[project.uuid, theme.uuid])
    response = client_for(analyst).post(url, {"name": "Honesty", "definition": "", "colour": "blue", "parent": "", "version": "1"})
    assert response.status_code == 400 and "“blue” is not a colour like #4c78a8." in response.content.decode()
    assert Theme.objects.get(pk=theme.pk).colour == theme.colour


def test_a_theme_name_over_the_limit_is_refused_not_cut(project, theme, owner):
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError) as created:
        services.theme_create(project=project, actor=owner, name="z" * 201)
    with pytest.raises(ValidationError) as updated:
        services.theme_update(theme=theme, actor=owner, base_version=1, name="z" * 201)
    assert created.value.message_dict["name"] == updated.value.message_dict["name"] == [
        "Ensure this value has at most 200 characters (it has 201)."]
    assert Theme.objects.filter(project=project).count() == 1 and Theme.objects.get(pk=theme.pk).name == "Honesty"


# ---------------------------------------------------------------- the schema says what the API does

@pytest.fixture(scope="module")
def schema(django_db_blocker) -> dict:
    with django_db_blocker.unblock():
        return APIClient().get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()


P = "/api/projects/{project_uuid}"


def _component(schema: dict, ref: dict) -> dict:
    return schema["components"]["schemas"][ref["$ref"].rsplit("/", 1)[-1]]


@pytest.mark.parametrize("path,field", [(P + "/themes/{uuid}/", "version"), (P + "/memos/{uuid}/", "base_version")])
def test_the_schema_says_a_patch_must_send_the_version_it_edited(schema, path, field):
    body = schema["paths"][path]["patch"]["requestBody"]
    assert body["required"] is True
    assert field in _component(schema, body["content"]["application/json"]["schema"])["required"]


@pytest.mark.parametrize("method,path,key", [("patch", P + "/themes/{uuid}/", "current"), ("patch", P + "/memos/{uuid}/", "latest"),
                                             ("put", P + "/reviews/{uuid}/notes/", "current")])
def test_the_schema_documents_the_409_with_what_is_there_now(schema, method, path, key):
    conflict = schema["paths"][path][method]["responses"]["409"]["content"]["application/json"]["schema"]
    assert {"detail", key} <= set(_component(schema, conflict)["properties"])


def test_the_schema_says_memo_revisions_are_a_list_of_revisions(schema):
    answer = schema["paths"][P + "/memos/{uuid}/revisions/"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert answer["type"] == "array"
    assert set(_component(schema, answer["items"])["properties"]) == {"number", "title", "body", "kind", "author", "created_at"}


def test_memo_revisions_and_a_memo_conflict_answer_as_the_schema_says(project, owner, analyst):
    memo = services.memo_create(project=project, actor=owner, title="t", body="v1", kind="analytic")
    url = base(project) + f"/memos/{memo.uuid}/"
    api(analyst).patch(url, {"body": "v2", "base_version": 1}, format="json")
    stale = api(owner).patch(url, {"body": "mine", "base_version": 1}, format="json")
    assert stale.status_code == 409
    assert {k: stale.json()["latest"][k] for k in ("number", "body", "kind", "author")} == {
        "number": 2, "body": "v2", "kind": "analytic", "author": "arjun"}
    revisions = api(owner).get(url + "revisions/").json()
    assert [(r["number"], r["body"], r["author"]) for r in revisions] == [(2, "v2", "arjun"), (1, "v1", "olivia")]
