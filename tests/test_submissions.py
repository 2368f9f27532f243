"""A write form sent twice with its submission key writes once and answers as the first send did (projects/submissions.py).

Each form is fetched as a browser would (its key comes from the page), then sent twice: one row, the same answer.
"""

from __future__ import annotations

import datetime
import io
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.test import Client
from django.urls import reverse

from accounts.models import ApiToken
from interviews.models import ImportJob
from projects import submissions
from projects.models import Project
from projects.tests.race import in_two_threads
from themes import services as theme_services
from themes.models import Comment, Decision, Memo, Review, Snapshot, Theme

HTMX = {"HTTP_HX_REQUEST": "true"}
KEY = re.compile(r'name="submission_key" value="([0-9a-f]{32})"')


def _key_on(client: Client, url: str) -> str:
    page = client.get(url)
    assert page.status_code == 200, url
    keys = KEY.findall(page.content.decode())
    assert keys, f"the form on {url} carries no submission key"
    return keys[0]


def _same_answer(first, second) -> bool:
    return (first.status_code, first.get("Location"), first.content) == (second.status_code, second.get("Location"), second.content)


@pytest.fixture
def theme(project, owner) -> Theme:
    return theme_services.theme_create(project=project, actor=owner, name="Honesty about limits")


@pytest.fixture
def review(project, owner, theme) -> Review:
    return theme_services.review_create(project=project, actor=owner, title="Second review", date=datetime.date(2026, 3, 2),
                                        themes=[theme])


@dataclass(frozen=True)
class Form:
    """A write form: the page it is on, where it posts, what it sends, and the rows it makes."""

    name: str
    page: Callable[[Project, Theme, Review], str]
    action: Callable[[Project, Theme, Review], str]
    data: Callable[[Project, Theme, Review], dict]
    rows: Callable[[], int]
    extra: dict | None = None


FORMS = [
    Form("memo", lambda p, t, r: reverse("themes:memo_new", args=[p.uuid]), lambda p, t, r: reverse("themes:memo_new", args=[p.uuid]),
         lambda p, t, r: {"title": "Who speaks", "body": "The model hedges.", "kind": Memo.Kind.REFLEXIVE}, Memo.objects.count),
    Form("comment", lambda p, t, r: reverse("themes:detail", args=[p.uuid, t.uuid]), lambda p, t, r: reverse("themes:thread", args=[p.uuid, t.uuid]),
         lambda p, t, r: {"body": "Is this one theme or two?"}, Comment.objects.count),
    Form("comment (htmx)", lambda p, t, r: reverse("themes:detail", args=[p.uuid, t.uuid]),
         lambda p, t, r: reverse("themes:thread", args=[p.uuid, t.uuid]), lambda p, t, r: {"body": "Is this one theme or two?"},
         Comment.objects.count, extra=HTMX),
    Form("meeting", lambda p, t, r: reverse("themes:reviews", args=[p.uuid]), lambda p, t, r: reverse("themes:reviews", args=[p.uuid]),
         lambda p, t, r: {"title": "Third review", "date": "2026-04-01", "themes": [str(t.uuid)]}, Review.objects.count),
    Form("decision", lambda p, t, r: reverse("themes:review", args=[p.uuid, r.uuid]),
         lambda p, t, r: reverse("themes:decision_create", args=[p.uuid, r.uuid]),
         lambda p, t, r: {"theme": str(t.uuid), "kind": Decision.Kind.RENAME, "name": "Admitting limits", "theme_version": t.version},
         Decision.objects.count),
    Form("snapshot", lambda p, t, r: reverse("themes:snapshots", args=[p.uuid]), lambda p, t, r: reverse("themes:snapshots", args=[p.uuid]),
         lambda p, t, r: {"label": "Before the merge"}, Snapshot.objects.count),
    Form("project", lambda p, t, r: reverse("projects:list"), lambda p, t, r: reverse("projects:create"),
         lambda p, t, r: {"name": "Second study"}, Project.objects.count),
    Form("transcript import", lambda p, t, r: reverse("interviews:import_start", args=[p.uuid]),
         lambda p, t, r: reverse("interviews:import_start", args=[p.uuid]),
         lambda p, t, r: {"format": "auto", "files": _transcript()}, ImportJob.objects.count),
]


def _transcript() -> io.BytesIO:
    upload = io.BytesIO(b"Interviewer: Who are you?\nParticipant: A model that hedges.\n")
    upload.name = "gpt.txt"
    return upload


@pytest.mark.parametrize("form", FORMS, ids=lambda f: f.name)
def test_a_form_sent_twice_writes_once_and_answers_as_the_first_time(form: Form, project, theme, review, owner, client_for):
    client = client_for(owner)
    args = (project, theme, review)
    key = _key_on(client, form.page(*args))
    before = form.rows()

    first = client.post(form.action(*args), {**form.data(*args), "submission_key": key}, **(form.extra or {}))
    second = client.post(form.action(*args), {**form.data(*args), "submission_key": key}, **(form.extra or {}))

    assert first.status_code < 400, first.content[:300]
    assert form.rows() == before + 1
    assert _same_answer(first, second)


def test_an_api_token_sent_twice_is_made_once_and_its_key_is_not_shown_again(owner, client_for):
    client = client_for(owner)
    key = _key_on(client, reverse("api_tokens"))
    data = {"name": "notebook", "lifetime_days": 30, "submission_key": key}

    first = client.post(reverse("api_tokens"), data)
    second = client.post(reverse("api_tokens"), data)

    token = ApiToken.objects.get(user=owner)
    shown = first.context["issued"].key
    assert second.status_code == 200 and shown not in second.content.decode()
    assert "Token “notebook” was already created" in second.content.decode()
    assert ApiToken.objects.filter(user=owner).count() == 1 and token.name == "notebook"


def _post_memo(client: Client, project, key: str | None, title: str = "Who speaks"):
    data = {"title": title, "body": "The model hedges.", "kind": Memo.Kind.REFLEXIVE}
    return client.post(reverse("themes:memo_new", args=[project.uuid]), data | ({"submission_key": key} if key else {}))


def test_two_keys_are_two_memos(project, owner, client_for):
    client = client_for(owner)
    _post_memo(client, project, submissions.new_submission_key())
    _post_memo(client, project, submissions.new_submission_key())
    assert Memo.objects.count() == 2


def test_a_form_without_a_key_is_served_as_before(project, owner, client_for):
    client = client_for(owner)
    assert _post_memo(client, project, None).status_code == 302
    assert _post_memo(client, project, None).status_code == 302
    assert Memo.objects.count() == 2


def test_the_same_key_from_another_member_is_another_submission(project, owner, analyst, client_for):
    key = submissions.new_submission_key()
    first, second = _post_memo(client_for(owner), project, key), _post_memo(client_for(analyst), project, key)
    assert Memo.objects.filter(author__in=[owner, analyst]).values("author").distinct().count() == 2
    assert first["Location"] != second["Location"]


def test_a_refused_send_frees_its_key_for_the_corrected_form(project, owner, client_for):
    client = client_for(owner)
    key = submissions.new_submission_key()
    assert _post_memo(client, project, key, title="").status_code == 400
    assert _post_memo(client, project, key).status_code == 302
    assert Memo.objects.count() == 1


def test_a_viewers_refused_send_writes_nothing_and_claims_nothing(project, viewer, owner, client_for):
    key = submissions.new_submission_key()
    assert _post_memo(client_for(viewer), project, key).status_code == 403
    assert _post_memo(client_for(owner), project, key).status_code == 302
    assert Memo.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_two_sends_at_once_make_one_memo_and_the_same_answer(project, owner, monkeypatch):
    """The second send arrives while the first is writing: it waits for the first's answer instead of writing."""
    second_is_waiting = threading.Event()
    first_answer = submissions._first_answer
    memo_create = theme_services.memo_create

    def waiting(slot):
        second_is_waiting.set()
        return first_answer(slot)

    def slow_create(**kwargs):
        assert second_is_waiting.wait(timeout=60), "the second send never came to wait for the first"
        return memo_create(**kwargs)

    monkeypatch.setattr(submissions, "_first_answer", waiting)
    monkeypatch.setattr(theme_services, "memo_create", slow_create)
    key = submissions.new_submission_key()
    answers = []

    def send():
        client = Client()
        client.force_login(owner)
        answers.append(_post_memo(client, project, key))

    in_two_threads(send)
    assert len(answers) == 2
    assert Memo.objects.count() == 1
    memo = Memo.objects.get()
    assert {a.status_code for a in answers} == {302}
    assert {a["Location"] for a in answers} == {reverse("themes:memo", args=[project.uuid, memo.uuid])}


# ---------------------------------------------------------------- the API: an Idempotency-Key header

API_CREATES = [
    ("memo", lambda p, t: (f"/api/projects/{p.uuid}/memos/", {"title": "Field note", "body": "b", "kind": "analytic"}),
     lambda p: Memo.objects.filter(project=p).count()),
    ("comment", lambda p, t: (f"/api/projects/{p.uuid}/comments/", {"theme": str(t.uuid), "body": "Is this one theme?"}),
     lambda p: Comment.objects.filter(theme__project=p).count()),
    ("meeting", lambda p, t: (f"/api/projects/{p.uuid}/reviews/", {"title": "Review", "date": "2026-03-02", "agenda": [str(t.uuid)]}),
     lambda p: Review.objects.filter(project=p).count()),
    ("project", lambda p, t: ("/api/projects/", {"name": "Sent twice"}), lambda p: Project.objects.filter(name="Sent twice").count()),
]


@pytest.mark.django_db
@pytest.mark.parametrize("name, request_for, count", API_CREATES, ids=[c[0] for c in API_CREATES])
def test_an_api_create_sent_again_with_its_idempotency_key_makes_one_row(name, request_for, count, project, theme, owner):
    from rest_framework.test import APIClient

    api = APIClient()
    api.force_authenticate(owner)
    url, body = request_for(project, theme)
    before = count(project)
    first = api.post(url, body, format="json", headers={"Idempotency-Key": "retry-1"})
    again = api.post(url, body, format="json", headers={"Idempotency-Key": "retry-1"})
    assert first.status_code == again.status_code == 201, first.content
    assert again.json() == first.json() and count(project) == before + 1
    other = api.post(url, {**body, "name": "Sent twice (2)"} if name == "project" else body, format="json",
                     headers={"Idempotency-Key": "retry-2"})
    assert other.status_code == 201 and other.json() != first.json()
    assert api.post(url, {**body, "name": "Sent twice (3)"} if name == "project" else body, format="json").status_code == 201


@pytest.mark.django_db
def test_an_api_create_refused_frees_its_idempotency_key(project, owner):
    from rest_framework.test import APIClient

    api = APIClient()
    api.force_authenticate(owner)
    url = f"/api/projects/{project.uuid}/memos/"
    refused = api.post(url, {"title": "t", "body": "b", "kind": "no such kind"}, format="json", headers={"Idempotency-Key": "k"})
    assert refused.status_code == 400 and "kind" in refused.json()
    fixed = api.post(url, {"title": "t", "body": "b", "kind": "analytic"}, format="json", headers={"Idempotency-Key": "k"})
    assert fixed.status_code == 201 and Memo.objects.filter(project=project).count() == 1


@pytest.mark.django_db
def test_a_transcript_upload_sent_again_with_its_idempotency_key_is_one_import(project, owner, client_for, settings, tmp_path):
    from django.core.files.uploadedfile import SimpleUploadedFile

    settings.MEDIA_ROOT = tmp_path
    client = client_for(owner)
    url = f"/api/projects/{project.uuid}/imports/"

    def send() -> dict:
        body = {"files": [SimpleUploadedFile("talk.txt", b"User: Hello?\nAssistant: Hello.\n")], "start": "false"}
        response = client.post(url, body, headers={"Idempotency-Key": "upload-1"})
        assert response.status_code == 201, response.content
        return response.json()

    assert send() == send() and ImportJob.objects.filter(project=project).count() == 1
