"""Two people editing the same memo or code definition: the second is told, nothing is
silently overwritten — through the pages, and through the API with truly simultaneous
requests against the real server (the locking itself is coding's and themes' own)."""

from __future__ import annotations

import threading

import pytest
import requests
from django.urls import reverse

from coding.models import Code
from coding.services import code_create
from themes.models import Memo, Review
from themes.services import memo_create, review_create


@pytest.fixture
def code(project, analyst):
    return code_create(project=project, actor=analyst, name="Hedging", definition="The model qualifies its claims.")


@pytest.fixture
def memo(project, analyst):
    return memo_create(project=project, actor=analyst, title="Reading notes", body="First impressions.", kind="reflexive")


def _code_form(code, **changes):
    data = {"name": code.name, "kind": code.kind, "colour": code.colour, "definition": code.definition,
            "include_when": "", "exclude_when": "", "example": "", "reason": "", "version": code.version}
    return data | changes


@pytest.mark.django_db
def test_second_code_editor_is_told_and_keeps_their_text(project, code, owner, analyst, client_for):
    url = reverse("coding:code_edit", args=[project.uuid, code.uuid])
    first, second = client_for(analyst), client_for(owner)
    stale = _code_form(code)  # both opened the form at this version
    assert first.post(url, stale | {"definition": "Claims softened with may/might."}).status_code == 302
    response = second.post(url, stale | {"definition": "Any uncertainty marker."})
    assert response.status_code == 409
    body = response.content.decode()
    assert "This code changed while you were editing" in body
    assert "Any uncertainty marker." in body  # the second editor's text is still in the form
    code.refresh_from_db()
    assert code.definition == "Claims softened with may/might."


@pytest.mark.django_db
def test_second_memo_editor_sees_both_texts_and_nothing_is_overwritten(project, memo, owner, analyst, client_for):
    url = reverse("themes:memo_edit", args=[project.uuid, memo.uuid])
    base = {"title": memo.title, "kind": memo.kind, "base_version": memo.version}
    assert client_for(analyst).post(url, base | {"body": "Version A: the models hedge."}).status_code == 302
    response = client_for(owner).post(url, base | {"body": "Version B: the models perform humility."})
    body = response.content.decode()
    assert "Version A: the models hedge." in body and "Version B: the models perform humility." in body
    memo.refresh_from_db()
    assert memo.body == "Version A: the models hedge."
    assert memo.revisions.count() == 2  # the original and A; B waits for its author's decision


def _simultaneously(calls) -> list[requests.Response]:
    """Run the calls in threads released together, to race them inside the server."""
    barrier = threading.Barrier(len(calls))
    results: list = [None] * len(calls)

    def run(i, call):
        barrier.wait()
        results[i] = call()

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return results


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("attempt", range(3))
def test_simultaneous_api_edits_of_a_code_one_wins_one_gets_409(live_server, project, code, owner, analyst, attempt, api_key_for):
    url = f"{live_server.url}/api/projects/{project.uuid}/codes/{code.uuid}/"
    tokens = [api_key_for(u) for u in (owner, analyst)]
    texts = [f"Definition by {u.username} #{attempt}" for u in (owner, analyst)]
    calls = [
        (lambda t=t, text=text: requests.patch(url, json={"definition": text, "version": code.version},
                                               headers={"Authorization": f"Token {t}"}, timeout=30))
        for t, text in zip(tokens, texts, strict=True)
    ]
    responses = _simultaneously(calls)
    assert sorted(r.status_code for r in responses) == [200, 409], [r.text for r in responses]
    winner = texts[[r.status_code for r in responses].index(200)]
    loser = responses[[r.status_code for r in responses].index(409)]
    assert winner in loser.text  # the one who lost is shown the current definition
    assert Code.objects.get(pk=code.pk).definition == winner


@pytest.mark.django_db(transaction=True)
def test_simultaneous_api_edits_of_a_memo_one_wins_one_gets_409(live_server, project, memo, owner, analyst, api_key_for):
    url = f"{live_server.url}/api/projects/{project.uuid}/memos/{memo.uuid}/"
    tokens = [api_key_for(u) for u in (owner, analyst)]
    texts = ["Owner's reading.", "Analyst's reading."]
    calls = [
        (lambda t=t, text=text: requests.patch(url, json={"body": text, "base_version": memo.version},
                                               headers={"Authorization": f"Token {t}"}, timeout=30))
        for t, text in zip(tokens, texts, strict=True)
    ]
    responses = _simultaneously(calls)
    assert sorted(r.status_code for r in responses) == [200, 409], [r.text for r in responses]
    winner = texts[[r.status_code for r in responses].index(200)]
    assert Memo.objects.get(pk=memo.pk).body == winner
    assert Memo.objects.get(pk=memo.pk).revisions.count() == 2


@pytest.mark.django_db(transaction=True)
def test_simultaneous_api_saves_of_meeting_notes_one_wins_one_gets_409(live_server, project, owner, analyst, api_key_for):
    review = review_create(project=project, actor=owner, title="Round 1", date="2026-11-22")
    url = f"{live_server.url}/api/projects/{project.uuid}/reviews/{review.uuid}/notes/"
    tokens = [api_key_for(u) for u in (owner, analyst)]
    texts = ["Owner's notes.", "Analyst's notes."]
    calls = [
        (lambda t=t, text=text: requests.put(url, json={"notes": text, "notes_version": review.notes_version},
                                             headers={"Authorization": f"Token {t}"}, timeout=30))
        for t, text in zip(tokens, texts, strict=True)
    ]
    responses = _simultaneously(calls)
    assert sorted(r.status_code for r in responses) == [200, 409], [r.text for r in responses]
    winner = texts[[r.status_code for r in responses].index(200)]
    loser = responses[[r.status_code for r in responses].index(409)]
    assert loser.json()["current"] == {"notes": winner, "notes_version": 2}
    assert Review.objects.get(pk=review.pk).notes == winner
