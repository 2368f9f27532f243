"""Markdown exports from browser extensions: one heading per message."""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

import yaml

from .base import (
    Limits,
    ParsedConversation,
    ParsedTurn,
    SourceFile,
    check_line_count,
    guess_labels,
    guess_speaker,
    model_slugs_from_labels,
    turn_text,
)
from .text import FENCE_RE, conversation_from_text

HEADING_RE = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
RULE_RE = re.compile(r"\n[ \t]*(?:-{3,}|\*{3,}|_{3,})[ \t]*$")
FRONT_RE = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.DOTALL)


def heading_label(heading: str) -> str:
    """'👤 User' -> 'User', '**You:**' -> 'You'."""
    label = heading.replace("**", "").replace("__", "").strip()
    label = re.sub(r"^[^\w\[]+", "", label).strip()  # leading emoji and symbols
    return label.rstrip(":").strip()


def split_front_matter(text: str) -> tuple[dict[str, Any], str, int]:
    """(front matter, body, number of lines the front matter took)."""
    m = FRONT_RE.match(text)
    if not m:
        return {}, text, 0
    try:
        data = yaml.safe_load(m.group(1))
    except yaml.YAMLError:
        data = None
    front = data if isinstance(data, dict) else {"raw": m.group(1)}
    # YAML dates are not JSON; keep everything as strings for metadata.
    front = {str(k): v if isinstance(v, str | int | float | bool | list) or v is None else str(v)
             for k, v in front.items()}
    return front, text[m.end():], text[: m.end()].count("\n")


def speaker_headings(lines: list[str]) -> list[tuple[int, str]]:
    """(line index, label) of headings that name a speaker, at the level speakers use."""
    found: list[tuple[int, int, str, bool]] = []
    in_fence = False
    for i, line in enumerate(lines):
        if FENCE_RE.match(line):
            in_fence = not in_fence
            continue
        m = None if in_fence else HEADING_RE.match(line.rstrip("\r\n"))
        if m:
            label = heading_label(m.group(2))
            if label and len(label.split()) <= 4:
                found.append((i, len(m.group(1)), label, m.group(2).rstrip().endswith(":")))
    known_levels = Counter(level for _, level, label, _ in found if guess_speaker(label))
    label_counts = Counter((level, label.lower()) for _, level, label, _ in found)
    if not known_levels:
        return []
    level = known_levels.most_common(1)[0][0]
    return [(i, label) for i, lev, label, colon in found if lev == level and (
        guess_speaker(label) or (colon and label_counts[(lev, label.lower())] > 1))]


def parse(source: SourceFile, limits: Limits) -> Iterator[ParsedConversation]:
    text = source.read_text(limits.max_text_bytes)
    check_line_count(text, source.name, limits)
    front, body, offset = split_front_matter(text)
    title = str(front.get("title") or "")
    meta: dict[str, Any] = {"front_matter": front} if front else {}
    lines = body.splitlines(keepends=True)
    heads = speaker_headings(lines)
    if not heads:
        # Some exporters write bold labels ("**You:**") instead of headings.
        conv = conversation_from_text(body, source.name, "markdown", meta, title)
        yield conv
        return
    turns: list[ParsedTurn] = []
    for n, (i, label) in enumerate(heads):
        end = heads[n + 1][0] if n + 1 < len(heads) else len(lines)
        written = "".join(lines[i:end])
        chunk = turn_text(RULE_RE.sub("", "\n" + turn_text(written[len(lines[i]):])))  # the --- between messages
        if chunk:
            turns.append(ParsedTurn(speaker="interviewer", text=chunk, label=label, source=written,
                                    body_start=len(lines[i]), metadata={"line": i + 1 + offset, "label": label}))
    guesses = guess_labels([t.label for t in turns if t.label])
    for t in turns:
        t.speaker = guesses[t.label]  # type: ignore[index]
    preamble = "".join(lines[: heads[0][0]]).strip()
    if preamble:
        meta["preamble"] = preamble
        h1 = re.match(r"^#[ \t]+(.+)$", preamble, re.MULTILINE)
        title = title or (h1.group(1).strip() if h1 else "")
    yield ParsedConversation(
        external_id=str(front.get("id") or front.get("url") or ""),
        title=title or os.path.splitext(os.path.basename(source.name))[0],
        started_at=None, source_format="markdown", source_name=source.name, index=0,
        model_slugs=model_slugs_from_labels(guesses), metadata=meta, turns=turns,
        speaker_labels=guesses,
    )
