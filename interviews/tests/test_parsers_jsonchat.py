"""OpenAI chat-messages and ShareGPT files, JSON and JSON Lines."""

from __future__ import annotations

import json

import pytest

from interviews.parsers import ParseError, SourceFile, detect_format, parse_upload


def parse(name: str, data: bytes, fmt: str = "auto") -> list:
    return list(parse_upload(SourceFile.from_bytes(name, data), format=fmt))


OPENAI = {"model": "gpt-4o-2024-08-06", "messages": [
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "Tell me about trust."},
    {"role": "assistant", "content": [{"type": "text", "text": "Trust is "}, {"type": "text", "text": "earned."}]},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "x"}]},
    {"role": "tool", "content": "{}"},
    {"role": "user", "content": "Why?"},
    {"role": "assistant", "content": "Because.", "model": "gpt-4o-mini"},
]}


def test_openai_json_object():
    src = SourceFile.from_bytes("chat.json", json.dumps(OPENAI).encode())
    assert detect_format(src) == "openai"
    (conv,) = parse("chat.json", json.dumps(OPENAI).encode())
    assert [t.speaker for t in conv.turns] == ["system", "interviewer", "participant",
                                               "interviewer", "participant"]
    assert conv.turns[2].text == "Trust is \n\nearned."
    assert conv.model_slugs == ["gpt-4o-2024-08-06", "gpt-4o-mini"]
    assert conv.turns[4].metadata["model"] == "gpt-4o-mini"


def test_openai_jsonl_and_bare_list():
    lines = "\n".join(json.dumps(OPENAI) for _ in range(3)) + "\n"
    convs = parse("batch.jsonl", lines.encode())
    assert len(convs) == 3 and all(len(c.turns) == 5 for c in convs)
    assert convs[2].metadata["location"] == "line 3"
    (conv,) = parse("list.json", json.dumps(OPENAI["messages"]).encode())
    assert len(conv.turns) == 5


def test_openai_bad_line_is_named():
    lines = json.dumps(OPENAI) + "\n" + json.dumps(OPENAI)[:-5] + "\n"
    with pytest.raises(ParseError, match=r"^batch\.jsonl: line 2, column \d+: expected one JSON object per line"):
        parse("batch.jsonl", lines.encode())


def test_openai_bad_role_is_named():
    bad = {"messages": [{"role": "user", "content": "hi"}, {"role": "bot", "content": "x"}]}
    with pytest.raises(ParseError) as exc:
        parse("chat.json", json.dumps(bad).encode())
    assert str(exc.value) == ("chat.json: top level, message 2, field 'role': expected one of "
                              "user, assistant, system, tool, found the text 'bot'")


def test_openai_content_of_wrong_type_is_named():
    bad = {"messages": [{"role": "user", "content": 42}]}
    with pytest.raises(ParseError, match="message 1, field 'content': expected text or a list"):
        parse("chat.json", json.dumps(bad).encode())


SHAREGPT = [
    {"id": "abc", "model": "vicuna-13b", "conversations": [
        {"from": "system", "value": "Be brief."},
        {"from": "human", "value": "Hello"},
        {"from": "gpt", "value": "Hi there."},
        {"from": "user", "value": "Bye"},
        {"from": "bard", "value": "Goodbye."},
    ]},
    {"id": "def", "conversations": [{"from": "human", "value": "Q"}, {"from": "chatgpt", "value": "A"}]},
]


def test_sharegpt_json_list():
    assert detect_format(SourceFile.from_bytes("s.json", json.dumps(SHAREGPT).encode())) == "sharegpt"
    convs = parse("s.json", json.dumps(SHAREGPT).encode())
    assert [c.external_id for c in convs] == ["abc", "def"]
    assert [t.speaker for t in convs[0].turns] == ["system", "interviewer", "participant",
                                                   "interviewer", "participant"]
    assert convs[0].model_slugs == ["vicuna-13b"]
    assert convs[0].turns[2].metadata == {"from": "gpt", "model": "vicuna-13b"}


def test_sharegpt_jsonl():
    data = "\n".join(json.dumps(c) for c in SHAREGPT).encode()
    convs = parse("s.jsonl", data)
    assert [len(c.turns) for c in convs] == [5, 2]


def test_sharegpt_missing_value_is_named():
    bad = json.loads(json.dumps(SHAREGPT))
    del bad[1]["conversations"][1]["value"]
    with pytest.raises(ParseError) as exc:
        parse("s.json", json.dumps(bad).encode())
    assert str(exc.value) == ("s.json: conversation 2 (id def), message 2, field 'value': "
                              "expected text, found null")


def test_unrecognised_json_is_named():
    with pytest.raises(ParseError, match="expected a ChatGPT or Claude export"):
        parse("other.json", json.dumps({"hello": "world"}).encode())


def test_forced_format_that_does_not_fit_is_named():
    with pytest.raises(ParseError, match="expected an object with a 'messages' list"):
        parse("s.json", json.dumps(SHAREGPT).encode(), fmt="openai")
