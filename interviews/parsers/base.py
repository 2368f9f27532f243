"""Plain data shapes shared by every transcript parser, and the error they raise."""

from __future__ import annotations

import csv
import hashlib
import io
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any

from projects import safejson

SPEAKERS = ("interviewer", "participant", "system")
# A label the user says is not a speaker at all ("Option A:" inside an answer).
NOT_A_SPEAKER = "text"
LABEL_CHOICES = (*SPEAKERS, NOT_A_SPEAKER)
FORMATS = ("chatgpt", "claude", "openai", "sharegpt", "markdown", "text", "csv")
UTF8_BOM = b"\xef\xbb\xbf"

# Every CSV reader here (turn tables, probe items, codebooks, case variables) reads a file already held whole and
# capped in size; the csv module's own cap of 131,072 characters a cell refused a long answer (a report, code) that
# any other format takes. Set once, for the process, on import of the parsers every reader uses.
csv.field_size_limit(sys.maxsize)


class ParseError(ValueError):
    """Bad input: names the file, the place in it, and what was expected there."""

    def __init__(
        self, file: str, location: str | None, expected: str, found: str | None = None
    ) -> None:
        self.file = file
        self.location = location
        self.expected = expected
        self.found = found
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f"{self.file}: {self.location}" if self.location else self.file
        tail = f", found {self.found}" if self.found is not None else ""
        return f"{where}: expected {self.expected}{tail}"


@dataclass(frozen=True)
class Limits:
    """Size caps for one upload; the Django side fills them from settings."""

    max_file_bytes: int = 200 * 1024 * 1024
    # Formats read whole into memory (text, Markdown, CSV, XLSX, JSONL lines) get a lower cap.
    max_text_bytes: int = 50 * 1024 * 1024
    max_archive_total_bytes: int = 1024 * 1024 * 1024
    max_archive_ratio: float = 100.0
    max_archive_members: int = 10_000
    # JSON read whole (OpenAI/ShareGPT JSON and JSON Lines): values it may hold; ~72 bytes each once parsed.
    max_json_values: int = 5_000_000
    # Turns are held whole until a file is read and again while it is imported: ~650 bytes and ~35 µs a turn
    # to read, ~300 µs to import (measured on "A: x" lines). 200,000 keep the worker near 150 MB and a few
    # minutes; a long real interview has a few thousand.
    # CSV/TSV/XLSX transcripts: turns (rows) in one file.
    max_table_rows: int = 200_000
    # Text and Markdown transcripts: lines in one file (each held as a string, a turn per label line).
    max_text_lines: int = 200_000
    # Conversations in one file: each is parsed, hashed and listed in the preview (a real export holds hundreds,
    # a heavy user's a few thousand).
    max_conversations: int = 10_000


def check_line_count(text: str, name: str, limits: Limits) -> None:
    """Refuse text with more lines than a transcript may have, before it is split into lines and turns."""
    lines = text.count("\n") + 1
    if lines > limits.max_text_lines:
        raise ParseError(name, None, f"at most {limits.max_text_lines:,} lines in one transcript; split it into "
                         "smaller files", f"{lines:,}")


def check_conversation_count(count: int, name: str, limits: Limits) -> None:
    """Refuse a file as soon as it holds more conversations than one file may."""
    if count > limits.max_conversations:
        raise ParseError(name, None, f"at most {limits.max_conversations:,} conversations in one file; split it into "
                         "smaller files", "more")


@dataclass
class SourceFile:
    """One file to parse: a name for messages and a way to (re)open its bytes."""

    name: str
    size: int
    opener: Callable[[], IO[bytes]]

    def open(self) -> IO[bytes]:
        return self.opener()

    @classmethod
    def from_path(cls, path: str, name: str | None = None) -> SourceFile:
        import os

        return cls(
            name=name or os.path.basename(path),
            size=os.path.getsize(path),
            opener=lambda: open(path, "rb"),
        )

    @classmethod
    def from_bytes(cls, name: str, data: bytes) -> SourceFile:
        return cls(name=name, size=len(data), opener=lambda: io.BytesIO(data))

    def read_bytes(self, limit: int) -> bytes:
        """The whole file, refusing anything larger than `limit` bytes."""
        if self.size > limit:
            raise ParseError(self.name, None, f"a file of at most {human_size(limit)}", human_size(self.size))
        with self.open() as f:
            data = f.read(limit + 1)
        if len(data) > limit:
            raise ParseError(self.name, None, f"a file of at most {human_size(limit)}", "more")
        return data

    def read_text(self, limit: int) -> str:
        """The whole file as text (UTF-8, a byte-order mark dropped)."""
        return decode_utf8(self.read_bytes(limit), self.name)

    def open_skipping_bom(self) -> IO[bytes]:
        f = self.open()
        if f.read(3) != UTF8_BOM:
            f.close()
            f = self.open()
        return f


@dataclass
class ParsedTurn:
    speaker: str  # interviewer | participant | system | tool
    text: str  # exactly as written, Markdown kept
    metadata: dict[str, Any] = field(default_factory=dict)
    # The raw speaker label for formats whose labels the user maps in a preview.
    label: str | None = None
    # For labelled formats: the turn's lines as written, label line included, and where
    # the text starts in them; lets "not a speaker" fold the turn back into the previous one.
    source: str | None = field(default=None, repr=False)
    body_start: int = 0


def turn_text(written: str) -> str:
    """A turn's text from what follows its label: the blank lines around it and the spaces after the label go, and
    its first line keeps its indentation, as the Markdown it is (an answer may open with an indented code block)."""
    written = written.rstrip()
    lead = len(written) - len(written.lstrip())
    line_start = max(written.rfind("\n", 0, lead), written.rfind("\r", 0, lead)) + 1
    return written[line_start or lead:]


@dataclass
class ParsedConversation:
    external_id: str
    title: str
    started_at: datetime | None
    source_format: str
    source_name: str
    index: int  # position in its file, from 0
    model_slugs: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    turns: list[ParsedTurn] = field(default_factory=list)
    # label -> guessed speaker, for formats where the user maps labels before import.
    speaker_labels: dict[str, str] = field(default_factory=dict)

    def content_sha256(self) -> str:
        """Hash of the turns as written (label or speaker, text), for duplicate detection.

        Labels rather than mapped speakers, so a re-import is recognised whatever
        mapping the user picks."""
        h = hashlib.sha256()
        for t in self.turns:
            h.update((t.label or t.speaker).encode("utf-8", "surrogatepass"))
            h.update(b"\x00")
            h.update(t.text.encode("utf-8", "surrogatepass"))
            h.update(b"\x01")
        return h.hexdigest()

    def apply_label_map(self, mapping: dict[str, str]) -> None:
        """Re-assign speakers from a label -> speaker map chosen by the user; NOT_A_SPEAKER
        folds that label's lines back into the turn before them (e.g. "Option A:")."""
        for label, speaker in mapping.items():
            if speaker not in LABEL_CHOICES:
                raise ValueError(f"speaker for label {label!r} must be one of {', '.join(LABEL_CHOICES)}")
        kept: list[ParsedTurn] = []
        for t in self.turns:
            choice = mapping.get(t.label) if t.label is not None else None
            if choice == NOT_A_SPEAKER and t.source is not None:
                if kept and kept[-1].source is not None:
                    prev = kept[-1]
                    prev.source = (prev.source or "") + t.source
                    prev.text = turn_text(prev.source[prev.body_start:])
                else:
                    self.metadata["preamble"] = (self.metadata.get("preamble", "") + "\n" + t.source).strip()
                continue
            if choice in SPEAKERS:
                t.speaker = choice
            kept.append(t)
        self.turns = kept
        for label, choice in mapping.items():
            if label in self.speaker_labels:
                if choice == NOT_A_SPEAKER:
                    del self.speaker_labels[label]
                else:
                    self.speaker_labels[label] = choice
        if not any(t.metadata.get("model") for t in self.turns):
            # Models named only by labels follow the user's mapping.
            self.model_slugs = model_slugs_from_labels(self.speaker_labels)


def as_str(value: Any) -> str | None:
    """The value if it is text, else None: ids and names in hostile files may be anything."""
    return value if isinstance(value, str) else None


def as_list(value: Any) -> list:
    return value if isinstance(value, list) else []


def human_size(n: int) -> str:
    """A size for messages: 900 bytes, 12.5 KB, 200.0 MB."""
    if n < 1024:
        return f"{n} bytes"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n / (1024 * 1024):.1f} MB"


def decode_utf8(data: bytes, name: str) -> str:
    """UTF-8 text (a byte-order mark dropped); UTF-16 too when its byte-order mark says so,
    as Windows Notepad saves "Unicode" text."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            raise ParseError(name, None, "UTF-16 text (the file starts with its byte-order mark)",
                             "bytes that are not") from None
    if data.startswith(UTF8_BOM):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise ParseError(name, f"line {line}", "UTF-8 text", f"byte 0x{data[e.start]:02x}") from None


# A JSON \\u escape of a UTF-16 surrogate: a high one with its low one (a pair), or one alone. The pattern starts
# with a literal, which re finds at the speed of a substring search.
_SURROGATE = r"\\u[dD](?:[89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|[89a-fA-F][0-9a-fA-F]{2})"
_SURROGATES = {str: re.compile(_SURROGATE), bytes: re.compile(_SURROGATE.encode())}
_REPLACEMENT = {str: "\\ufffd", bytes: b"\\ufffd"}
_ESCAPE = 6  # characters of one \\uXXXX


def mark_lone_surrogates[T: (str, bytes)](json_text: T, *, final: bool = True) -> tuple[T, T]:
    """(the JSON text with each lone surrogate escape replaced by U+FFFD's escape, the rest to read on with).

    Exports written from UTF-16 strings hold a half emoji where an answer was cut mid-character. Python's
    json keeps it as a lone surrogate, which PostgreSQL cannot store, and the streaming parser turns it
    into "?", indistinguishable from a question mark; U+FFFD is the character that says one was lost.
    Same length, so every offset and error location stays the file's own. Not `final`: the tail that a
    following chunk could complete (half a pair, a run of backslashes) is returned unread.
    """
    kind = type(json_text)
    surrogate, replacement = _SURROGATES[kind], _REPLACEMENT[kind]
    backslash = replacement[:1]
    cut = len(json_text) if final else max(0, len(json_text) - 2 * _ESCAPE + 1)
    while not final and cut and json_text[cut - 1:cut] == backslash:
        cut -= 1
    pieces, done, pos = [], 0, 0
    while (m := surrogate.search(json_text, pos)) and m.start() < cut:
        at, pos = m.start(), m.end()
        before = at
        while before and json_text[before - 1:before] == backslash:
            before -= 1
        if (at - before) % 2:  # the backslash is itself escaped: "\\u…" is text, and an escape may follow it
            pos = at + 2
            continue
        if pos - at == _ESCAPE:  # alone
            pieces += [json_text[done:at], replacement]
            done = pos
    cut = max(cut, min(pos, len(json_text)))
    pieces.append(json_text[done:cut])
    return json_text[:0].join(pieces), json_text[cut:]


class LoneSurrogatesMarked(io.RawIOBase):
    """A binary JSON file read through mark_lone_surrogates, chunk by chunk."""

    def __init__(self, raw: IO[bytes]) -> None:
        self.raw = raw
        self.held = b""  # read, not yet marked: a following chunk could complete it
        self.ready = b""  # marked, not yet returned

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self.ready:
            chunk = self.raw.read(max(len(buffer), 1 << 16))
            self.ready, self.held = mark_lone_surrogates(self.held + chunk, final=not chunk)
            if not chunk:
                break
        n = min(len(buffer), len(self.ready))
        buffer[:n], self.ready = self.ready[:n], self.ready[n:]
        return n

    def close(self) -> None:
        self.raw.close()
        super().close()


def json_loads(text: str, name: str, line_offset: int = 0) -> Any:
    """JSON with a depth and number-size limit; a ParseError names line and column on bad JSON."""
    try:
        return safejson.loads(text)
    except safejson.JSONInputError as e:
        raise json_parse_error(e, name, line_offset) from None


def json_parse_error(e: safejson.JSONInputError, name: str, line_offset: int = 0) -> ParseError:
    return ParseError(name, f"line {e.line + line_offset}, column {e.column}", e.expected, e.found)


def json_check(source: SourceFile) -> None:
    """Refuse a JSON file nested too deep or holding an overlong number, before a streaming parser reads it."""
    with source.open_skipping_bom() as f:
        try:
            safejson.check_stream(f)
        except safejson.JSONInputError as e:
            raise json_parse_error(e, source.name) from None


def json_check_text(text: str, name: str) -> None:
    """`json_check` for JSON (or JSON Lines) already read into memory."""
    try:
        safejson.check(text)
    except safejson.JSONInputError as e:
        raise json_parse_error(e, name) from None


def json_error_location(source: SourceFile, limit: int) -> ParseError | None:
    """Re-read a file that a streaming parse rejected to name the line and column.

    None when it is too large to re-read, or when it holds several JSON values (JSON Lines)."""
    if source.size > limit:
        return None
    try:
        json_loads(source.read_text(limit), source.name)
    except ParseError as e:
        return None if e.found == "'Extra data'" else e
    return None


def epoch_to_datetime(value: Any) -> datetime | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return datetime.fromtimestamp(float(value), tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None


def iso_to_datetime(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    v = value.strip()
    if v.endswith("Z"):
        v = v[:-1] + "+00:00"
    try:
        dt = datetime.fromisoformat(v)
    except ValueError:
        return None
    dt = dt if dt.tzinfo else dt.replace(tzinfo=UTC)
    return dt if storable(dt) else None


def storable(dt: datetime) -> bool:
    """Whether the database can hold `dt`: in UTC, as it is stored, its year is 1 to 9999. PostgreSQL would also
    store 1 BC or the year 10000 (0001-01-01T00:00+05:00, 9999-12-31T23:00-05:00), and then no page could load
    the row."""
    try:
        dt.astimezone(UTC)
    except OverflowError:
        return False
    return True


def iso(dt: datetime | None) -> str | None:
    return dt.isoformat() if dt else None


def describe(value: Any) -> str:
    """A short description of a JSON value for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"the text {value[:40]!r}" if value else "an empty string"
    if isinstance(value, int | float):
        return f"the number {value}"
    return type(value).__name__


def conv_location(index: int, ext_id: Any = None) -> str:
    return f"conversation {index + 1}" + (f" (id {ext_id})" if ext_id else "")


# Speaker words, lower-cased, that start a turn even when they appear only once.
INTERVIEWER_WORDS = {
    "user", "you", "me", "human", "interviewer", "researcher", "q", "question",
    "prompt", "i", "student", "moderator",
}
PARTICIPANT_WORDS = {
    "assistant", "ai", "bot", "chatbot", "model", "a", "answer", "response",
    "chatgpt", "gpt", "claude", "gemini", "bard", "copilot", "deepseek", "llama",
    "meta ai", "mistral", "grok", "perplexity", "interviewee", "participant",
    "bing", "qwen", "pi",
}
SYSTEM_WORDS = {"system", "system prompt", "instructions"}
MODEL_NAME_RE = re.compile(
    r"^(gpt|o\d|chatgpt|claude|gemini|bard|llama|mistral|mixtral|deepseek|qwen|grok|"
    r"phi|command|copilot|meta ai|perplexity)\b[\w.\- ]*$",
    re.IGNORECASE,
)
# Words that announce a note or a link rather than a speaker.
NOT_SPEAKER_WORDS = {
    "note", "notes", "example", "examples", "warning", "tip", "important", "summary",
    "step", "source", "sources", "update", "edit", "ps", "p.s.", "todo", "caution",
    "hint", "result", "output", "input", "error", "http", "https", "ftp", "mailto",
    "date", "time", "subject", "title", "re", "fwd", "to", "from", "cc", "tldr",
    "tl;dr", "nb", "key", "pros", "cons", "option", "solution", "reason", "answer key",
}
GENERIC_PARTICIPANT_LABELS = {"assistant", "ai", "bot", "chatbot", "model", "a", "answer",
                              "response", "interviewee", "participant"}


# Copying from a chat window gives "You said:" / "ChatGPT said:".
SAID_RE = re.compile(r"\s+(?:said|says|wrote|writes|asked|asks|answered|replied|responded)$", re.IGNORECASE)


def core_label(label: str) -> str:
    """'ChatGPT said' -> 'ChatGPT'."""
    return SAID_RE.sub("", label.strip())


def guess_speaker(label: str) -> str | None:
    """interviewer / participant / system for a known speaker word, else None."""
    key = core_label(label).lower()
    if key in SYSTEM_WORDS:
        return "system"
    if key in INTERVIEWER_WORDS:
        return "interviewer"
    if key in PARTICIPANT_WORDS or MODEL_NAME_RE.match(key):
        return "participant"
    return None


def model_slugs_from_labels(labels: dict[str, str]) -> list[str]:
    """Participant labels that name a model (GPT-4o, Claude) rather than a role."""
    slugs: list[str] = []
    for lab, sp in labels.items():
        name = core_label(lab)
        if sp == "participant" and name.lower() not in GENERIC_PARTICIPANT_LABELS and name not in slugs:
            slugs.append(name)
    return slugs


def guess_labels(labels_in_order: list[str]) -> dict[str, str]:
    """Guess a speaker per label; unknown labels: first one asks, the others answer."""
    guesses: dict[str, str] = {}
    for lab in labels_in_order:
        if lab in guesses:
            continue
        g = guess_speaker(lab)
        if g is None:
            g = "participant" if "interviewer" in guesses.values() else "interviewer"
        guesses[lab] = g
    return guesses


def iter_nonempty(items: list[ParsedTurn]) -> Iterator[ParsedTurn]:
    return (t for t in items if t.text.strip())


# -- memory budgets for JSON read whole ----------------------------------------------------------
# Parsed JSON costs far more than its text: `[{},{},...]` is 3 bytes a value on disk and ~70 bytes of
# Python objects in memory. Counting the characters that start a value (brackets, commas, colons; inside
# strings too, which only errs on the safe side) bounds that cost before anything is built.
JSON_VALUE_CHARS = ("{", "[", ",", ":")
JSON_VALUE_BYTES = tuple(c.encode() for c in JSON_VALUE_CHARS)
# Python objects per counted value, an upper bound measured on tiny values (`{}` ~70 bytes, typical rows ~55).
JSON_BYTES_PER_VALUE = 72


def json_value_count(text: str | bytes) -> int:
    """How many JSON values `text` holds at most (its brackets, commas and colons, plus one)."""
    marks = JSON_VALUE_BYTES if isinstance(text, bytes) else JSON_VALUE_CHARS
    return 1 + sum(text.count(m) for m in marks)  # type: ignore[arg-type]


def json_memory_estimate(text: str | bytes) -> int:
    """Bytes of Python objects that parsing `text` may take, at most (about)."""
    return len(text) + JSON_BYTES_PER_VALUE * json_value_count(text)


def check_json_values(text: str | bytes, name: str, max_values: int) -> None:
    """Refuse JSON (or JSON Lines) holding more than `max_values` separate values, before parsing it."""
    count = json_value_count(text)
    if count > max_values:
        raise ParseError(name, None, f"at most {max_values:,} separate values (texts, numbers, lists, fields) "
                         "in one file; split it into smaller files", f"about {count:,}")


class ItemTooLarge(Exception):
    """One item of a streamed JSON file holds more values than `ValuesCounted` allows."""


class ValuesCounted(io.RawIOBase):
    """A JSON stream whose values are counted as they are read, item by item (`item_done` starts a new count).

    A streamed export is built one conversation at a time; a single conversation of millions of tiny values
    would still be built whole. Counting what is read for the current item stops it before it is, give or take
    one read-ahead buffer.
    """

    def __init__(self, raw: IO[bytes], max_values: int) -> None:
        self.raw, self.max_values, self.values = raw, max_values, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = self.raw.readinto(buffer)
        if n:
            chunk = bytes(buffer[:n])
            self.values += sum(chunk.count(mark) for mark in JSON_VALUE_BYTES)
            if self.values > self.max_values:
                raise ItemTooLarge(self.values)
        return n

    def item_done(self) -> None:
        self.values = 0

    def close(self) -> None:
        self.raw.close()
        super().close()
