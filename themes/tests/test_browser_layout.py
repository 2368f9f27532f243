"""The themes pages fit a phone (390×844) and a laptop (1280×800), even with names that have no spaces."""

from __future__ import annotations

import datetime

import pytest

from themes import services

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LONG = "Performing" + "humility" * 30  # a name without spaces: nothing to wrap at but the edge
SIZES = [(390, 844), (1280, 800)]


@pytest.fixture
def crowded(project, owner, make_code, make_interview, code_segment):
    """A board of long and short names, a theme page, a meeting about them, and memos on them."""
    codes = [make_code(n) for n in ("admits uncertainty", "user as friend", LONG[:190])]
    _, segments = make_interview("GPT-4o")
    for code in codes:
        code_segment(code, segments[0])
    themes = [services.theme_create(project=project, actor=owner, name=n) for n in ("Honesty", LONG[:195], "Friendship")]
    for theme, code in zip(themes, codes, strict=True):
        services.theme_add_code(theme=theme, actor=owner, code=code)
    services.memo_create(project=project, actor=owner, title=LONG[:190], body=LONG, kind="reflexive", theme=themes[1])
    review = services.review_create(project=project, actor=owner, title=LONG[:190], date=datetime.date(2026, 11, 25), themes=themes)
    services.decision_record(review=review, theme=themes[1], actor=owner, kind="rename", payload={"name": LONG[::-1][:190]})
    return {"themes": themes, "review": review}


def overflow(page) -> dict:
    """How far the page is wider than the window, and the widest element sticking out of it (for the message); what
    sits in a scrolling box of its own (the board's columns on a laptop) is inside that box, not out of the page."""
    return page.evaluate("""() => {
      const width = document.documentElement.clientWidth;
      const scrolled = (el) => { for (let p = el.parentElement; p; p = p.parentElement) {
        if (["auto", "scroll", "hidden"].includes(getComputedStyle(p).overflowX)) { return true; } } return false; };
      let worst = null;
      for (const el of document.querySelectorAll('main *')) {
        if (scrolled(el)) { continue; }
        const right = el.getBoundingClientRect().right;
        if (right > width + 1 && (!worst || right > worst.right)) { worst = {right, tag: el.tagName, cls: el.className, id: el.id}; }
      }
      return {scroll: document.documentElement.scrollWidth - width, worst};
    }""")


@pytest.mark.parametrize("size", SIZES, ids=["phone", "laptop"])
def test_the_themes_pages_fit_the_window(page, login, project, owner, crowded, size):
    page.set_viewport_size({"width": size[0], "height": size[1]})
    login(page, owner)
    base = f"/p/{project.uuid}/themes/"
    for url in (base, base + f"t/{crowded['themes'][1].uuid}/", base + f"reviews/{crowded['review'].uuid}/", base + "memos/"):
        page.goto(url)
        page.wait_for_load_state("networkidle")
        measured = overflow(page)
        assert measured["scroll"] <= 0 and measured["worst"] is None, f"{url} at {size}: {measured}"


def test_the_new_theme_form_is_on_screen_on_a_phone(page, login, project, owner, crowded):
    page.set_viewport_size({"width": 390, "height": 844})
    login(page, owner)
    page.goto(f"/p/{project.uuid}/themes/")
    field = page.get_by_label("Name", exact=True)
    field.scroll_into_view_if_needed()
    box = field.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390


def test_the_journals_about_select_fits_its_column(page, login, project, owner, crowded):
    login(page, owner)
    page.goto(f"/p/{project.uuid}/themes/memos/")
    width = page.locator("#f-target").bounding_box()["width"]
    assert width <= page.evaluate("document.documentElement.clientWidth")


@pytest.mark.parametrize("width", [1280, 1024])
def test_the_new_theme_form_and_every_theme_are_reachable_on_a_laptop_board(page, login, project, owner, make_code, width):
    """Five themes are wider than the board: the new-theme form stays in view beside them, and each theme is reached by
    keyboard (the columns scroll within their box, the page never sideways)."""
    names = ["Honesty about limits", "Friendship", "Performing humility", "Care as labour", "Home as practice"]
    for name in names:
        theme = services.theme_create(project=project, actor=owner, name=name)
        services.theme_add_code(theme=theme, actor=owner, code=make_code(f"code of {name}"))
    page.set_viewport_size({"width": width, "height": 800})
    login(page, owner)
    page.goto(f"/p/{project.uuid}/themes/")
    page.wait_for_load_state("networkidle")
    viewport = page.evaluate("document.documentElement.clientWidth")

    def within_window(locator) -> bool:
        box = locator.bounding_box()
        return box is not None and box["x"] >= 0 and box["x"] + box["width"] <= viewport

    for control in (page.get_by_label("Name", exact=True), page.get_by_role("button", name="Add theme")):
        assert within_window(control), f"{control} at {width}px: {control.bounding_box()}"
    for name in names:
        # By keyboard: a theme's first control takes the focus, and its column is scrolled into view within the board.
        page.get_by_role("link", name=name, exact=True).focus()
        column = page.locator(f'.columns > [data-theme-name="{name}"]')
        assert within_window(column.locator(".theme-name")), f"“{name}” at {width}px: {column.bounding_box()}"
        assert within_window(page.get_by_role("button", name="Add theme"))
    assert page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth") <= 0
    assert page.evaluate("window.scrollX") == 0
    assert overflow(page)["worst"] is None

    page.get_by_label("Name", exact=True).fill("Shared meals")
    page.keyboard.press("Enter")
    page.locator('[data-theme-name="Shared meals"]').wait_for()
    assert within_window(page.get_by_role("button", name="Add theme"))
