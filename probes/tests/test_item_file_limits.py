"""Probe item files are refused by their size, rows, cells and (XLSX) unpacked parts before memory is spent."""

from __future__ import annotations

import io

import pytest

from interviews.tests.test_upload_memory import SI_VARIED, workbook_with
from probes import items
from probes.items import ItemImportError
from tests import memory
from tests.memory import MB


def rows_of(name: str, data: bytes) -> list:
    return items.item_rows(name, items.read_records(name, io.BytesIO(data)), text_column="text", label_columns=["label"])


def refused_within(name: str, data: bytes, budget: int) -> str:
    return str(memory.refused_within(ItemImportError, lambda: rows_of(name, data), budget))


def test_an_xlsx_with_too_many_texts_is_refused_before_openpyxl_loads_them():
    data = workbook_with(shared=(SI_VARIED, 110))  # 1.1 million texts, ~2 MB on disk
    message = refused_within("items.xlsx", data, 10 * MB)
    assert message.startswith("items.xlsx: expected a workbook of at most 1,000,000 different texts")


def test_a_csv_of_millions_of_tiny_rows_stops_at_the_row_limit():
    data = b"text,label\n" + b"a,b\n" * 300_000
    assert refused_within("items.csv", data, 30 * MB) == (
        "items.csv: more than 50,000 data rows; an item file may hold at most 50,000. Split it into several probes.")


def test_a_wide_csv_stops_at_the_cell_limit_long_before_its_size_limit():
    # The hostile one: 99,000 rows of 20 cells of 24 characters (50 MB) took 545 MB and 80 s in the web request.
    header = ",".join(["text", "label", *(f"c{i}" for i in range(18))])
    row = ",".join(["abcdefghijklmnopqrstuvwx"] * 20)
    data = "\n".join([header, *[row] * 30_000]).encode()  # 15 MB, under the size limit: 600,000 cells
    assert len(data) < items.MAX_FILE_BYTES
    assert refused_within("items.csv", data, 80 * MB) == (
        "items.csv, row 25002: more than 500,000 cells in all; an item file may hold at most 500,000. Drop columns "
        "you do not need.")


def test_a_file_of_the_old_size_limit_is_refused_unread():
    data = b"text,label\n" + b"abcdefghijklmnopqrstuvwx,b\n" * 1_900_000  # 50 MB
    assert refused_within("items.csv", data, 25 * MB) == (
        "items.csv: larger than 20.0 MB, the most an item file may be here (and at most 50,000 rows). Split it into "
        "several probes or drop columns.")


def test_a_file_over_the_size_limit_is_refused_unread(monkeypatch):
    monkeypatch.setattr(items, "MAX_FILE_BYTES", 1000)
    with pytest.raises(ItemImportError, match=r"items.csv: larger than 1000 bytes, the most an item file may be here"):
        rows_of("items.csv", b"text,label\n" + b"a,b\n" * 1000)


def test_jsonl_with_millions_of_tiny_values_is_refused_before_parsing(monkeypatch):
    monkeypatch.setattr(items, "MAX_JSON_VALUES", 10_000)
    data = b'{"text": "a", "label": "b", "x": [' + b"{}," * 50_000 + b"{}]}\n"
    assert "about 100,00" in refused_within("items.jsonl", data, 5 * MB)


def test_too_many_columns_or_cells_are_refused(monkeypatch):
    header = ",".join(["text", "label", *(f"c{i}" for i in range(300))])
    assert refused_within("items.csv", (header + "\na,b\n").encode(), 5 * MB) == (
        "items.csv, row 1: 302 columns; an item file may have at most 200.")
    monkeypatch.setattr(items, "MAX_CELLS", 100)
    message = refused_within("items.csv", b"text,label\n" + b"a,b\n" * 100, 5 * MB)
    assert message.startswith("items.csv, row 52: more than 100 cells in all")


def test_running_out_of_memory_is_never_reported_as_a_bad_file(monkeypatch):
    import openpyxl

    def fail(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(openpyxl, "load_workbook", fail)
    with pytest.raises(MemoryError):
        rows_of("items.xlsx", workbook_with())


def test_a_legitimate_sheet_still_imports():
    data = b"text,label\n" + b"hello there,yes\n" * 50_000
    assert len(rows_of("items.csv", data)) == 50_000
