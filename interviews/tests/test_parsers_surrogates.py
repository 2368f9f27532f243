"""Half an emoji in a JSON export: a lone UTF-16 surrogate escape is read as U+FFFD, by every JSON parser.

JavaScript writes strings as UTF-16, so an answer cut mid-character is exported as "…\\ud83d". The streaming
parser (yajl) had read it as "?", a question mark the model never wrote; Python's json kept a lone surrogate,
which PostgreSQL cannot store.
"""

from __future__ import annotations

import io
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from interviews.parsers import SourceFile, parse_upload
from interviews.parsers.base import LoneSurrogatesMarked, mark_lone_surrogates
from interviews.tests.test_parsers_chatgpt import conversation, node


@pytest.mark.parametrize(("escaped", "read"), [
    (r'"cut \ud83d"', "cut \ufffd"),
    (r'"whole \ud83d\ude00"', "whole \U0001f600"),
    (r'"WHOLE \uD83D\uDE00"', "WHOLE \U0001f600"),
    (r'"low first \ude00\ud83d"', "low first \ufffd\ufffd"),
    (r'"a pair and a half \ud83d\ude00\ude00"', "a pair and a half \U0001f600\ufffd"),
    (r'"an escaped backslash \\ud83d"', "an escaped backslash \\ud83d"),
    (r'"a backslash, then half \\\ud83d"', "a backslash, then half \\\ufffd"),
    (r'"half, then text that looks like its other half \ud83d\\ude00"', "half, then text that looks like its other half \ufffd\\ude00"),
    (r'"text that looks like half, then half \\ud83d\ude00"', "text that looks like half, then half \\ud83d\ufffd"),
])
def test_a_lone_surrogate_escape_reads_as_the_replacement_character(escaped, read):
    marked, rest = mark_lone_surrogates(escaped)
    assert rest == "" and len(marked) == len(escaped)
    assert json.loads(marked) == read
    assert json.loads(mark_lone_surrogates(escaped.encode())[0]) == read


_PIECES = ["\\", "\\\\", "\\ud83d", "\\ude00", "\\uD83D", "\\uDE00", "\\u0041", "u", "d83d", "x", "é"]


@given(st.lists(st.sampled_from(_PIECES), max_size=30), st.integers(min_value=1, max_value=20))
def test_read_in_chunks_of_any_size_the_file_is_marked_as_it_is_whole(pieces, size):
    data = "".join(pieces).encode()
    whole, _ = mark_lone_surrogates(data)
    stream = LoneSurrogatesMarked(io.BytesIO(data))
    read = b"".join(iter(lambda: stream.read(size), b""))
    assert read == whole


def _cut_answer_export() -> bytes:
    nodes = [node("root", None, None, children=["q"]),
             node("q", "root", "user", "Say hello with an emoji \U0001f600?", children=["a"], t=1.0),
             node("a", "q", "assistant", "Hello \ud83d", t=2.0)]
    return json.dumps([conversation(nodes, "a")]).encode()  # ensure_ascii: the lone half as "\ud83d"


def test_a_chatgpt_answer_cut_mid_emoji_keeps_the_replacement_character_not_a_question_mark():
    assert b'Hello \\ud83d"' in _cut_answer_export()
    (conv,) = parse_upload(SourceFile.from_bytes("conversations.json", _cut_answer_export()))
    assert [t.text for t in conv.turns] == ["Say hello with an emoji \U0001f600?", "Hello \ufffd"]


def test_an_openai_chat_file_cut_mid_emoji_keeps_the_replacement_character():
    data = json.dumps({"messages": [{"role": "user", "content": "Hi \U0001f600"},
                                    {"role": "assistant", "content": "Hello \ud83d"}]}).encode()
    (conv,) = parse_upload(SourceFile.from_bytes("chat.json", data), format="openai")
    assert [t.text for t in conv.turns] == ["Hi \U0001f600", "Hello \ufffd"]
