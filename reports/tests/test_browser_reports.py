# The `world` fixture is imported from tables_world; pytest injects it by argument name.
# ruff: noqa: F811
"""The excerpt builder in a real browser: live preview, column order by keyboard, a download."""

from __future__ import annotations

import csv
import io

import pytest
from playwright.sync_api import expect

from reports.tests.tables_world import world  # noqa: F401 - fixture

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def headers(page) -> list[str]:
    return [h.strip() for h in page.locator("#excerpt-preview thead th").all_inner_texts()]


def test_build_reorder_preview_and_export(page, login, live_server, world, analyst):
    login(page, analyst)
    page.goto(f"{live_server.url}/p/{world.project.uuid}/reports/")
    page.get_by_role("link", name="Build an excerpt table").click()
    page.wait_for_selector("#excerpt-preview table")
    assert headers(page) == ["Theme", "Code", "Model", "Quote"]

    # Untick "Theme": the preview follows without a page load.
    page.get_by_label("Theme", exact=True).uncheck()
    expect(page.locator("#excerpt-preview thead th")).to_have_count(3)
    assert headers(page) == ["Code", "Model", "Quote"]

    # Move "Quote" up twice with the keyboard.
    up = page.get_by_role("button", name="Move Quote up")
    up.focus()
    page.keyboard.press("Enter")
    expect(page.locator("#excerpt-preview thead th").nth(1)).to_have_text("Quote")
    page.keyboard.press("Enter")
    expect(page.locator("#excerpt-preview thead th").nth(0)).to_have_text("Quote")
    assert headers(page) == ["Quote", "Code", "Model"]

    # Only Claude's excerpts.
    page.get_by_text("Models (participants)").click()
    page.get_by_label("Claude claude-3-5").check()
    expect(page.locator("#excerpt-preview")).not_to_contain_text("GPT-4o")
    assert "Belonging is yours to name." in page.locator("#excerpt-preview").inner_text()

    with page.expect_download() as info:
        page.locator("#export-form").get_by_role("button", name="CSV").click()
    rows = list(csv.reader(io.StringIO(open(info.value.path(), encoding="utf-8-sig").read())))
    assert rows[0] == ["Quote", "Code", "Model"]
    assert sorted(r[2] for r in rows[1:]) == ["Claude", "Claude"]


def test_frequency_page_groups_and_heatmap(page, login, live_server, world, analyst):
    login(page, analyst)
    page.goto(f"{live_server.url}/p/{world.project.uuid}/reports/frequency/")
    assert page.locator("#frequency-result svg").count() == 1
    page.locator("fieldset", has_text="Group A").get_by_label("GPT-4o").check()
    expect(page.locator("#frequency-hint")).to_contain_text("group B too")
    page.locator("fieldset", has_text="Group B").get_by_label("Claude").check()
    page.wait_for_selector("#frequency-table .ratio")
    text = page.locator("#frequency-table").inner_text()
    assert "+∞" in text and "−∞" in text
