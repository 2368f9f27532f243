"""XLSX through openpyxl's write-only mode: rows go straight to a temporary XML file, not memory."""

from __future__ import annotations

from typing import BinaryIO

from openpyxl import Workbook
from openpyxl.cell import WriteOnlyCell
from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE
from openpyxl.styles import Alignment, Font
from openpyxl.utils import get_column_letter

from reports.writers import Cell, Table

MAX_CELL = 32767  # Excel's limit on the characters in one cell
SHEET_TITLE = "Table"


def _text(value: str) -> str:
    return ILLEGAL_CHARACTERS_RE.sub("", value)[:MAX_CELL]


def write_xlsx(table: Table, out: BinaryIO) -> None:
    wb = Workbook(write_only=True)
    wb.properties.title = table.caption[:250]
    ws = wb.create_sheet(SHEET_TITLE)
    for i, width in enumerate(table.column_widths(), start=1):
        ws.column_dimensions[get_column_letter(i)].width = max(10, min(90, round(width * 160)))
    ws.freeze_panes = "A2"
    bold, wrap = Font(bold=True), Alignment(wrap_text=True, vertical="top")
    header = []
    for h in table.headers:
        cell = WriteOnlyCell(ws, value=_text(h))
        cell.font = bold
        header.append(cell)
    ws.append(header)
    for row in table.iter_rows():
        ws.append([_cell(ws, v, wrap) for v in row])
    wb.save(out)


def _cell(ws, value: Cell, wrap: Alignment) -> Cell | WriteOnlyCell:
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        # Excel has no infinity: a file holding one does not open.
        return "" if value != value else ("+∞" if value > 0 else "−∞")
    if not isinstance(value, str):
        return value
    text = _text(value)
    if text.startswith("=") or "\n" in text:
        # openpyxl would store "=..." as a formula; typed as text it stays the quote it is.
        cell = WriteOnlyCell(ws, value=text)
        cell.data_type = "s"
        cell.alignment = wrap
        return cell
    return text
