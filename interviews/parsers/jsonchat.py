"""OpenAI chat messages and ShareGPT files, as JSON or JSON Lines."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from .base import (
    Limits,
    ParsedConversation,
    ParsedTurn,
    ParseError,
    SourceFile,
    as_str,
    check_conversation_count,
    check_json_values,
    conv_location,
    describe,
    json_check_text,
    json_loads,
    json_value_count,
    mark_lone_surrogates,
)

OPENAI_ROLES = {"user": "interviewer", "assistant": "participant", "system": "system",
                "developer": "system"}
OPENAI_DROPPED = {"tool", "function", "ipython"}
SHAREGPT_INTERVIEWER = {"human", "user", "prompter"}
SHAREGPT_SYSTEM = {"system"}
SHAREGPT_DROPPED = {"tool", "function", "function_call", "observation", "ipython"}


def iter_records(source: SourceFile, limits: Limits) -> Iterator[tuple[Any, str]]:
    """(record, location) pairs: one per line of JSON Lines, or the items of a JSON file."""
    text, _ = mark_lone_surrogates(source.read_text(limits.max_text_bytes))
    json_check_text(text, source.name)  # depth and number size, so json.loads below cannot fail on them
    if json_value_count(text) > limits.max_json_values and not _is_json_lines(text, limits):
        # One JSON document is parsed whole: refuse what its values would take in memory before parsing.
        check_json_values(text, source.name, limits.max_json_values)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        if e.msg == "Extra data":  # more than one JSON value: JSON Lines
            yield from _jsonl(text, source.name, limits)
            return
        data = json_loads(text, source.name)  # raises a ParseError naming line and column
    if isinstance(data, list) and data and all(
        isinstance(x, dict) and ("role" in x or "from" in x) for x in data
    ):
        yield data, "top level"  # a bare list of messages is one conversation
    elif isinstance(data, list):
        for i, item in enumerate(data):
            check_conversation_count(i + 1, source.name, limits)
            yield item, conv_location(i, item.get("id") if isinstance(item, dict) else None)
    else:
        yield data, "top level"


def _is_json_lines(text: str, limits: Limits) -> bool:
    """Whether the text is JSON Lines (parsed, and held, a line at a time): its first line is a whole JSON value
    within the limit and more follows."""
    first, _, rest = text.lstrip().partition("\n")
    if not rest.strip() or json_value_count(first) > limits.max_json_values:
        return False
    try:
        json.loads(first)
    except json.JSONDecodeError:
        return False
    return True


def _jsonl(text: str, name: str, limits: Limits | None = None) -> Iterator[tuple[Any, str]]:
    records = 0
    for lineno, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            records += 1
            check_conversation_count(records, name, limits or Limits())
            if limits is not None and json_value_count(line) > limits.max_json_values:
                check_json_values(line, f"{name}, line {lineno}", limits.max_json_values)
            try:
                yield json.loads(line), f"line {lineno}"
            except json.JSONDecodeError as e:
                raise ParseError(name, f"line {lineno}, column {e.colno}",
                                 "one JSON object per line", f"'{e.msg}'") from None


def _text_of(content: Any, name: str, where: str) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for p in content:
            if isinstance(p, str):
                parts.append(p)
            elif isinstance(p, dict) and isinstance(p.get("text"), str):
                parts.append(p["text"])
            elif isinstance(p, dict) and "image" in str(p.get("type", "")):
                parts.append("[image]")
        return "\n\n".join(x for x in parts if x)
    raise ParseError(name, f"{where}, field 'content'", "text or a list of text parts",
                     describe(content))


def parse_openai(source: SourceFile, limits: Limits) -> Iterator[ParsedConversation]:
    for index, (record, where) in enumerate(iter_records(source, limits)):
        if isinstance(record, list):
            record = {"messages": record}
        if not isinstance(record, dict) or not isinstance(record.get("messages"), list):
            raise ParseError(source.name, where, "an object with a 'messages' list",
                             describe(record))
        turns = []
        slugs: list[str] = []
        conv_model = record.get("model") if isinstance(record.get("model"), str) else None
        for i, msg in enumerate(record["messages"]):
            mw = f"{where}, message {i + 1}"
            if not isinstance(msg, dict):
                raise ParseError(source.name, mw, "a message object", describe(msg))
            role = as_str(msg.get("role"))
            if role in OPENAI_DROPPED:
                continue
            if role not in OPENAI_ROLES:
                raise ParseError(source.name, f"{mw}, field 'role'",
                                 "one of user, assistant, system, tool", describe(msg.get("role")))
            text = _text_of(msg.get("content"), source.name, mw)
            if not text.strip():
                continue  # tool calls without text
            meta: dict[str, Any] = {}
            model = as_str(msg.get("model")) or (conv_model if role == "assistant" else None)
            if model:
                meta["model"] = model
                if model not in slugs:
                    slugs.append(model)
            if msg.get("name"):
                meta["name"] = msg["name"]
            turns.append(ParsedTurn(speaker=OPENAI_ROLES[role], text=text, metadata=meta))
        yield ParsedConversation(
            external_id=str(record.get("id") or ""),
            title=str(record.get("title") or ""),
            started_at=None, source_format="openai", source_name=source.name, index=index,
            model_slugs=slugs, metadata={"location": where}, turns=turns,
        )


def parse_sharegpt(source: SourceFile, limits: Limits) -> Iterator[ParsedConversation]:
    for index, (record, where) in enumerate(iter_records(source, limits)):
        if isinstance(record, list):
            record = {"conversations": record}
        msgs = record.get("conversations") if isinstance(record, dict) else None
        if msgs is None and isinstance(record, dict):
            msgs = record.get("conversation")
        if not isinstance(msgs, list):
            raise ParseError(source.name, where, "an object with a 'conversations' list",
                             describe(record))
        turns = []
        model = record.get("model") if isinstance(record.get("model"), str) else None
        for i, msg in enumerate(msgs):
            mw = f"{where}, message {i + 1}"
            if not isinstance(msg, dict):
                raise ParseError(source.name, mw, "an object with 'from' and 'value'",
                                 describe(msg))
            who = msg.get("from")
            if not isinstance(who, str) or not who:
                raise ParseError(source.name, f"{mw}, field 'from'",
                                 "a speaker such as human or gpt", describe(who))
            key = who.lower()
            if key in SHAREGPT_DROPPED:
                continue
            value = msg.get("value")
            if not isinstance(value, str):
                raise ParseError(source.name, f"{mw}, field 'value'", "text", describe(value))
            if not value.strip():
                continue
            speaker = ("interviewer" if key in SHAREGPT_INTERVIEWER else
                       "system" if key in SHAREGPT_SYSTEM else "participant")
            meta: dict[str, Any] = {"from": who}
            if speaker == "participant" and model:
                meta["model"] = model
            turns.append(ParsedTurn(speaker=speaker, text=value, metadata=meta))
        yield ParsedConversation(
            external_id=str(record.get("id") or ""),
            title=str(record.get("title") or ""),
            started_at=None, source_format="sharegpt", source_name=source.name, index=index,
            model_slugs=[model] if model else [], metadata={"location": where}, turns=turns,
        )
