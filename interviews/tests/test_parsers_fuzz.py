"""Any input gets conversations or a ParseError, never a crash (TypeError, KeyError, ...)."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from interviews.models import Speaker
from interviews.parsers import FORMATS, ParseError, SourceFile, parse_upload

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20) | st.sampled_from(["user", "assistant", "human", "gpt", "text", "all", "m1"]),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(
        st.sampled_from(["mapping", "current_node", "message", "parent", "children", "author", "role", "content",
                         "parts", "content_type", "chat_messages", "sender", "text", "type", "uuid", "messages",
                         "conversations", "from", "value", "metadata", "model_slug", "recipient", "id", "title",
                         "parent_message_uuid", "create_time", "name"]),
        children, max_size=6),
    max_leaves=25,
)


def parse_all(name: str, data: bytes, fmt: str) -> None:
    try:
        for conv in parse_upload(SourceFile.from_bytes(name, data), format=fmt):
            for turn in conv.turns:
                assert turn.speaker in Speaker.values
                assert isinstance(turn.text, str) and turn.text.strip()
    except ParseError as e:
        assert "\n" not in str(e) and str(e).startswith(name)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=json_values, fmt=st.sampled_from(["auto", "chatgpt", "claude", "openai", "sharegpt"]))
def test_any_json_is_parsed_or_refused_clearly(value, fmt):
    parse_all("data.json", json.dumps(value).encode(), fmt)


@settings(max_examples=150, deadline=None)
@given(text=st.text(max_size=300), fmt=st.sampled_from(["auto", *FORMATS]))
def test_any_text_is_parsed_or_refused_clearly(text, fmt):
    parse_all("data.txt", text.encode("utf-8", "surrogatepass"), fmt)


@settings(max_examples=100, deadline=None)
@given(data=st.binary(max_size=200), name=st.sampled_from(["a.csv", "a.xlsx", "a.zip", "a.md", "a.jsonl"]))
def test_any_bytes_are_parsed_or_refused_clearly(data, name):
    parse_all(name, data, "auto")


@given(turns=st.lists(st.tuples(st.sampled_from(["User", "Assistant"]),
                                st.text(st.characters(blacklist_categories=["Cs", "Cc", "Zl", "Zp"]), min_size=1, max_size=40)
                                .filter(lambda t: t.strip() and t == t.strip())),
                      min_size=1, max_size=8))
def test_text_transcripts_round_trip(turns):
    text = "".join(f"{label}: {body}\n" for label, body in turns)
    (conv,) = list(parse_upload(SourceFile.from_bytes("t.txt", text.encode()), format="text"))
    assert [(t.label, t.text) for t in conv.turns] == turns


ids = st.sampled_from(["n1", "n2", "n3", "n4"])
nodes = st.fixed_dictionaries({
    "message": st.one_of(st.none(), json_values, st.fixed_dictionaries({
        "author": st.one_of(json_values, st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "tool", "system"]) | json_values})),
        "content": st.one_of(json_values, st.fixed_dictionaries({
            "content_type": st.sampled_from(["text", "multimodal_text", "code", "thoughts"]) | json_values,
            "parts": st.lists(json_values | st.text(max_size=10), max_size=3) | json_values})),
        "recipient": st.sampled_from(["all", "python"]) | json_values,
        "metadata": json_values, "create_time": json_values})),
    "parent": st.one_of(st.none(), ids, json_values),
    "children": st.lists(ids, max_size=3) | json_values,
})
messages = st.fixed_dictionaries({
    "uuid": ids | json_values, "sender": st.sampled_from(["human", "assistant"]) | json_values,
    "text": json_values, "content": st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": json_values}), max_size=2)
    | json_values, "parent_message_uuid": ids | json_values, "attachments": json_values,
})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mapping=st.dictionaries(ids, nodes, max_size=4), current=st.one_of(st.none(), ids, json_values), title=json_values)
def test_any_chatgpt_shaped_export_is_parsed_or_refused_clearly(mapping, current, title):
    conv = {"title": title, "mapping": mapping, "id": "c"}
    if current is not None:
        conv["current_node"] = current
    parse_all("conversations.json", json.dumps([conv]).encode(), "chatgpt")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(msgs=st.lists(messages, max_size=4), leaf=st.one_of(st.none(), ids, json_values), name=json_values)
def test_any_claude_shaped_export_is_parsed_or_refused_clearly(msgs, leaf, name):
    conv = {"uuid": "c", "name": name, "chat_messages": msgs}
    if leaf is not None:
        conv["current_leaf_message_uuid"] = leaf
    parse_all("conversations.json", json.dumps([conv]).encode(), "claude")
