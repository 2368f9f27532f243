"""Plain-text transcripts with speaker labels ("User:", "**GPT-4o:**", "[Q]", ...)."""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from .base import (
    NOT_SPEAKER_WORDS,
    Limits,
    ParsedConversation,
    ParsedTurn,
    ParseError,
    SourceFile,
    check_line_count,
    guess_labels,
    guess_speaker,
    model_slugs_from_labels,
    turn_text,
)

_NAME = r"[^\W\d_][\w .'’+\-]{0,39}?"
LABEL_RE = re.compile(
    rf"^[ \t]*(?:"
    rf"(?:\*\*|__)?\[?(?P<a>{_NAME})\]?(?:\*\*|__)?[ \t]*:(?:\*\*|__)?"  # User:  **User:**  [User]:
    rf"|\[(?P<b>{_NAME})\]"  # [User]
    rf")(?=[ \t\r\n]|$)"  # a lone CR ends a line too (classic Mac text)
)
FENCE_RE = re.compile(r"^[ \t]*(```|~~~)")
NO_LABELS = ("speaker labels at the start of lines, such as 'User:' and 'Assistant:' "
             "or 'Q:' and 'A:'")


@dataclass
class LabelLine:
    index: int  # line number from 0
    label: str
    rest: int  # offset in the line where the turn text begins


def find_label_lines(lines: list[str]) -> list[LabelLine]:
    """Lines that start a turn: a label that repeats or is a known speaker word."""
    candidates: list[LabelLine] = []
    in_fence = False
    for i, line in enumerate(lines):
        if FENCE_RE.match(line):
            in_fence = not in_fence
            continue
        m = None if in_fence else LABEL_RE.match(line)
        if m:
            label = (m.group("a") or m.group("b")).strip()
            if len(label.split()) <= 4 and label.lower() not in NOT_SPEAKER_WORDS:
                candidates.append(LabelLine(i, label, m.end()))
    spelling: dict[str, str] = {}
    for c in candidates:  # "User" and "USER" are one speaker, shown as first written
        c.label = spelling.setdefault(c.label.lower(), c.label)
    counts = Counter(c.label for c in candidates)
    return [c for c in candidates if counts[c.label] > 1 or guess_speaker(c.label)]


def turns_from_lines(lines: list[str], labels: list[LabelLine]) -> list[ParsedTurn]:
    turns: list[ParsedTurn] = []
    for n, lab in enumerate(labels):
        end = labels[n + 1].index if n + 1 < len(labels) else len(lines)
        source = "".join(lines[lab.index:end])
        text = turn_text(source[lab.rest:])
        if text:
            turns.append(ParsedTurn(speaker="interviewer", text=text, label=lab.label, source=source,
                                    body_start=lab.rest, metadata={"line": lab.index + 1, "label": lab.label}))
    return turns


def conversation_from_text(
    text: str, name: str, fmt: str, metadata: dict | None = None, title: str = ""
) -> ParsedConversation:
    lines = text.splitlines(keepends=True)
    labels = find_label_lines(lines)
    if not labels:
        raise ParseError(name, None, NO_LABELS, "no line that starts with a speaker label")
    turns = turns_from_lines(lines, labels)
    guesses = guess_labels([t.label for t in turns if t.label])
    for t in turns:
        t.speaker = guesses[t.label]  # type: ignore[index]
    meta = dict(metadata or {})
    preamble = "".join(lines[: labels[0].index]).strip()
    if preamble:
        meta["preamble"] = preamble
    return ParsedConversation(
        external_id="", title=title or os.path.splitext(os.path.basename(name))[0],
        started_at=None, source_format=fmt, source_name=name, index=0,
        model_slugs=model_slugs_from_labels(guesses), metadata=meta, turns=turns,
        speaker_labels=guesses,
    )


def parse(source: SourceFile, limits: Limits) -> Iterator[ParsedConversation]:
    text = source.read_text(limits.max_text_bytes)
    check_line_count(text, source.name, limits)
    yield conversation_from_text(text, source.name, "text")
