"""Comparing two snapshots shows rewritten definitions and names in full, old and new, with the changed words marked."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from interviews.rendering import diff_words
from themes import services
from themes.models import Snapshot
from themes.snapshots import compare


def test_diff_words_marks_changed_words_and_keeps_each_text_whole():
    old, new = "Models say what they cannot do.", "Models  say what they\nwill not do, openly."
    old_runs, new_runs = diff_words(old, new)
    assert "".join(text for _, text in old_runs) == old
    assert "".join(text for _, text in new_runs) == new
    assert old_runs == [("same", "Models say what they "), ("del", "cannot do.")]
    assert new_runs == [("same", "Models  say what they\n"), ("ins", "will not do, openly.")]


def test_diff_words_from_and_to_an_empty_text():
    assert diff_words("", "A new definition") == ([], [("ins", "A new definition")])
    assert diff_words("Gone now", "") == ([("del", "Gone now")], [])


def test_diff_words_with_only_spacing_changed_marks_nothing():
    old_runs, new_runs = diff_words("one two", "one\ntwo ")
    assert {tag for tag, _ in old_runs + new_runs} == {"same"}


def test_compare_carries_both_definitions():
    before = {"themes": [{"uuid": "u1", "name": "A", "status": "candidate", "definition": "old words", "parent": None, "codes": []}]}
    after = {"themes": [{"uuid": "u1", "name": "A", "status": "candidate", "definition": "new words", "parent": None, "codes": []}]}
    assert compare(before, after)["redefined"] == [{"uuid": "u1", "name": "A", "from": "old words", "to": "new words"}]


@pytest.fixture
def rewritten(project, owner):
    """Two snapshots between which one theme was renamed and its definition rewritten (with markup typed in it)."""
    theme = services.theme_create(project=project, actor=owner, name="Honesty about limits",
                                  definition="Models say what they <b>cannot</b> do and why")
    before = services.snapshot_take(project=project, actor=owner, label="Before")
    services.theme_update(theme=theme, actor=owner, base_version=theme.version, name="Candour about limits",
                          definition="Models say what they will not do & why")
    after = services.snapshot_take(project=project, actor=owner, label="After")
    return before, after


def _compare_url(project, a: Snapshot, b: Snapshot) -> str:
    return reverse("themes:snapshot_compare", args=[project.uuid]) + f"?a={a.uuid}&b={b.uuid}"


@pytest.mark.django_db
def test_the_compare_page_shows_old_and_new_definition_with_changed_words_marked_and_escaped(rewritten, project, viewer, client_for):
    before, after = rewritten
    html = client_for(viewer).get(_compare_url(project, after, before)).content.decode()
    assert '<p class="text old-text">Models say what they <del>&lt;b&gt;cannot&lt;/b&gt;</del> do <del>and</del> why</p>' in html
    assert '<p class="text new-text">Models say what they <ins>will not</ins> do <ins>&amp;</ins> why</p>' in html
    assert "Definition before" in html and "Definition after" in html
    assert "<b>cannot</b>" not in html
    assert "“<span class=\"old-text\"><del>Honesty</del> about limits</span>” → “<span class=\"new-text\"><ins>Candour</ins> about limits</span>”" in html


@pytest.mark.django_db
def test_the_api_comparison_carries_both_definitions(rewritten, project, viewer):
    from rest_framework.test import APIClient

    before, after = rewritten
    client = APIClient()
    client.force_authenticate(viewer)
    diff = client.get(f"/api/projects/{project.uuid}/theme-snapshots/compare/?a={before.uuid}&b={after.uuid}").json()
    assert diff["redefined"][0]["from"] == "Models say what they <b>cannot</b> do and why"
    assert diff["redefined"][0]["to"] == "Models say what they will not do & why"


@pytest.mark.django_db
def test_the_compare_page_costs_the_same_queries_with_more_rewritten_themes(project, owner, viewer, client_for, django_assert_num_queries):
    def rewrite(count: int) -> tuple[Snapshot, Snapshot]:
        themes = [services.theme_create(project=project, actor=owner, name=f"T{count}.{i}", definition=f"first {i}") for i in range(count)]
        before = services.snapshot_take(project=project, actor=owner, label="before")
        for theme in themes:
            services.theme_update(theme=theme, actor=owner, base_version=theme.version, name=theme.name + " renamed", definition="second")
        return before, services.snapshot_take(project=project, actor=owner, label="after")

    client = client_for(viewer)
    small = _compare_url(project, *rewrite(1))
    client.get(small)
    with CaptureQueriesContext(connection) as queries:
        assert client.get(small).status_code == 200
    large = _compare_url(project, *rewrite(12))
    # session, user, membership + project, the two snapshots, the unread-mentions badge: none per theme.
    with django_assert_num_queries(len(queries.captured_queries)):
        html = client.get(large).content.decode()
    assert html.count('class="redefined"') == 12
