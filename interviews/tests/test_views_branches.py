"""Alternative branches of an imported ChatGPT conversation: listed, read-only, importable as their own interview."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from interviews.models import Interview, Segment, Turn
from interviews.services_import import import_paths

pytestmark = pytest.mark.django_db


def _node(nid, parent, role, text="", *, children=(), t=0.0, slug=None):
    msg = None
    if role is not None:
        msg = {"id": nid, "author": {"role": role, "name": None}, "create_time": t,
               "content": {"content_type": "text", "parts": [text]}, "status": "finished_successfully",
               "recipient": "all", "channel": None, "metadata": {"model_slug": slug} if slug else {}}
    return {"id": nid, "message": msg, "parent": parent, "children": list(children)}


def branching_export() -> list[dict]:
    """q1 → a1 → (q2 → a2 | q2 edited → a2b | q2 edited → a2c, regenerated twice)."""
    nodes = [
        _node("root", None, None, children=["q1"]),
        _node("q1", "root", "user", "What is home?", children=["a1"], t=1.0),
        _node("a1", "q1", "assistant", "Home is people. It is also a place.", children=["q2", "q2b"], t=2.0, slug="gpt-4o"),
        _node("q2", "a1", "user", "And belonging?", children=["a2"], t=3.0),
        _node("a2", "q2", "assistant", "Belonging takes time.", t=4.0, slug="gpt-4o"),
        _node("q2b", "a1", "user", "And for migrants?", children=["a2b", "a2c"], t=5.0),
        _node("a2b", "q2b", "assistant", "They often feel between places.", t=6.0, slug="gpt-4o"),
        _node("a2c", "q2b", "assistant", "Language matters most. Food too.", t=7.0, slug="gpt-4o"),
    ]
    return [{"title": "Home", "create_time": 1700000000.0, "id": "conv-1", "current_node": "a2",
             "default_model_slug": "gpt-4o", "mapping": {n["id"]: n for n in nodes}}]


@pytest.fixture
def interview(project, owner, tmp_path) -> Interview:
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(branching_export()))
    import_paths(project=project, user=owner, paths=[str(path)])
    return Interview.objects.get(project=project)


def detail_url(interview) -> str:
    return reverse("interviews:interview_detail", args=[interview.project.uuid, interview.uuid])


def branch_url(interview, number: int) -> str:
    return reverse("interviews:interview_branch", args=[interview.project.uuid, interview.uuid, number])


def import_url(interview, number: int) -> str:
    return reverse("interviews:interview_branch_import", args=[interview.project.uuid, interview.uuid, number])


def test_the_import_keeps_every_other_branch_from_where_it_leaves_the_transcript(interview):
    assert [t.text for t in interview.turns.order_by("position")] == [
        "What is home?", "Home is people. It is also a place.", "And belonging?", "Belonging takes time."]
    branches = interview.alternative_branches()
    assert [(b["leaf"], b["diverges_at"], [t["text"] for t in b["turns"]]) for b in branches] == [
        ("a2b", 2, ["And for migrants?", "They often feel between places."]),
        ("a2c", 2, ["And for migrants?", "Language matters most. Food too."]),
    ]


def test_the_provenance_panel_lists_the_branches(client_for, viewer, interview):
    html = client_for(viewer).get(detail_url(interview)).content.decode()
    panel = html.split('class="card provenance-panel"')[1]
    assert "Alternative branches" in panel
    assert f'href="{branch_url(interview, 1)}">Branch 1</a>' in panel and f'href="{branch_url(interview, 2)}"' in panel
    assert "from turn 3" in panel


def test_a_branch_is_shown_read_only_to_viewers(client_for, viewer, interview):
    response = client_for(viewer).get(branch_url(interview, 2))
    assert response.status_code == 200
    html = response.content.decode()
    assert "Branch 2 of 2" in html
    assert "What is home?" in html and "Language matters most." in html and "Belonging takes time." not in html
    assert html.count("this branch</span>") == 2 and html.count(">shared</span>") == 2
    assert import_url(interview, 2) not in html  # viewers get no import button


def test_a_branch_page_is_404_for_outsiders_and_for_a_branch_that_does_not_exist(client_for, outsider, analyst, interview):
    assert client_for(outsider).get(branch_url(interview, 1)).status_code == 404
    assert client_for(analyst).get(branch_url(interview, 3)).status_code == 404
    assert client_for(analyst).get(branch_url(interview, 0)).status_code == 404


def test_a_branch_page_costs_the_same_queries_for_a_long_branch(client_for, analyst, interview, django_assert_max_num_queries):
    client = client_for(analyst)
    client.get(branch_url(interview, 1))  # warm the session and caches
    metadata = interview.metadata
    metadata["branches"][0]["turns"] *= 50
    Interview.objects.filter(pk=interview.pk).update(metadata=metadata)
    # session, user, membership+project, interview, shared turns, imported-before lookup (+ savepoints)
    with django_assert_max_num_queries(8):
        assert client.get(branch_url(interview, 1)).status_code == 200


def test_an_analyst_imports_a_branch_as_its_own_interview(client_for, analyst, interview):
    response = client_for(analyst).post(import_url(interview, 2))
    new = Interview.objects.exclude(pk=interview.pk).get()
    assert response.status_code == 302 and response["Location"] == detail_url(new)
    assert new.title == "Home (branch 2)" and new.participant == interview.participant
    assert new.source_conversation_id == "conv-1" and new.metadata["branch_of"] == str(interview.uuid)
    turns = list(new.turns.order_by("position"))
    assert [(t.speaker, t.text) for t in turns] == [
        ("interviewer", "What is home?"), ("participant", "Home is people. It is also a place."),
        ("interviewer", "And for migrants?"), ("participant", "Language matters most. Food too.")]
    assert turns[3].model_slug == "gpt-4o" and turns[3].timestamp is not None
    segments = list(Segment.objects.filter(interview=new).select_related("turn").order_by("position"))
    assert [s.text for s in segments][-2:] == ["Language matters most.", "Food too."]
    assert all(s.turn.text[s.start:s.end] == s.text for s in segments)
    assert new.content_sha256 and new.content_sha256 != interview.content_sha256
    # The original is untouched.
    assert interview.turns.count() == 4 and Turn.objects.filter(interview=interview, text__contains="migrants").count() == 0


def test_importing_a_branch_twice_gives_back_the_first_import(client_for, analyst, interview):
    client = client_for(analyst)
    client.post(import_url(interview, 1))
    response = client.post(import_url(interview, 1), follow=True)
    assert Interview.objects.count() == 2
    assert "was imported before" in response.content.decode()
    page = client.get(branch_url(interview, 1)).content.decode()
    assert "Imported as “Home (branch 1)”" in page and import_url(interview, 1) not in page


def test_importing_a_branch_is_403_for_viewers_and_404_for_outsiders(client_for, viewer, outsider, interview):
    assert client_for(viewer).post(import_url(interview, 1)).status_code == 403
    assert client_for(outsider).post(import_url(interview, 1)).status_code == 404
    assert client_for(viewer).get(import_url(interview, 1)).status_code == 405
    assert Interview.objects.count() == 1


def test_an_interview_without_branches_shows_none(client_for, analyst, project, owner, tmp_path):
    export = branching_export()
    export[0]["mapping"]["a1"]["children"] = ["q2"]
    for leaf in ("q2b", "a2b", "a2c"):
        del export[0]["mapping"][leaf]
    path = tmp_path / "plain.json"
    path.write_text(json.dumps(export))
    import_paths(project=project, user=owner, paths=[str(path)])
    interview = Interview.objects.get(project=project)
    assert "branches" not in interview.metadata
    assert "branches-title" not in client_for(analyst).get(detail_url(interview)).content.decode()
    assert client_for(analyst).post(import_url(interview, 1)).status_code == 404
