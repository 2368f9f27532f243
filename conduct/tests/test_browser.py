"""Conduct a two-model interview through the UI: real Chromium, real Celery worker, local endpoint."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from conduct.tests.conftest import wait_until
from interviews.models import Turn

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.slow]

ANSWER_A = " ".join(f"Alpha thinks point {i} matters." for i in range(40))
ANSWER_B = " ".join(f"Beta weighs consideration {i} carefully." for i in range(35))


def test_a_two_model_interview_streams_side_by_side(
    page, login, live_server, project, owner, guide, live, fake_openai, start_worker, settings
):
    settings.OPENAI_API_KEY = "sk-deployment-test"
    start_worker()
    # Each first answer pauses half-way until the test has seen it half-streamed (no racing the stream).
    scripts = [
        fake_openai.script("alpha", answer=[ANSWER_A, "Alpha's follow-up answer.", "Alpha on the planned question."],
                           chunk_chars=8, delay=0.04, hold_after_chunks=20, model_id="alpha-2026-11-01"),
        fake_openai.script("beta", answer=[ANSWER_B, "Beta on the planned question."], chunk_chars=8, delay=0.04,
                           hold_after_chunks=20),
    ]
    live("Alpha", "alpha")
    live("Beta", "beta")

    login(page, owner)
    page.goto(f"/p/{project.uuid}/conduct/")
    page.get_by_label("Alpha").check()
    page.get_by_label("Beta").check()
    page.get_by_role("button", name="Start and send the opening prompt").click()
    page.wait_for_url("**/conduct/s/**")

    columns = page.locator("section.column")
    expect(columns).to_have_count(2)
    alpha, beta = columns.nth(0), columns.nth(1)
    expect(alpha.locator("h2")).to_have_text("Alpha")
    # A person sees words appear in both columns before either answer is finished.
    for column, full in ((alpha, ANSWER_A), (beta, ANSWER_B)):
        streaming = column.locator("article.answer[data-turn-status=streaming] .turn-text")
        expect(streaming).to_contain_text(full.split(".")[0])
        partial = streaming.inner_text()  # held after 20 chunks: stays part of the answer while we look
        assert 0 < len(partial) < len(full)
    for script in scripts:
        script.release()
    expect(alpha.locator("article.answer[data-turn-status=complete]")).to_have_count(1)
    expect(beta.locator("article.answer[data-turn-status=complete]")).to_have_count(1)
    expect(alpha.locator("article.answer .turn-text").first).to_have_text(ANSWER_A)
    # Each column followed its stream down to the newest words.
    for column in (alpha, beta):
        gap = column.locator("[data-transcript]").evaluate("c => c.scrollHeight - c.scrollTop - c.clientHeight")
        assert gap < 80

    # A follow-up to one model only.
    alpha.get_by_label("Follow-up to Alpha").fill("What do you mean by point 3?")
    alpha.get_by_role("button", name="Send to Alpha").click()
    expect(alpha.locator("article.question")).to_have_count(2)
    expect(alpha.locator("article.answer").nth(1)).to_contain_text("Alpha's follow-up answer.")
    expect(beta.locator("article.question")).to_have_count(1)
    expect(alpha.get_by_label("Follow-up to Alpha")).to_have_value("")

    # A planned question from the checklist, inserted into the broadcast box and sent to all.
    page.get_by_label("Ask all models").click()
    page.locator("#checklist button[data-planned-index='1']").click()
    expect(page.get_by_label("Ask all models")).to_have_value("How sure are you?")
    page.get_by_role("button", name="Send to all 2").click()
    expect(alpha.locator("article.answer[data-turn-status=complete]")).to_have_count(3)
    expect(beta.locator("article.answer[data-turn-status=complete]")).to_have_count(2)
    expect(page.locator("#checklist li.asked")).to_have_count(1)

    # Provenance of the first answer.
    alpha.locator("details.provenance > summary").first.click()
    expect(alpha.locator("details.provenance").first).to_contain_text("alpha-2026-11-01")
    expect(alpha.locator("details.provenance").first).to_contain_text("fp_fake_0001")

    page.get_by_role("button", name="End interview").click()
    expect(page.locator(".ended-note")).to_contain_text("ready to code")
    answers = Turn.objects.filter(interview__project=project, speaker="participant")
    assert sorted(answers.values_list("status", flat=True)) == ["complete"] * 5
    wait_until(lambda: all(t.segments.exists() for t in answers), timeout=60, message="segments")
