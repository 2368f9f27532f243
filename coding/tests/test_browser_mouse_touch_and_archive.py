"""The workspace without a keyboard, and names of archived codes, in a real browser.

A reviewer found: a coding could be removed and a code created only with keys (x, c), so a mouse or a phone could
do neither; after `u` archived a code just created, typing its name again offered Create and the server refused it
("There is already a code named …") with no word of the archive; a refused name was thrown away with the picker.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from playwright.sync_api import expect

from coding.models import Code, CodeEvent, Coding
from conftest import BROWSER_TIMEOUT_MS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}
NO_SIDEWAYS_SCROLL = "document.documentElement.scrollWidth <= document.documentElement.clientWidth"


@contextmanager
def _own_page(browser, live_server, *, refused: str = "", **options) -> Iterator:
    """A page like the `page` fixture's (console errors fail the test) in a context of our own: a phone's, or one where
    the server refuses a request on purpose (Chromium logs the 400, answering `refused`, as an error)."""
    context = browser.new_context(base_url=live_server.url, **{"viewport": {"width": 1280, "height": 800}, **options})
    context.set_default_timeout(BROWSER_TIMEOUT_MS)
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        yield page
    finally:
        context.close()
    unexpected = [e for e in errors if not (refused and ("status of 400" in e or refused in e))]
    assert not unexpected, f"The browser reported errors: {unexpected}"


def _open(page, login, live_server, user, project, interview):
    login(page, user)
    page.goto(f"{live_server.url}/p/{project.uuid}/interviews/{interview.uuid}/code/")
    page.wait_for_selector("#transcript")


def test_a_name_archived_by_undo_is_offered_back_and_applying_it_brings_it_back(page, login, live_server, project, analyst,
                                                                               interview, participant_segments):
    s = participant_segments
    _open(page, login, live_server, analyst, project, interview)
    page.keyboard.press("j")
    page.keyboard.press("c")
    page.keyboard.type("home as habit")
    page.keyboard.press("Enter")
    expect(page.locator(f"#chips-{s[0].pk} .chip")).to_have_count(1)
    page.keyboard.press("u")
    expect(page.locator("#ws-status")).to_contain_text("archived the new code “home as habit”")
    code = Code.objects.get(name="home as habit")
    assert code.archived

    page.keyboard.press("c")
    page.keyboard.type("Home as  habit")  # as the server compares names: case and spaces aside
    picker = page.locator("#picker-list")
    expect(picker.locator("li.bring-back")).to_have_text("“home as habit” is archived: bring it back into use and apply it")
    expect(picker.locator("li.create")).to_have_count(0)
    page.keyboard.press("Enter")

    expect(page.locator(f"#chips-{s[0].pk} .chip")).to_have_count(1)
    expect(page.locator("#ws-status")).to_have_text("Applied “home as habit” on 1 segment.")
    code.refresh_from_db()
    assert not code.archived and Code.objects.count() == 1
    assert Coding.objects.filter(code=code, segment=s[0], coder=analyst).exists()
    assert CodeEvent.objects.filter(code=code, action=CodeEvent.Action.UNARCHIVED).exists()
    # Back in the panel and the filter, as in use.
    expect(page.locator(f"#code-list-panel .code-row[data-code='{code.pk}']")).to_be_visible()
    expect(page.locator(f"#filter-code option[value='{code.pk}']")).to_have_count(1)


def test_a_merged_codes_name_leads_to_the_code_it_went_into(page, login, live_server, project, analyst, interview,
                                                            participant_segments, make_code):
    from coding.services import code_merge

    source, target = make_code("Advice list"), make_code("Deference")
    code_merge(source=source, target=target, actor=analyst)
    _open(page, login, live_server, analyst, project, interview)
    page.keyboard.press("j")
    page.keyboard.press("c")
    page.keyboard.type("advice list")
    item = page.locator("#picker-list li[data-index]").last
    expect(item).to_contain_text("Deference")
    expect(item).to_contain_text("“Advice list” was merged into it")
    expect(page.locator("#picker-list li.create, #picker-list li.bring-back")).to_have_count(0)
    item.click()
    expect(page.locator(f"#chips-{participant_segments[0].pk} .chip")).to_have_count(1)
    assert list(Coding.objects.values_list("code_id", flat=True)) == [target.pk]
    source.refresh_from_db()
    assert source.archived


def test_a_code_a_colleague_merges_after_the_page_loaded_leads_to_the_code_it_went_into(
        page, login, live_server, project, owner, analyst, interview, participant_segments, make_code):
    from coding.services import code_merge

    source, target = make_code("Advice list"), make_code("Deference")
    login(page, analyst)
    page.goto(f"{live_server.url}/p/{project.uuid}/interviews/{interview.uuid}/code/?poll=1")
    page.wait_for_selector("#transcript")
    code_merge(source=source, target=target, actor=owner)
    expect(page.locator(f"#filter-code option[value='{source.pk}']")).to_have_count(0)  # the page polls
    page.keyboard.press("j")
    page.keyboard.press("c")
    page.keyboard.type("advice list")
    item = page.locator("#picker-list li[data-index]").last
    expect(item).to_contain_text("“Advice list” was merged into it")
    expect(page.locator("#picker-list li.create, #picker-list li.bring-back")).to_have_count(0)
    item.click()
    expect(page.locator(f"#chips-{participant_segments[0].pk} .chip")).to_have_count(1)
    assert list(Coding.objects.values_list("code_id", flat=True)) == [target.pk]


def test_a_refused_name_stays_in_the_picker_with_the_reason_and_the_input_holds_at_most_the_limit(
        browser, login, live_server, project, owner, analyst, interview, participant_segments):
    with _own_page(browser, live_server, refused="/create-code/") as page:
        _refused_name_stays(page, login, live_server, project, owner, analyst, interview)


def _refused_name_stays(page, login, live_server, project, owner, analyst, interview):
    _open(page, login, live_server, analyst, project, interview)
    page.keyboard.press("j")
    page.keyboard.press("c")
    page.keyboard.type("y" * 300)
    expect(page.locator("#picker-input")).to_have_value("y" * 200)  # maxlength: the model field's 200
    page.locator("#picker-input").fill("")
    # A colleague takes the name after this page loaded (straight into the database: no live event, no poll yet).
    Code.objects.create(project=project, name="Late name", created_by=owner)
    page.keyboard.type("Late name")
    expect(page.locator("#picker-list li.create")).to_contain_text("Create “Late name”")
    page.keyboard.press("Enter")

    expect(page.locator("#picker")).to_have_attribute("open", "")
    expect(page.locator("#picker-error")).to_have_text("There is already a code named “Late name” in this project.")
    expect(page.locator("#picker-input")).to_have_value("Late name")
    expect(page.locator("#picker-input")).to_be_focused()
    assert Code.objects.count() == 1 and not Coding.objects.exists()


def test_by_mouse_code_a_sentence_with_the_code_button_and_remove_it_with_the_chips_button(
        page, login, live_server, project, analyst, interview, participant_segments, make_code):
    s = participant_segments
    make_code("Trust")
    _open(page, login, live_server, analyst, project, interview)
    sentence = page.locator(f"#s-{s[1].pk}")
    sentence.locator(".st").click()
    expect(sentence).to_have_class(re.compile(r"\bsel\b"))
    code_button = page.get_by_role("button", name="Code…", exact=True)
    code_button.click()
    expect(page.locator("#picker")).to_have_attribute("open", "")
    page.locator("#picker-input").fill("Quiet dissent")
    page.locator("#picker-list li.create").click()
    expect(page.locator(f"#chips-{s[1].pk} .chip")).to_have_count(1)
    expect(code_button).to_be_focused()  # back where the picker was opened from
    code_button.click()
    page.locator("#picker-list li[data-index]", has_text="Trust").click()
    expect(page.locator(f"#chips-{s[1].pk} .chip")).to_have_count(2)
    assert Coding.objects.filter(segment=s[1], coder=analyst).count() == 2

    # Remove one: focus moves to the sentence's other remove button, for the next click or Enter.
    page.get_by_role("button", name="Remove Quiet dissent from this sentence").click()
    expect(page.locator(f"#chips-{s[1].pk} .chip")).to_have_count(1)
    expect(page.get_by_role("button", name="Remove Trust from this sentence")).to_be_focused()
    assert list(Coding.objects.filter(segment=s[1]).values_list("code__name", flat=True)) == ["Trust"]
    # The keyboard works it too: Enter on the focused button; with none left, the sentence is selected.
    page.keyboard.press("Enter")
    expect(page.locator(f"#chips-{s[1].pk} .chip")).to_have_count(0)
    expect(page.locator("#transcript")).to_be_focused()
    expect(sentence).to_have_class(re.compile(r"\bcur\b"))
    assert not Coding.objects.exists()


def test_only_ones_own_chips_have_a_remove_button_and_a_viewer_has_none(page, login, live_server, project, owner, analyst,
                                                                        viewer, interview, participant_segments,
                                                                        make_code):
    s = participant_segments
    trust = make_code("Trust")
    Coding.objects.create(segment=s[0], code=trust, coder=owner, interview=interview)
    Coding.objects.create(segment=s[0], code=trust, coder=analyst, interview=interview)
    _open(page, login, live_server, analyst, project, interview)
    expect(page.locator(f"#chips-{s[0].pk} .chip")).to_have_count(2)
    expect(page.locator(f"#chips-{s[0].pk} .chip-x")).to_have_count(1)
    expect(page.locator(f"#chips-{s[0].pk} .chip.mine .chip-x")).to_have_count(1)
    page.context.clear_cookies()
    Coding.objects.create(segment=s[1], code=trust, coder=viewer, interview=interview)  # from when they were an analyst
    _open(page, login, live_server, viewer, project, interview)
    expect(page.locator(f"#chips-{s[1].pk} .chip.mine")).to_have_count(1)
    expect(page.locator(".chip-x")).to_have_count(0)
    expect(page.get_by_role("button", name="Code…", exact=True)).to_have_count(0)
    expect(page.get_by_role("button", name="New code…", exact=True)).to_have_count(0)


def test_on_a_phone_create_apply_and_remove_a_code_by_touch(browser, login, live_server, project, analyst, interview,
                                                            participant_segments):
    s = participant_segments
    with _own_page(browser, live_server, viewport=PHONE, has_touch=True, is_mobile=True) as page:
        _open(page, login, live_server, analyst, project, interview)
        # A code before any sentence is chosen: "New code…" opens the picker to create one.
        page.get_by_role("button", name="New code…", exact=True).tap()
        expect(page.locator("#picker-label")).to_have_text("Create a code (to apply one, select sentences first)")
        assert page.evaluate(NO_SIDEWAYS_SCROLL)  # the picker fits the phone
        page.locator("#picker-input").fill("Tapped code")
        page.locator("#picker-kind").tap()  # no Tab key on a phone: a tap sets the kind
        expect(page.locator("#picker-list li.create")).to_have_text("Create “Tapped code” (latent)")
        page.locator("#picker-list li.create").tap()
        expect(page.locator("#ws-status")).to_contain_text("Created “Tapped code”")
        code = Code.objects.get(name="Tapped code")
        assert code.kind == "latent" and not Coding.objects.exists()

        sentence = page.locator(f"#s-{s[-1].pk}")
        sentence.scroll_into_view_if_needed()
        sentence.locator(".st").tap()
        expect(sentence).to_have_class(re.compile(r"\bsel\b"))
        page.get_by_role("button", name="Code…", exact=True).tap()
        page.locator("#picker-list li[data-index]", has_text="Tapped code").tap()
        expect(page.locator(f"#chips-{s[-1].pk} .chip")).to_have_count(1)
        assert Coding.objects.filter(code=code, segment=s[-1], coder=analyst).exists()

        remove = page.get_by_role("button", name="Remove Tapped code from this sentence")
        box = remove.bounding_box()
        assert box["width"] >= 24 and box["height"] >= 24  # a finger's target (WCAG 2.5.8)
        remove.tap()
        expect(page.locator(f"#chips-{s[-1].pk} .chip")).to_have_count(0)
        assert not Coding.objects.exists()
        assert page.evaluate(NO_SIDEWAYS_SCROLL)


def test_a_live_interview_says_to_end_it_in_the_browser(page, login, live_server, project, owner):
    from conduct.models import ConductSession, Seat
    from conduct.services import guide_create
    from interviews.models import Interview, Participant, Turn

    guide = guide_create(project=project, user=owner, name="Values", opening_prompt="What is fair?",
                         system_prompt="Research interview.", planned_questions=[])
    session = ConductSession.objects.create(project=project, guide_version=guide.versions.get(), created_by=owner)
    participant = Participant.objects.create(project=project, label="GPT live", is_live=True)
    interview = Interview.objects.create(project=project, participant=participant, title="Values — GPT live",
                                         origin=Interview.Origin.LIVE, status=Interview.Status.IN_PROGRESS)
    Seat.objects.create(session=session, interview=interview, position=0)
    Turn.objects.create(interview=interview, position=0, speaker="interviewer", text="What is fair?")
    Turn.objects.create(interview=interview, position=1, speaker="participant", text="Equal treatment.")
    login(page, owner)
    page.goto(f"{live_server.url}/p/{project.uuid}/codebook/")
    row = page.locator("#interview-progress tr", has_text="Values — GPT live")
    expect(row).to_contain_text("in progress")
    row.get_by_role("link", name="Values — GPT live").click()
    expect(page.get_by_role("status").filter(has_text="still being conducted")).to_contain_text(
        "This interview is still being conducted: end it to code it.")
    expect(page.locator(".transcript")).to_contain_text("Equal treatment.")
    page.get_by_role("link", name="Open the live interview to end it").click()
    page.wait_for_url(re.compile(rf"/conduct/s/{session.uuid}/$"))


def test_a_code_a_colleague_archives_or_brings_back_changes_in_the_picker_without_reloading(
        page, login, live_server, project, owner, analyst, interview, make_code):
    from coding.services import code_archive

    retired, kept = make_code("Retired idea"), make_code("Kept idea")
    code_archive(code=retired, actor=owner)
    login(page, analyst)
    page.goto(f"{live_server.url}/p/{project.uuid}/interviews/{interview.uuid}/code/?poll=1")
    page.wait_for_selector("#transcript")
    code_archive(code=retired, actor=owner, archived=False)
    code_archive(code=kept, actor=owner)
    expect(page.locator(f"#filter-code option[value='{retired.pk}']")).to_have_count(1)  # the page polls
    expect(page.locator(f"#filter-code option[value='{kept.pk}']")).to_have_count(0)

    page.keyboard.press("j")
    page.keyboard.press("c")
    page.keyboard.type("Retired idea")
    expect(page.locator("#picker-list li.active")).to_have_text(re.compile(r"^\s*Retired idea"))
    page.locator("#picker-input").fill("Kept idea")
    expect(page.locator("#picker-list li.bring-back")).to_contain_text("“Kept idea” is archived")
