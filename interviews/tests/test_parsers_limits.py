"""Every JSON transcript format refuses deep nesting and overlong numbers by line and column, imports a file
nested just under the limit, and names where a broken file breaks (issues 21 and 15)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from interviews.parsers import ParseError, SourceFile, parse_upload
from projects.safejson import MAX_DEPTH

QUESTION, ANSWER = "Tell me about trust.", "Trust is earned."


def chatgpt(extra: str) -> tuple[str, str]:
    conv = {"title": "t", "id": "c1", "current_node": "a", "mapping": {
        "q": {"id": "q", "parent": None, "children": ["a"], "message": {
            "id": "q", "author": {"role": "user"}, "content": {"content_type": "text", "parts": [QUESTION]}}},
        "a": {"id": "a", "parent": "q", "children": [], "message": {
            "id": "a", "author": {"role": "assistant"}, "content": {"content_type": "text", "parts": [ANSWER]},
            "metadata": {"extra": "EXTRA"}}}}}
    return "conversations.json", json.dumps([conv]).replace('"EXTRA"', extra)


def claude(extra: str) -> tuple[str, str]:
    conv = {"uuid": "c1", "name": "t", "extra": "EXTRA", "chat_messages": [
        {"uuid": "m1", "sender": "human", "text": QUESTION}, {"uuid": "m2", "sender": "assistant", "text": ANSWER}]}
    return "conversations.json", json.dumps([conv]).replace('"EXTRA"', extra)


def openai(extra: str) -> tuple[str, str]:
    chat = {"messages": [{"role": "user", "content": QUESTION}, {"role": "assistant", "content": ANSWER}], "extra": "EXTRA"}
    return "chat.json", json.dumps(chat, indent=1).replace('"EXTRA"', extra)


def openai_jsonl(extra: str) -> tuple[str, str]:
    first = {"messages": [{"role": "user", "content": "Hello?"}, {"role": "assistant", "content": "Hi."}]}
    return "chats.jsonl", json.dumps(first) + "\n" + openai(extra)[1].replace("\n", "") + "\n"


def sharegpt(extra: str) -> tuple[str, str]:
    conv = {"id": "s1", "extra": "EXTRA", "conversations": [{"from": "human", "value": QUESTION}, {"from": "gpt", "value": ANSWER}]}
    return "sharegpt.json", json.dumps([conv]).replace('"EXTRA"', extra)


FORMATS: dict[str, Callable[[str], tuple[str, str]]] = {
    "chatgpt": chatgpt, "claude": claude, "openai": openai, "openai-jsonl": openai_jsonl, "sharegpt": sharegpt,
}


def parse(name: str, text: str) -> list:
    return list(parse_upload(SourceFile.from_bytes(name, text.encode())))


def nested(levels: int) -> str:
    return "[" * levels + "]" * levels


def _depth(value) -> int:
    if isinstance(value, dict | list):
        children = value.values() if isinstance(value, dict) else value
        return 1 + max(map(_depth, children), default=0)
    return 0


def name_of(make: Callable[[str], tuple[str, str]]) -> str:
    return make("1")[0]


def levels_to_reach(make: Callable[[str], tuple[str, str]], total: int) -> int:
    """How deep the extra value must be for the whole file to be nested `total` levels."""
    probe = 50  # deeper than anything else in the file, so the extra value is the deepest part
    _, text = make(nested(probe))
    values = [json.loads(line) for line in text.splitlines()] if name_of(make).endswith(".jsonl") else [json.loads(text)]
    deepest = max(map(_depth, values))
    return total - (deepest - probe)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_file_nested_just_under_the_limit_imports(fmt):
    make = FORMATS[fmt]
    name, text = make(nested(levels_to_reach(make, MAX_DEPTH)))
    convs = parse(name, text)
    assert [t.text for t in convs[-1].turns] == [QUESTION, ANSWER]


@pytest.mark.parametrize("fmt", FORMATS)
def test_one_level_deeper_is_refused_naming_the_line_and_column(fmt):
    make = FORMATS[fmt]
    name, text = make(nested(levels_to_reach(make, MAX_DEPTH + 1)))
    with pytest.raises(ParseError) as e:
        parse(name, text)
    line = text.count("\n", 0, text.index("[" * 2)) + 1
    assert str(e.value).startswith(f"{name}: line {line}, column ")
    assert f"found data nested deeper than {MAX_DEPTH} levels" in str(e.value)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_5000_digit_integer_is_refused_naming_the_line_and_column(fmt):
    name, text = FORMATS[fmt]("9" * 5000)
    with pytest.raises(ParseError) as e:
        parse(name, text)
    offset = text.index("9" * 5000)
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    assert str(e.value) == (f"{name}: line {line}, column {column}: expected numbers of at most 1000 digits, "
                            "found a number longer than 1000 digits")


@pytest.mark.parametrize("text", ['[{"title": "Trust", "create_time": 17000', '{"messages": [{"role": "user", "content": "Hi"}'],
                         ids=["truncated before any format key", "truncated after one"])
def test_a_truncated_json_file_is_reported_as_not_valid_json_where_it_breaks(text):
    with pytest.raises(ParseError, match=r"^export\.json: line 1, column \d+: expected valid JSON, found '"):
        parse("export.json", text)


def test_json_without_known_keys_is_still_named_as_such():
    with pytest.raises(ParseError, match="found JSON without 'mapping', 'chat_messages', 'role' or 'from' keys"):
        parse("other.json", json.dumps({"hello": "world"}))
