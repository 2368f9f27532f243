# The `world` fixture is imported from tables_world; pytest injects it by argument name.
# ruff: noqa: F811
"""Excerpt exports read back and compared with what the writers produced before they were made faster.

golden/excerpt_exports.json was written by the writers of 2026-11-25 (before the speed work of issue 20)
for the `world` project plus an answer with Markdown styling, in five tables (default columns; every
column with the interviewer question and one sentence of context; quotes as Markdown source; trimmed
quotes; exemplars). What is compared, per format:
- CSV and Markdown: the whole text, byte for byte.
- XLSX (read with openpyxl): the workbook title and sheet name, the frozen pane, every column width,
  and every cell's coordinate, value, type, bold, wrap and vertical alignment.
- DOCX (read with python-docx and its XML): page size, orientation and margins; every paragraph's
  text and style outside the table; the table's style and alignment; per row, its properties
  (header repeat, no split); per cell, its width and paragraph alignment, and each run's text (with
  its breaks and tabs), bold, italic, strike, font and colour.
UUIDs (random per test run) are replaced by their order of first appearance before comparing.

RTA_WRITE_GOLDEN=1 rewrites the file: only for a deliberate change of what the exports contain.
"""

from __future__ import annotations

import io
import json
import os
import re
import zipfile
from pathlib import Path

import docx
import openpyxl
import pytest
from django.http import QueryDict
from docx.oxml.ns import qn

from coding.models import Code
from reports.excerpts import excerpt_options, spec_from_query
from reports.exports import excerpt_table
from reports.tests.tables_world import _interview, code, seg, world  # noqa: F401 - fixture
from reports.writers import iter_table, write_table

pytestmark = pytest.mark.django_db

GOLDEN = Path(__file__).parent / "golden" / "excerpt_exports.json"
STYLED = ("**Bold claims** need *care* and `code`. A ~~struck~~ idea, then a list:\n\n"
          "- first *item* with a [link](https://example.org)\n- second item\n\n"
          "| cell | other |\n|---|---|\n| =SUM(1) | 2 |")
QUERIES = {
    "default": "",
    "every-column": ("columns=theme&columns=subtheme&columns=code&columns=model&columns=interview&columns=turn"
                     "&columns=quote&columns=provenance&columns=offsets&columns=interview_id&columns=turn_id"
                     "&columns=response_id&question=1&context=1"),
    "markdown-source": "columns=code&columns=quote&columns=turn&quotes=markdown",
    "trimmed": "columns=theme&columns=quote&columns=provenance&trim=25",
    "exemplars": "columns=theme&columns=code&columns=quote&columns=provenance&rows=exemplars",
}
FORMATS = ("csv", "md", "xlsx", "docx")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@pytest.fixture
def styled_world(world):
    """The world plus an answer whose quotes keep bold, italics, code, struck text, a list and a table."""
    iv = _interview(world.project, world.llama, "Llama styled", [STYLED], world.owner)
    styled = Code.objects.create(project=world.project, name="Styled", position=9, colour="#993366")
    for fragment in ("Bold claims", "struck", "first", "second item", "SUM"):
        code(styled, seg(iv, fragment), world.owner)
    return world


def _export(w, query: str, fmt: str) -> bytes:
    options = excerpt_options(w.project)
    spec = spec_from_query(options, QueryDict(query))
    table = excerpt_table(w.project, spec, options=options, fmt=fmt)
    if fmt in ("csv", "md"):
        return b"".join(iter_table(fmt, table))
    out = io.BytesIO()
    write_table(fmt, table, out)
    return out.getvalue()


def _xlsx_content(data: bytes) -> dict:
    wb = openpyxl.load_workbook(io.BytesIO(data))
    ws = wb.active
    return {
        "title": wb.properties.title, "sheet": ws.title, "freeze": ws.freeze_panes,
        "widths": {k: d.width for k, d in sorted(ws.column_dimensions.items())},
        "cells": [[c.coordinate, c.value, c.data_type, bool(c.font.bold), bool(c.alignment.wrap_text),
                   c.alignment.vertical] for row in ws.iter_rows() for c in row if c.value is not None],
    }


def _run_content(r) -> list:
    text = "".join("\n" if child.tag == qn("w:br") else "\t" if child.tag == qn("w:tab") else (child.text or "")
                   for child in r._r if child.tag in (qn("w:t"), qn("w:br"), qn("w:tab")))
    return [text, bool(r.bold), bool(r.italic), bool(r.font.strike), r.font.name,
            str(r.font.color.rgb) if r.font.color and r.font.color.rgb else None]


def _docx_content(data: bytes) -> dict:
    document = docx.Document(io.BytesIO(data))
    section = document.sections[0]
    [table] = document.tables
    rows = []
    for tr in table.rows:
        tr_pr = tr._tr.trPr
        cells = []
        for cell in tr.cells:
            tc_pr = cell._tc.tcPr
            cells.append({
                "width": tc_pr.tcW.w if tc_pr is not None and tc_pr.tcW is not None else None,
                "paragraphs": [[str(p.alignment), [_run_content(r) for r in p.runs]] for p in cell.paragraphs],
            })
        rows.append({"properties": sorted(child.tag.split("}")[1] for child in tr_pr) if tr_pr is not None else [],
                     "cells": cells})
    return {
        "page": [section.page_width, section.page_height, str(section.orientation), section.left_margin,
                 section.right_margin],
        "paragraphs": [[p.text, p.style.name] for p in document.paragraphs],
        "table": {"style": table.style.name, "alignment": str(table.alignment), "rows": rows},
    }


def _content(fmt: str, data: bytes):
    if fmt in ("csv", "md"):
        return data.decode("utf-8")
    if fmt == "xlsx":
        return _xlsx_content(data)
    assert zipfile.ZipFile(io.BytesIO(data)).testzip() is None
    return _docx_content(data)


def _stable(content) -> object:
    """The content with each UUID replaced by its order of first appearance."""
    seen: dict[str, str] = {}
    text = json.dumps(content, ensure_ascii=False, sort_keys=True)
    return json.loads(_UUID.sub(lambda m: seen.setdefault(m.group(0), f"<uuid {len(seen)}>"), text))


def test_every_export_contains_what_it_contained_before_the_writers_were_made_faster(styled_world):
    got = {f"{name} {fmt}": _stable(_content(fmt, _export(styled_world, query, fmt)))
           for name, query in QUERIES.items() for fmt in FORMATS}
    if os.environ.get("RTA_WRITE_GOLDEN") == "1":
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(got, ensure_ascii=False, indent=1, sort_keys=True) + "\n")
    expected = json.loads(GOLDEN.read_text())
    assert got.keys() == expected.keys()
    for key in expected:
        assert got[key] == expected[key], key
