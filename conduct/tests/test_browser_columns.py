"""Five models side by side on a laptop screen: readable columns that scroll sideways with a scrollbar in view (#19)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

MODELS = ["GPT-4o (ChatGPT web)", "Claude 3.5 Sonnet", "Llama-3.1-405B-Instruct", "Gemini 1.5 Pro", "Mistral Large 2"]
ANSWER = "Home is where people know you and where you are not asked to explain yourself. " * 20
MIN_COLUMN_PX = 22 * 16  # 22rem: about 45 characters a line


@pytest.fixture
def five_model_session(project, owner, guide):
    from conduct.models import ConductSession, Seat
    from interviews.models import Interview, Participant, Turn

    session = ConductSession.objects.create(project=project, guide_version=guide.versions.get(), created_by=owner)
    for position, label in enumerate(MODELS):
        participant = Participant.objects.create(project=project, label=label, model_id=f"model-{position}", is_live=True)
        interview = Interview.objects.create(project=project, participant=participant, title=f"Values — {label}",
                                             origin=Interview.Origin.LIVE, status=Interview.Status.IN_PROGRESS,
                                             guide_version=session.guide_version, created_by=owner)
        Turn.objects.create(interview=interview, position=0, speaker="interviewer", text="What does fairness mean to you?")
        Turn.objects.create(interview=interview, position=1, speaker="participant", text=ANSWER)
        Seat.objects.create(session=session, interview=interview, position=position)
    return session


def test_five_columns_scroll_sideways_with_a_scrollbar_above_them_and_a_readable_width(
        page, login, live_server, project, owner, five_model_session):
    login(page, owner)
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(f"/p/{project.uuid}/conduct/s/{five_model_session.uuid}/")
    columns = page.locator("[data-columns]")
    expect(columns.locator("section.column")).to_have_count(5)
    # The page itself never scrolls sideways: the columns do, inside their box.
    assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    assert columns.evaluate("c => c.scrollWidth > c.clientWidth")
    widths = columns.locator("section.column").evaluate_all("cs => cs.map(c => c.getBoundingClientRect().width)")
    assert min(widths) >= MIN_COLUMN_PX, widths

    # The mirrored scrollbar sits right above the columns, on the first screen, as wide as they scroll.
    bar = page.locator("[data-columns-scrollbar]")
    expect(bar).to_be_visible()
    box = bar.bounding_box()
    assert 0 <= box["y"] and box["y"] + box["height"] <= 720 and box["x"] + box["width"] <= 1280
    assert bar.evaluate("b => b.scrollWidth") == columns.evaluate("c => c.scrollWidth")

    # Scrolling it to the end brings the last model's column fully into view.
    last = columns.locator("section.column").last
    bar.evaluate("b => { b.scrollLeft = b.scrollWidth; }")
    page.wait_for_function("""() => {
      const c = document.querySelector('[data-columns]');
      return c.scrollLeft > 0 && c.scrollLeft >= c.scrollWidth - c.clientWidth - 1;
    }""")
    inside = columns.bounding_box()
    for shown in (last, last.get_by_role("button", name="Send to Mistral Large 2")):
        b = shown.bounding_box()
        assert inside["x"] <= b["x"] and b["x"] + b["width"] <= min(inside["x"] + inside["width"], 1280) + 1

    # Scrolling the columns themselves (keyboard, trackpad) moves the bar along; reading down keeps it on screen.
    columns.evaluate("c => { c.scrollLeft = 0; }")
    page.wait_for_function("() => document.querySelector('[data-columns-scrollbar]').scrollLeft === 0")
    page.mouse.wheel(0, 400)
    page.wait_for_function("() => window.scrollY > 0")
    box = bar.bounding_box()
    assert 0 <= box["y"] and box["y"] + box["height"] <= 720


def test_two_columns_fit_without_a_scrollbar(page, login, live_server, project, owner, five_model_session):
    from conduct.models import Seat

    Seat.objects.filter(session=five_model_session, position__gte=2).delete()
    login(page, owner)
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(f"/p/{project.uuid}/conduct/s/{five_model_session.uuid}/")
    expect(page.locator("[data-columns] section.column")).to_have_count(2)
    assert page.locator("[data-columns]").evaluate("c => c.scrollWidth <= c.clientWidth")
    expect(page.locator("[data-columns-scrollbar]")).to_be_hidden()
