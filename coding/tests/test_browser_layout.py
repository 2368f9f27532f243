"""Layouts that hold: on a phone (390 × 844) pages never scroll sideways and a code taps onto a sentence; on a laptop
the Markdown source wraps and the codebook's progress bars show.

On a phone the coding page had a 38 px sentence column beside fixed-width chips (text broken letter by letter,
the page ~8,000 px tall), and its sticky code list covered the sentences and took their taps.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from coding.models import Coding

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}
NO_SIDEWAYS_SCROLL = "document.documentElement.scrollWidth <= document.documentElement.clientWidth"


def test_on_a_phone_a_tapped_code_lands_on_the_tapped_sentence_and_no_page_scrolls_sideways(
        page, login, live_server, project, analyst, interview, participant_segments, make_code):
    make_code("Trust", colour="#aa3300")
    login(page, analyst)
    page.set_viewport_size(PHONE)
    for path in ("interviews/", "codebook/", "reports/excerpts/", f"interviews/{interview.uuid}/?view=source"):
        page.goto(f"{live_server.url}/p/{project.uuid}/{path}")
        assert page.evaluate(NO_SIDEWAYS_SCROLL), path

    page.goto(f"{live_server.url}/p/{project.uuid}/interviews/{interview.uuid}/code/")
    page.wait_for_selector("#transcript")
    assert page.evaluate(NO_SIDEWAYS_SCROLL)
    sentence = page.locator(f"#s-{participant_segments[-1].pk}")
    # Each sentence takes the screen's width: chips go under it instead of squeezing it to a sliver.
    assert sentence.locator(".st").bounding_box()["width"] > PHONE["width"] / 2
    sentence.scroll_into_view_if_needed()
    sentence.click()
    expect(sentence).to_have_class(re.compile(r"\bsel\b"))
    page.locator(".ws-codes .code-row", has_text="Trust").click()  # a tap nothing covers
    expect(page.locator(f"#chips-{participant_segments[-1].pk} .chip")).to_have_count(1)
    assert list(Coding.objects.values_list("segment_id", flat=True)) == [participant_segments[-1].pk]


def test_the_markdown_source_view_wraps_inside_the_transcript_on_a_laptop(page, login, live_server, project, analyst,
                                                                          make_interview):
    long_line = "A table row | " + " | ".join(f"cell {n} with some words" for n in range(40))
    interview = make_interview(turns=[("interviewer", "Show me a wide table."), ("participant", long_line)])
    login(page, analyst)
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{live_server.url}/p/{project.uuid}/interviews/{interview.uuid}/?view=source")
    source = page.locator("pre.turn-source").last
    expect(source).to_have_text(long_line)  # every character kept
    assert page.evaluate(NO_SIDEWAYS_SCROLL)
    assert source.evaluate("pre => pre.scrollWidth <= pre.clientWidth")  # wrapped, not scrolled


def test_the_codebooks_progress_bars_show_how_much_of_each_interview_is_coded(page, login, live_server, project, analyst,
                                                                                interview, participant_segments, make_code):
    trust = make_code("Trust")
    for segment in participant_segments[:len(participant_segments) // 2]:
        Coding.objects.create(segment=segment, code=trust, coder=analyst, interview=interview)
    login(page, analyst)
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{live_server.url}/p/{project.uuid}/codebook/")
    bar = page.locator(".progress").first
    expect(bar).to_be_visible()
    whole, done = bar.bounding_box(), bar.locator("span").bounding_box()
    assert whole["height"] > 0 and 0.3 < done["width"] / whole["width"] < 0.7


@pytest.mark.parametrize("viewport", [PHONE, {"width": 1280, "height": 800}], ids=["phone", "laptop"])
def test_a_code_with_a_long_name_does_not_make_the_coding_page_scroll_sideways(page, login, live_server, project, analyst,
                                                                                interview, make_code, viewport):
    # Names may be 200 characters; the code filter's select took the width of the longest (1,419 px).
    make_code(" ".join(["Participant hedges before giving a personal opinion"] * 4)[:200])
    login(page, analyst)
    page.set_viewport_size(viewport)
    page.goto(f"{live_server.url}/p/{project.uuid}/interviews/{interview.uuid}/code/")
    page.wait_for_selector("#transcript")
    assert page.evaluate(NO_SIDEWAYS_SCROLL)
