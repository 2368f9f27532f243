"""The coding view shows answers rendered, and sentences inside a rendered list and table are coded by keyboard."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from coding.models import Coding

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ANSWER = ("I see three parts:\n\n- First, I try to be **honest** about what I know.\n- Second, I weigh *everyone's* interests.\n\n"
          "| Model | Verdict |\n|---|---|\n| GPT-4o | **fair** |")


def test_list_items_and_table_rows_are_rendered_and_coded_by_keyboard(page, login, live_server, project, analyst,
                                                                        make_interview, make_code):
    interview = make_interview(turns=[("interviewer", "How do you decide?"), ("participant", ANSWER)])
    make_code("Honesty")
    segments = list(interview.segments.filter(speaker="participant").order_by("position"))
    by_text = {s.text: s for s in segments}
    item = next(s for t, s in by_text.items() if "honest" in t)
    row = next(s for t, s in by_text.items() if "GPT-4o" in t)
    assert item.kind == "list_item" and row.kind == "table_row"

    login(page, analyst)
    page.goto(f"{live_server.url}/p/{project.uuid}/interviews/{interview.uuid}/code/")
    page.wait_for_selector("#transcript")
    # Rendered: no Markdown markers, bold kept, the block's kind on its row.
    expect(page.locator(f"#s-{item.pk} .st")).to_have_text("First, I try to be honest about what I know.")
    expect(page.locator(f"#s-{item.pk} .st strong")).to_have_text("honest")
    expect(page.locator(f"#s-{row.pk} .st")).to_have_text("GPT-4o | fair")
    assert "**" not in page.locator("#transcript").inner_text()

    page.keyboard.press("j")
    for target in (item, row):
        for _ in range(len(segments)):
            if page.locator("#transcript .seg.cur").get_attribute("id") == f"s-{target.pk}":
                break
            page.keyboard.press("j")
        page.keyboard.press("c")
        page.wait_for_selector("#picker[open]")
        page.keyboard.type("Honesty")
        page.keyboard.press("Enter")
        expect(page.locator(f"#chips-{target.pk} .chip")).to_have_count(1)
    assert set(Coding.objects.values_list("segment_id", flat=True)) == {item.pk, row.pk}
