"""A probe through the UI: set up, dry run, run with progress in a real worker, results. Real Chromium."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from probes.models import Answer
from probes.tests import scripted
from probes.tests.conftest import CONTROL_SCHEMA, sheet

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.slow]


def fill_condition(page, **fields) -> None:
    for label, value in fields.items():
        control = page.get_by_label(label, exact=True)
        if label == "Output format":
            control.select_option(value)
        else:
            control.fill(value)
    page.get_by_role("button", name="Save condition").click()
    page.wait_for_url("**/probes/*/")


def test_setup_dry_run_run_and_results(page, login, project, owner, live, fake_openai, start_worker, settings):
    settings.OPENAI_API_KEY = "sk-deployment-test"
    fake_openai.script("model-a", answer=scripted.answer, first_delay=0.2)
    live("Model A", "model-a")
    start_worker()
    login(page, owner)

    page.goto(f"/p/{project.uuid}/")
    page.get_by_role("link", name="Probes").click()
    page.get_by_label("Name").fill("Gender from reviews")
    page.get_by_role("button", name="Create probe").click()
    expect(page.locator("h1")).to_have_text("Gender from reviews")

    page.get_by_label("File").set_input_files(files=[{"name": "reviews.csv", "mimeType": "text/csv", "buffer": sheet().read()}])
    page.get_by_label("Label columns").fill("gender")
    page.get_by_role("button", name="Import").click()
    expect(page.locator("#items-summary")).to_contain_text("8 items from reviews.csv")

    page.locator("#models summary").click()
    page.get_by_label("Model A").check()
    page.get_by_label("Answers at once").fill("2")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#models")).to_contain_text("Model A · 1 repetition · 2 answers at once")

    page.get_by_role("link", name="New condition").click()
    fill_condition(page, **{"Name": "Control", "System prompt": "Control. Classify the author's gender.",
                            "Prompt template": "Review: {text}", "Output format": "json_schema", "Label key": "gender",
                            "Categories key": "codes_applied", "Rationale key": "rationale", "Labels": "woman, man",
                            "Categories": "Declaration, Medical Condition, Other", "JSON schema": json.dumps(CONTROL_SCHEMA)})
    page.get_by_role("link", name="New condition").click()
    fill_condition(page, **{"Name": "Primed", "System prompt": "Primed. Attend to emotional expression.",
                            "Prompt template": "Review: {text}", "Output format": "labelled_lines", "Label key": "Gender",
                            "Categories key": "Codes Applied", "Rationale key": "Rationale", "Labels": "woman, man",
                            "Categories": "Declaration, Medical Condition, Other, Emotional Expression, Textual Style"})
    expect(page.locator("#conditions tbody tr")).to_have_count(2)

    page.get_by_role("button", name="Dry run on 3 items").click()
    results = page.locator("#dry-run-results")
    expect(results).to_contain_text("Dry run: 6 answers, nothing stored", timeout=15_000)
    expect(results.locator(".dry-run-answer").first).to_contain_text("Label: woman")
    expect(page.locator("#token-estimate")).to_contain_text("Primed")
    assert not Answer.objects.exists()

    page.get_by_role("button", name="Run the probe").click()
    expect(page.locator("#run-progress")).to_contain_text("remaining")
    expect(page.locator("#progress-counts")).to_have_text("15 done · 1 unparsed · 0 failed · 0 remaining", timeout=30_000)
    expect(page.locator("#run-progress .badge")).to_have_text("Finished", timeout=10_000)
    # The polled fragment took Cancel away and offers no run: nothing is left to ask.
    expect(page.locator("#cancel-button")).to_have_count(0)
    expect(page.locator("#run-button")).to_have_count(0)

    page.locator("#results-link").click()
    control = page.locator(".probe-cell[data-condition=Control][data-subset=all]")
    expect(control.locator("td.accuracy")).to_contain_text("0.62 [")
    primed = page.locator(".probe-cell[data-condition=Primed][data-subset=all]")
    expect(primed.locator(".p-value")).to_have_text("0.486")
    expect(page.locator("#novel-categories")).to_contain_text("Tone (1)")
    expect(page.locator("#unparsed")).to_contain_text("No “Gender:” line")
    page.get_by_label("Emotional Expression").check()
    page.get_by_role("button", name="Show").click()
    expect(page.locator(".probe-cell[data-condition=Primed][data-subset=cites] td.accuracy")).to_contain_text("0.67 [")

    # Table 1 as the paper prints it: a column group per condition over its subsets, the rate shown a choice.
    paper = page.locator("#paper-table")
    expect(paper.locator("th.column-group")).to_have_text(["Control", "Primed"])
    expect(paper.locator("thead tr").nth(1).locator("th")).to_have_text(
        ["Ground truth", "All", "Emotional Expression", "None", "All", "Emotional Expression", "None"])
    expect(paper.locator("tbody tr", has_text="P-value").locator("td").nth(3)).to_have_text("0.486")
    page.get_by_label("Rate shown in Table 1: predicted").select_option("man")
    page.get_by_role("button", name="Show").click()
    expect(paper).to_contain_text("the rate of predicting “man”")
    with page.expect_download() as info:
        paper.get_by_role("link", name="LaTeX").click()
    tex = open(info.value.path(), encoding="utf-8").read()
    assert r"\multicolumn{3}{c}{\textbf{Primed}}" in tex and "the rate of predicting ``man''" in tex
