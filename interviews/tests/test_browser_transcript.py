"""In a real browser: hostile transcript text never runs, and the reading page's views switch by keyboard."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from interviews.tests.factories import make_interview, make_participant
from interviews.tests.test_views_transcript import HOSTILE

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_hostile_turn_text_does_not_run_and_views_switch(page, live_server, login, analyst, project):
    interview = make_interview(project, make_participant(project, label="<img src=x onerror=alert(9)>"),
                               [("interviewer", "Tell me more."), ("participant", HOSTILE)])
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    login(page, analyst)
    page.goto(f"{live_server.url}/p/{project.uuid}/interviews/{interview.uuid}/")
    assert page.locator(".turn").count() == 2
    # Links built from "javascript:" Markdown never exist; clicking every real link in the turn is harmless.
    assert page.locator(".turn-body a[href^='javascript' i]").count() == 0
    assert page.evaluate("window.__pwned") is None
    assert "<script>window.__pwned = 1; alert(1)</script>" in page.locator(".turn-participant .turn-body").inner_text()
    page.get_by_role("link", name="Segments").focus()
    page.keyboard.press("Enter")
    page.wait_for_selector(".segment")
    assert "view=segments" in page.url
    assert page.evaluate("window.__pwned") is None
    assert dialogs == []


def test_statistics_and_list_filters_update_in_place(page, live_server, login, analyst, project):
    make_interview(project, make_participant(project, label="Deep model"), [("interviewer", "Q?"), ("participant", "A long answer.")],
                   title="Deep one", depth="comprehensive")
    make_interview(project, make_participant(project, label="Brief model"), [("interviewer", "Q?"), ("participant", "Short.")],
                   title="Brief one", depth="brief")
    login(page, analyst)
    page.goto(f"{live_server.url}/p/{project.uuid}/interviews/statistics/")
    assert page.locator("#statistics-table tbody tr").count() == 2
    page.select_option("#id_depth", "brief")
    page.wait_for_url("**depth=brief**")
    expect(page.locator("#statistics-table tbody tr")).to_have_count(1)  # no string eval: CSP forbids it
    assert "Brief model" in page.locator("#statistics-table").inner_text()
    page.goto(f"{live_server.url}/p/{project.uuid}/interviews/")
    page.select_option("#id_depth", "comprehensive")
    expect(page.locator("#interview-table tbody tr")).to_have_count(1)
    page.get_by_role("link", name="Deep one").click()
    page.wait_for_selector(".turn")
    assert page.get_by_role("heading", level=1).inner_text() == "Deep one"
