"""The theme page shows a bounded amount: the latest threads, a page of excerpts, the latest memos; the rest on request."""

from __future__ import annotations

import html as html_lib
import re

import pytest
from django.urls import reverse

from themes import services
from themes.views import THEME_EXCERPT_INTERVIEWS, THEME_MEMOS, THREAD_LATEST

pytestmark = pytest.mark.django_db

OLDER = 3  # threads beyond the first screen


@pytest.fixture
def theme(project, owner):
    return services.theme_create(project=project, actor=owner, name="Honesty about limits")


@pytest.fixture
def threads(theme, owner, analyst) -> list:
    """THREAD_LATEST + OLDER threads, oldest first; the first mentions @arjun (the analyst)."""
    return [services.comment_post(theme=theme, actor=owner, body=f"Thread {k}" + (" for @arjun" if k == 0 else ""))
            for k in range(THREAD_LATEST + OLDER)]


def url(name: str, project, *args) -> str:
    return reverse(f"themes:{name}", args=[project.uuid, *args])


def shown_threads(page: str) -> list[int]:
    """The numbers of the "Thread k" comments on a page, in the order shown."""
    return [int(k) for k in re.findall(r"<p>Thread (\d+)", page)]


def link(page: str, pattern: str) -> str:
    return html_lib.unescape(re.search(pattern, page).group(1))


def test_the_page_opens_on_the_latest_threads_and_shows_the_older_ones_on_request(project, theme, threads, analyst, client_for):
    client = client_for(analyst)
    page = client.get(url("detail", project, theme.uuid)).content.decode()
    assert shown_threads(page) == list(range(OLDER, THREAD_LATEST + OLDER))
    # The counts are the whole discussion's, shown or not.
    assert f"{THREAD_LATEST + OLDER} open threads" in page and f"{THREAD_LATEST + OLDER} new" in page
    assert f"({OLDER} not shown)" in page
    older = client.get(link(page, r'hx-get="([^"]*)" hx-target="#thread"'))
    assert older.status_code == 200 and "<html" not in older.content.decode()
    assert shown_threads(older.content.decode()) == list(range(THREAD_LATEST + OLDER))
    assert "not shown" not in older.content.decode()
    # Without JavaScript the same link opens the theme page with the older threads.
    whole = client.get(link(page, r'<a class="older-threads" href="([^"]*)"')).content.decode()
    assert shown_threads(whole) == list(range(THREAD_LATEST + OLDER))


def test_every_thread_with_a_comment_new_to_a_returning_reader_is_in_view(project, theme, threads, owner, analyst,
                                                                           client_for):
    client = client_for(analyst)
    client.get(url("detail", project, theme.uuid))  # read once
    for thread in threads:  # then a colleague replies to every thread, more than a screen's worth
        services.comment_post(theme=theme, actor=owner, body=f"Reply to {thread.body}", parent=thread)
    page = client.get(url("detail", project, theme.uuid)).content.decode()
    assert shown_threads(page) == list(range(THREAD_LATEST + OLDER)) and "not shown" not in page
    assert page.count('class="badge unread">new') == THREAD_LATEST + OLDER
    # Read now: the next visit opens on the latest threads again.
    assert shown_threads(client.get(url("detail", project, theme.uuid)).content.decode()) == list(
        range(OLDER, THREAD_LATEST + OLDER))


def test_a_reply_brings_an_old_thread_back_into_view(project, theme, threads, owner, analyst, client_for):
    services.comment_post(theme=theme, actor=owner, body="A late reply", parent=threads[0])
    page = client_for(analyst).get(url("detail", project, theme.uuid)).content.decode()
    # The most recently active threads, in the order they were started.
    assert shown_threads(page) == [0, *range(OLDER + 1, THREAD_LATEST + OLDER)]
    assert "A late reply" in page


def test_the_poll_keeps_the_older_threads_the_page_loaded_and_adds_a_new_comment(project, theme, threads, owner, analyst,
                                                                                 client_for):
    client = client_for(analyst)
    page = client.get(url("detail", project, theme.uuid)).content.decode()
    older = client.get(link(page, r'hx-get="([^"]*)" hx-target="#thread"')).content.decode()
    poll = link(older, r'<div id="thread"[^>]* hx-get="([^"]*)"')
    assert client.get(poll).status_code == 204  # nothing new
    services.comment_post(theme=theme, actor=owner, body="Brand new point")
    polled = client.get(poll).content.decode()
    assert shown_threads(polled) == list(range(THREAD_LATEST + OLDER))
    new = polled.split("Brand new point")[0].rsplit("<article", 1)[1]
    assert 'class="badge unread">new' in new


def test_posting_and_resolving_keep_the_threads_the_page_shows(project, theme, threads, analyst, client_for):
    client = client_for(analyst)
    since = threads[0].id
    posted = client.post(url("thread", project, theme.uuid), {"body": "One more", "since": since}, headers={"HX-Request": "true"})
    assert shown_threads(posted.content.decode()) == list(range(THREAD_LATEST + OLDER))
    assert "One more" in posted.content.decode()
    resolved = client.post(url("comment_resolve", project, threads[0].uuid), {"resolved": "1", "since": since},
                           headers={"HX-Request": "true"}).content.decode()
    assert shown_threads(resolved) == list(range(THREAD_LATEST + OLDER)) and "resolved by arjun" in resolved
    # A post from a page that never loaded older threads answers with the latest ones.
    fresh = client.post(url("thread", project, theme.uuid), {"body": "And another"}, headers={"HX-Request": "true"}).content.decode()
    assert 0 not in shown_threads(fresh) and "And another" in fresh


def test_a_mention_in_an_old_thread_links_to_the_comment(project, theme, threads, analyst, client_for):
    client = client_for(analyst)
    mentions = client.get(url("mentions", project)).content.decode()
    target = link(mentions, r'<a href="([^"]*#comment-' + str(threads[0].uuid) + ')"')
    page = client.get(target.split("#")[0]).content.decode()
    assert f'id="comment-{threads[0].uuid}"' in page
    assert 'Thread 0 for <span class="mention">@arjun</span>' in page


@pytest.fixture
def coded(project, owner, theme, make_code, make_interview, code_segment):
    """Six Claude interviews then two GPT-4o ones, each with one excerpt under the theme."""
    code = make_code("admits uncertainty")
    services.theme_add_code(theme=theme, actor=owner, code=code)
    for label in ["Claude"] * 6 + ["GPT-4o"] * 2:
        _, segments = make_interview(label)
        code_segment(code, segments[0])
    return code


def test_excerpts_come_a_page_of_interviews_at_a_time(project, theme, coded, viewer, client_for):
    assert THEME_EXCERPT_INTERVIEWS == 5  # the fixture's eight interviews make two pages
    client = client_for(viewer)
    first = client.get(url("detail", project, theme.uuid)).content.decode()
    assert re.findall(r"(\w+(?:-4o)? interview \d)", first) == [f"Claude interview {n}" for n in range(1, 6)]
    # Next → swaps only the excerpts over htmx.
    second = client.get(url("detail", project, theme.uuid) + "?page=2",
                        headers={"HX-Request": "true", "HX-Target": "excerpt-pages"}).content.decode()
    assert second.lstrip().startswith('<div id="excerpt-pages">') and "<html" not in second
    assert re.findall(r"(\w+(?:-4o)? interview \d)", second) == ["Claude interview 6", "GPT-4o interview 7", "GPT-4o interview 8"]
    assert 'id="model-gpt-4o"' in second and "← Previous" in second


def test_the_counts_by_model_link_to_the_page_where_each_model_starts(project, theme, coded, viewer, client_for):
    counts = client_for(viewer).get(url("excerpt_counts", project, theme.uuid)).content.decode()
    detail = url("detail", project, theme.uuid)
    assert f'<a href="{detail}#model-claude">Claude</a>' in counts
    assert f'<a href="{detail}?page=2#model-gpt-4o">GPT-4o</a>' in counts
    assert "6 of 6" in counts and "2 of 2" in counts and 'id="excerpt-total" hx-swap-oob="true">8<' in counts


def test_a_new_coding_shows_in_the_counts_at_once(project, theme, coded, viewer, client_for, make_interview, code_segment):
    _, segments = make_interview("Gemini")
    client = client_for(viewer)
    assert "<td>Gemini</td>" in client.get(url("excerpt_counts", project, theme.uuid)).content.decode()
    code_segment(coded, segments[2])
    counts = client.get(url("excerpt_counts", project, theme.uuid)).content.decode()
    row = counts.split(">Gemini</a>")[1].split("</tr>")[0]
    assert row == '</td><td class="num">1</td><td class="num">1 of 1</td>'


def test_the_page_lists_the_latest_memos_and_links_to_the_rest(project, theme, owner, viewer, client_for, make_code):
    code = make_code("admits uncertainty")
    services.theme_add_code(theme=theme, actor=owner, code=code)
    for m in range(THEME_MEMOS + 2):
        services.memo_create(project=project, actor=owner, title=f"Theme memo {m}", body="", kind="reflexive", theme=theme)
        services.memo_create(project=project, actor=owner, title=f"Code memo {m}", body="", kind="analytic", code=code)
    client = client_for(viewer)
    page = client.get(url("detail", project, theme.uuid)).content.decode()
    assert re.findall(r"Theme memo (\d+)", page) == [str(m) for m in range(THEME_MEMOS + 1, 1, -1)]
    assert re.findall(r"Code memo (\d+)", page) == [str(m) for m in range(THEME_MEMOS + 1, 1, -1)]
    journal = link(page, r'<a href="([^"]*)">All 12 memos on this theme in the journal</a>')
    assert sorted(int(m) for m in re.findall(r"Theme memo (\d+)", client.get(journal).content.decode())) == list(range(THEME_MEMOS + 2))
    by_code = link(page, r'<a href="([^"]*code:[^"]*)">admits uncertainty</a>')
    assert len(re.findall(r"Code memo \d+<", client.get(by_code).content.decode())) == THEME_MEMOS + 2
