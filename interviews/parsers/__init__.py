"""Transcript parsers: every supported export format to plain dataclasses.

No Django here; the import service turns ParsedConversation into rows.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from . import chatgpt, claude, jsonchat, markdown, tabular, text
from .archive import ExchangeFileError, expand, is_zip
from .base import (
    FORMATS,
    LABEL_CHOICES,
    NOT_A_SPEAKER,
    SPEAKERS,
    Limits,
    ParsedConversation,
    ParsedTurn,
    ParseError,
    SourceFile,
    decode_utf8,
    json_error_location,
)

__all__ = [
    "FORMATS", "ExchangeFileError", "LABEL_CHOICES", "NOT_A_SPEAKER", "SPEAKERS", "Limits", "ParseError", "ParsedConversation", "ParsedTurn",
    "SourceFile", "detect_format", "expand", "parse_source", "parse_upload",
]

PARSERS: dict[str, Callable[[SourceFile, Limits], Iterator[ParsedConversation]]] = {
    "chatgpt": chatgpt.parse,
    "claude": claude.parse,
    "openai": jsonchat.parse_openai,
    "sharegpt": jsonchat.parse_sharegpt,
    "markdown": markdown.parse,
    "text": text.parse,
    "csv": tabular.parse,
}

# The key that appears first in a JSON file tells its format apart; escaped quotes
# inside strings (\"role\") cannot match.
JSON_MARKERS = (
    ("chatgpt", re.compile(rb'"mapping"\s*:')),
    ("claude", re.compile(rb'"chat_messages"\s*:')),
    ("sharegpt", re.compile(rb'"from"\s*:')),
    ("openai", re.compile(rb'"role"\s*:')),
)
MD_SPEAKER_HEADING_RE = re.compile(r"^#{1,6}[ \t]+\W*\s*\**(you|user|chatgpt|assistant|claude|"
                                   r"human|prompt|response|gemini|copilot)\b",
                                   re.IGNORECASE | re.MULTILINE)
HEAD_BYTES = 256 * 1024


TRANSCRIPT_FORMATS = "a transcript: text, Markdown, CSV or Excel, a ChatGPT or Claude export, or OpenAI or ShareGPT JSON"
# Files people pick by mistake, by their first bytes: said by name rather than as a byte that is not UTF-8.
NOT_TRANSCRIPTS = (
    (b"\x89PNG", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image"), (b"GIF8", "a GIF image"),
    (b"%PDF", "a PDF document (copy its text into a .txt or .md file)"),
    (b"\xd0\xcf\x11\xe0", "an old Word or Excel file (save it as plain text, .csv or .xlsx)"),
    (b"{\\rtf", "an RTF document (save it as plain text)"),
)


def detect_format(source: SourceFile, limits: Limits | None = None) -> str:
    """One of FORMATS, from the file name and its first bytes."""
    lower = source.name.lower()
    if lower.endswith((".csv", ".tsv", ".xlsx")):
        return "csv"
    with source.open() as f:
        head = f.read(HEAD_BYTES)
    if head.startswith(b"PK\x03\x04"):
        raise ParseError(source.name, None, "a transcript file", "a ZIP archive inside a ZIP")
    if kind := next((kind for magic, kind in NOT_TRANSCRIPTS if head.startswith(magic)), None):
        raise ParseError(source.name, None, TRANSCRIPT_FORMATS, kind)
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if lower.endswith((".json", ".jsonl", ".ndjson")) or stripped[:1] in (b"[", b"{"):
        hits = [(m.start(), fmt) for fmt, rx in JSON_MARKERS if (m := rx.search(head))]
        if hits:
            return min(hits)[1]
        if lower.endswith((".json", ".jsonl", ".ndjson")):
            # A truncated or broken file says where it breaks rather than which keys it lacks.
            raise json_error_location(source, (limits or Limits()).max_text_bytes) or ParseError(
                source.name, None,
                "a ChatGPT or Claude export, OpenAI 'messages' or ShareGPT 'conversations' JSON",
                "JSON without 'mapping', 'chat_messages', 'role' or 'from' keys",
            )
    if lower.endswith((".md", ".markdown")):
        return "markdown"
    sample = decode_utf8(head[: HEAD_BYTES - 4] if len(head) == HEAD_BYTES else head,
                         source.name) if _is_utf8_prefix(head) else ""
    if MD_SPEAKER_HEADING_RE.search(sample) or sample.startswith("---\n"):
        return "markdown"
    return "text"


def _is_utf8_prefix(head: bytes) -> bool:
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as e:
        return e.start >= len(head) - 3  # cut in the middle of a character
    return True


def parse_source(
    source: SourceFile, *, format: str = "auto", limits: Limits | None = None
) -> Iterator[ParsedConversation]:
    """Conversations of one (already expanded) file, streamed where the format allows."""
    limits = limits or Limits()
    fmt = detect_format(source, limits) if format == "auto" else format
    if fmt not in PARSERS:
        raise ParseError(source.name, None, "a format among auto, " + ", ".join(FORMATS),
                         repr(fmt))
    if is_zip(source) and fmt != "csv":
        raise ParseError(source.name, None, f"a {fmt} file", "a ZIP archive")
    return PARSERS[fmt](source, limits)


def parse_upload(
    source: SourceFile, *, format: str = "auto", limits: Limits | None = None
) -> Iterator[ParsedConversation]:
    """Conversations of an uploaded file or of every transcript inside an uploaded ZIP."""
    limits = limits or Limits()
    for member in expand(source, limits):
        yield from parse_source(member, format=format, limits=limits)
