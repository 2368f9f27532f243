"""Cutting text short without splitting what a reader sees as one character (a grapheme cluster): an accent written
as a combining mark, an emoji family joined by zero-width joiners, a skin tone, a flag's two regional indicators."""

from __future__ import annotations

import unicodedata

_ZWJ = "\u200d"


def _joins_previous(char: str) -> bool:
    """Whether `char` belongs to the cluster of the character before it."""
    code = ord(char)
    return (char == _ZWJ or unicodedata.combining(char) != 0 or unicodedata.category(char) in ("Mn", "Mc", "Me")
            or 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF  # variation selectors
            or 0x1F3FB <= code <= 0x1F3FF  # skin tones
            or 0xE0020 <= code <= 0xE007F)  # tags (subdivision flags)


def _regional_indicator(char: str) -> bool:
    return 0x1F1E6 <= ord(char) <= 0x1F1FF


def cut_point(text: str, limit: int) -> int:
    """The largest index at most `limit` where `text` may be cut: never inside a cluster (unless one cluster is longer
    than `limit`, then at `limit`)."""
    if limit >= len(text):
        return len(text)
    cut = limit
    while cut > 0 and (_joins_previous(text[cut]) or text[cut - 1] == _ZWJ):
        cut -= 1
    indicators = 0
    while cut - indicators > 0 and _regional_indicator(text[cut - indicators - 1]):
        indicators += 1
    if indicators % 2 and _regional_indicator(text[cut]):  # the cut falls between a flag's two letters
        cut -= 1
    return cut or limit


def shortened(text: str, limit: int, mark: str = "…") -> str:
    """`text`, or its beginning and `mark` in at most `limit` characters."""
    if len(text) <= limit:
        return text
    return text[:cut_point(text, limit - len(mark))].rstrip() + mark


# A spreadsheet cell starting with one of these is run as a formula (CSV injection; tab and carriage return are on
# OWASP's list too). Our CSV and XLSX exports put FORMULA_GUARD before such text (reports.writers.safe_cell), and our
# own imports of those files take it off again: the guard is also put before text that starts with apostrophes and
# then one of these, so taking one apostrophe off always gives the text back.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
FORMULA_GUARD = "'"


def needs_formula_guard(text: str) -> bool:
    """Whether a spreadsheet could run `text` (or it would read as guarded text): it gets FORMULA_GUARD before it."""
    return text.startswith(FORMULA_START) or (text[:1] == FORMULA_GUARD and text.lstrip(FORMULA_GUARD).startswith(FORMULA_START))


def formula_unguarded(text: str) -> str:
    """A cell of one of our CSV or XLSX exports as the text it was written from (FORMULA_GUARD taken off)."""
    return text[1:] if text[:1] == FORMULA_GUARD and text.lstrip(FORMULA_GUARD).startswith(FORMULA_START) else text
