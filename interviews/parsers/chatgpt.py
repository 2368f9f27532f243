"""ChatGPT data export (conversations.json): the branch that ends at current_node.

Tool steps (code interpreter, browsing) are kept as turns of speaker "tool", in order,
between the answers around them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import ijson

from .base import (
    ItemTooLarge,
    Limits,
    LoneSurrogatesMarked,
    ParsedConversation,
    ParsedTurn,
    ParseError,
    SourceFile,
    ValuesCounted,
    as_list,
    as_str,
    check_conversation_count,
    conv_location,
    describe,
    epoch_to_datetime,
    iso,
    json_check,
    json_error_location,
)

KEPT_CONTENT = {"text", "multimodal_text"}
# Tool steps the ChatGPT page shows (collapsed): the assistant's call to a tool (code to
# python, a browser command) and the tool's result. They become "tool" turns.
TOOL_CALL_CONTENT = {"code", "text"}
TOOL_RESULT_CONTENT = {"execution_output", "tether_browsing_display", "tether_quote", "system_error",
                       "text", "multimodal_text", "code"}
# 【11†source】 markers (always with a dagger: plain 【】 are ordinary CJK brackets), and
# the private-use spans newer exports wrap citations in.
CITATION_RE = re.compile(r"[ \t]*(?:【[^】\n]{0,200}†[^】\n]{0,200}】|\ue200(?!entity)[^\ue201]{0,500}\ue201)")
# Entity references show their display name in the web interface: keep that name.
ENTITY_RE = re.compile(r"\ue200entity\ue202([^\ue201]{0,500})\ue201")
STRAY_PRIVATE_RE = re.compile(r"[\ue200-\ue2ff]")
# Alternative branches kept per conversation; a real chat has a handful, a hostile file thousands.
MAX_BRANCHES = 50
# A conversation is built whole as Python objects (~70 bytes a value): 2 million values is ~150 MB, and a real
# conversation of hundreds of turns with its metadata holds tens of thousands.
MAX_CONVERSATION_VALUES = 2_000_000


def _entity_name(m: re.Match[str]) -> str:
    try:
        value = json.loads(m.group(1))
    except ValueError:
        return ""
    if isinstance(value, list) and len(value) > 1 and isinstance(value[1], str):
        return value[1]
    return ""


def clean_citations(text: str) -> str:
    """Remove citation markers the same way everywhere, before offsets exist."""
    if "\ue200" in text:
        text = ENTITY_RE.sub(_entity_name, text)
    return STRAY_PRIVATE_RE.sub("", CITATION_RE.sub("", text))


def iter_raw(source: SourceFile, limits: Limits) -> Iterator[Any]:
    """Stream the top-level conversations one by one (list, {"conversations": [...]}, or one)."""
    json_check(source)  # ijson's memory grows with depth squared: refuse deep nesting first
    prefix = _top_prefix(source, limits)
    f = ValuesCounted(LoneSurrogatesMarked(source.open_skipping_bom()), MAX_CONVERSATION_VALUES)
    read = 0
    try:
        # Lists stream item by item; each conversation is built whole, so its values are counted as they are read.
        for item in ijson.items(f, "" if prefix is None else prefix, use_float=True):
            read += 1
            check_conversation_count(read, source.name, limits)
            f.item_done()
            yield item
    except ItemTooLarge as e:
        where = f"conversation {read + 1}" if prefix is not None else None
        raise ParseError(source.name, where, f"at most {MAX_CONVERSATION_VALUES:,} separate values (texts, numbers, "
                         "lists, fields) in one conversation", f"more than {e.args[0]:,}") from None
    except ijson.JSONError as e:
        # Small files are re-read for line and column; in a huge one, name the conversation.
        where = f"conversation {read + 1}" if prefix is not None else None
        raise json_error_location(source, limits.max_text_bytes) or ParseError(
            source.name, where, "valid JSON", f"'{str(e).splitlines()[0]}'"
        ) from None
    finally:
        f.close()


def _top_prefix(source: SourceFile, limits: Limits) -> str | None:
    """'item' for a list, 'conversations.item' for a wrapper, None for one conversation."""
    f = source.open_skipping_bom()
    try:
        events = ijson.parse(f, use_float=True)
        _, event, _ = next(events)
        if event == "start_array":
            return "item"
        if event != "start_map":
            raise ParseError(source.name, "top level", "a list of conversations", "another value")
        for prefix, event, value in events:
            if prefix == "" and event == "map_key" and value == "conversations":
                return "conversations.item"
        return None
    except StopIteration:
        raise ParseError(source.name, None, "a list of conversations", "an empty file") from None
    except ijson.JSONError as e:
        raise json_error_location(source, limits.max_text_bytes) or ParseError(
            source.name, None, "valid JSON", f"'{str(e).splitlines()[0]}'"
        ) from None
    finally:
        f.close()


def parse(source: SourceFile, limits: Limits) -> Iterator[ParsedConversation]:
    for index, raw in enumerate(iter_raw(source, limits)):
        conv = parse_conversation(raw, source.name, index)
        if conv is not None:
            yield conv


def parse_conversation(raw: Any, name: str, index: int) -> ParsedConversation | None:
    if not isinstance(raw, dict):
        raise ParseError(name, conv_location(index), "a conversation object", describe(raw))
    ext_id = raw.get("conversation_id") or raw.get("id") or ""
    where = conv_location(index, ext_id)
    mapping = raw.get("mapping")
    if mapping is None:
        return None  # project stubs and shared links have no messages
    if not isinstance(mapping, dict):
        raise ParseError(name, f"{where}, field 'mapping'", "an object of nodes", describe(mapping))
    for node_id, node in mapping.items():
        if not isinstance(node, dict):
            raise ParseError(name, f"{where}, field 'mapping.{node_id}'", "a node object",
                             describe(node))
    path, branch_points = _branch(mapping, raw.get("current_node"), name, where)
    default_slug = as_str(raw.get("default_model_slug")) or None
    turns = _turns(mapping, path, branch_points, default_slug, name, where)
    branches = _alternatives(mapping, path, turns, default_slug, name, where) if branch_points else []
    slugs: list[str] = []
    for t in turns:
        for s in t.metadata.get("models", []):
            if s not in slugs:
                slugs.append(s)
    if not slugs and default_slug:
        slugs.append(default_slug)
    return ParsedConversation(
        external_id=str(ext_id),
        title=(as_str(raw.get("title")) or "").strip(),
        started_at=epoch_to_datetime(raw.get("create_time")),
        source_format="chatgpt",
        source_name=name,
        index=index,
        model_slugs=slugs,
        metadata={
            "update_time": iso(epoch_to_datetime(raw.get("update_time"))),
            "default_model_slug": default_slug,
            "current_node": path[-1] if path else None,
            "alternative_branches": sum(n - 1 for _, n in branch_points.values()),
            "gizmo_id": raw.get("gizmo_id"),
            **({"branches": branches} if branches else {}),
        },
        turns=turns,
    )


def _branch(
    mapping: dict[str, Any], current: Any, name: str, where: str
) -> tuple[list[str], dict[str, tuple[int, int]]]:
    """Node ids from the root to the current node, and the branch position of each
    node that has siblings (edited prompts, regenerated answers)."""
    if current is None:
        current = _latest_leaf(mapping)
    elif not isinstance(current, str) or current not in mapping:
        raise ParseError(name, f"{where}, field 'current_node'", "the id of a node in 'mapping'",
                         describe(current))
    path: list[str] = []
    seen: set[str] = set()
    node_id = current
    while node_id is not None and node_id in mapping:
        if node_id in seen:
            raise ParseError(name, f"{where}, node {node_id}", "parent links that end at a root",
                             "a cycle")
        seen.add(node_id)
        path.append(node_id)
        node_id = as_str(mapping[node_id].get("parent"))
    path.reverse()
    branch_points: dict[str, tuple[int, int]] = {}
    for node_id in path:
        parent = as_str(mapping[node_id].get("parent"))
        siblings = as_list(mapping[parent].get("children")) if parent in mapping else []
        if len(siblings) > 1 and node_id in siblings:
            branch_points[node_id] = (siblings.index(node_id), len(siblings))
    return path, branch_points


def _created(mapping: dict[str, Any], node_id: str) -> float:
    msg = mapping[node_id].get("message")
    t = msg.get("create_time") if isinstance(msg, dict) else None
    return float(t) if isinstance(t, int | float) and not isinstance(t, bool) else 0.0


def _leaves(mapping: dict[str, Any]) -> list[str]:
    return [k for k, n in mapping.items() if not n.get("children")]


def _latest_leaf(mapping: dict[str, Any]) -> str | None:
    leaves = _leaves(mapping)
    return max(leaves, key=lambda k: _created(mapping, k)) if leaves else None


def _alternatives(
    mapping: dict[str, Any], path: list[str], turns: list[ParsedTurn], default_slug: str | None, name: str, where: str
) -> list[dict[str, Any]]:
    """The other branches (edited prompts, regenerated answers): per leaf, where it leaves the
    transcript and its visible turns from there on, so each can be read or imported later."""
    on_path = set(path)
    leaves = sorted((k for k in _leaves(mapping) if k not in on_path), key=lambda k: (_created(mapping, k), k))
    out: list[dict[str, Any]] = []
    for leaf in leaves:
        if len(out) == MAX_BRANCHES:
            break
        leaf_path, points = _branch(mapping, leaf, name, where)
        alt = _turns(mapping, leaf_path, points, default_slug, name, where)
        shared = 0
        while (shared < min(len(alt), len(turns)) and alt[shared].text == turns[shared].text
               and alt[shared].metadata["message_ids"] == turns[shared].metadata["message_ids"]):
            shared += 1
        if shared < len(alt):  # a branch of hidden messages only has nothing to show
            out.append({"leaf": leaf, "diverges_at": shared,
                        "turns": [{"speaker": t.speaker, "text": t.text, "metadata": t.metadata} for t in alt[shared:]]})
    return out


def _turns(
    mapping: dict[str, Any],
    path: list[str],
    branch_points: dict[str, tuple[int, int]],
    default_slug: str | None,
    name: str,
    where: str,
) -> list[ParsedTurn]:
    turns: list[ParsedTurn] = []
    for node_id in path:
        msg = mapping[node_id].get("message")
        if not isinstance(msg, dict):
            continue
        speaker = _visible_speaker(msg)
        if speaker is None:
            continue
        if speaker == "tool":
            text = clean_citations(_tool_text(msg, name, f"{where}, node {node_id}"))
        else:
            text = clean_citations(_content_text(msg.get("content"), name, f"{where}, node {node_id}"))
        if not text.strip():
            continue
        meta = _turn_metadata(msg, node_id, branch_points, default_slug if speaker ==
                              "participant" else None)
        if speaker == "tool":
            meta.pop("model", None)
            meta.pop("models", None)
            meta["tool"] = _tool_metadata(msg)
        prev = turns[-1] if turns else None
        if prev and speaker == "participant" and prev.speaker == "participant":
            _merge(prev, text, meta)  # "continue generating" and code-interpreter steps
        else:
            turns.append(ParsedTurn(speaker=speaker, text=text, metadata=meta))
    return turns


def _visible_speaker(msg: dict[str, Any]) -> str | None:
    author = msg.get("author")
    role = as_str(author.get("role")) if isinstance(author, dict) else None
    meta = msg.get("metadata") or {}
    if isinstance(meta, dict) and meta.get("is_visually_hidden_from_conversation"):
        return None
    if msg.get("channel") not in (None, "final"):
        return None  # reasoning ("analysis") is not shown
    content = msg.get("content") or {}
    ctype = as_str(content.get("content_type")) if isinstance(content, dict) else None
    if role == "tool":
        return "tool" if ctype in TOOL_RESULT_CONTENT else None
    if msg.get("recipient") not in (None, "all"):
        return "tool" if role == "assistant" and ctype in TOOL_CALL_CONTENT else None
    if ctype not in KEPT_CONTENT:
        return None
    return {"user": "interviewer", "assistant": "participant"}.get(role or "")


def _tool_text(msg: dict[str, Any], name: str, where: str) -> str:
    """A tool step as the page shows it: code and output as fenced blocks, a page quote with its source."""
    content = msg["content"]
    ctype = content.get("content_type")
    if ctype in ("code", "execution_output"):
        body = as_str(content.get("text")) or ""
        language = as_str(content.get("language")) or ""
        if ctype == "code" and language in ("", "unknown") and msg.get("recipient") == "python":
            language = "python"
        return _fenced(body, language if ctype == "code" and language != "unknown" else "") if body.strip() else ""
    if ctype == "tether_browsing_display":
        return as_str(content.get("result")) or as_str(content.get("summary")) or ""
    if ctype == "tether_quote":
        head = " ".join(filter(None, [as_str(content.get("title")), as_str(content.get("url"))]))
        return "\n\n".join(filter(None, [head, as_str(content.get("text"))]))
    if ctype == "system_error":
        return ": ".join(filter(None, [as_str(content.get("name")), as_str(content.get("text"))]))
    return _content_text(content, name, where)


def _fenced(body: str, language: str) -> str:
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{body.rstrip()}\n{fence}"


def _tool_metadata(msg: dict[str, Any]) -> dict[str, Any]:
    author = msg.get("author") if isinstance(msg.get("author"), dict) else {}
    is_result = author.get("role") == "tool"
    return {
        "name": as_str(author.get("name") if is_result else msg.get("recipient")) or "tool",
        "step": "result" if is_result else "call",
        "content_type": msg["content"].get("content_type"),
    }


def _content_text(content: dict[str, Any], name: str, where: str) -> str:
    parts = content.get("parts")
    if parts is None:
        return as_str(content.get("text")) or ""
    if not isinstance(parts, list):
        raise ParseError(name, f"{where}, field 'content.parts'", "a list", describe(parts))
    pieces: list[str] = []
    for part in parts:
        if isinstance(part, str):
            if part:
                pieces.append(part)
        elif isinstance(part, dict):
            ctype = as_str(part.get("content_type")) or ""
            if ctype == "audio_transcription" and part.get("text"):
                pieces.append(str(part["text"]))
            elif "image" in ctype:
                pieces.append("[image]")
    return "\n\n".join(pieces)


def _turn_metadata(
    msg: dict[str, Any], node_id: str, branch_points: dict[str, tuple[int, int]],
    default_slug: str | None,
) -> dict[str, Any]:
    meta = msg.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    slug = as_str(meta.get("model_slug")) or default_slug
    finish = (meta.get("finish_details") or {}).get("type") if isinstance(
        meta.get("finish_details"), dict) else None
    out: dict[str, Any] = {
        "message_ids": [as_str(msg.get("id")) or node_id],
        "created_at": iso(epoch_to_datetime(msg.get("create_time"))),
    }
    if slug:
        out["model"] = slug
        out["models"] = [slug]
    if finish:
        out["finish_reason"] = finish
    if node_id in branch_points:
        i, n = branch_points[node_id]
        out["branch"] = {"index": i, "alternatives": n}
    return out


def _merge(prev: ParsedTurn, text: str, meta: dict[str, Any]) -> None:
    prev.text = f"{prev.text}\n\n{text}"
    pm = prev.metadata
    pm["message_ids"].extend(meta["message_ids"])
    for s in meta.get("models", []):
        pm.setdefault("models", [])
        if s not in pm["models"]:
            pm["models"].append(s)
    pm.setdefault("model", meta.get("model"))
    if meta.get("finish_reason"):
        pm["finish_reason"] = meta["finish_reason"]
    if "branch" in meta and "branch" not in pm:
        pm["branch"] = meta["branch"]
