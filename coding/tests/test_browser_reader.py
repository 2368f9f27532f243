"""Reviewing AI suggestions by keyboard in a real browser: on the coding page and in a run's queue."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from coding.models import Coding, Suggestion, SuggestionRun

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _run_with_suggestions(project, analyst, interview, segments, code):
    run = SuggestionRun.objects.create(project=project, created_by=analyst, model="m", endpoint_url="http://x/v1",
                                       prompt_version="v", codebook=[{"id": code.pk, "name": code.name}],
                                       windows=[[s.pk for s in segments]], status=SuggestionRun.Status.DONE)
    for segment in segments[:3]:
        Suggestion.objects.create(run=run, segment=segment, interview=interview, code=code,
                                  rationale=f"about {segment.text[:10]}", critic_verdict="kept", critic_reason="Fits.")
    return run


def test_the_coding_page_reviews_suggestions_by_keyboard(page, login, live_server, project, analyst, interview,
                                                         participant_segments, make_code):
    s = participant_segments
    trust = make_code("Trust")
    _run_with_suggestions(project, analyst, interview, s, trust)
    login(page, analyst)
    page.goto(f"{live_server.url}/p/{project.uuid}/interviews/{interview.uuid}/code/")
    page.wait_for_selector("#transcript")
    expect(page.locator(".chip.suggested")).to_have_count(3)

    page.keyboard.press("s")
    expect(page.locator("#transcript .seg.cur")).to_have_id(f"s-{s[0].pk}")
    expect(page.locator("#ws-status")).to_contain_text("Model: about Home is wh")
    page.keyboard.press("y")
    expect(page.locator(f"#chips-{s[0].pk} .chip.mine")).to_have_count(1)  # now the analyst's own coding
    expect(page.locator(f"#s-{s[0].pk} .chip.suggested")).to_have_count(0)

    page.keyboard.press("s")
    expect(page.locator("#transcript .seg.cur")).to_have_id(f"s-{s[1].pk}")
    page.keyboard.press("r")
    expect(page.locator(".chip.suggested")).to_have_count(1)

    assert list(Suggestion.objects.order_by("segment__position").values_list("status", flat=True)) == [
        "accepted", "rejected", "pending"]
    coding = Coding.objects.get()
    assert (coding.coder, coding.origin, coding.segment) == (analyst, Coding.Origin.SUGGESTION, s[0])


def test_the_review_queue_accepts_and_rejects_by_keyboard(page, login, live_server, project, analyst, interview,
                                                          participant_segments, make_code):
    run = _run_with_suggestions(project, analyst, interview, participant_segments, make_code("Trust"))
    login(page, analyst)
    page.goto(f"{live_server.url}/p/{project.uuid}/second-reader/runs/{run.uuid}/")
    items = page.locator("[data-suggestion]")
    expect(items).to_have_count(3)
    page.keyboard.press("j")
    page.keyboard.press("y")  # accept: the coding page's key
    expect(items.nth(0)).to_contain_text("Accepted by arjun")
    expect(items.nth(1)).to_be_focused()  # the next pending one
    page.keyboard.press("r")
    page.keyboard.type("Too broad")
    page.keyboard.press("Enter")
    expect(items.nth(1)).to_contain_text("Rejected by arjun: Too broad")
    assert list(Suggestion.objects.order_by("segment__position").values_list("status", flat=True)) == [
        "accepted", "rejected", "pending"]
