"""Plain-text transcripts with speaker labels, and Markdown exports."""

from __future__ import annotations

import pytest

from interviews.parsers import ParseError, SourceFile, detect_format, parse_upload


def parse(name: str, text: str) -> list:
    return list(parse_upload(SourceFile.from_bytes(name, text.encode())))


TRANSCRIPT = """Interview with a chatbot, 3 March 2025
Note: recorded in the web interface.

User: How do you define trust?
GPT-4o: Trust is a willingness to rely on someone.

It has layers:
Note: this is my own framing.
- cognitive
- affective

User: When did you start at 10:30?
GPT-4o: I do not start; see https://example.org for details.
"""


def test_labels_start_turns_but_notes_links_and_times_do_not():
    (conv,) = parse("interview.txt", TRANSCRIPT)
    assert [t.label for t in conv.turns] == ["User", "GPT-4o", "User", "GPT-4o"]
    assert [t.speaker for t in conv.turns] == ["interviewer", "participant"] * 2
    assert conv.turns[1].text == ("Trust is a willingness to rely on someone.\n\nIt has layers:\n"
                                  "Note: this is my own framing.\n- cognitive\n- affective")
    assert conv.turns[2].text == "When did you start at 10:30?"
    assert conv.speaker_labels == {"User": "interviewer", "GPT-4o": "participant"}
    assert conv.model_slugs == ["GPT-4o"]
    assert conv.metadata["preamble"].startswith("Interview with a chatbot")
    assert conv.turns[1].metadata["line"] == 5
    assert conv.title == "interview"


def test_bold_bracketed_and_q_a_labels():
    text = "**Q:** First?\n**A:** Yes.\n[Q] Second?\n[A] No.\n"
    (conv,) = parse("qa.txt", text)
    assert [(t.label, t.speaker, t.text) for t in conv.turns] == [
        ("Q", "interviewer", "First?"), ("A", "participant", "Yes."),
        ("Q", "interviewer", "Second?"), ("A", "participant", "No.")]


def test_unknown_labels_count_only_when_they_repeat_and_can_be_remapped():
    text = "Alice: hi\nBob: hello\nAlice: how are you\nBob: fine\nCarol: once\n"
    (conv,) = parse("names.txt", text)
    assert [t.label for t in conv.turns] == ["Alice", "Bob", "Alice", "Bob"]
    assert conv.turns[-1].text == "fine\nCarol: once"
    assert conv.speaker_labels == {"Alice": "interviewer", "Bob": "participant"}
    conv.apply_label_map({"Alice": "participant", "Bob": "interviewer"})
    assert [t.speaker for t in conv.turns] == ["participant", "interviewer"] * 2
    with pytest.raises(ValueError, match="must be one of interviewer, participant, system, text"):
        conv.apply_label_map({"Alice": "moderator"})


def test_copied_chat_window_labels():
    (conv,) = parse("copied.txt", "You said:\nWhat is trust?\nChatGPT said:\nTrust is reliance.\n")
    assert [(t.label, t.speaker, t.text) for t in conv.turns] == [
        ("You said", "interviewer", "What is trust?"), ("ChatGPT said", "participant", "Trust is reliance.")]
    assert conv.model_slugs == ["ChatGPT"]


def test_a_label_marked_not_a_speaker_folds_back_into_the_answer():
    text = ("User: Which option?\nGPT-4o: Two options.\n\nOption A: cheap\nUser: And the other?\n"
            "GPT-4o: See below.\nOption A: still cheap\n")
    (conv,) = parse("options.txt", text)
    assert "Option A" in conv.speaker_labels  # it repeats, so it looks like a speaker
    conv.apply_label_map({"Option A": "text"})
    assert [(t.label, t.text) for t in conv.turns] == [
        ("User", "Which option?"), ("GPT-4o", "Two options.\n\nOption A: cheap"),
        ("User", "And the other?"), ("GPT-4o", "See below.\nOption A: still cheap")]
    assert conv.speaker_labels == {"User": "interviewer", "GPT-4o": "participant"}


def test_markdown_heading_marked_not_a_speaker_folds_back():
    md = "## User:\nQ\n## Answer:\nA\n## Answer:\nMore\n"
    (conv,) = parse("x.md", md)
    conv.apply_label_map({"Answer": "text", "User": "interviewer"})
    assert [(t.label, t.text) for t in conv.turns] == [("User", "Q\n## Answer:\nA\n## Answer:\nMore")]


def test_labels_inside_code_fences_are_text():
    text = "User: show code\nAssistant: Here:\n```\nUser: not a turn\n```\nDone.\n"
    (conv,) = parse("code.txt", text)
    assert len(conv.turns) == 2
    assert "User: not a turn" in conv.turns[1].text


def test_text_without_labels_is_refused_clearly():
    with pytest.raises(ParseError) as exc:
        parse("notes.txt", "Just some notes.\nNote: nothing here.\n")
    assert str(exc.value) == (
        "notes.txt: expected speaker labels at the start of lines, such as 'User:' and "
        "'Assistant:' or 'Q:' and 'A:', found no line that starts with a speaker label")


def test_text_that_is_not_utf8_names_the_line():
    data = b"User: ok\nAssistant: caf" + b"\xe9\n"
    with pytest.raises(ParseError) as exc:
        list(parse_upload(SourceFile.from_bytes("latin1.txt", data)))
    assert str(exc.value) == "latin1.txt: line 2: expected UTF-8 text, found byte 0xe9"


def test_utf16_text_from_windows_notepad():
    data = "User: Grüße\r\nAssistant: Hallo 👋\r\n".encode("utf-16")
    (conv,) = list(parse_upload(SourceFile.from_bytes("notepad.txt", data)))
    assert [t.text for t in conv.turns] == ["Grüße", "Hallo 👋"]


def test_crlf_and_byte_order_mark():
    data = b"\xef\xbb\xbfUser: Hi\r\nAssistant: Hello\r\nthere\r\n"
    (conv,) = list(parse_upload(SourceFile.from_bytes("win.txt", data)))
    assert [t.text for t in conv.turns] == ["Hi", "Hello\r\nthere"]


CHATGPT_MD = """---
title: Trust and machines
url: https://chat.openai.com/c/123
exported: 2025-03-01
---
# Trust and machines

#### You:
What is trust?

#### ChatGPT:
## Definition
Trust is reliance.

### Summary:
Short.

#### You:
And distrust?

#### ChatGPT:
The opposite.
"""

CLAUDE_MD = """# Chat

## 👤 User

Hello there

---

## 🤖 Claude

Hi! How can I help?

---

## 👤 User

Bye
"""


def test_markdown_headings_per_message_with_front_matter():
    src = SourceFile.from_bytes("chat.md", CHATGPT_MD.encode())
    assert detect_format(src) == "markdown"
    (conv,) = parse("chat.md", CHATGPT_MD)
    assert conv.title == "Trust and machines"
    assert conv.metadata["front_matter"]["url"] == "https://chat.openai.com/c/123"
    assert conv.metadata["front_matter"]["exported"] == "2025-03-01"
    assert [(t.label, t.speaker) for t in conv.turns] == [
        ("You", "interviewer"), ("ChatGPT", "participant"),
        ("You", "interviewer"), ("ChatGPT", "participant")]
    # Headings inside an answer stay in the answer.
    assert conv.turns[1].text == "## Definition\nTrust is reliance.\n\n### Summary:\nShort."
    assert conv.model_slugs == ["ChatGPT"]


def test_markdown_emoji_headings_and_rules_between_messages():
    (conv,) = parse("claude.md", CLAUDE_MD)
    assert [(t.label, t.text) for t in conv.turns] == [
        ("User", "Hello there"), ("Claude", "Hi! How can I help?"), ("User", "Bye")]
    assert conv.title == "Chat"


def test_markdown_in_a_txt_file_is_detected():
    assert detect_format(SourceFile.from_bytes("x.txt", CLAUDE_MD.encode())) == "markdown"


def test_markdown_with_bold_labels_falls_back_to_label_lines():
    (conv,) = parse("bold.md", "**You:** Hi\n\n**ChatGPT:** Hello\n")
    assert [(t.speaker, t.text) for t in conv.turns] == [("interviewer", "Hi"),
                                                         ("participant", "Hello")]
    assert conv.source_format == "markdown"


def test_markdown_without_speakers_is_refused():
    with pytest.raises(ParseError, match="^readme.md: expected speaker labels"):
        parse("readme.md", "# Title\n\nSome prose.\n")


@pytest.mark.parametrize(("name", "head", "said"), [
    ("screenshot.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "found a PNG image"),
    ("interview.pdf", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", "found a PDF document (copy its text into a .txt or .md file)"),
    ("notes.doc", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1\x00", "found an old Word or Excel file"),
])
def test_a_file_that_is_no_transcript_is_named_for_what_it_is(name, head, said):
    with pytest.raises(ParseError) as caught:
        list(parse_upload(SourceFile.from_bytes(name, head + b"\x00" * 64)))
    assert said in str(caught.value) and "expected a transcript: text, Markdown" in str(caught.value)


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_an_answer_that_opens_indented_keeps_its_indentation(newline):
    """An answer may open with an indented code block or a nested list: its first line keeps its indentation, as the
    Markdown it is (four spaces make code), while the blank lines and the spaces after the label go."""
    text = newline.join(["User: Show me.", "Assistant:", "", "    print('hi')", "    print('there')", "",
                         "That prints two lines.  ", "", "User:   Thanks.", ""])
    (conv,) = parse("code.txt", text)
    assert [t.text for t in conv.turns] == [
        "Show me.", newline.join(["    print('hi')", "    print('there')", "", "That prints two lines."]), "Thanks."]


def test_a_markdown_message_that_opens_indented_keeps_its_indentation():
    md = "## User\n\nShow me.\n\n---\n\n## Assistant\n\n    print('hi')\n\nThat prints.\n\n---\n"
    (conv,) = parse("x.md", md)
    assert [t.text for t in conv.turns] == ["Show me.", "    print('hi')\n\nThat prints."]
    conv.apply_label_map({"Assistant": "text", "User": "interviewer"})  # folded back: the same text, under the question
    assert conv.turns[0].text.endswith("## Assistant\n\n    print('hi')\n\nThat prints.\n\n---")
