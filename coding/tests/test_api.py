"""The codes and codings API: the pages' permissions, services underneath, optimistic locking."""

from __future__ import annotations

import pytest

from coding.models import Code, CodeEvent, Coding

pytestmark = pytest.mark.django_db


def _codes(project):
    return f"/api/projects/{project.uuid}/codes/"


def _codings(project):
    return f"/api/projects/{project.uuid}/codings/"


def test_members_list_and_analysts_create_codes(client_for, analyst, viewer, outsider, project, make_code):
    make_code("Trust")
    assert client_for(outsider).get(_codes(project)).status_code == 404
    r = client_for(viewer).get(_codes(project))
    assert r.status_code == 200 and [c["name"] for c in r.json()["results"]] == ["Trust"]
    assert client_for(viewer).post(_codes(project), {"name": "Home"}).status_code == 403
    assert client_for(outsider).post(_codes(project), {"name": "Home"}).status_code == 404
    r = client_for(analyst).post(_codes(project), {"name": "Home", "kind": "latent"}, content_type="application/json")
    assert r.status_code == 201 and r.json()["kind"] == "latent"
    assert CodeEvent.objects.filter(code__name="Home", action="created").exists()
    r = client_for(analyst).post(_codes(project), {"name": "home"}, content_type="application/json")
    assert r.status_code == 400 and "already a code" in str(r.json())


def test_patch_uses_optimistic_locking(client_for, owner, analyst, project, make_code):
    code = make_code("Trust")
    url = f"{_codes(project)}{code.uuid}/"
    r = client_for(owner).patch(url, {"definition": "Owner", "version": 1}, content_type="application/json")
    assert r.status_code == 200 and r.json()["version"] == 2
    r = client_for(analyst).patch(url, {"definition": "Analyst", "version": 1}, content_type="application/json")
    assert r.status_code == 409 and r.json()["current"]["definition"] == "Owner"
    assert client_for(analyst).patch(url, {"definition": "x"}, content_type="application/json").status_code == 400
    r = client_for(analyst).patch(url, {"archived": True, "version": 2, "reason": "done"}, content_type="application/json")
    assert r.status_code == 200 and r.json()["archived"] is True
    assert Code.objects.get(pk=code.pk).definition == "Owner"


def test_codings_apply_list_and_delete_own_only(client_for, owner, analyst, viewer, outsider, project, interview,
                                                participant_segments, make_code):
    code = make_code("Trust")
    body = {"interview": str(interview.uuid), "code": str(code.uuid), "segments": [participant_segments[0].pk]}
    assert client_for(outsider).post(_codings(project), body, content_type="application/json").status_code == 404
    assert client_for(viewer).post(_codings(project), body, content_type="application/json").status_code == 403
    r = client_for(analyst).post(_codings(project), body, content_type="application/json")
    assert r.status_code == 201 and r.json()["created"] == [participant_segments[0].pk]
    assert client_for(analyst).post(_codings(project), body, content_type="application/json").status_code == 200
    client_for(owner).post(_codings(project), body, content_type="application/json")
    r = client_for(viewer).get(_codings(project), {"interview": str(interview.uuid)})
    assert r.status_code == 200 and {c["coder"] for c in r.json()["results"]} == {"arjun", "olivia"}
    owners = Coding.objects.get(coder=owner)
    assert client_for(analyst).delete(f"{_codings(project)}{owners.pk}/").status_code == 404
    mine = Coding.objects.get(coder=analyst)
    assert client_for(analyst).delete(f"{_codings(project)}{mine.pk}/").status_code == 204
    assert list(Coding.objects.values_list("coder_id", flat=True)) == [owner.pk]
