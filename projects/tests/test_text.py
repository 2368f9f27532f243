"""Cutting text short never splits what a reader sees as one character."""

from __future__ import annotations

import pytest

from projects.text import cut_point, shortened
from reports.excerpts import trim_quote

FAMILY = "👨\u200d👩\u200d👧\u200d👦"


@pytest.mark.parametrize("text", [
    "Familie" + FAMILY * 3,
    "cafe\u0301" * 5,  # é as e and a combining acute
    "👍🏽" * 6,  # a thumb and a skin tone
    "🇩🇪🇫🇷🇯🇵🇧🇷",  # flags: pairs of regional indicators
    "❤️" * 6,  # a heart and a variation selector
])
def test_no_cut_splits_a_cluster(text):
    clusters = _clusters(text)
    for limit in range(1, len(text)):
        cut = cut_point(text, limit)
        assert cut <= limit
        assert cut in clusters or cut == limit and not any(0 < b <= limit for b in clusters), (text, limit, cut)


def _clusters(text: str) -> set[int]:
    """The boundaries between clusters, by the rules cut_point keeps (worked out by hand for the cases above)."""
    import unicodedata

    bounds, i = {0, len(text)}, 0
    while i < len(text):
        j = i + 1
        if 0x1F1E6 <= ord(text[i]) <= 0x1F1FF:
            j = i + 2
        while j < len(text) and (text[j] == "\u200d" or text[j - 1] == "\u200d" or unicodedata.combining(text[j])
                                 or text[j] in "\ufe0f" or 0x1F3FB <= ord(text[j]) <= 0x1F3FF):
            j += 1
        bounds.add(j)
        i = j
    return bounds


def test_a_trimmed_quote_ends_on_a_whole_emoji():
    trimmed = trim_quote("Familie" + FAMILY * 6, 20)
    assert trimmed == "Familie" + FAMILY + " [...]"  # a second family would end at 21


def test_shortened_marks_the_cut_within_the_limit():
    assert shortened("A long label for a heatmap row", 12) == "A long labe…"
    assert shortened("Kurz", 12) == "Kurz"
    assert shortened("ab" + FAMILY, 4) == "ab…"
