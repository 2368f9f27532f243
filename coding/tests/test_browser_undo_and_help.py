"""The workspace in a real browser: `u` undoes the user's own last coding after a reload, and `?` lists every key
the page handles (both come from the server: the audit trail and coding/shortcuts.py)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from coding.models import Coding
from coding.shortcuts import WORKSPACE

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _open(page, login, live_server, user, project, interview):
    login(page, user)
    page.goto(f"{live_server.url}/p/{project.uuid}/interviews/{interview.uuid}/code/")
    page.wait_for_selector("#transcript")


def test_undo_after_reload_takes_back_my_last_coding_only(page, login, live_server, project, owner, analyst, interview,
                                                          participant_segments, make_code):
    s = participant_segments
    trust = make_code("Trust")
    make_code("Home")
    _open(page, login, live_server, analyst, project, interview)
    page.keyboard.press("j")
    page.keyboard.press("c")
    page.keyboard.type("Trust")
    page.keyboard.press("Enter")
    expect(page.locator(f"#chips-{s[0].pk} .chip")).to_have_count(1)
    # A colleague codes the same segment afterwards: not the analyst's to undo.
    Coding.objects.create(segment=s[0], code=trust, coder=owner, interview=interview)

    page.reload()
    page.wait_for_selector("#transcript")
    expect(page.locator(f"#chips-{s[0].pk} .chip")).to_have_count(2)
    page.keyboard.press("u")

    expect(page.locator("#ws-status")).to_have_text("Undone: removed “Trust” from 1 segment.")
    expect(page.locator(f"#chips-{s[0].pk} .chip")).to_have_count(1)
    expect(page.locator(f"#chips-{s[0].pk} .chip.mine")).to_have_count(0)
    assert list(Coding.objects.values_list("coder_id", flat=True)) == [owner.pk]
    page.keyboard.press("u")
    expect(page.locator("#ws-status")).to_contain_text("Nothing to undo")


def test_the_help_lists_every_key_the_workspace_handles(page, login, live_server, project, analyst, interview):
    _open(page, login, live_server, analyst, project, interview)
    page.keyboard.press("?")
    help_dialog = page.locator("#help-dialog")
    expect(help_dialog).to_be_visible()

    listed = {key for shortcut in WORKSPACE for key in shortcut.keys}
    # The script binds exactly the listed keys (it has no handler of its own to drift from the list).
    assert set(help_dialog.get_attribute("data-handled").split(" ")) == listed
    for shortcut in WORKSPACE:
        row = help_dialog.locator(f"dt[data-keys='{' '.join(shortcut.keys)}']")
        expect(row).to_be_visible()
        for shown in shortcut.shown:
            expect(row.locator("kbd", has_text=shown).first).to_be_visible()
    for word in ("undo", "code picker", "recent code", "AI suggestion", "uncoded"):
        expect(help_dialog.locator("dd", has_text=word).first).to_be_visible()
    page.keyboard.press("Escape")
    expect(help_dialog).to_be_hidden()
    page.locator("#show-help").click()
    expect(help_dialog).to_be_visible()


def test_an_excerpts_context_opens_in_place(page, login, live_server, project, owner, interview, participant_segments,
                                            make_code):
    s = participant_segments
    trust = make_code("Trust")
    Coding.objects.create(segment=s[1], code=trust, coder=owner, interview=interview)
    login(page, owner)
    page.goto(f"{live_server.url}/p/{project.uuid}/codebook/{trust.uuid}/excerpts/")
    expect(page.locator(".excerpt-question")).to_contain_text("What does belonging mean to you?")

    page.get_by_text("Context", exact=True).click()

    context = page.locator(".excerpt-context")
    expect(context.locator("mark")).to_have_text("Belonging grows slowly.")
    expect(context).to_contain_text("Home is where people know you.")
    expect(context).to_contain_text("It needs time and trust.")
