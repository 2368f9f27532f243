"""Character counting schemes for selection positions, and conversion to code points.

- "codepoints": the standard — Unicode code points on the raw text (CRLF = 2).
- "utf16": NVivo — UTF-16 code units (an emoji outside the BMP is 2; CRLF = 2).
- "crlf1": ATLAS.ti — code points, but a CRLF pair counts as 1.
"""

from __future__ import annotations

from bisect import bisect_left

COUNTINGS = ("codepoints", "utf16", "crlf1")


def _unit_width(text: str, i: int, counting: str) -> int:
    ch = text[i]
    if counting == "utf16":
        return 2 if ord(ch) > 0xFFFF else 1
    if counting == "crlf1" and ch == "\r" and text[i + 1:i + 2] == "\n":
        # The pair counts once, with its LF: the boundary between CR and LF then
        # shares the CR's start, so bisect_left maps a position to before the pair.
        return 0
    return 1


def needs_table(text: str, counting: str) -> bool:
    """False when the counting is the identity on this text (the common ASCII case)."""
    if counting == "utf16":
        return not text.isascii() and any(ord(c) > 0xFFFF for c in text)
    if counting == "crlf1":
        return "\r\n" in text
    return False


class PositionMap:
    """Maps positions in one counting to code-point offsets on one text, and back."""

    def __init__(self, text: str, counting: str) -> None:
        if counting not in COUNTINGS:
            raise ValueError(f"unknown position counting {counting!r}; use one of {COUNTINGS}")
        self.text = text
        self.counting = counting
        self._units: list[int] | None = None
        if needs_table(text, counting):
            units = [0] * (len(text) + 1)
            acc = 0
            for i in range(len(text)):
                units[i] = acc
                acc += _unit_width(text, i, counting)
            units[len(text)] = acc
            self._units = units
        self.length = self._units[-1] if self._units else len(text)

    def to_codepoint(self, pos: int) -> int | None:
        """Code-point offset for a position in this counting, or None if it is not a boundary."""
        if pos < 0 or pos > self.length:
            return None
        if self._units is None:
            return pos
        i = bisect_left(self._units, pos)
        if i > len(self.text) or self._units[i] != pos:
            return None  # e.g. inside a surrogate pair
        return i

    def from_codepoint(self, cp: int) -> int:
        """Position in this counting for a code-point offset."""
        if self._units is None:
            return cp
        return self._units[cp]


def utf16_length(text: str) -> int:
    return len(text) + sum(1 for c in text if ord(c) > 0xFFFF)
