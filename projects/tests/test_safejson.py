"""The one JSON reader for outside input: depth and number-size limits with line and column, in constant memory."""

from __future__ import annotations

import io
import json
import random

import pytest

from projects import safejson


def problem(text: str | bytes, **kwargs) -> tuple[int, int, str] | None:
    try:
        safejson.check(text, **kwargs)
    except safejson.JSONInputError as e:
        return e.line, e.column, str(e)
    return None


def streamed_problem(data: bytes, chunk_bytes: int, **kwargs) -> tuple[int, int, str] | None:
    try:
        safejson.check_stream(io.BytesIO(data), chunk_bytes=chunk_bytes, **kwargs)
    except safejson.JSONInputError as e:
        return e.line, e.column, str(e)
    return None


def test_nesting_just_at_the_limit_passes_and_one_more_level_is_refused_with_its_place():
    assert problem('{"a": ' * 100 + "1" + "}" * 100) is None
    assert problem('{"a": ' * 101 + "1" + "}" * 101) == (
        1, 601, "data nested deeper than 100 levels at line 1, column 601 (expected JSON nested at most 100 levels deep)")


def test_brackets_inside_strings_and_escaped_quotes_do_not_count():
    text = '{\n "a": "[[[[\\"[[[",\n "b": [[[1]]]}'
    assert problem(text, max_depth=4) is None
    assert problem(text, max_depth=3)[:2] == (3, 9)


def test_an_overlong_number_is_refused_but_digits_in_a_string_are_text():
    assert problem("[1, " + "9" * 5000 + "]")[:2] == (1, 5)
    assert "a number longer than 1000 digits" in problem("[1, " + "9" * 5000 + "]")[2]
    assert problem('[1, "' + "9" * 5000 + '"]') is None
    assert problem("[" + "9" * 1000 + "]") is None


def test_loads_names_line_and_column_of_invalid_json():
    with pytest.raises(safejson.JSONInputError) as e:
        safejson.loads('{"a": 1,\n "b": }')
    assert (e.value.line, e.value.column, e.value.expected) == (2, 7, "valid JSON")


def _random_json(rng: random.Random, depth: int = 0):
    roll = rng.random()
    if depth > 8 or roll < 0.3:
        return rng.choice([1, 'a\\"[{', "x" * rng.randint(0, 20), 12345678901234, 1.5, None, "\\\\", "é[\n"])
    if roll < 0.65:
        return [_random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {f'k[{i}"': _random_json(rng, depth + 1) for i in range(rng.randint(0, 4))}


def _depth(value) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


def test_streaming_in_chunks_of_any_size_finds_the_same_place_as_the_whole_text():
    rng = random.Random(21)
    for _ in range(200):
        value = _random_json(rng)
        data = json.dumps(value, indent=rng.choice([None, 1]), ensure_ascii=False).encode()
        limit = rng.randint(1, 10)
        whole = problem(data, max_depth=limit)
        assert (whole is None) == (_depth(value) <= limit)
        for chunk_bytes in (1, 2, 3, 7, 64):
            assert streamed_problem(data, chunk_bytes, max_depth=limit) == whole


def test_a_number_cut_by_a_chunk_boundary_is_still_seen_whole():
    assert streamed_problem(b"[1," + b"9" * 1500 + b"]", chunk_bytes=700)[:2] == (1, 4)


def test_a_600_kb_bomb_of_100000_levels_is_refused_at_the_first_level_too_deep():
    bomb = b'{"mapping": ' + b'{"a": ' * 100_000 + b"1" + b"}" * 100_001
    assert 600_000 < len(bomb) < 800_000
    assert streamed_problem(bomb, safejson.CHUNK_BYTES)[:2] == (1, 607)
