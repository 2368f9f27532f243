"""Coding in a real browser, keyboard only: create a code inline, apply recent codes, extend, undo, remove,
filter by coder, then compare two coders."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from playwright.sync_api import expect

from coding.models import Code, Coding
from interviews.models import Speaker

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _chips(page, seg) -> list[str]:
    # A chip is the code name then the coder's initials (a flex item, hence no space).
    return [t.replace("\n", "") for t in page.locator(f"#chips-{seg.pk} .chip:not(.hide)").all_inner_texts()]


SHOWN_CHIPS = """([selector, want]) => JSON.stringify([...document.querySelectorAll(selector)]
    .map(chip => chip.innerText.replaceAll("\\n", ""))) === JSON.stringify(want)"""


def expect_chips(page, seg, names: list[str], *, ordered: bool = True) -> None:
    """Wait until the segment shows exactly these chips (the page updates after the key press returns)."""
    want = names if ordered else sorted(names)
    script = SHOWN_CHIPS if ordered else SHOWN_CHIPS.replace("))) ===", ")).sort()) ===")
    try:
        page.wait_for_function(script, arg=[f"#chips-{seg.pk} .chip:not(.hide)", want])
    except PlaywrightTimeoutError:
        shown = _chips(page, seg)
        assert (shown if ordered else sorted(shown)) == want  # fails saying what is shown instead


def test_code_by_keyboard_create_inline_undo_filter_and_compare(page, login, live_server, project, owner, analyst,
                                                                interview, participant_segments, make_code):
    s = participant_segments
    trust = make_code("Trust", colour="#aa3300")
    # Another coder already coded the fourth segment: it must stay visible and untouched.
    Coding.objects.create(segment=s[3], code=trust, coder=owner, interview=interview)
    login(page, analyst)
    page.goto(f"{live_server.url}/p/{project.uuid}/interviews/{interview.uuid}/code/")
    page.wait_for_selector("#transcript")
    expect_chips(page, s[3], ["TrustOO"])

    # j selects the first participant segment; c opens the picker; a new name creates the code and applies it.
    page.keyboard.press("j")
    expect(page.locator(f"#s-{s[0].pk}")).to_have_class(re.compile(r"\bsel\b"))
    page.keyboard.press("c")
    page.wait_for_selector("#picker[open]")
    page.keyboard.type("Slow belonging")
    expect(page.locator("#picker-list")).to_contain_text("Create “Slow belonging”")
    page.keyboard.press("Enter")
    expect_chips(page, s[0], ["Slow belongingAA"])
    assert Code.objects.filter(name="Slow belonging", kind="semantic").exists()

    # j moves on; 1 applies the most recent code.
    page.keyboard.press("j")
    page.keyboard.press("1")
    expect_chips(page, s[1], ["Slow belongingAA"])

    # Fuzzy search: "trs" finds Trust; shift+j extends the selection to two segments.
    page.keyboard.press("j")
    page.keyboard.press("Shift+J")
    page.keyboard.press("/")
    page.keyboard.type("trs")
    expect(page.locator("#picker-list li.active")).to_have_text(re.compile(r"^\s*Trust"))
    page.keyboard.press("Enter")
    expect_chips(page, s[2], ["TrustAA"])
    expect_chips(page, s[3], ["TrustAA", "TrustOO"], ordered=False)
    expect(page.locator("#progress-interview")).to_have_text(f"4 / {len(s)}")

    # u undoes the last action: Trust comes off both segments, but only the analyst's own chip.
    page.keyboard.press("u")
    expect(page.locator(f"#chips-{s[2].pk} .chip")).to_have_count(0)
    expect_chips(page, s[3], ["TrustOO"])
    expect(page.locator("#progress-interview")).to_have_text(f"3 / {len(s)}")  # the owner's chip keeps s[3] coded

    # k back to the second segment, x removes its only code of mine.
    page.keyboard.press("Escape")
    page.keyboard.press("j")
    page.keyboard.press("j")
    page.keyboard.press("x")
    expect(page.locator(f"#chips-{s[1].pk} .chip")).to_have_count(0)
    expect(page.locator("#progress-interview")).to_have_text(f"2 / {len(s)}")
    assert set(Coding.objects.filter(coder=analyst).values_list("segment_id", flat=True)) == {s[0].pk}

    # n jumps to the next uncoded participant segment (the third: the fourth is coded by the owner).
    page.keyboard.press("n")
    expect(page.locator(f"#s-{s[2].pk}")).to_have_class(re.compile(r"\bcur\b"))

    # Filter: only mine hides the owner's chip; everyone shows it again.
    page.select_option("#filter-coder", "mine")
    expect_chips(page, s[3], [])
    expect_chips(page, s[0], ["Slow belongingAA"])
    page.select_option("#filter-coder", "")
    expect_chips(page, s[3], ["TrustOO"])
    page.select_option("#filter-code", str(trust.pk))
    expect(page.locator(f"#s-{s[3].pk}")).to_have_class(re.compile(r"\bmatch\b"))
    page.select_option("#filter-code", "")

    # ? shows the cheat-sheet.
    page.keyboard.press("?")
    expect(page.locator("#help-dialog")).to_be_visible()
    page.keyboard.press("Escape")

    # Compare the two coders.
    page.get_by_role("link", name="Compare coders").click()
    page.select_option("select[name=a]", str(owner.pk))
    page.select_option("select[name=b]", str(analyst.pk))
    page.get_by_role("button", name="Compare").click()
    summary = page.locator(".compare-summary")
    expect(summary).to_contain_text("1 segments only Olivia Owner coded")
    expect(summary).to_contain_text("1 only Arjun Analyst coded")
    expect(page.locator(f"#d-{s[0].pk}")).to_be_visible()
    expect(page.locator(f"#d-{s[3].pk}")).to_be_visible()


def test_a_turn_note_is_saved_without_reload(page, login, live_server, project, analyst, interview):
    turn = interview.turns.filter(speaker=Speaker.PARTICIPANT).first()
    login(page, analyst)
    page.goto(f"{live_server.url}/p/{project.uuid}/interviews/{interview.uuid}/code/")
    page.locator(f"#t-{turn.pk} .note-btn").click()
    page.fill("#note-text", "Warm but <hedged> tone")
    page.get_by_role("button", name="Save note").click()
    expect(page.locator(f"#notes-t{turn.pk} .note")).to_contain_text("Warm but <hedged> tone")
    assert turn.familiarisation_notes.get().text == "Warm but <hedged> tone"


def test_a_second_coder_sees_the_first_coders_work_without_reloading(page, login, live_server, project, owner, analyst,
                                                                     interview, participant_segments, make_code):
    s = participant_segments
    login(page, analyst)
    page.goto(f"{live_server.url}/p/{project.uuid}/interviews/{interview.uuid}/code/?poll=1")
    page.wait_for_selector("#transcript")
    # The owner codes in another browser (here: straight through the service) while the analyst's page is open.
    from coding.services import coding_apply

    code = make_code("Late arrival", colour="#336699")
    coding_apply(project_uuid=project.uuid, interview_uuid=interview.uuid, user_id=owner.pk, code_id=code.pk,
                 segment_ids=[s[2].pk])
    expect_chips(page, s[2], ["Late arrivalOO"])  # the page polls
    expect(page.locator("#progress-interview")).to_have_text(f"1 / {len(s)}")
    expect(page.locator("#progress-project")).to_have_text(f"1 / {len(s)}")


def test_a_colleagues_new_code_is_usable_without_reloading_and_project_progress_follows(
        page, login, live_server, project, analyst, interview, participant_segments, make_code):
    s = participant_segments
    login(page, analyst)
    page.goto(f"{live_server.url}/p/{project.uuid}/interviews/{interview.uuid}/code/?poll=1")
    page.wait_for_selector("#transcript")
    expect(page.locator("#progress-project")).to_have_text(f"0 / {len(s)}")
    fresh = make_code("Quiet dissent", colour="#117733")  # created by a colleague on the codebook page
    Code.objects.filter(pk=make_code("Retired idea").pk).update(archived=True)
    expect(page.locator(f"#filter-code option[value='{fresh.pk}']")).to_have_count(1)  # the page polls

    page.keyboard.press("j")
    page.keyboard.press("c")
    page.keyboard.type("quiet")
    expect(page.locator("#picker-list li.active")).to_have_text(re.compile(r"^\s*Quiet dissent"))
    expect(page.locator("#picker-list")).not_to_contain_text("Retired idea")
    page.keyboard.press("Enter")
    expect(page.locator(f"#chips-{s[0].pk} .chip")).to_have_count(1)
    assert Coding.objects.filter(code=fresh, segment=s[0], coder=analyst).exists()
    expect(page.locator("#progress-project")).to_have_text(f"1 / {len(s)}")


def test_split_a_code_choosing_which_excerpts_move(page, login, live_server, project, owner, interview, participant_segments,
                                                   make_code):
    code = make_code("Home")
    first, second = participant_segments[0], participant_segments[2]
    for seg in (first, second):
        Coding.objects.create(segment=seg, code=code, coder=owner, interview=interview)
    login(page, owner)
    page.goto(f"/p/{project.uuid}/codebook/{code.uuid}/")
    page.get_by_label("New codes").fill("Home as people\nHome as place")
    page.get_by_role("button", name="Choose excerpts to move…").click()
    page.get_by_label(re.compile(re.escape(first.text[:40]))).select_option(label="Home as place")  # by the name typed
    page.get_by_role("button", name="Split", exact=True).click()
    expect(page.locator(".messages")).to_contain_text("split into Home as people, Home as place")
    assert list(Coding.objects.filter(code__name="Home as place").values_list("segment_id", flat=True)) == [first.pk]
    assert list(Coding.objects.filter(code=code).values_list("segment_id", flat=True)) == [second.pk]
