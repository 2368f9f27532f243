"""Reading item sheets: formats, errors naming row and column, filters, balanced samples."""

from __future__ import annotations

import io
import json
import re

import pytest
from openpyxl import Workbook

from probes.items import ItemFilters, ItemImportError, balanced_sample, filtered, item_rows, read_records


def rows_of(name: str, data: bytes, **kwargs):
    kwargs = {"text_column": "text", "label_columns": ["gender"]} | kwargs
    return item_rows(name, read_records(name, io.BytesIO(data)), **kwargs)


def test_csv_rows_split_into_text_labels_and_attributes():
    rows = rows_of("r.csv", b"text,gender,stars\nRude doctor.,woman,1\nLate again.,man,2\n")
    assert [(r.line, r.text, r.labels, r.attributes) for r in rows] == [
        (1, "Rude doctor.", {"gender": "woman"}, {"stars": "1"}),
        (2, "Late again.", {"gender": "man"}, {"stars": "2"}),
    ]


def test_xlsx_and_jsonl_read_the_same_way():
    book = Workbook()
    sheet = book.active
    sheet.append(["text", "gender", "stars"])
    sheet.append(["Rude doctor.", "woman", 1])
    buffer = io.BytesIO()
    book.save(buffer)
    [xlsx] = rows_of("r.xlsx", buffer.getvalue())
    [jsonl] = rows_of("r.jsonl", (json.dumps({"text": "Rude doctor.", "gender": "woman", "stars": 1}) + "\n").encode())
    assert (xlsx.text, xlsx.labels, xlsx.attributes) == (jsonl.text, jsonl.labels, jsonl.attributes) == (
        "Rude doctor.", {"gender": "woman"}, {"stars": 1})


def test_a_missing_column_is_named_with_the_columns_found():
    with pytest.raises(ItemImportError, match="no column “gender”; the columns are “text”, “sex”"):
        rows_of("r.csv", b"text,sex\nA,woman\n")


def test_an_empty_label_names_row_and_column():
    with pytest.raises(ItemImportError, match="r.csv, row 3, column “gender”: the ground-truth label is empty"):
        rows_of("r.csv", b"text,gender\nA,woman\nB,\n")


def test_bad_json_names_the_line():
    with pytest.raises(ItemImportError, match="r.jsonl, line 2: not valid JSON"):
        rows_of("r.jsonl", b'{"text": "A", "gender": "man"}\n{"text": \n')


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e999"])
@pytest.mark.parametrize("field", ["gender", "stars", "meta"])
def test_a_number_json_cannot_hold_names_the_line_and_field(value, field):
    """Python reads NaN, Infinity and 1e999; neither JSON nor PostgreSQL's jsonb can store them."""
    record = {"text": '"A"', "gender": '"man"', "stars": "4", "meta": '{"n": 1}'}
    record[field] = value if field != "meta" else f'{{"n": {value}}}'
    line = "{" + ", ".join(f'"{key}": {raw}' for key, raw in record.items()) + "}"
    shown = "Infinity" if value == "1e999" else value  # as Python reads it
    with pytest.raises(ItemImportError, match=rf"r\.jsonl, line 2, field “{field}”: {re.escape(shown)} is not a number "
                                             "JSON can hold; write null or a finite number"):
        rows_of("r.jsonl", b'{"text": "B", "gender": "woman"}\n' + line.encode() + b"\n")


def test_an_unknown_extension_is_refused():
    with pytest.raises(ItemImportError, match="choose a .csv, .xlsx or .jsonl file"):
        rows_of("r.txt", b"")


def test_filters_drop_short_rows_and_whole_excluded_words():
    rows = rows_of("r.csv", b"text,gender\nToo short,woman\nMy wife found him very rude indeed,man\n"
                            b"The midwifery staff were very rude today,woman\n")
    kept, dropped = filtered(rows, ItemFilters(min_words=4, exclude_words=["wife", "husband"]))
    assert [r.line for r in kept] == [3]
    assert dropped == {"short": 1, "excluded word": 1}


def test_a_balanced_sample_is_the_same_for_the_same_seed_and_balanced():
    text = "text,gender\n" + "".join(f"Review {i},{'woman' if i % 3 else 'man'}\n" for i in range(60))
    rows = rows_of("r.csv", text.encode())
    first = balanced_sample(rows, column="gender", per_label=10, seed=7)
    again = balanced_sample(rows, column="gender", per_label=10, seed=7)
    other = balanced_sample(rows, column="gender", per_label=10, seed=8)
    assert [r.line for r in first] == [r.line for r in again] != [r.line for r in other]
    assert sorted(r.labels["gender"] for r in first) == ["man"] * 10 + ["woman"] * 10


def test_a_sample_larger_than_a_label_is_refused():
    rows = rows_of("r.csv", b"text,gender\nA,woman\nB,woman\nC,man\n")
    with pytest.raises(ItemImportError, match="“man” has 1"):
        balanced_sample(rows, column="gender", per_label=2, seed=1)


def test_xlsx_dates_become_iso_text_and_empty_cells_empty_strings():
    import datetime as dt

    book = Workbook()
    sheet = book.active
    sheet.append(["text", "gender", "posted", "note"])
    sheet.append(["Rude doctor.", "woman", dt.datetime(2018, 5, 1, 9, 30), None])
    buffer = io.BytesIO()
    book.save(buffer)
    [row] = rows_of("r.xlsx", buffer.getvalue())
    assert row.attributes == {"posted": "2018-05-01T09:30:00", "note": ""}
    json.dumps(row.attributes)  # storable as JSON


def test_an_xlsx_that_would_unpack_beyond_the_limit_is_refused(settings):
    settings.RTA_MAX_UNCOMPRESSED_BYTES = 1000
    book = Workbook()
    book.active.append(["text", "gender"])
    book.active.append(["x" * 5000, "woman"])
    buffer = io.BytesIO()
    book.save(buffer)
    with pytest.raises(ItemImportError, match="would unpack to .* over the limit of 1,000"):
        rows_of("r.xlsx", buffer.getvalue())


def test_nul_characters_are_dropped_so_postgresql_can_store_the_row():
    [row] = rows_of("r.csv", b"text,gender,note\nRu\x00de.,wo\x00man,a\x00b\n")
    assert (row.text, row.labels, row.attributes) == ("Rude.", {"gender": "woman"}, {"note": "ab"})


def xlsx(*rows) -> bytes:
    book = Workbook()
    for row in rows:
        book.active.append(row)
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def test_a_column_named_twice_is_refused_in_csv_and_xlsx():
    message = "the column “gender” appears twice (columns C and D); rename one."
    with pytest.raises(ItemImportError, match=re.escape(f"r.csv, row 1: {message}")):
        rows_of("r.csv", b"id,text,gender,gender\n1,Rude.,woman,man\n")
    with pytest.raises(ItemImportError, match=re.escape(f"r.xlsx, row 1: {message}")):
        rows_of("r.xlsx", xlsx(["id", "text", "gender", " gender "], [1, "Rude.", "woman", "man"]))


def test_csv_headers_are_trimmed_and_rows_of_only_commas_skipped_like_xlsx():
    data = b"id , text ,gender\n1,Rude.,woman\n,,\n\n4,Late.,man\n"
    rows = rows_of("r.csv", data)
    assert [(r.line, r.text, r.labels, r.attributes) for r in rows] == [
        (1, "Rude.", {"gender": "woman"}, {"id": "1"}), (4, "Late.", {"gender": "man"}, {"id": "4"})]
    book = rows_of("r.xlsx", xlsx(["id ", " text", "gender"], [1, "Rude.", "woman"], [None, None, None],
                                  [None, None, None], [4, "Late.", "man"]))
    assert [(r.line, r.text, r.labels) for r in book] == [(r.line, r.text, r.labels) for r in rows]


def test_row_numbers_are_the_ones_the_spreadsheet_shows():
    # The header is row 1; blank rows and a cell running over two lines still count as the spreadsheet counts them.
    data = b'text,gender\n"Rude,\nvery rude.",woman\n,,\nLate.,\n'
    with pytest.raises(ItemImportError, match="^r.csv, row 4, column “gender”: the ground-truth label is empty.$"):
        rows_of("r.csv", data)
    with pytest.raises(ItemImportError, match="^r.xlsx, row 4, column “gender”: the ground-truth label is empty.$"):
        rows_of("r.xlsx", xlsx(["text", "gender"], ["Rude.", "woman"], [None, None], ["Late.", None]))
    with pytest.raises(ItemImportError, match="^r.csv, row 3: more cells than the header has columns.$"):
        rows_of("r.csv", b"text,gender\nRude.,woman\nLate.,man,extra\n")


def test_a_semicolon_delimited_csv_is_read_with_its_delimiter():
    rows = rows_of("r.csv", "text;gender;city\nRude, very rude.;woman;Köln\n".encode())
    assert [(r.text, r.labels, r.attributes) for r in rows] == [("Rude, very rude.", {"gender": "woman"}, {"city": "Köln"})]


@pytest.mark.parametrize("name", ["r.csv", "r.jsonl"])
def test_utf8_with_or_without_bom_is_read_and_anything_else_is_refused_with_its_line(name):
    good = (b"text,gender\nK\xc3\xb6ln was rude.,woman\n" if name == "r.csv"
            else b'{"text": "K\xc3\xb6ln was rude.", "gender": "woman"}\n')
    for data in (good, b"\xef\xbb\xbf" + good):
        [row] = rows_of(name, data)
        assert (row.text, row.labels) == ("Köln was rude.", {"gender": "woman"})
    latin1 = good.replace(b"\xc3\xb6", b"\xf6")
    where = ("line 2: not UTF-8 text (byte 0xF6 at column 2); save the sheet as “CSV UTF-8”." if name == "r.csv"
             else "line 1: not UTF-8 text (byte 0xF6 at column 12); save the file as UTF-8.")
    with pytest.raises(ItemImportError, match=re.escape(f"{name}, {where}")):
        rows_of(name, latin1)
