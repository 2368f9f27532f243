"""JSON from outside (uploads, backups, API bodies) read with a depth and number-size limit.

Every JSON input goes through here first. A cheap scan over the raw text finds the first
bracket nested deeper than MAX_DEPTH and the first number longer than MAX_NUMBER_DIGITS,
so a hostile file is refused with its line and column before any parser builds anything:
the C `json` module would stop at Python's recursion limit with a RecursionError, ijson's
prefix strings grow with depth (100,000 levels took 14 GB), and Python refuses to turn a
4,300-digit number into an int with a bare ValueError. The scan keeps only a counter and
a line number, so it runs in constant memory over a stream of any size.

No Django here: the transcript parsers (a plain library) use it too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import IO, Any, AnyStr

# Real exports nest about 10 levels (a raw API response inside turn metadata inside a
# conversation); 100 leaves ample room and stays far below the recursion limit of the code
# that walks JSON afterwards (json.dumps, jsonb, the backup's UUID remapping).
MAX_DEPTH = 100
# Python's own int-from-text limit is 4,300 digits; no real value comes near 100.
MAX_NUMBER_DIGITS = 1000
CHUNK_BYTES = 1 << 20


class JSONInputError(ValueError):
    """JSON that is invalid or beyond the limits; says what is wrong and at which line and column."""

    def __init__(self, *, line: int, column: int, expected: str, found: str) -> None:
        self.line, self.column = line, column
        self.expected, self.found = expected, found
        super().__init__(str(self))

    @property
    def location(self) -> str:
        return f"line {self.line}, column {self.column}"

    def __str__(self) -> str:
        return f"{self.found} at {self.location} (expected {self.expected})"


def _patterns(kind: type) -> tuple[re.Pattern, re.Pattern, re.Pattern]:
    def rx(p: str) -> re.Pattern:
        return re.compile(p.encode() if kind is bytes else p, re.DOTALL)

    string = r'"[^"\\]*(?:\\.[^"\\]*)*"'  # a whole string, escapes included
    # Whole strings are matched (and skipped) in one step: they are most of a file's tokens.
    long_number = r"(?P<number>[0-9]{" + str(MAX_NUMBER_DIGITS + 1) + ",})"
    token = rx(r'(?P<open>[\[{])|(?P<close>[\]}])|' + string + r'|(?P<quote>")|' + long_number)
    string_rest = rx(string[1:])  # from just inside a string to just past its end
    string_body = rx(string[1:-1])  # as far as a string goes inside this chunk
    return token, string_rest, string_body


_PATTERNS = {bytes: _patterns(bytes), str: _patterns(str)}
_DIGITS = {bytes: b"0123456789", str: "0123456789"}


class _Scanner:
    """Depth and number-size check over consecutive chunks of one JSON text (or JSON Lines)."""

    def __init__(self, max_depth: int) -> None:
        self.max_depth = max_depth
        self.depth = 0
        self.in_string = False
        self.escape_pending = False
        self.line = 1
        self.line_start = 0  # absolute offset of the current line's first character
        self.offset = 0  # absolute offset of the chunk being scanned

    def feed(self, buf: AnyStr) -> AnyStr:
        """Scan one chunk; returns the trailing digits to prepend to the next one (a number cut in two)."""
        token, string_rest, string_body = _PATTERNS[bytes if isinstance(buf, bytes) else str]
        pos = 0
        while True:
            if self.in_string:
                pos += self.escape_pending
                m = string_rest.match(buf, pos)
                if m is None:  # the string goes on in the next chunk
                    self.escape_pending = string_body.match(buf, pos).end() == len(buf) - 1
                    self._advance(buf, len(buf))
                    return buf[:0]
                pos, self.in_string, self.escape_pending = m.end(), False, False
            pos = self._tokens(token.finditer(buf, pos), buf)
            if not self.in_string:
                break
        digits = len(buf) - len(buf.rstrip(_DIGITS[bytes if isinstance(buf, bytes) else str]))
        self._advance(buf, len(buf) - digits)
        return buf[len(buf) - digits:]

    def _tokens(self, tokens: Iterator[re.Match], buf: AnyStr) -> int:
        """Count brackets up to the end of the chunk or a string that goes past it (then its start)."""
        for m in tokens:
            kind = m.lastgroup
            if kind is None:  # a whole string
                continue
            if kind == "open":
                self.depth += 1
                if self.depth > self.max_depth:
                    self._fail(buf, m.start(), f"JSON nested at most {self.max_depth} levels deep",
                               f"data nested deeper than {self.max_depth} levels")
            elif kind == "close":
                self.depth -= 1
            elif kind == "quote":
                self.in_string = True
                return m.end()
            else:
                self._fail(buf, m.start(), f"numbers of at most {MAX_NUMBER_DIGITS} digits",
                           f"a number longer than {MAX_NUMBER_DIGITS} digits")
        return len(buf)

    def _advance(self, buf: AnyStr, end: int) -> None:
        newline = b"\n" if isinstance(buf, bytes) else "\n"
        count = buf.count(newline, 0, end)
        if count:
            self.line += count
            self.line_start = self.offset + buf.rindex(newline, 0, end) + 1
        self.offset += end

    def _fail(self, buf: AnyStr, at: int, expected: str, found: str) -> None:
        self._advance(buf, at)
        raise JSONInputError(line=self.line, column=self.offset - self.line_start + 1, expected=expected, found=found)


def check(text: str | bytes, *, max_depth: int = MAX_DEPTH) -> None:
    """Refuse JSON (or JSON Lines) nested deeper than max_depth or holding an overlong number."""
    _Scanner(max_depth).feed(text)


def check_stream(f: IO[bytes], *, max_depth: int = MAX_DEPTH, chunk_bytes: int = CHUNK_BYTES) -> None:
    """`check` over a binary file read in chunks, in constant memory; leaves the file at its end."""
    scanner = _Scanner(max_depth)
    carry = b""  # digits at the end of a chunk: a number cut in two is checked whole
    while chunk := f.read(chunk_bytes):
        carry = scanner.feed(carry + chunk)


def loads(text: str | bytes, *, max_depth: int = MAX_DEPTH, parse_constant: Callable[[str], Any] | None = None) -> Any:
    """json.loads after `check`; invalid JSON raises JSONInputError naming line and column too."""
    check(text, max_depth=max_depth)
    try:
        return json.loads(text, parse_constant=parse_constant)
    except json.JSONDecodeError as e:
        raise JSONInputError(line=e.lineno, column=e.colno, expected="valid JSON", found=f"'{e.msg}'") from None
    except UnicodeDecodeError as e:
        raise JSONInputError(line=1, column=1, expected="UTF-8 JSON", found=f"'{e.reason}'") from None
