"""DOCX: a real Word table with a numbered caption, streamed row by row.

python-docx builds the document (styles, caption with a SEQ field, the table with its
repeating header row and column widths) around one marker row. The rows are then
written as XML straight into the zip entry in place of the marker, so memory and time
stay flat however long the table is (python-docx's own add_row is slow and keeps the
whole tree in memory).
"""

from __future__ import annotations

import copy
import functools
import io
import re
import zipfile
from dataclasses import dataclass
from typing import BinaryIO
from xml.sax.saxutils import escape

from docx import Document
from docx.enum.section import WD_ORIENT
from docx.enum.table import WD_TABLE_ALIGNMENT
from docx.enum.text import WD_ALIGN_PARAGRAPH
from docx.oxml import OxmlElement
from docx.oxml.ns import qn
from docx.shared import Cm, Inches, Mm, Pt

from interviews.rendering import BOLD, CODE, ITALIC, MUTED, STRUCK, RichText
from projects.numbers import number_text
from reports.writers import ZIP_LEVEL, Cell, Heading, Table, unnumbered_caption

MARKER = "RTA-ROWS-GO-HERE"
CAPTION_MARKER = "RTA-CAPTION-GOES-HERE"
PAPER_SIZES = {"a4": (Mm(210), Mm(297)), "letter": (Inches(8.5), Inches(11))}
DOCUMENT = "word/document.xml"
FLUSH_ROWS = 200
# XML 1.0 forbids most control characters; Word refuses a file containing them.
_INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_TC_PR = re.compile(r"<w:tcPr>.*?</w:tcPr>", re.S)


def write_docx(table: Table, out: BinaryIO) -> None:
    skeleton = _skeleton(tuple(table.headers), tuple(table.column_widths()), table.paper, table.is_landscape(wide_after=4),
                         tuple(table.column_groups))
    caption = unnumbered_caption(table.caption)
    # The caption goes in as text: escaped, and without its ": " when there is none.
    before = skeleton.before.replace(CAPTION_MARKER, escape(_clean(caption))) if caption else \
        skeleton.before.replace(": " + CAPTION_MARKER, "")
    cells = _CellWriter(skeleton.cell_properties, table.numeric)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=ZIP_LEVEL) as dst:
        for item, data in skeleton.parts:
            if item.filename != DOCUMENT:
                dst.writestr(copy.copy(item), data)  # writing fills in the ZipInfo: the cached one stays clean
                continue
            with dst.open(DOCUMENT, "w", force_zip64=True) as f:
                f.write(before.encode("utf-8"))
                buffer: list[str] = []
                for n, row in enumerate(table.iter_rows(), start=1):
                    buffer.append(cells.row_xml(row))
                    if n % FLUSH_ROWS == 0:
                        f.write("".join(buffer).encode("utf-8"))
                        buffer = []
                f.write("".join(buffer).encode("utf-8"))
                f.write(_with_notes(skeleton.after, table.notes).encode("utf-8"))


def _with_notes(after: str, notes) -> str:
    """The document after the last row, with a table note paragraph ("Note. …") under the table per note."""
    if not notes:
        return after
    paragraphs = "".join(f'<w:p><w:r><w:rPr><w:i/></w:rPr><w:t xml:space="preserve">Note. </w:t></w:r>'
                         f"{_runs(_clean(note))}</w:p>" for note in notes)
    end = after.index("</w:tbl>") + len("</w:tbl>")
    return after[:end] + paragraphs + after[end:]


@dataclass(frozen=True)
class _Skeleton:
    parts: tuple[tuple[zipfile.ZipInfo, bytes], ...]  # every part of the package, document.xml's bytes unused
    before: str  # document.xml up to the first row of data, with CAPTION_MARKER where the caption goes
    after: str  # document.xml after the last row
    cell_properties: tuple[str, ...]  # each column's <w:tcPr> (its width)


@functools.lru_cache(maxsize=64)
def _skeleton(headers: tuple[str, ...], widths: tuple[float, ...], paper: str, landscape: bool,
              groups: tuple[tuple[str, int], ...] = ()) -> _Skeleton:
    """The document around the rows, built by python-docx once per table shape: building it took longer than
    writing a few thousand rows, and every download of the same table needs the same one."""
    doc = Document()
    section = doc.sections[0]
    width, height = PAPER_SIZES.get(paper, PAPER_SIZES["a4"])
    if landscape:
        section.orientation = WD_ORIENT.LANDSCAPE
        width, height = height, width
    section.page_width, section.page_height = width, height
    section.left_margin = section.right_margin = Cm(2)
    usable = section.page_width - section.left_margin - section.right_margin
    _caption(doc)
    header = 1 if groups else 0  # the column groups' row goes above the headers
    t = doc.add_table(rows=header + 2, cols=len(headers))
    t.style = "Table Grid"
    t.alignment = WD_TABLE_ALIGNMENT.CENTER
    t.autofit = False
    for i, (cell, width) in enumerate(zip(t.rows[header].cells, widths, strict=True)):
        cell.text = ""
        run = cell.paragraphs[0].add_run(headers[i])
        run.bold = True
        for row in t.rows:
            row.cells[i].width = int(usable * width)
    if groups:
        _group_row(t, groups)
    for row in t.rows[: header + 1]:
        _repeat_header(row)
    t.rows[header + 1].cells[0].text = MARKER
    doc.styles["Normal"].font.size = Pt(10)
    buffer = io.BytesIO()
    doc.save(buffer)
    with zipfile.ZipFile(buffer) as package:
        parts = tuple((item, package.read(item.filename)) for item in package.infolist())
    document = next(data for item, data in parts if item.filename == DOCUMENT).decode("utf-8")
    before, marker_row, after = _split(document)
    return _Skeleton(parts=parts, before=before, after=after, cell_properties=tuple(_TC_PR.findall(marker_row)))


def _caption(doc) -> None:
    """'Table 1: <caption>' with Word's SEQ field, so Word numbers and lists it like its own captions."""
    p = doc.add_paragraph(style="Caption")
    p.add_run("Table ")
    for kind, text in (("begin", None), (None, " SEQ Table \\* ARABIC "), ("separate", None), ("text", "1"), ("end", None)):
        run = p.add_run()
        if kind in ("begin", "separate", "end"):
            fld = OxmlElement("w:fldChar")
            fld.set(qn("w:fldCharType"), kind)
            run._r.append(fld)
        elif kind == "text":
            run.text = text
        else:
            instr = OxmlElement("w:instrText")
            instr.set(qn("xml:space"), "preserve")
            instr.text = text
            run._r.append(instr)
    p.add_run(": " + CAPTION_MARKER)


def _group_row(t, groups: tuple[tuple[str, int], ...]) -> None:
    """The first row: each group's heading, bold and centred, in one cell merged across its columns."""
    first = 0
    for heading, span in groups:
        cell = t.cell(0, first).merge(t.cell(0, first + span - 1)) if span > 1 else t.cell(0, first)
        if heading:
            paragraph = cell.paragraphs[0]
            paragraph.alignment = WD_ALIGN_PARAGRAPH.CENTER
            paragraph.add_run(heading).bold = True
        first += span


def _repeat_header(row) -> None:
    tr_pr = row._tr.get_or_add_trPr()
    header = OxmlElement("w:tblHeader")
    header.set(qn("w:val"), "true")
    tr_pr.append(header)


def _split(xml: str) -> tuple[str, str, str]:
    at = xml.index(MARKER)
    start = xml.rindex("<w:tr", 0, at)
    # "<w:tr" also starts "<w:trPr": find the row's own opening tag.
    while xml[start + 5] not in (">", " "):
        start = xml.rindex("<w:tr", 0, start)
    end = xml.index("</w:tr>", at) + len("</w:tr>")
    return xml[:start], xml[start:end], xml[end:]


def _clean(text: str) -> str:
    return _INVALID_XML.sub("", text)


# In the order OOXML's schema lists them inside <w:rPr> (fonts, bold, italics, strike, colour).
_RUN_PROPERTIES = {CODE: '<w:rFonts w:ascii="Courier New" w:hAnsi="Courier New"/>', BOLD: "<w:b/>", ITALIC: "<w:i/>",
                   STRUCK: "<w:strike/>", MUTED: '<w:color w:val="808080"/>'}


def _runs(value: Cell) -> str:
    if isinstance(value, RichText):
        # A quote keeps the answer's bold and italics as Word formatting, not as Markdown markers.
        return "".join(_styled_run(run.text, run.styles) for run in value.runs)
    if value is None:
        return ""
    if isinstance(value, float):
        text = "+∞" if value == float("inf") else "−∞" if value == float("-inf") else "" if value != value else number_text(value)
    else:
        text = str(value)
    if text and "\n" not in text and "\t" not in text and not _INVALID_XML.search(text):
        return _PLAIN_RUN_START + escape(text) + _PLAIN_RUN_END  # one line: what the loop below gives, sooner
    parts = []
    for i, line in enumerate(_clean(text).replace("\r\n", "\n").split("\n")):
        if i:
            parts.append("<w:br/>")
        if line:
            parts.append('<w:t xml:space="preserve">' + escape(line).replace("\t", '</w:t><w:tab/><w:t xml:space="preserve">') + "</w:t>")
    return "<w:r>" + "".join(parts) + "</w:r>" if parts else ""


_PLAIN_RUN_START, _PLAIN_RUN_END = '<w:r><w:t xml:space="preserve">', "</w:t></w:r>"


def _styled_run(text: str, styles: frozenset[str]) -> str:
    plain = _runs(text)
    if not styles or not plain:
        return plain
    properties = "".join(xml for style, xml in _RUN_PROPERTIES.items() if style in styles)
    return plain.replace("<w:r>", f"<w:r><w:rPr>{properties}</w:rPr>", 1) if properties else plain


class _CellWriter:
    """Rows as <w:tr> XML. A plain text or number cell equal to the one above it (the same theme, code or
    interview down a sorted table) reuses that cell's XML instead of building it again."""

    def __init__(self, cell_props: list[str], numeric: frozenset[int]) -> None:
        self.cell_props, self.numeric = cell_props, numeric
        self.above: dict[int, tuple[object, str]] = {}

    def row_xml(self, row) -> str:
        if isinstance(row, Heading):  # one bold cell across the table, kept with the rows it heads
            text = _styled_run(row.text, frozenset({BOLD}))
            return (f'<w:tr><w:trPr><w:cantSplit/></w:trPr><w:tc><w:tcPr><w:gridSpan w:val="{len(self.cell_props)}"/>'
                    f'</w:tcPr><w:p><w:pPr><w:keepNext/></w:pPr>{text}</w:p></w:tc></w:tr>')
        cells = []
        for i, value in enumerate(row):
            kind = value.__class__
            above = self.above.get(i)
            if above is not None and above[0].__class__ is kind and above[0] == value:
                cells.append(above[1])
                continue
            props = self.cell_props[i] if i < len(self.cell_props) else ""
            align = '<w:pPr><w:jc w:val="right"/></w:pPr>' if i in self.numeric else ""
            xml = f"<w:tc>{props}<w:p>{align}{_runs(value)}</w:p></w:tc>"
            if kind is str or kind is int:
                self.above[i] = (value, xml)
            cells.append(xml)
        return "<w:tr><w:trPr><w:cantSplit/></w:trPr>" + "".join(cells) + "</w:tr>"
