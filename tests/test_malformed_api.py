"""Malformed API requests get a 4xx naming what is wrong, never a 500 (issue 21, Low list)."""

from __future__ import annotations

import re
import uuid

import pytest
from django.urls import get_resolver
from rest_framework.test import APIClient

from interviews.models import Participant
from interviews.tests.factories import make_interview, make_participant
from themes.services import theme_create


def api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _api_routes() -> list[str]:
    """Every API route pattern with its regex, as written in the URL conf."""
    routes = []

    def walk(patterns, prefix: str) -> None:
        for p in patterns:
            if hasattr(p, "url_patterns"):
                walk(p.url_patterns, prefix + str(p.pattern))
            elif (route := (prefix + str(p.pattern)).replace("^", "")).startswith("api/projects/") and "format" not in route:
                routes.append(route)

    walk(get_resolver().url_patterns, "")
    assert len(routes) > 40  # every router's routes, not just a few
    return routes


def _fill(route: str, project, user, **real: str) -> str:
    """A concrete path: the real project and parents given, the user's own name, random ids elsewhere."""
    values = {"project_uuid": str(project.uuid), "username": user.username, "pk": "1", **real}
    path = re.sub(r"\(\?P<(\w+)>[^)]*\)", lambda m: values.get(m.group(1), str(uuid.uuid4())), route)
    path = re.sub(r"<uuid:(\w+)>", lambda m: values.get(m.group(1), str(uuid.uuid4())), path)
    return "/" + path.replace("^", "").replace("$", "")


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["analyst", "viewer"])
def test_options_on_every_api_route_never_fails(project, analyst, viewer, role):
    user = {"analyst": analyst, "viewer": viewer}[role]
    interview = make_interview(project, make_participant(project), [("interviewer", "Hi?"), ("participant", "Hello.")])
    theme = theme_create(project=project, actor=analyst, name="Honesty")
    failures = {}
    for route in _api_routes():
        path = _fill(route, project, user, interview_uuid=str(interview.uuid), theme_uuid=str(theme.uuid))
        status = api(user).options(path).status_code
        if status not in (200, 403, 404, 405):  # 405: a view that does not offer OPTIONS at all
            failures[path] = status
    assert not failures


@pytest.mark.django_db
def test_options_on_my_note_describes_the_note_as_an_analyst(project, analyst):
    interview = make_interview(project, make_participant(project), [("interviewer", "Hi?"), ("participant", "Hello.")])
    response = api(analyst).options(f"/api/projects/{project.uuid}/interviews/{interview.uuid}/notes/mine/")
    assert response.status_code == 200
    assert list(response.json()["actions"]["PUT"]) == ["text"]


@pytest.mark.django_db
def test_options_as_an_outsider_is_a_404(project, outsider):
    response = api(outsider).options(f"/api/projects/{project.uuid}/interviews/{uuid.uuid4()}/notes/mine/")
    assert response.status_code == 404


def _participants(project) -> str:
    return f"/api/projects/{project.uuid}/participants/"


@pytest.mark.django_db
@pytest.mark.parametrize("body_format", ["multipart", "json"])
def test_a_participant_with_null_attributes_is_a_400_naming_the_field(project, analyst, body_format):
    body = {"label": "GPT-4o", "attributes": "null" if body_format == "multipart" else None}
    response = api(analyst).post(_participants(project), body, format=body_format)
    assert response.status_code == 400 and "attributes" in response.json(), response.content
    assert not Participant.objects.filter(project=project).exists()


@pytest.mark.django_db
def test_a_deeply_nested_attributes_form_field_is_a_400_naming_the_place(project, analyst):
    body = {"label": "GPT-4o", "attributes": "[" * 100_000 + "]" * 100_000}
    response = api(analyst).post(_participants(project), body, format="multipart")
    assert response.status_code == 400
    assert "nested deeper than 100 levels at line 1, column 101" in response.json()["attributes"][0]
    assert not Participant.objects.filter(project=project).exists()


@pytest.mark.django_db
def test_form_field_attributes_still_import(project, analyst):
    response = api(analyst).post(_participants(project), {"label": "GPT-4o", "attributes": '{"size": "large"}'}, format="multipart")
    assert response.status_code == 201, response.content
    assert Participant.objects.get(project=project).attributes == {"size": "large"}


def _themes(project) -> str:
    return f"/api/projects/{project.uuid}/themes/"


@pytest.mark.django_db
@pytest.mark.parametrize(("body", "message"), [
    ('{"name": "Trust", "definition": ' + "[" * 100_000 + "]" * 100_000 + "}",
     "JSON parse error - data nested deeper than 100 levels at line 1, column 132"),
    ('{"name": "Trust",\n "parent": ' + "9" * 5000 + "}", "JSON parse error - a number longer than 1000 digits at line 2, column 12"),
    ('{"name": "Trust", "definition": "unfinished', "JSON parse error - 'Unterminated string starting at' at line 1, column 33"),
], ids=["deep", "5000-digit integer", "truncated"])
def test_a_hostile_json_body_is_a_400_naming_the_place(project, analyst, body, message):
    response = api(analyst).post(_themes(project), body, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["detail"].startswith(message), response.json()
    assert not project.themes.exists()


@pytest.mark.django_db
def test_a_json_body_over_the_size_limit_is_a_413(project, analyst, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024 * 1024
    body = '{"name": "Trust", "definition": "' + "x" * (1024 * 1024) + '"}'
    response = api(analyst).post(_themes(project), body, content_type="application/json")
    assert response.status_code == 413 and response.json()["detail"] == "The request body is larger than 1 MB."
    assert not project.themes.exists()


@pytest.mark.django_db
def test_a_json_body_nested_within_the_limit_is_read(project, analyst):
    response = api(analyst).post(_themes(project), {"name": "Trust", "definition": "Earned."}, format="json")
    assert response.status_code == 201


@pytest.mark.django_db
def test_a_lone_surrogate_in_any_field_of_any_api_write_is_a_4xx_naming_it(project, analyst):
    """DRF quotes an invalid choice back ("“\\ud800” is not a valid choice."): the answer must still encode."""
    import json

    interview = make_interview(project, make_participant(project), [("interviewer", "Hi?"), ("participant", "Hello.")])
    theme = theme_create(project=project, actor=analyst, name="Honesty")
    hostile = json.dumps({key: "\ud800" for key in ("name", "kind", "status", "role", "format", "depth", "interface",
                                                     "action", "speaker", "label", "title", "body")})
    failures, quoted = {}, 0
    for route in _api_routes():
        path = _fill(route, project, analyst, interview_uuid=str(interview.uuid), theme_uuid=str(theme.uuid))
        for method in ("post", "put", "patch"):
            response = getattr(api(analyst), method)(path, hostile, content_type="application/json")
            if response.status_code >= 500:
                failures[f"{method} {path}"] = response.status_code
            elif "U+D800" in response.content.decode():
                quoted += 1
    assert not failures
    assert quoted > 0  # some answers quote the value, written as its code point


@pytest.mark.django_db
def test_an_invalid_choice_holding_a_lone_surrogate_is_named_with_its_code_point(project, analyst):
    response = api(analyst).post(f"/api/projects/{project.uuid}/codes/", '{"name": "Trust", "kind": "\\ud800"}',
                                 content_type="application/json")
    assert response.status_code == 400
    assert response.json() == {"kind": ['"U+D800" is not a valid choice.']}
