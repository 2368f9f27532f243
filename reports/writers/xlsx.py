"""XLSX: openpyxl builds the workbook (styles, bold header, column widths, frozen header row,
title), and the rows are streamed as XML into the sheet in place of a marker row.

openpyxl's own write-only mode keeps memory flat too, but spends ~0.1 ms per cell on
its cell objects: 4,000 excerpts × 8 columns took about a second. Writing the row XML
directly does the same job in a fraction of that, and strings are written inline
(t="inlineStr"), so a cell can never be read as a formula. Every cell (header, body, the
workbook's title) still goes through `safe_cell`, like the CSV's: a cell someone edits in
Excel (F2, Enter) is re-read as typed, and "=HYPERLINK(...)" would become a formula then.
"""

from __future__ import annotations

import io
import re
import zipfile
from typing import BinaryIO
from xml.sax.saxutils import escape

from openpyxl import Workbook
from openpyxl.styles import Alignment, Font
from openpyxl.utils import get_column_letter

from reports.writers import ZIP_LEVEL, Heading, Table, safe_cell

MAX_CELL = 32767  # Excel's limit on the characters in one cell
# Ends a cell cut to that limit, so nobody quotes a cut answer as whole.
CUT_MARKER = "… [cut at Excel's 32,767-character cell limit; the CSV download has the full text]"
SHEET_TITLE = "Table"
NOTES_SHEET_TITLE = "Notes"
SHEET = "xl/worksheets/sheet1.xml"
MARKER = "RTA-ROWS-GO-HERE"
FLUSH_ROWS = 500
_INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
# A cell of the marker row (its number filled in: 2, or 3 under a row of column groups) and its style.
_MARKER_CELL = r'<c r="[A-Z]+%d"(?: s="(\d+)")?'
# A carriage return written as itself is read back as a line feed (XML parsers normalise line ends); as a character
# reference it stays a carriage return: a quote kept as Markdown source keeps its CRLF.
_KEPT = {"\r": "&#13;"}
# The sheet's <dimension> would claim two rows; it is optional, so it goes.
_DIMENSION = re.compile(r"<dimension [^>]*/>")


def write_xlsx(table: Table, out: BinaryIO) -> None:
    skeleton = _skeleton(table)
    first = _first_row(table)
    letters = [get_column_letter(i) for i in range(1, len(table.headers) + 1)]
    with zipfile.ZipFile(io.BytesIO(skeleton)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=ZIP_LEVEL) as dst:
        for item in src.infolist():
            if item.filename != SHEET:
                dst.writestr(item, src.read(item.filename))
                continue
            xml = _DIMENSION.sub("", src.read(SHEET).decode("utf-8"))
            start = xml.index(f'<row r="{first}"')
            end = xml.index("</row>", start) + len("</row>")
            styles = [f' s="{m.group(1)}"' if m.group(1) else "" for m in re.finditer(_MARKER_CELL % first, xml[start:end])]
            with dst.open(SHEET, "w", force_zip64=True) as f:
                f.write(xml[:start].encode("utf-8"))
                buffer: list[str] = []
                cells = _CellWriter(letters, styles)
                for n, row in enumerate(table.iter_rows(), start=first):
                    buffer.append(cells.row_xml(n, [row.text] if isinstance(row, Heading) else row))
                    if n % FLUSH_ROWS == 0:
                        f.write("".join(buffer).encode("utf-8"))
                        buffer = []
                f.write("".join(buffer).encode("utf-8"))
                f.write(xml[end:].encode("utf-8"))


def _first_row(table: Table) -> int:
    """The sheet row of the first data row: after the headers, and the column groups' row above them."""
    return 3 if table.column_groups else 2


def _skeleton(table: Table) -> bytes:
    wb = Workbook()
    wb.properties.title = _text(table.caption)[:250]
    ws = wb.active
    ws.title = SHEET_TITLE
    bold, wrap = Font(bold=True), Alignment(wrap_text=True, vertical="top")
    first = _first_row(table)
    column = 1
    for heading, span in table.column_groups:
        if heading:
            cell = ws.cell(row=1, column=column, value=_text(heading))
            cell.font, cell.alignment = bold, Alignment(horizontal="center")
            if span > 1:
                ws.merge_cells(start_row=1, start_column=column, end_row=1, end_column=column + span - 1)
        column += span
    for i, (header, width) in enumerate(zip(table.headers, table.column_widths(), strict=True), start=1):
        ws.cell(row=first - 1, column=i, value=_text(header)).font = bold
        marker = ws.cell(row=first, column=i, value=MARKER)
        marker.alignment = wrap
        ws.column_dimensions[get_column_letter(i)].width = max(10, min(90, round(width * 160)))
    ws.freeze_panes = f"A{first}"
    if table.notes:
        sheet = wb.create_sheet(NOTES_SHEET_TITLE)
        sheet.column_dimensions["A"].width = 120
        for row, note in enumerate(table.notes, start=1):
            sheet.cell(row=row, column=1, value=_text(note)).alignment = wrap
    buffer = io.BytesIO()
    wb.save(buffer)
    return buffer.getvalue()


def _text(value: object) -> str:
    """A text cell's content: characters XML forbids removed first, so none can hide a formula start; a text
    longer than Excel allows is cut and ends with CUT_MARKER."""
    text = str(safe_cell(_INVALID_XML.sub("", str(value))))
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - len(CUT_MARKER)] + CUT_MARKER


class _CellWriter:
    """Rows as <row> XML. A text cell equal to the one above it (the same theme, code or interview down a
    sorted table) reuses that cell's checked and escaped content instead of checking it again."""

    def __init__(self, letters: list[str], styles: list[str]) -> None:
        self.letters, self.styles = letters, styles
        self.above: dict[int, tuple[str, str]] = {}

    def row_xml(self, n: int, row) -> str:
        cells = []
        for i, value in enumerate(row):
            style = self.styles[i] if i < len(self.styles) else ""
            if value.__class__ is str:
                above = self.above.get(i)
                if above is None or above[0] != value:
                    above = self.above[i] = (value, _cell_xml(value, style))
                xml = above[1]
            else:
                xml = _cell_xml(value, style)
            if xml:
                cells.append(f'<c r="{self.letters[i]}{n}"{xml}')
        return f'<row r="{n}">' + "".join(cells) + "</row>"


def _cell_xml(value, style: str) -> str:
    """A cell's XML after its reference: empty for a cell left empty. Text is guarded here (by _text), once: a guard
    put on twice would not come off as one (projects.text.formula_unguarded)."""
    if not isinstance(value, str):  # a quote (RichText) is text; numbers stay numbers, infinities become text
        value = safe_cell(value)
    if value is None or value == "" or value != value:  # NaN: Excel has none, and a file holding one does not open
        return ""
    if isinstance(value, str):
        return f'{style} t="inlineStr"><is><t xml:space="preserve">{escape(_text(value), _KEPT)}</t></is></c>'
    return f"><v>{value!r}</v></c>"
