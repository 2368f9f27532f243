"""Review meetings in a real Chromium: the decision form by kind, closing with a confirmation, word-by-word comparison."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from themes import services
from themes.models import Decision, Review, Theme

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CONFIRM = "I understand that closing makes this meeting read-only"


def agenda_item(page, theme_name: str):
    # By heading: another item's "Merge into" menu also names the theme.
    return page.locator("article.agenda-item").filter(has=page.get_by_role("heading", name=theme_name))


@pytest.fixture
def meeting(project, owner, make_code):
    honesty = services.theme_create(project=project, actor=owner, name="Honesty about limits",
                                    definition="Models say what they <b>cannot</b> do and why")
    friendship = services.theme_create(project=project, actor=owner, name="Friendship")
    services.theme_add_code(theme=honesty, actor=owner, code=make_code("admits uncertainty"))
    return services.review_create(project=project, actor=owner, title="Round 1", date="2026-11-22", attendees=[owner],
                                  themes=[honesty, friendship])


def test_the_decision_form_shows_only_the_fields_of_the_chosen_kind(page, login, project, owner, meeting):
    login(page, owner)
    page.goto(f"/p/{project.uuid}/themes/reviews/{meeting.uuid}/")
    expect(page.locator(".record-then-apply")).to_contain_text("the themes change only when someone clicks Apply")
    item = agenda_item(page, "Honesty about limits")
    item.get_by_text("Record a decision…").click()
    kind = item.get_by_label("Decision on “Honesty about limits”")

    expect(kind).to_have_value("rename")
    expect(item.get_by_label("New name", exact=True)).to_be_visible()
    for other in ("Merge into", "Move codes to", "New definition", "New status"):
        expect(item.get_by_label(other)).to_be_hidden()
    expect(item.get_by_role("group", name="Codes")).to_be_hidden()

    kind.select_option("split")
    expect(item.get_by_label("Name of the new theme")).to_be_visible()
    expect(item.get_by_role("group", name="Codes for the new theme")).to_be_visible()
    expect(item.get_by_label("New definition")).to_be_hidden()

    kind.select_option("merge")
    expect(item.get_by_label("Merge into")).to_be_visible()
    expect(item.get_by_label("Name of the new theme")).to_be_hidden()
    expect(item.get_by_role("group", name="Codes for the new theme")).to_be_hidden()

    kind.select_option("move_codes")
    expect(item.get_by_label("Move codes to")).to_be_visible()
    expect(item.get_by_role("group", name="Codes to move")).to_be_visible()
    expect(item.get_by_label("Merge into")).to_be_hidden()

    kind.select_option("status")
    expect(item.get_by_label("New status")).to_be_visible()
    expect(item.get_by_label("Move codes to")).to_be_hidden()

    # The server checks the chosen kind's fields and names the one that is missing.
    kind.select_option("merge")
    item.get_by_role("button", name="Record decision").click()
    expect(page.locator(".messages")).to_contain_text(
        "Decision on “Honesty about limits” not recorded. Merge into: Choose a theme of this project that is not in the trash.")
    item = agenda_item(page, "Honesty about limits")
    item.get_by_text("Record a decision…").click()
    item.get_by_label("Decision on “Honesty about limits”").select_option("redefine")
    item.get_by_label("New definition").fill("Models name the limits of what they know.")
    item.get_by_role("button", name="Record decision").click()
    expect(page.locator(".messages")).to_contain_text("Decision on “Honesty about limits” recorded.")
    assert Decision.objects.get().payload == {"definition": "Models name the limits of what they know."}


def test_closing_a_meeting_asks_for_confirmation_first(page, login, project, owner, meeting):
    login(page, owner)
    page.goto(f"/p/{project.uuid}/themes/reviews/{meeting.uuid}/")
    page.get_by_text("Close the meeting…").click()
    page.get_by_role("button", name="Close meeting", exact=True).click()
    expect(page.locator("#close-meeting")).to_contain_text("Tick the box to confirm: a closed meeting cannot be reopened.")
    assert Review.objects.get(pk=meeting.pk).status == Review.Status.OPEN
    expect(page.get_by_text("Record a decision…").first).to_be_visible()

    page.get_by_label(CONFIRM).check()
    page.get_by_role("button", name="Close meeting", exact=True).click()
    expect(page.locator(".messages")).to_contain_text("Meeting closed")
    expect(page.locator("h1 .badge")).to_have_text("closed")
    expect(page.get_by_text("Record a decision…")).to_have_count(0)
    expect(page.get_by_text("Change date, attendees or agenda")).to_have_count(0)
    assert Review.objects.get(pk=meeting.pk).status == Review.Status.CLOSED


def test_the_snapshot_comparison_shows_old_and_new_definition_with_changed_words_marked(page, login, project, owner, meeting):
    login(page, owner)
    page.goto(f"/p/{project.uuid}/themes/reviews/{meeting.uuid}/")
    item = agenda_item(page, "Honesty about limits")
    item.get_by_text("Record a decision…").click()
    item.get_by_label("Decision on “Honesty about limits”").select_option("redefine")
    item.get_by_label("New definition").fill("Models say what they will not do & why")
    item.get_by_role("button", name="Record decision").click()
    page.locator(".decisions").get_by_role("button", name="Apply").click()
    expect(page.locator(".messages")).to_contain_text("Decision applied.")
    assert Theme.objects.get(name="Honesty about limits").definition == "Models say what they will not do & why"
    page.get_by_text("Close the meeting…").click()
    page.get_by_label(CONFIRM).check()
    page.get_by_role("button", name="Close meeting", exact=True).click()

    page.get_by_role("link", name="What changed in this meeting").click()
    rewritten = page.get_by_role("article", name="Definition of Honesty about limits")
    expect(rewritten.locator(".old-text")).to_have_text("Models say what they <b>cannot</b> do and why")
    expect(rewritten.locator(".new-text")).to_have_text("Models say what they will not do & why")
    expect(rewritten.locator(".old-text del")).to_have_text(["<b>cannot</b>", "and"])
    expect(rewritten.locator(".new-text ins")).to_have_text(["will not", "&"])
    expect(rewritten.locator(".old-text b")).to_have_count(0)  # typed markup stays text
