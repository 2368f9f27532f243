"""Claude export (conversations.json): text blocks only, the active branch of the tree."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .base import (
    Limits,
    ParsedConversation,
    ParsedTurn,
    ParseError,
    SourceFile,
    as_list,
    as_str,
    conv_location,
    describe,
    iso,
    iso_to_datetime,
)
from .chatgpt import iter_raw

ROOT_UUID = "00000000-0000-4000-8000-000000000000"
SENDERS = {"human": "interviewer", "assistant": "participant"}


def parse(source: SourceFile, limits: Limits) -> Iterator[ParsedConversation]:
    # Same top-level shapes as ChatGPT's file, so the same streaming reader.
    for index, raw in enumerate(iter_raw(source, limits)):
        yield parse_conversation(raw, source.name, index)


def parse_conversation(raw: Any, name: str, index: int) -> ParsedConversation:
    if not isinstance(raw, dict):
        raise ParseError(name, conv_location(index), "a conversation object", describe(raw))
    ext_id = raw.get("uuid") or ""
    where = conv_location(index, ext_id)
    messages = raw.get("chat_messages")
    if not isinstance(messages, list):
        raise ParseError(name, f"{where}, field 'chat_messages'", "a list of messages",
                         describe(messages))
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            raise ParseError(name, f"{where}, message {i + 1}", "a message object", describe(m))
    ordered, branches = _active_branch(messages, raw.get("current_leaf_message_uuid"), name, where)
    turns = [t for m in ordered if (t := _turn(m, branches, name, where)) is not None]
    model = raw.get("model")
    return ParsedConversation(
        external_id=str(ext_id),
        title=(as_str(raw.get("name")) or "").strip(),
        started_at=iso_to_datetime(raw.get("created_at")),
        source_format="claude",
        source_name=name,
        index=index,
        model_slugs=[model] if isinstance(model, str) and model else [],
        metadata={
            "updated_at": raw.get("updated_at"),
            "summary": raw.get("summary") or None,
            "alternative_branches": sum(n - 1 for _, n in branches.values()),
        },
        turns=turns,
    )


def _active_branch(
    messages: list[dict[str, Any]], leaf: Any, name: str, where: str
) -> tuple[list[dict[str, Any]], dict[str, tuple[int, int]]]:
    """Array order for flat exports; with parent links, the path to the active leaf."""
    if not any("parent_message_uuid" in m for m in messages) or not messages:
        return messages, {}
    by_id = {as_str(m.get("uuid")): m for m in messages}
    if leaf is None:
        leaf = as_str(messages[-1].get("uuid"))
    elif not isinstance(leaf, str) or leaf not in by_id:
        raise ParseError(name, f"{where}, field 'current_leaf_message_uuid'",
                         "the uuid of one of its messages", describe(leaf))
    children: dict[Any, list[Any]] = {}
    for m in messages:
        children.setdefault(as_str(m.get("parent_message_uuid")) or ROOT_UUID, []).append(as_str(m.get("uuid")))
    path: list[dict[str, Any]] = []
    seen: set[Any] = set()
    node = leaf
    while node in by_id:
        if node in seen:
            raise ParseError(name, f"{where}, message {node}", "parent links that end at the root",
                             "a cycle")
        seen.add(node)
        path.append(by_id[node])
        node = as_str(by_id[node].get("parent_message_uuid"))
    path.reverse()
    branches = {}
    for m in path:
        sib = children.get(as_str(m.get("parent_message_uuid")) or ROOT_UUID, [])
        if len(sib) > 1:
            branches[as_str(m.get("uuid"))] = (sib.index(as_str(m.get("uuid"))), len(sib))
    return path, branches


def _turn(
    m: dict[str, Any], branches: dict[str, tuple[int, int]], name: str, where: str
) -> ParsedTurn | None:
    sender = m.get("sender")
    if not isinstance(sender, str) or sender not in SENDERS:
        raise ParseError(name, f"{where}, message {m.get('uuid')}, field 'sender'",
                         "'human' or 'assistant'", describe(sender))
    content = m.get("content")
    if content and not isinstance(content, list):
        raise ParseError(name, f"{where}, message {m.get('uuid')}, field 'content'",
                         "a list of blocks", describe(content))
    if content:
        # message.text also carries the thinking text in real exports; use the blocks.
        text = "\n\n".join(b["text"] for b in content
                           if isinstance(b, dict) and b.get("type") == "text"
                           and isinstance(b.get("text"), str) and b["text"])
    else:
        text = as_str(m.get("text")) or ""
    if not text.strip():
        return None
    meta: dict[str, Any] = {"message_ids": [as_str(m.get("uuid"))],
                            "created_at": iso(iso_to_datetime(m.get("created_at")))}
    attachments = [a["file_name"] for a in as_list(m.get("attachments")) + as_list(m.get("files"))
                   if isinstance(a, dict) and as_str(a.get("file_name"))]
    if attachments:
        meta["attachments"] = attachments
    if content and any(isinstance(b, dict) and b.get("type") == "tool_use" for b in content):
        meta["artifacts"] = [b.get("input", {}).get("title") for b in content
                             if isinstance(b, dict) and b.get("type") == "tool_use"
                             and isinstance(b.get("input"), dict)]
    key = as_str(m.get("uuid"))
    if key is not None and key in branches:
        i, n = branches[key]
        meta["branch"] = {"index": i, "alternatives": n}
    return ParsedTurn(speaker=SENDERS[sender], text=text, metadata=meta)
