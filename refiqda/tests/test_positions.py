"""Position countings: every code-point boundary maps to a position and back."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from refiqda.positions import COUNTINGS, PositionMap, utf16_length

# Text rich in what makes countings differ: CRLF pairs, lone CR/LF, astral characters.
texts = st.lists(st.sampled_from(["a", "é", "\r\n", "\r", "\n", "😀", "𝔸", " ", "z"]), max_size=40).map("".join)


@given(texts)
def test_codepoint_boundaries_round_trip_in_every_counting(text):
    for counting in COUNTINGS:
        pmap = PositionMap(text, counting)
        for cp in range(len(text) + 1):
            if counting == "crlf1" and 0 < cp < len(text) and text[cp - 1] == "\r" and text[cp] == "\n":
                continue  # inside a CRLF pair: no position of its own when the pair counts as one
            assert pmap.to_codepoint(pmap.from_codepoint(cp)) == cp


@given(texts)
def test_lengths_and_out_of_range(text):
    assert PositionMap(text, "codepoints").length == len(text)
    assert PositionMap(text, "utf16").length == utf16_length(text) == len(text.encode("utf-16-le")) // 2
    assert PositionMap(text, "crlf1").length == len(text) - text.count("\r\n")
    for counting in COUNTINGS:
        pmap = PositionMap(text, counting)
        assert pmap.to_codepoint(pmap.length + 1) is None
        assert pmap.to_codepoint(-1) is None


def test_a_position_inside_a_surrogate_pair_is_not_a_boundary():
    assert PositionMap("a😀b", "utf16").to_codepoint(2) is None
