"""CSV and XLSX with one turn per row."""

from __future__ import annotations

import pytest

from interviews.parsers import ParseError, SourceFile, parse_upload
from interviews.tests.factories import xlsx

CSV = """conversation_id,title,speaker,text,timestamp,model
c1,Trust,interviewer,"What is trust?",2025-03-01T10:00:00Z,
c1,Trust,participant,"Trust is reliance, mostly.
It has layers.",2025-03-01T10:00:05Z,gpt-4o
c2,Care,User,Hello,,
c2,Care,Assistant,Hi,,claude-3-5-sonnet
"""


def parse(name: str, data: bytes) -> list:
    return list(parse_upload(SourceFile.from_bytes(name, data)))




def test_csv_rows_group_into_conversations():
    convs = parse("turns.csv", CSV.encode())
    assert [(c.external_id, c.title, len(c.turns)) for c in convs] == [("c1", "Trust", 2),
                                                                       ("c2", "Care", 2)]
    assert [t.speaker for t in convs[0].turns] == ["interviewer", "participant"]
    assert convs[0].turns[1].text == "Trust is reliance, mostly.\nIt has layers."
    assert convs[0].model_slugs == ["gpt-4o"]
    assert convs[0].started_at.isoformat() == "2025-03-01T10:00:00+00:00"
    assert convs[1].speaker_labels == {"User": "interviewer", "Assistant": "participant"}


def test_semicolon_csv_with_other_column_names():
    data = b"Role;Message\nuser;Hallo\nassistant;Guten Tag\n"
    (conv,) = parse("de.csv", data)
    assert [(t.speaker, t.text) for t in conv.turns] == [("interviewer", "Hallo"),
                                                         ("participant", "Guten Tag")]


def test_csv_missing_column_is_named():
    with pytest.raises(ParseError) as exc:
        parse("turns.csv", b"speaker,words\nuser,hi\n")
    assert str(exc.value) == ("turns.csv: line 1, header row: expected a column named 'text' or "
                              "'content' or 'message' or 'value', found columns 'speaker', 'words'")


def test_csv_empty_text_cell_is_named():
    bad = CSV.replace('c2,Care,Assistant,Hi,,', 'c2,Care,Assistant,,,')
    with pytest.raises(ParseError) as exc:
        parse("turns.csv", bad.encode())
    assert str(exc.value) == ("turns.csv: line 6, column 'text': expected the turn's text, "
                              "found an empty cell")


def test_csv_bad_timestamp_is_named():
    bad = CSV.replace("2025-03-01T10:00:05Z", "yesterday")
    with pytest.raises(ParseError, match="line 4, column 'timestamp': expected a date and time"):
        parse("turns.csv", bad.encode())


def test_xlsx_rows():
    data = xlsx([["Speaker", "Text", "Model"], ["User", "Hi", None], ["GPT-4o", "Hello", "gpt-4o"]])
    (conv,) = parse("turns.xlsx", data)
    assert [(t.speaker, t.text) for t in conv.turns] == [("interviewer", "Hi"),
                                                         ("participant", "Hello")]
    assert conv.model_slugs == ["gpt-4o"]
    assert conv.title == "turns"


def test_xlsx_missing_speaker_is_named():
    data = xlsx([["Speaker", "Text"], ["User", "Hi"], [None, "orphan"]])
    with pytest.raises(ParseError) as exc:
        parse("turns.xlsx", data)
    assert str(exc.value) == "turns.xlsx: row 3, column 'speaker': expected a speaker, found an empty cell"


def test_corrupt_xlsx_is_named():
    with pytest.raises(ParseError, match=r"^turns\.xlsx: expected an Excel workbook"):
        parse("turns.xlsx", b"PK\x03\x04 this is not really a workbook")


def test_header_only_is_refused():
    with pytest.raises(ParseError, match="expected at least one row after the header"):
        parse("turns.csv", b"speaker,text\n")


def test_a_csv_turn_longer_than_pythons_default_field_limit_is_read_whole():
    """The csv module stops at 131,072 characters a cell by default; an answer (a long report, code) can be longer."""
    answer = "A sentence of a very long answer. " * 6000  # 204,000 characters
    (conversation,) = parse("long.csv", f'speaker,text\nUser,Write it all.\nAssistant,"{answer}"\n'.encode())
    assert conversation.turns[1].text == answer.strip() or conversation.turns[1].text == answer
