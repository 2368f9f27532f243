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
