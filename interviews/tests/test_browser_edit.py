"""In a real browser, by keyboard alone: correct an interview's details and describe an imported participant."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from interviews.models import Participant
from interviews.tests.factories import make_interview, make_participant

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_edit_details_and_describe_the_participant_by_keyboard(page, live_server, login, analyst, project):
    gpt = make_participant(project, label="GPT-4o")
    make_participant(project, label="Claude")
    interview = make_interview(project, gpt, [("interviewer", "Who are you?"), ("participant", "A model.")], title="Identity")
    login(page, analyst)
    page.goto(f"{live_server.url}/p/{project.uuid}/interviews/{interview.uuid}/")
    page.get_by_role("link", name="Show Markdown source").focus()
    page.keyboard.press("Tab")  # Code this interview
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", level=1)).to_have_text("Edit details")
    page.get_by_label("Title").fill("Identity, pilot")
    page.get_by_label("Depth").select_option("brief")
    page.get_by_label("Participant").select_option(label="Claude")
    page.get_by_label("Title").press("Enter")
    expect(page.get_by_role("heading", level=1)).to_have_text("Identity, pilot")
    expect(page.locator(".lead").first).to_contain_text("Claude")
    expect(page.locator(".lead").first).to_contain_text("Brief")

    page.goto(f"{live_server.url}/p/{project.uuid}/interviews/")
    page.get_by_role("link", name="Participants").focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", level=1)).to_have_text("Participants")
    page.get_by_role("link", name="Edit GPT-4o").focus()
    page.keyboard.press("Enter")
    page.get_by_label("Snapshot date").fill("2024-08-06")
    page.get_by_label("Attribute 1 name").fill("release")
    page.get_by_label("Attribute 1 value").fill("2024-08")
    page.get_by_role("button", name="Save participant").focus()
    page.keyboard.press("Enter")
    expect(page.locator(".messages")).to_contain_text("Participant “GPT-4o” saved.")
    row = page.locator("tbody tr").filter(has=page.get_by_role("cell", name="GPT-4o", exact=True))
    expect(row).to_contain_text("release: 2024-08")
    gpt.refresh_from_db()
    assert gpt.attributes == {"release": "2024-08"} and str(gpt.snapshot_date) == "2024-08-06"
    assert Participant.objects.get(label="Claude").interviews.get().title == "Identity, pilot"
