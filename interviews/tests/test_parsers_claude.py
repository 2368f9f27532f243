"""Claude export parser: text blocks only, the active branch of the message tree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from interviews.parsers import ParseError, SourceFile, detect_format, parse_upload

SAMPLE = (Path(__file__).resolve().parents[3] / "shared" / "samples" / "claude"
          / "claude-history-synthetic-conversations.json")
ROOT = "00000000-0000-4000-8000-000000000000"


def sample() -> list[dict]:
    return json.loads(SAMPLE.read_text())


def parse_json(data: object) -> list:
    return list(parse_upload(SourceFile.from_bytes("conversations.json", json.dumps(data).encode())))


def msg(uuid: str, sender: str, text: str, parent: str | None = None) -> dict:
    m = {"uuid": uuid, "sender": sender, "text": text, "created_at": "2026-01-01T10:00:00Z",
         "content": [{"type": "text", "text": text}]}
    if parent is not None:
        m["parent_message_uuid"] = parent
    return m


def test_sample_imports_every_conversation_with_text_blocks_only():
    convs = list(parse_upload(SourceFile.from_path(str(SAMPLE))))
    assert detect_format(SourceFile.from_path(str(SAMPLE))) == "claude"
    assert [c.title for c in convs] == ["Build a sortable data table in React",
                                        "Explain async/await vs Promises",
                                        "Debug a failing pytest fixture"]
    assert [len(c.turns) for c in convs] == [4, 2, 2]
    assert [t.speaker for t in convs[0].turns] == ["interviewer", "participant"] * 2
    assert all(c.model_slugs == [] for c in convs)  # the official export names no model
    answer = convs[0].turns[1].text
    assert answer.startswith("Here's a self-contained `ProductTable` component.")
    assert "The user wants a sortable table" not in answer  # thinking block dropped
    assert "export default" not in answer  # artifact source (tool_use) dropped
    assert convs[0].turns[1].metadata["artifacts"] == ["ProductTable.jsx"]
    assert convs[0].started_at.isoformat() == "2026-05-28T09:12:00+00:00"


def test_text_field_is_used_only_when_content_is_empty():
    m = msg("a", "assistant", "ignored")
    m["text"] = "thinking... The reply."
    m["content"] = [{"type": "thinking", "thinking": "thinking..."},
                    {"type": "text", "text": "The reply."}]
    plain = msg("b", "human", "")
    plain["content"] = []
    plain["text"] = "From the text field."
    (conv,) = parse_json([{"uuid": "c", "name": "", "chat_messages": [plain, m]}])
    assert [t.text for t in conv.turns] == ["From the text field.", "The reply."]


def test_parent_links_pick_the_active_leaf_branch():
    messages = [
        msg("q1", "human", "Question", ROOT),
        msg("a1", "assistant", "Old answer", "q1"),
        msg("a2", "assistant", "Retried answer", "q1"),
        msg("q2", "human", "Follow-up", "a2"),
        msg("a3", "assistant", "Final", "q2"),
    ]
    (conv,) = parse_json([{"uuid": "c", "name": "Tree", "chat_messages": messages}])
    assert [t.text for t in conv.turns] == ["Question", "Retried answer", "Follow-up", "Final"]
    assert conv.turns[1].metadata["branch"] == {"index": 1, "alternatives": 2}
    (conv,) = parse_json([{"uuid": "c", "name": "Tree", "chat_messages": messages,
                           "current_leaf_message_uuid": "a1"}])
    assert [t.text for t in conv.turns] == ["Question", "Old answer"]


def test_unknown_sender_is_named():
    data = sample()
    data[1]["chat_messages"][1]["sender"] = "robot"
    with pytest.raises(ParseError) as exc:
        parse_json(data)
    assert str(exc.value) == (
        "conversations.json: conversation 2 (id 22222222-2222-2222-2222-222222222222), "
        "message n2, field 'sender': expected 'human' or 'assistant', found the text 'robot'")


def test_missing_messages_list_is_named():
    data = sample()
    del data[2]["chat_messages"]
    with pytest.raises(ParseError) as exc:
        parse_json(data)
    assert "conversation 3 (id 33333333-3333-3333-3333-333333333333), field 'chat_messages': " \
           "expected a list of messages, found null" in str(exc.value)


def test_unknown_active_leaf_is_named():
    messages = [msg("q1", "human", "Q", ROOT), msg("a1", "assistant", "A", "q1")]
    with pytest.raises(ParseError, match="current_leaf_message_uuid': expected the uuid"):
        parse_json([{"uuid": "c", "chat_messages": messages, "current_leaf_message_uuid": "zz"}])


def test_truncated_sample_names_the_line():
    text = SAMPLE.read_text()[:-40]
    with pytest.raises(ParseError, match=r"^conversations\.json: line \d+, column \d+: expected valid JSON"):
        list(parse_upload(SourceFile.from_bytes("conversations.json", text.encode())))
