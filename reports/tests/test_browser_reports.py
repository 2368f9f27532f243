# The `world` fixture is imported from tables_world; pytest injects it by argument name.
# ruff: noqa: F811
"""The report screens in a real browser: the excerpt builder (live preview, column order by keyboard, a download),
the frequency table grouped by an interview attribute, the case-variables table and the statistics summary."""

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
    expect(page.locator("#excerpt-preview")).to_contain_text("Belonging is yours to name.")

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
    assert "only in A" in text and "only in B" in text


def test_frequency_by_an_interview_attribute_with_correction(page, login, live_server, world, analyst):
    for key, gender in (("gpt", "W"), ("claude", "M")):
        world.interviews[key].metadata = {"author_gender": gender}
        world.interviews[key].save(update_fields=["metadata"])
    login(page, analyst)
    page.goto(f"{live_server.url}/p/{world.project.uuid}/reports/frequency/?a={world.gpt.uuid}")
    # Regrouping drops the groups chosen among models; the columns become the attribute's values.
    page.get_by_label("Columns by").select_option(label="Interview: author_gender")
    expect(page.locator("#frequency-table thead")).to_contain_text("(not set)")
    expect(page.locator("#frequency-error")).to_have_count(0)
    page.locator("fieldset", has_text="Group A").get_by_label("W", exact=True).check()
    expect(page.locator("#frequency-hint")).to_contain_text("group B too")  # the swap is done: the form is new
    page.locator("fieldset", has_text="Group B").get_by_label("M", exact=True).check()
    page.wait_for_selector("#frequency-table .ratio")
    page.get_by_label("Continuity correction (+0.5)").check()
    expect(page.locator("#frequency-note")).to_contain_text("Continuity correction")
    # Feeling: W 2 of 4 coded segments, M 1 of 2 -> corrected ln((2.5/5)/(1.5/3)) = 0.
    feeling = page.locator("#frequency-table tbody tr", has_text="Feeling")
    expect(feeling.locator(".ratio")).to_have_text("0.00")


def test_frequency_in_sections_like_the_studys_table_2(page, login, live_server, world, analyst):
    from interviews.models import Interview

    llama = Interview.objects.get(project=world.project, title="Llama on home")
    for interview, truth, predicted in ((world.interviews["gpt"], "W", "woman"), (world.interviews["claude"], "M", "woman"),
                                        (llama, "M", "man")):
        interview.metadata = {"author_gender": truth, "predicted": predicted}
        interview.save(update_fields=["metadata"])
    login(page, analyst)
    page.goto(f"{live_server.url}/p/{world.project.uuid}/reports/frequency/?by=interview:author_gender&a=W&b=M")
    page.get_by_label("Sections by").select_option(label="Interview: predicted")
    expect(page.locator("#frequency-table .section-heading")).to_have_text(["man", "woman"])
    # Llama ("man") has nothing coded; in "woman" Structure is only in W (GPT), AI self only in M (Claude).
    expect(page.locator("#frequency-table tbody").first).to_contain_text("No codes in these interviews.")
    page.get_by_label("Infinite ln(A/B) as").select_option(label="+∞ / −∞")
    woman = page.locator("#frequency-table tbody").nth(1)
    expect(woman.locator("tr", has_text="Structure").locator(".ratio")).to_have_text("+∞")
    expect(woman.locator("tr", has_text="AI self").locator(".ratio")).to_have_text("−∞")
    expect(page.locator("#frequency-note")).to_contain_text("Sections: Interview: predicted")
    # Columns by the sections' attribute: the sections go, rather than the page refusing the choice.
    page.get_by_label("Columns by").select_option(label="Interview: predicted")
    expect(page.locator("#frequency-table thead")).to_contain_text("woman")
    expect(page.locator("#frequency-table .section-heading")).to_have_count(0)
    expect(page.locator("#frequency-error")).to_have_count(0)


def test_case_variables_table_and_statistics_summary(page, login, live_server, world, analyst):
    login(page, analyst)
    page.goto(f"{live_server.url}/p/{world.project.uuid}/interviews/participants/")
    page.get_by_role("link", name="Case variables").click()
    page.get_by_label("Variable 1 name").fill("family")
    page.get_by_label("GPT-4o, variable 1").fill("GPT")
    page.get_by_label("Claude, variable 1").fill("Claude")
    page.get_by_role("button", name="Save case variables").click()
    expect(page.locator("body")).to_contain_text("Case variables saved: 2 participants changed.")
    page.goto(f"{live_server.url}/p/{world.project.uuid}/interviews/statistics/")
    expect(page.locator("#statistics-filter")).to_contain_text("Finished interviews only")
    expect(page.locator("#across-models")).to_contain_text("Mean across models")


def test_trajectories_timeline_and_transitions(page, login, live_server, world, analyst):
    # GPT's answers: 1 holds Feeling and Structure, 2 holds Structure: Feeling -> Structure within one answer.
    login(page, analyst)
    page.goto(f"{live_server.url}/p/{world.project.uuid}/reports/")
    page.get_by_role("link", name="Open the trajectories").click()
    page.get_by_label("Feeling").check()
    expect(page.locator("#transition-table")).to_contain_text("No move is followed by another")
    page.get_by_label("Structure").check()
    expect(page.locator("#trajectory-timeline svg")).to_have_count(1)
    row = page.locator("#transition-table tbody tr", has_text="Feeling")
    expect(row.first).to_contain_text("Structure")


def test_case_matrix_ticks_a_code_for_a_whole_interview(page, login, live_server, world, analyst):
    from coding.models import CaseCoding

    login(page, analyst)
    page.goto(f"{live_server.url}/p/{world.project.uuid}/reports/")
    page.get_by_role("link", name="Open the case matrix").click()
    page.locator("#cases-form").get_by_label("Unused").check()
    box = page.get_by_label("Unused applies to “Claude on home”")
    box.check()
    expect(page.locator(f"#case-{world.interviews['claude'].uuid}-{world.codes['Unused'].uuid}")).to_contain_text("1")
    assert CaseCoding.objects.filter(interview=world.interviews["claude"], code=world.codes["Unused"]).count() == 1


def test_a_trim_under_its_minimum_is_said_at_the_field_and_the_preview_waits(page, login, live_server, world, analyst):
    login(page, analyst)
    page.goto(f"{live_server.url}/p/{world.project.uuid}/reports/excerpts/")
    page.wait_for_selector("#excerpt-preview table")
    page.evaluate("""() => { window.reported = 0; const report = HTMLFormElement.prototype.reportValidity;
        HTMLFormElement.prototype.reportValidity = function () { window.reported += 1; return report.call(this); }; }""")
    requests = []
    page.on("request", lambda request: requests.append(request.url) if "/reports/excerpts/" in request.url else None)
    trim = page.get_by_label("Trim quotes longer than (characters)")
    trim.fill("10")
    trim.dispatch_event("change")
    page.wait_for_function("window.reported > 0")  # the browser says what is wrong, at the field
    assert trim.evaluate("input => input.validationMessage") and not requests
    trim.fill("40")
    trim.dispatch_event("change")
    expect(page.locator("#excerpt-preview td").filter(has_text="[...]").first).to_be_visible()


def test_a_column_just_ticked_moves_past_the_unticked_ones_at_the_first_press(page, login, live_server, world, analyst):
    login(page, analyst)
    page.goto(f"{live_server.url}/p/{world.project.uuid}/reports/excerpts/")
    page.wait_for_selector("#excerpt-preview table")
    page.get_by_label("Interview", exact=True).check()  # listed after Quote and the unticked Sub-theme
    expect(page.locator("#excerpt-preview thead th")).to_have_count(5)
    assert headers(page) == ["Theme", "Code", "Model", "Quote", "Interview"]
    page.get_by_role("button", name="Move Interview up").click()
    expect(page.locator("#excerpt-preview thead th").nth(3)).to_have_text("Interview")
    assert headers(page) == ["Theme", "Code", "Model", "Interview", "Quote"]
    page.get_by_role("button", name="Move Theme down").click()
    expect(page.locator("#excerpt-preview thead th").nth(0)).to_have_text("Code")


def test_a_second_tick_while_the_first_is_on_its_way_is_kept(page, login, live_server, world, analyst):
    login(page, analyst)
    page.goto(f"{live_server.url}/p/{world.project.uuid}/reports/frequency/")
    held = []

    def hold_the_first(route):
        if held:
            route.continue_()
        else:
            held.append(route)

    page.route("**/reports/frequency/?**", hold_the_first)
    page.locator("fieldset", has_text="Group A").get_by_label("GPT-4o").check()
    page.wait_for_function("() => document.querySelector('#frequency-form').classList.contains('htmx-request')")
    page.locator("fieldset", has_text="Group B").get_by_label("Claude").check()  # the first answer has not come
    held[0].continue_()  # the first answer, late: it must not undo the second tick
    page.wait_for_selector("#frequency-table .ratio")
    expect(page.locator("fieldset", has_text="Group B").get_by_label("Claude")).to_be_checked()
    expect(page.locator("fieldset", has_text="Group A").get_by_label("GPT-4o")).to_be_checked()
    assert "only in B" in page.locator("#frequency-table").inner_text()
