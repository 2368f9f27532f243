"""Conduct REST API: same roles as the pages; stored keys are write-only."""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from conduct import services
from conduct.models import EndpointKey

pytestmark = pytest.mark.django_db


def api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_storing_a_key_answers_with_its_hint_only(project, owner, viewer, live, fake_openai):
    response = api(owner).post(
        f"/api/projects/{project.uuid}/endpoint-keys/",
        {"label": "Lab", "key": "sk-proj-topsecret-ABCD", "base_url": fake_openai.base_url}, format="json"
    )
    assert response.status_code == 201
    assert response.json()["hint"] == "sk-…ABCD" and "key" not in response.json()
    assert response.json()["base_url"] == fake_openai.base_url
    key = EndpointKey.objects.get()
    live("M", "m", api_key=key)
    for path in ("endpoint-keys", "live-endpoints"):
        body = api(viewer).get(f"/api/projects/{project.uuid}/{path}/").content.decode()
        assert "sk-…ABCD" in body and "topsecret" not in body, path


def test_key_writes_are_404_for_outsiders_and_403_for_viewers_and_analysts(project, analyst, viewer, outsider):
    data = {"label": "Lab", "key": "sk-123456789", "base_url": "http://127.0.0.1:8199/v1"}
    assert api(outsider).post(f"/api/projects/{project.uuid}/endpoint-keys/", data).status_code == 404
    assert api(viewer).post(f"/api/projects/{project.uuid}/endpoint-keys/", data).status_code == 403
    assert api(analyst).post(f"/api/projects/{project.uuid}/endpoint-keys/", data).status_code == 403
    assert api(outsider).get(f"/api/projects/{project.uuid}/conduct-sessions/").status_code == 404
    assert not EndpointKey.objects.exists()


def test_a_duplicate_key_label_is_refused_by_name(project, owner):
    services.endpoint_key_store(project=project, user=owner, label="Lab", plain_key="sk-first-key-1",
                                base_url="http://127.0.0.1:8199/v1")
    response = api(owner).post(f"/api/projects/{project.uuid}/endpoint-keys/",
                               {"label": "Lab", "key": "sk-2", "base_url": "http://127.0.0.1:8199/v1"})
    assert response.status_code == 400 and response.json() == {"label": ["A key with this label is already stored."]}


def test_sessions_list_with_their_interviews_in_constant_queries(
    project, owner, viewer, guide, live, django_assert_num_queries
):
    for i in range(3):
        services.session_start(project=project, user=owner, guide_version=guide.versions.get(),
                               participants=[live(f"M{i}a", "a"), live(f"M{i}b", "b")])
    client = api(viewer)
    # membership+project, count, sessions+guide, seats+interviews+participants
    with django_assert_num_queries(4):
        response = client.get(f"/api/projects/{project.uuid}/conduct-sessions/")
    sessions = response.json()["results"]
    assert len(sessions) == 3 and [len(s["seats"]) for s in sessions] == [2, 2, 2]
    assert sessions[0]["guide_version"] == 1


def test_guides_come_with_their_versions(project, owner, viewer, guide):
    services.guide_revise(guide=guide, user=owner, name="Values", opening_prompt="Changed?")
    body = api(viewer).get(f"/api/projects/{project.uuid}/guides/").json()["results"]
    assert [v["number"] for v in body[0]["versions"]] == [2, 1]
    assert json.dumps(body[0]["versions"][1]["planned_questions"]).count("probes") == 2


def test_live_endpoints_say_whether_answers_stream(project, viewer, live):
    live("Streams", "a")
    live("Whole", "b", stream_answers=False)
    body = api(viewer).get(f"/api/projects/{project.uuid}/live-endpoints/").json()["results"]
    assert {row["label"]: row["stream_answers"] for row in body} == {"Streams": True, "Whole": False}
