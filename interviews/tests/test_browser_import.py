"""The upload flow in a real browser: drop files, tick conversations, map speakers, see the summary."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from interviews.models import Interview, Turn

SAMPLES = Path(__file__).resolve().parents[3] / "shared" / "samples"
CLAUDE = SAMPLES / "claude" / "claude-history-synthetic-conversations.json"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DROP = """([name, text]) => {
  const data = new DataTransfer();
  data.items.add(new File([text], name, {type: "application/octet-stream"}));
  const zone = document.getElementById("dropzone");
  zone.dispatchEvent(new DragEvent("dragover", {dataTransfer: data, bubbles: true, cancelable: true}));
  zone.dispatchEvent(new DragEvent("drop", {dataTransfer: data, bubbles: true, cancelable: true}));
}"""


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path


def test_drop_a_claude_export_tick_two_and_import(page, login, live_server, project, analyst):
    login(page, analyst)
    page.goto(f"{live_server.url}/p/{project.uuid}/interviews/import/")
    page.evaluate(DROP, ["conversations.json", CLAUDE.read_text()])
    expect(page.locator("#file-list")).to_contain_text("conversations.json")
    page.get_by_role("button", name="Upload and preview").click()

    rows = page.locator("#conversation-list tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.nth(0)).to_contain_text("Build a sortable data table in React")
    page.get_by_label("Debug a failing pytest fixture").uncheck()
    expect(page.locator("#new-participant-field")).to_be_hidden()
    page.get_by_label("Interviewed chatbot").select_option("new")
    page.get_by_label("Label of the new participant").fill("Claude 3.5 Sonnet")
    page.get_by_role("button", name="Import ticked conversations").click()

    expect(page.locator("#import-summary")).to_contain_text("2 interviews imported")
    expect(page.locator("#import-summary")).to_contain_text("New participant: Claude 3.5 Sonnet")
    assert sorted(Interview.objects.values_list("title", flat=True)) == [
        "Build a sortable data table in React", "Explain async/await vs Promises"]


def test_text_transcript_maps_speakers_with_the_keyboard(page, login, live_server, project, analyst, tmp_path):
    transcript = tmp_path / "interview.txt"
    transcript.write_text("Researcher: How do you feel today?\nBot-7: I do not have feelings.\n"
                          "Researcher: Say more.\nBot-7: I process text.\n")
    login(page, analyst)
    page.goto(f"{live_server.url}/p/{project.uuid}/interviews/import/")
    page.set_input_files("#id_files", str(transcript))
    page.keyboard.press("Tab")
    page.get_by_role("button", name="Upload and preview").press("Enter")
    page.wait_for_selector("#conversation-list")
    # Researcher is a known interviewer word; Bot-7 only repeats, guessed as the chatbot.
    expect(page.get_by_label("Researcher is the")).to_have_value("interviewer")
    expect(page.get_by_label("Bot-7 is the")).to_have_value("participant")
    page.get_by_label("Bot-7 is the").select_option("participant")
    page.get_by_label("Interviewed chatbot").select_option("new")
    page.get_by_label("Label of the new participant").fill("Bot-7")
    page.get_by_role("button", name="Import ticked conversations").press("Enter")
    page.wait_for_selector("#import-summary")
    interview = Interview.objects.get()
    assert interview.participant.label == "Bot-7"
    assert list(Turn.objects.order_by("position").values_list("speaker", flat=True)) == [
        "interviewer", "participant", "interviewer", "participant"]
    assert json.loads(json.dumps(interview.metadata))["speaker_labels"] == {"Researcher": "interviewer", "Bot-7": "participant"}


def test_bad_file_shows_the_message_next_to_the_field(page, login, live_server, project, analyst, tmp_path):
    bad = tmp_path / "conversations.json"
    bad.write_text(CLAUDE.read_text()[:-30])
    login(page, analyst)
    page.goto(f"{live_server.url}/p/{project.uuid}/interviews/import/")
    page.set_input_files("#id_files", str(bad))
    page.get_by_role("button", name="Upload and preview").click()
    alert = page.get_by_role("alert")
    expect(alert).to_have_text(re.compile(r"^\s*conversations\.json: line "))
    assert Interview.objects.count() == 0


def test_filter_a_long_list_and_untick_what_is_shown(page, login, live_server, project, analyst, tmp_path):
    sample = json.loads((SAMPLES / "chatgpt" / "chatgpt2graph-conversations.json").read_text())[0]
    user_id = next(k for k, v in sample["mapping"].items() if v["message"] and v["message"]["author"]["role"] == "user")
    convs = []
    for i in range(12):
        c = json.loads(json.dumps(sample))
        c["id"] = c["conversation_id"] = f"c{i}"
        c["title"] = "Care plan" if i in (3, 7) else f"Trust {i}"
        c["mapping"][user_id]["message"]["content"]["parts"] = [f"Opening question {i}?"]
        convs.append(c)
    export = tmp_path / "conversations.json"
    export.write_text(json.dumps(convs))
    login(page, analyst)
    page.goto(f"{live_server.url}/p/{project.uuid}/interviews/import/")
    page.set_input_files("#id_files", str(export))
    page.get_by_role("button", name="Upload and preview").click()
    expect(page.locator("#conversation-list")).to_contain_text("Opening question 3?")
    page.get_by_label("Filter").fill("care")
    page.keyboard.press("Enter")  # must not submit the form
    expect(page.locator("#conversation-list tbody tr:visible")).to_have_count(2)
    page.get_by_role("button", name="Untick all shown").click()
    page.get_by_label("Filter").fill("")
    page.locator("#conversation-filter").dispatch_event("input")
    expect(page.locator("#conversation-list tbody tr:visible")).to_have_count(12)
    expect(page.locator("input[name=conversations]:checked")).to_have_count(10)
    page.get_by_role("button", name="Import ticked conversations").click()
    page.wait_for_selector("#import-summary")
    assert Interview.objects.count() == 10
    assert not Interview.objects.filter(title="Care plan").exists()


def test_a_qdpx_dropped_on_the_transcript_import_leads_to_import_a_project(page, login, live_server, project, analyst):
    qdpx = SAMPLES / "qdpx" / "qc-demo.qdpx"
    login(page, analyst)
    page.goto(f"{live_server.url}/p/{project.uuid}/interviews/import/")
    page.set_input_files("#id_files", str(qdpx))  # what a drop on the zone does (import.js)
    page.get_by_role("button", name="Upload and preview").click()
    page.wait_for_url(f"{live_server.url}/import/")
    assert "qc-demo.qdpx is a REFI-QDA project (.qdpx)" in page.locator(".messages").inner_text()
    assert page.get_by_role("heading", name="Import a project").is_visible()
    assert page.get_by_text("Who is speaking").count() == 0
