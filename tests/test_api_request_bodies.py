"""Write actions document the request body they really take, and refuse a bad field with a 400 naming it.

Each action validates its input with the same small serializer its schema is generated from, so the two
cannot drift; these tests pin both ends: the fields the schema lists, and what the action does with them.
"""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from coding.models import Code
from themes import services
from themes.models import Memo, Theme

P = "/api/projects/{project_uuid}"
DECISION = P + "/reviews/{uuid}/decisions/{decision_uuid}"

# (method, path) → (every field the action reads from the body, the fields it cannot do without)
REQUEST_BODIES = {
    ("post", P + "/themes/"): ({"name", "definition", "colour", "parent"}, {"name"}),
    ("patch", P + "/themes/{uuid}/"): ({"name", "definition", "colour", "parent", "version"}, {"version"}),
    ("post", P + "/themes/{uuid}/status/"): ({"status", "reason"}, {"status"}),
    ("post", P + "/themes/{uuid}/codes/"): ({"code", "action", "to", "before"}, {"code"}),
    ("post", P + "/themes/{theme_uuid}/exemplars/{uuid}/move/"): ({"offset"}, {"offset"}),
    ("patch", P + "/memos/{uuid}/"): ({"base_version", "title", "body", "kind"}, {"base_version"}),
    ("post", P + "/comments/{uuid}/resolve/"): ({"resolved"}, set()),
    ("post", P + "/reviews/"): ({"title", "date", "agenda", "attendees"}, {"title", "date"}),
    ("post", P + "/reviews/{uuid}/decisions/"): ({"theme", "kind", "payload", "note", "theme_version"}, {"theme", "kind"}),
    ("post", DECISION + "/apply/"): ({"version"}, set()),
    ("post", DECISION + "/decline/"): ({"reason"}, set()),
    ("post", P + "/codes/"): ({"name", "definition", "include_when", "exclude_when", "example", "kind", "colour", "parent",
                               "reason"}, {"name"}),
}


@pytest.fixture(scope="module")
def schema(django_db_blocker) -> dict:
    with django_db_blocker.unblock():
        client = APIClient()
        return client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()


def _request_body(schema: dict, method: str, path: str) -> dict:
    content = schema["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"]
    return schema["components"]["schemas"][content["$ref"].rsplit("/", 1)[-1]]


@pytest.mark.parametrize(("method", "path"), list(REQUEST_BODIES), ids=[f"{m} {p.removeprefix(P)}" for m, p in REQUEST_BODIES])
def test_the_schema_lists_exactly_the_fields_the_action_takes(schema, method, path):
    body = _request_body(schema, method, path)
    writable = {name for name, field in body["properties"].items() if not field.get("readOnly")}
    fields, required = REQUEST_BODIES[(method, path)]
    assert writable == fields
    assert set(body.get("required", [])) == required


def test_closing_a_meeting_takes_no_body(schema):
    assert "requestBody" not in schema["paths"][P + "/reviews/{uuid}/close/"]["post"]


def api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def make_code(project, owner):
    return lambda name: Code.objects.create(project=project, name=name, colour="#4c78a8", created_by=owner)


@pytest.fixture
def theme(project, owner, make_code) -> Theme:
    theme = services.theme_create(project=project, actor=owner, name="Honesty")
    services.theme_add_code(theme=theme, actor=owner, code=make_code("admits uncertainty"))
    return theme


def _base(project) -> str:
    return f"/api/projects/{project.uuid}"


@pytest.mark.django_db
@pytest.mark.parametrize(("path", "body", "field"), [
    ("/themes/", {"definition": "no name"}, "name"),
    ("/themes/{theme}/status/", {"status": "brilliant"}, "status"),
    ("/themes/{theme}/codes/", {"code": "{code}", "action": "jump"}, "action"),
    ("/themes/{theme}/codes/", {"code": "{code}", "action": "move"}, "to"),
    ("/themes/{theme}/codes/", {"code": "not-a-uuid"}, "code"),
    ("/reviews/", {"title": "R", "date": "2026-11-22", "agenda": ["not-a-uuid"]}, "agenda"),
    ("/reviews/", {"title": "R", "date": "someday"}, "date"),
], ids=["theme without a name", "unknown status", "unknown placement", "move without a target", "malformed code",
        "malformed agenda", "malformed date"])
def test_a_bad_field_is_a_400_naming_it_and_changes_nothing(project, theme, analyst, path, body, field):
    code = theme.codes.get()
    fill = {"{theme}": str(theme.uuid), "{code}": str(code.uuid)}
    body = {k: fill.get(v, v) if isinstance(v, str) else v for k, v in body.items()}
    response = api(analyst).post(_base(project) + path.replace("{theme}", str(theme.uuid)), body, format="json")
    assert response.status_code == 400 and field in response.json(), response.json()
    theme.refresh_from_db()
    assert (theme.status, list(theme.codes.all())) == (Theme.Status.CANDIDATE, [code])
    assert Theme.objects.for_project(project).count() == 1 and not project.reviews.exists()


@pytest.mark.django_db
def test_placing_a_code_with_a_json_null_before_puts_it_at_the_end(project, theme, analyst, make_code):
    later = make_code("hedges")
    response = api(analyst).post(_base(project) + f"/themes/{theme.uuid}/codes/", {"code": str(later.uuid), "before": None}, format="json")
    assert response.status_code == 200
    assert [c["name"] for c in response.json()["codes"]] == ["admits uncertainty", "hedges"]


@pytest.mark.django_db
def test_a_theme_status_change_keeps_the_reason_as_written(project, theme, analyst):
    response = api(analyst).post(_base(project) + f"/themes/{theme.uuid}/status/", {"status": "reviewed", "reason": " agreed "}, format="json")
    assert response.status_code == 200 and response.json()["status"] == "reviewed"
    assert theme.status_changes.order_by("-id").first().reason == " agreed "


@pytest.mark.django_db
def test_a_decision_with_an_unknown_kind_is_a_400_naming_kind(project, theme, owner, analyst):
    review = services.review_create(project=project, actor=owner, title="R1", date="2026-11-22", themes=[theme])
    response = api(analyst).post(_base(project) + f"/reviews/{review.uuid}/decisions/",
                                 {"theme": str(theme.uuid), "kind": "abolish"}, format="json")
    assert response.status_code == 400 and "kind" in response.json()
    assert not review.decisions.exists()


@pytest.mark.django_db
def test_a_memo_edit_with_a_malformed_version_is_a_400_and_keeps_the_memo(project, owner, analyst):
    memo = services.memo_create(project=project, actor=owner, title="m", body="b", kind=Memo.Kind.ANALYTIC)
    url = _base(project) + f"/memos/{memo.uuid}/"
    response = api(analyst).patch(url, {"base_version": "one", "body": "new"}, format="json")
    assert response.status_code == 400 and response.json()["base_version"] == ["Must be a number."]
    missing = api(analyst).patch(url, {"body": "new"}, format="json")
    assert missing.status_code == 400 and "Send the version you edited" in missing.json()["base_version"][0]
    memo.refresh_from_db()
    assert (memo.body, memo.version) == ("b", 1)


@pytest.mark.django_db
def test_resolving_takes_json_and_form_booleans_and_refuses_anything_else(project, theme, owner, analyst):
    comment = services.comment_post(theme=theme, actor=owner, body="Is this honesty or candour?")
    url = _base(project) + f"/comments/{comment.uuid}/resolve/"
    assert api(analyst).post(url, {}, format="json").json()["resolved"] is True
    assert api(analyst).post(url, {"resolved": "false"}).json()["resolved"] is False
    maybe = api(analyst).post(url, {"resolved": "maybe"}, format="json")
    assert maybe.status_code == 400 and "resolved" in maybe.json()
