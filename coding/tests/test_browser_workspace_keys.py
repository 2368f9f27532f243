"""The workspace keyboard in a real browser: `n` wraps and respects the coder filter, the picker searches definitions,
and `u` after an inline create takes the new code away again."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from coding.models import Code, Coding

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _open(page, login, live_server, user, project, interview):
    login(page, user)
    page.goto(f"{live_server.url}/p/{project.uuid}/interviews/{interview.uuid}/code/")
    page.wait_for_selector("#transcript")


def _current(page) -> str:
    return page.locator("#transcript .seg.cur").get_attribute("id")


def _filter_coder(page, value: str) -> None:
    page.select_option("#filter-coder", value)
    page.locator("#transcript").focus()


def test_next_uncoded_wraps_to_the_top_and_counts_only_the_coders_shown(page, login, live_server, project, owner, analyst,
                                                                        interview, participant_segments, make_code):
    s = participant_segments
    trust = make_code("Trust")
    # The owner coded everything but the second and third segments; the analyst coded the second.
    for seg in s[:1] + s[3:]:
        Coding.objects.create(segment=seg, code=trust, coder=owner, interview=interview)
    Coding.objects.create(segment=s[1], code=trust, coder=analyst, interview=interview)
    _open(page, login, live_server, analyst, project, interview)
    status = page.locator("#ws-status")

    page.keyboard.press("n")
    assert _current(page) == f"s-{s[2].pk}"
    page.keyboard.press("n")  # the only uncoded one: past the end, back to it from the top
    assert _current(page) == f"s-{s[2].pk}"
    expect(status).to_have_text("Wrapped around to the top: no uncoded participant segment below.")

    # Showing only the owner's codes, the analyst's chip on the second segment does not count.
    _filter_coder(page, str(owner.pk))
    page.keyboard.press("n")
    assert _current(page) == f"s-{s[1].pk}"
    expect(status).to_contain_text("Wrapped around to the top")
    page.keyboard.press("n")
    assert _current(page) == f"s-{s[2].pk}"
    expect(status).to_have_text("")

    # Only mine: everything but the second segment is uncoded by me, the first one after the third is the fourth.
    _filter_coder(page, "mine")
    page.keyboard.press("n")
    assert _current(page) == f"s-{s[3].pk}"

    # The analyst codes the third segment: now no segment is left for everyone.
    _filter_coder(page, "")
    page.keyboard.press("Escape")
    for _ in range(3):
        page.keyboard.press("j")
    page.keyboard.press("c")
    page.keyboard.type("Trust")
    page.keyboard.press("Enter")
    expect(page.locator(f"#chips-{s[2].pk} .chip")).to_have_count(1)
    page.keyboard.press("n")
    expect(status).to_have_text("Every participant segment is coded.")
    assert _current(page) == f"s-{s[2].pk}"
    _filter_coder(page, str(owner.pk))
    page.keyboard.press("n")
    assert _current(page) == f"s-{s[1].pk}"


def test_the_picker_finds_codes_by_definition_after_name_matches(page, login, live_server, project, analyst, interview,
                                                                 participant_segments, make_code):
    make_code("Honesty", definition="Telling the truth about itself.")
    trust = make_code("Trust", definition="Confidence that the chatbot is honest with the user.")
    make_code("Belonging", definition="Feeling at home somewhere.")
    _open(page, login, live_server, analyst, project, interview)

    page.keyboard.press("j")
    page.keyboard.press("c")
    page.keyboard.type("honest")
    items = page.locator("#picker-list li[data-index]:not(.create)")
    expect(items).to_have_count(2)
    expect(items.nth(0)).to_have_text(re.compile(r"^\s*Honesty"))
    expect(items.nth(1)).to_have_text(re.compile(r"^\s*Trust"))
    expect(items.nth(1)).to_contain_text("definition: …that the chatbot is honest with the user.")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    expect(page.locator(f"#chips-{participant_segments[0].pk} .chip")).to_have_count(1)
    assert Coding.objects.get(segment=participant_segments[0]).code == trust

    # The codes panel filter matches definitions too.
    page.fill("#panel-filter", "at home")
    expect(page.locator("#code-list-panel li:not([hidden])")).to_have_count(1)
    expect(page.locator("#code-list-panel li:not([hidden])")).to_contain_text("Belonging")


def test_undoing_an_inline_create_archives_the_unused_code_and_says_so(page, login, live_server, project, analyst,
                                                                       interview, participant_segments):
    s = participant_segments
    _open(page, login, live_server, analyst, project, interview)
    page.keyboard.press("j")
    page.keyboard.press("c")
    page.keyboard.type("Fleeting idea")
    page.keyboard.press("Enter")
    expect(page.locator(f"#chips-{s[0].pk} .chip")).to_have_count(1)
    fleeting = Code.objects.get(name="Fleeting idea")
    expect(page.locator(f"#filter-code option[value='{fleeting.pk}']")).to_have_count(1)

    page.keyboard.press("u")
    expect(page.locator(f"#chips-{s[0].pk} .chip")).to_have_count(0)
    expect(page.locator("#ws-status")).to_have_text(
        "Undone: removed “Fleeting idea” from 1 segment, and archived the new code “Fleeting idea” (nobody had used it).")
    fleeting.refresh_from_db()
    assert fleeting.archived and not Coding.objects.exists()
    # Gone from the filter, the panel, the recent list and the picker.
    expect(page.locator(f"#filter-code option[value='{fleeting.pk}']")).to_have_count(0)
    expect(page.locator(f"#code-list-panel .code-row[data-code='{fleeting.pk}']")).to_be_hidden()
    expect(page.locator("#recent-codes")).not_to_contain_text("Fleeting idea")
    page.keyboard.press("c")
    page.keyboard.type("Fleeting")
    expect(page.locator("#picker-list li[data-index]:not(.create)")).to_have_count(0)
