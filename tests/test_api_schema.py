"""The OpenAPI schema, its interactive docs, and schemathesis fuzzing every operation.

Schemathesis generates requests from /api/schema/ and sends them, with the owner's token
(so owner-only endpoints and their filters are exercised too), to the real server
(live_server) holding a project with one object of every kind: no response may be a 5xx
and every documented response must match its schema. Examples are bounded per operation
so the whole run stays well under two minutes.
"""

from __future__ import annotations

import re

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error, response_schema_conformance

from tests.world import World

MAX_EXAMPLES = 12
# DELETE last: the other operations should meet the world before it is taken apart.
METHOD_ORDER = {"GET": 0, "HEAD": 0, "OPTIONS": 0, "POST": 1, "PUT": 2, "PATCH": 2, "DELETE": 3}


def test_schema_is_served_and_valid(client):
    response = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    assert any(p.startswith("/api/projects/") for p in schema["paths"])
    assert {"tokenAuth", "cookieAuth"} <= set(schema["components"]["securitySchemes"])


def test_docs_page_loads_its_assets_from_our_origin(client):
    html = client.get("/api/docs/").content.decode()
    assert "<script>" not in html and "<style>" not in html  # CSP: no inline script or style
    for src in re.findall(r'(?:src|href)="([^"]+)"', html):
        assert src.startswith("/"), f"{src} is not served from our origin"
        assert client.get(src).status_code == 200, src


def test_list_filters_are_documented_with_their_types(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()

    def query(path: str) -> dict[str, dict]:
        operation = schema["paths"]["/api/projects/{project_uuid}/" + path]["get"]
        return {p["name"]: p["schema"] for p in operation["parameters"] if p["in"] == "query"}

    assert query("codings/")["interview"]["format"] == "uuid" and query("codings/")["code"]["format"] == "uuid"
    assert set(query("codes/")["kind"]["enum"]) == {"semantic", "latent"} and query("codes/")["archived"]["type"] == "boolean"
    assert query("interviews/")["participant"]["format"] == "uuid" and set(query("interviews/")["depth"]["enum"]) == {"brief", "comprehensive"}
    assert query("comments/")["theme"]["format"] == "uuid"
    assert "reflexive" in query("memos/")["kind"]["enum"]
    assert set(query("members/")["role"]["enum"]) == {"owner", "analyst", "viewer"}
    audit = query("audit-events/")
    assert {"actor", "action", "target_type", "since", "until"} <= set(audit) and audit["since"]["format"] == "date"
    assert "code" in query("trash/")["kind"]["enum"]
    assert query("theme-snapshots/compare/")["a"]["format"] == "uuid"
    assert {"by", "a", "b", "denominator", "suggestions"} <= set(query("reports/frequency/"))


@pytest.fixture
def world(project, owner, analyst, viewer, outsider) -> World:
    return World(project=project, owner=owner, analyst=analyst, viewer=viewer, outsider=outsider).populate()


def _path_parameters(path: str, world: World) -> dict[str, str]:
    """Real uuids (and usernames) for the path's objects, so fuzzing reaches past the 404s."""
    params: dict[str, str] = {}
    for name in re.findall(r"{(\w+)}", path):
        if name == "project_uuid":
            params[name] = str(world.project.uuid)
        elif name == "username" or name.endswith("_uuid"):
            params[name] = str(world.kwarg(name))  # theme_uuid → the world's theme, username → a member
        elif name == "uuid":
            # /api/projects/{project_uuid}/participants/{uuid}/ → participant
            collection = path.rstrip("/").split("/")[-2]
            stem = "project" if collection == "projects" else collection.removesuffix("s").replace("-", "_")
            try:
                params[name] = str(world.kwarg("uuid", url_name=f"api-{stem}-detail"))
            except LookupError:
                pass  # unknown collection: schemathesis makes up a value (a 404 is still checked for 5xx)
    return params


@pytest.mark.django_db(transaction=True)
def test_schemathesis_finds_no_server_errors_and_no_schema_mismatches(live_server, world, owner, api_key_for):
    token = api_key_for(owner)
    raw = requests.get(f"{live_server.url}/api/schema/?format=json", headers={"Authorization": f"Token {token}"}, timeout=30)
    raw.raise_for_status()
    schema = schemathesis.openapi.from_dict(raw.json())
    operations = sorted((r.ok() for r in schema.get_all_operations()), key=lambda op: (METHOD_ORDER.get(op.method.upper(), 1), op.path))
    assert len(operations) >= 5, "the schema lists almost no operations; is the API mounted?"

    failures: list[str] = []
    session = requests.Session()
    session.headers["Authorization"] = f"Token {token}"
    for operation in operations:
        strategy = operation.as_strategy(path_parameters=_path_parameters(operation.path, world))

        @settings(max_examples=MAX_EXAMPLES, deadline=None, database=None, derandomize=True,
                  suppress_health_check=list(HealthCheck))
        @given(case=strategy)
        def fuzz(case) -> None:
            case.call_and_validate(base_url=live_server.url, session=session,
                                   checks=[not_a_server_error, response_schema_conformance])

        try:
            fuzz()
        except (Exception, BaseExceptionGroup) as exc:  # noqa: BLE001 - collect every operation's failure, then report all
            failures.append(f"{operation.method.upper()} {operation.path}: {str(exc)[:1500]}")
    assert not failures, "\n\n".join(failures)


@pytest.mark.django_db(transaction=True)
def test_anonymous_api_requests_get_401_with_a_challenge(live_server, world):
    response = requests.get(f"{live_server.url}/api/projects/{world.project.uuid}/interviews/", timeout=10)
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith("Token")


@pytest.mark.django_db(transaction=True)
def test_token_and_session_auth_both_work_and_lists_are_paginated(live_server, world, analyst, client_for, api_key_for):
    token = api_key_for(analyst)
    by_token = requests.get(f"{live_server.url}/api/projects/", headers={"Authorization": f"Token {token}"}, timeout=10)
    assert by_token.status_code == 200
    body = by_token.json()
    assert {"count", "next", "previous", "results"} <= set(body)
    assert [p["uuid"] for p in body["results"]] == [str(world.project.uuid)]
    by_session = client_for(analyst).get("/api/projects/")
    assert by_session.status_code == 200 and by_session.json()["count"] == 1
