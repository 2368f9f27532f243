"""Uploads that are small on disk but huge once unpacked or parsed are refused before the memory is spent.

Each hostile file is built in a streaming way and parsed under tracemalloc: the refusal must name the file and
the limit, and the parse must stay within a few tens of MB (it used to reach the 2 GB ceiling).
"""

from __future__ import annotations

import io
import zipfile

import pytest
from openpyxl import Workbook

from interviews.attribute_sheet import SheetError, read_sheet
from interviews.parsers import Limits, ParseError, SourceFile, parse_upload
from interviews.parsers.archive import XlsxLimits, check_xlsx
from tests import memory
from tests.memory import MB

NS = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
SST_TYPE = ('<Override PartName="/xl/sharedStrings.xml" ContentType="application/vnd.openxmlformats-officedocument.'
            'spreadsheetml.sharedStrings+xml"/></Types>')


def workbook_with(shared: tuple[bytes, int] | None = None, sheet_row: bytes | None = None) -> bytes:
    """A real workbook whose shared-text table is `shared` (a block written n times), or whose first worksheet
    gets an extra row `sheet_row`; members are streamed, so building a 100 MB part costs little memory."""
    wb = Workbook()
    wb.active.append(["participant", "age"])
    wb.active.append(["P1", 30])
    template = io.BytesIO()
    wb.save(template)
    src = zipfile.ZipFile(template)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename == "[Content_Types].xml" and shared:
                data = data.replace(b"</Types>", SST_TYPE.encode())
            if info.filename == "xl/worksheets/sheet1.xml" and sheet_row:
                data = data.replace(b"</sheetData>", sheet_row + b"</sheetData>")
            dst.writestr(info.filename, data)
        if shared:
            block, times = shared
            with dst.open("xl/sharedStrings.xml", "w", force_zip64=True) as fh:
                fh.write(f'<sst xmlns="{NS}">'.encode())
                for _ in range(times):
                    fh.write(block)
                fh.write(b"</sst>")
    return out.getvalue()


SI = b"<si><t>ab</t></si>" * 10_000  # 180 KB
# Texts that compress like real ones (under the 200:1 ZIP-bomb ratio): 10,000 of them, 170 KB.
SI_VARIED = b"".join(b"<si><t>%d</t></si>" % (n * 7919 % 100_003) for n in range(10_000))


def test_a_case_variables_xlsx_with_a_huge_text_table_is_refused_before_openpyxl_loads_it():
    data = workbook_with(shared=(SI, 100))  # 18 MB of shared text, ~60 KB on disk
    assert len(data) < 2 * MB
    exc = memory.refused_within(SheetError, lambda: read_sheet("vars.xlsx", data), 10 * MB)
    assert str(exc).startswith("vars.xlsx: expected a workbook whose text table (xl/sharedStrings.xml) unpacks to at "
                               "most 16.0 MB, found 17.2 MB")


def test_a_case_variables_xlsx_with_too_many_tiny_texts_is_refused():
    data = workbook_with(shared=(SI_VARIED, 40))  # 400,000 texts in 7 MB: under the size cap, over the count
    exc = memory.refused_within(SheetError, lambda: read_sheet("vars.xlsx", data), 10 * MB)
    assert "expected a workbook of at most 300,000 different texts" in str(exc)


def test_a_row_with_more_cells_than_excel_allows_is_refused():
    data = workbook_with(sheet_row=b'<row r="3">' + b"<c/>" * 20_000 + b"</row>")
    exc = memory.refused_within(SheetError, lambda: read_sheet("vars.xlsx", data), 64 * MB)
    assert "row 3: expected at most 16,384 cells in a row, found 20,000" in str(exc)


def test_a_case_variables_csv_of_tiny_rows_stops_at_the_row_limit():
    data = b"participant,age\n" + b"P,1\n" * 500_000  # 2 MB: 500,000 rows
    exc = memory.refused_within(SheetError, lambda: read_sheet("vars.csv", data), 20 * MB)
    assert str(exc) == "vars.csv: more than 5000 rows; a sheet holds at most 5000."


def test_real_workbooks_pass_the_check():
    data = workbook_with()
    check_xlsx(data, "ok.xlsx", XlsxLimits(max_shared_text_bytes=1024, max_shared_strings=10))
    assert [r.who for r in read_sheet("ok.xlsx", data).rows] == ["P1"]


def test_a_transcript_xlsx_with_a_huge_text_table_is_refused():
    data = workbook_with(shared=(SI_VARIED, 400))  # 68 MB of shared text, 64 MB allowed
    exc = memory.refused_within(
        ParseError, lambda: list(parse_upload(SourceFile.from_bytes("chat.xlsx", data))), 10 * MB)
    assert "chat.xlsx: expected a workbook whose text table (xl/sharedStrings.xml) unpacks to at most 64.0 MB" in str(exc)


def test_json_with_millions_of_tiny_values_is_refused_before_parsing():
    data = b'{"messages": [{"role": "user", "content": "x"}], "x": [' + b"{}," * 200_000 + b"{}]}"  # 600 KB
    limits = Limits(max_json_values=20_000)
    # The budget: the text itself, never the objects.
    exc = memory.refused_within(
        ParseError, lambda: list(parse_upload(SourceFile.from_bytes("chat.json", data), limits=limits)),
        3 * len(data) + 5 * MB)
    assert str(exc).startswith("chat.json: expected at most 20,000 separate values")


def test_json_lines_are_held_a_line_at_a_time_so_only_a_line_is_limited():
    line = b'{"messages": [{"role": "user", "content": "x"}], "x": [' + b"{}," * 5_000 + b"{}]}\n"
    limits = Limits(max_json_values=20_000)
    assert len(list(parse_upload(SourceFile.from_bytes("chat.jsonl", line * 40), limits=limits))) == 40
    with pytest.raises(ParseError, match="expected at most 20,000 separate values"):
        list(parse_upload(SourceFile.from_bytes("chat.jsonl", line.replace(b"[{},", b"[" + b"{}," * 12_000) * 2),
                          limits=limits))


@pytest.mark.parametrize(("name", "row"), [("chat.csv", b"A,b\n"), ("chat.txt", b"A: b\n")])
def test_a_transcript_of_tiny_rows_stops_at_its_limit(name, row):
    data = (b"speaker,text\n" if name.endswith(".csv") else b"") + row * 200_000
    limits = Limits(max_table_rows=10_000, max_text_lines=10_000)
    exc = memory.refused_within(
        ParseError, lambda: list(parse_upload(SourceFile.from_bytes(name, data), limits=limits)), 30 * MB)
    assert "at most 10,000 " in str(exc) and "split it into smaller files" in str(exc)


def test_one_conversation_of_millions_of_tiny_values_in_a_chatgpt_export_is_refused_as_it_is_read(monkeypatch):
    from interviews.parsers import chatgpt

    monkeypatch.setattr(chatgpt, "MAX_CONVERSATION_VALUES", 50_000)
    fine = (b'{"title": "Fine", "create_time": 1, "current_node": "b", "mapping": {"a": {"id": "a", "message": null, '
            b'"parent": null, "children": ["b"]}, "b": {"id": "b", "parent": "a", "children": [], "message": {"author": '
            b'{"role": "user"}, "content": {"content_type": "text", "parts": ["Hello?"]}}}}}')
    hostile = b'{"title": "Huge", "create_time": 1, "mapping": {}, "padding": [' + b"0," * 400_000 + b"0]}"
    data = b"[" + fine + b"," + hostile + b"]"
    # The budget: the first 50,000 values of it, not 400,000.
    exc = memory.refused_within(
        ParseError, lambda: list(parse_upload(SourceFile.from_bytes("conversations.json", data))), 30 * MB)
    assert str(exc).startswith("conversations.json: conversation 2: expected at most 50,000 separate values (texts, "
                               "numbers, lists, fields) in one conversation, found more than")


@pytest.mark.parametrize(("name", "conversation", "separator"), [
    ("conversations.json", b'{"mapping": {}}', b","),  # a ChatGPT export, streamed
    ("chat.jsonl", b'{"messages": [{"role": "user", "content": "x"}]}', b"\n"),  # JSON Lines, a line at a time
])
def test_a_file_of_more_conversations_than_one_file_may_hold_is_refused_as_it_is_read(name, conversation, separator):
    # The hostile export held 326,666 empty conversations in 4.9 MB: a minute and 1 GB to preview.
    count = Limits().max_conversations + 1
    data = separator.join([conversation] * count)
    if name.endswith(".json"):
        data = b"[" + data + b"]"
    exc = memory.refused_within(ParseError, lambda: list(parse_upload(SourceFile.from_bytes(name, data))), 20 * MB)
    assert str(exc) == (f"{name}: expected at most 10,000 conversations in one file; split it into smaller files, "
                        "found more")


def test_a_text_transcript_of_more_lines_than_a_worker_holds_is_refused_by_default():
    # "A: x" lines are the densest transcript: ~650 bytes a turn once read, so 980,000 of them took 650 MB.
    lines = Limits().max_text_lines + 1
    data = b"A: x\nB: y\n" * (lines // 2) + b"A: x"
    exc = memory.refused_within(ParseError, lambda: list(parse_upload(SourceFile.from_bytes("chat.txt", data))),
                                4 * len(data) + 5 * MB)
    assert str(exc) == ("chat.txt: expected at most 200,000 lines in one transcript; split it into smaller files, "
                        "found 200,001")
