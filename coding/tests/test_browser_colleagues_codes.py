"""A colleague's codebook changes reach an open coding workspace, in a real browser.

A walk-through found: a code a colleague renamed (or recoloured) kept its old name on the page's chips, panel row,
Code filter and picker until a reload; typing the new name offered only "Create", which the server refused as taken;
and the panel said "No codes yet" after the first code was created, until a reload.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from coding.models import Code, Coding
from coding.services import code_update
from coding.tests.test_browser_mouse_touch_and_archive import _own_page

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _open(page, login, live_server, user, project, interview, query=""):
    login(page, user)
    page.goto(f"{live_server.url}/p/{project.uuid}/interviews/{interview.uuid}/code/{query}")
    page.wait_for_selector("#transcript")


def test_a_colleagues_rename_recolour_and_new_kind_show_everywhere_on_the_page(
        page, login, live_server, project, owner, analyst, interview, participant_segments, make_code):
    s = participant_segments
    code = make_code("Performs humility", colour="#112233")
    Coding.objects.create(segment=s[0], code=code, coder=owner, interview=interview)
    Coding.objects.create(segment=s[1], code=code, coder=analyst, interview=interview)
    _open(page, login, live_server, analyst, project, interview, "?poll=1")
    page.locator(f"#s-{s[2].pk} .st").click()
    page.locator(f"#code-list-panel .code-row[data-code='{code.pk}']").click()
    expect(page.locator(f"#chips-{s[2].pk} .chip")).to_have_count(1)

    code_update(code=code, actor=owner, version=code.version, name="Humility as trust-building", colour="#aa0000",
                kind="latent")
    chips = page.locator(f".chip[data-c='{code.pk}']")
    for i in range(3):
        expect(chips.nth(i)).to_have_text(re.compile(r"^Humility as trust-building"))
        expect(chips.nth(i)).to_have_attribute("style", re.compile(r"--c:\s*#aa0000"))
    expect(page.get_by_role("button", name="Remove Humility as trust-building from this sentence")).to_have_count(2)
    row = page.locator(f"#code-list-panel .code-row[data-code='{code.pk}']")
    expect(row).to_contain_text("Humility as trust-building")
    expect(row.locator("small")).to_have_text("latent")
    expect(row.locator(".sw")).to_have_attribute("style", re.compile(r"--c:\s*#aa0000"))
    expect(page.locator("#recent-codes")).to_contain_text("Humility as trust-building")
    expect(page.locator(f"#filter-code option[value='{code.pk}']")).to_have_text("Humility as trust-building")
    page.select_option("#filter-kind", "latent")  # the filter knows the new kind
    expect(page.locator(f"#s-{s[0].pk}")).to_have_class(re.compile(r"\bmatch\b"))
    page.select_option("#filter-kind", "")

    page.locator(f"#s-{s[3].pk} .st").click()
    page.keyboard.press("c")
    page.keyboard.type("Humility as trust-building")
    expect(page.locator("#picker-list li[data-index]").first).to_contain_text("Humility as trust-building")
    expect(page.locator("#picker-list li.create")).to_have_count(0)
    page.keyboard.press("Enter")
    expect(page.locator("#ws-status")).to_have_text("Applied “Humility as trust-building” on 1 segment.")
    assert Code.objects.count() == 1 and Coding.objects.filter(segment=s[3], code=code).exists()


def test_creating_a_name_a_code_has_offers_that_code_to_apply(browser, login, live_server, project, owner, analyst,
                                                              interview, participant_segments, make_code):
    code = make_code("Performs humility")
    with _own_page(browser, live_server, refused="/create-code/") as page:
        _open(page, login, live_server, analyst, project, interview)
        # Renamed after the page loaded, straight in the database: no live event, and no poll in time.
        Code.objects.filter(pk=code.pk).update(name="Humility as trust-building")
        page.keyboard.press("j")
        page.keyboard.press("c")
        page.keyboard.type("humility as trust-building")
        expect(page.locator("#picker-list li.create")).to_have_count(1)  # the page does not know the name yet
        page.keyboard.press("Enter")

        expect(page.locator("#picker-error")).to_have_text(
            "There is already a code named “Humility as trust-building” in this project.")
        expect(page.locator("#picker-list li.create")).to_have_count(0)
        expect(page.locator("#picker-list li.active")).to_contain_text("Humility as trust-building")
        page.keyboard.press("Enter")
        expect(page.locator(f"#chips-{participant_segments[0].pk} .chip")).to_have_text(
            re.compile(r"^Humility as trust-building"))
        assert Code.objects.count() == 1
        assert list(Coding.objects.values_list("code_id", flat=True)) == [code.pk]


def test_the_panels_no_codes_yet_goes_with_the_first_code_and_comes_back_without_one(
        page, login, live_server, project, analyst, interview):
    _open(page, login, live_server, analyst, project, interview)
    empty = page.locator("#code-list-empty")
    expect(empty).to_be_visible()
    page.keyboard.press("j")
    page.keyboard.press("c")
    page.keyboard.type("First code")
    page.keyboard.press("Enter")
    expect(page.locator("#code-list-panel .code-row")).to_have_count(1)
    expect(empty).to_be_hidden()
    page.locator("#panel-filter").fill("nothing like it")  # a filter hiding every row is not "no codes"
    expect(page.locator("#code-list-panel .code-row")).to_be_hidden()
    expect(empty).to_be_hidden()
    page.locator("#panel-filter").fill("")
    page.locator("#transcript").focus()
    page.keyboard.press("u")  # undoing the create archives the unused code: none is left in use
    expect(page.locator("#ws-status")).to_contain_text("archived the new code “First code”")
    expect(empty).to_be_visible()
