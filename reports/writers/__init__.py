"""Table writers for papers: DOCX, XLSX, CSV, LaTeX and Markdown from one streamed `Table`.

Every writer takes rows as an iterator and keeps only the current row (plus a small
buffer) in memory, so a table of any length costs the same memory.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from projects.text import FORMULA_GUARD, FORMULA_START, needs_formula_guard

Cell = str | int | float | None

# Spreadsheets have no infinity, and csv would write "inf". "+∞" starts with a formula
# trigger (Excel shows #NAME?, and the guard's apostrophe stays visible), so +∞ is the
# bare "∞"; −∞ uses the Unicode minus sign (U+2212), which no program runs.
INFINITY_TEXT: dict[float, str] = {math.inf: "∞", -math.inf: "\u2212∞"}
# How pandas and R read −∞ from a CSV. As a formula it can only give #NAME?, it runs nothing: it is not guarded.
MACHINE_MINUS_INFINITY = "-inf"
# Zip level for XLSX and DOCX: level 1 deflates a 4,000-row table's XML in a fifth of the default's (6)
# time, for a file about a quarter larger; the XML inside is the same.
ZIP_LEVEL = 1


def safe_cell(value: object) -> Cell:
    """A spreadsheet cell that can never run: text a spreadsheet would read as a formula gets a
    leading apostrophe (projects.text.needs_formula_guard), numbers stay numbers. Every cell of every
    CSV/XLSX export goes through here (headers, body, notes), so a label like "=HYPERLINK(...)" is
    shown, never run; our own imports take the apostrophe off (projects.text.formula_unguarded)."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    if isinstance(value, float):
        return INFINITY_TEXT.get(value, value)
    text = str(value)
    return FORMULA_GUARD + text if needs_formula_guard(text) and text != MACHINE_MINUS_INFINITY else text


def safe_row(row: Iterable[object]) -> list[Cell]:
    # safe_cell inlined for the common cells (plain str, int, None): this runs for every cell of every row.
    return [v if v is None or v.__class__ is int
            else (FORMULA_GUARD + v if v.startswith(_GUARDED_START) and needs_formula_guard(v) and v != MACHINE_MINUS_INFINITY
                  else v) if v.__class__ is str
            else safe_cell(v) for v in row]


# Every text needs_formula_guard is true for starts with one of these: one quick look for most cells.
_GUARDED_START = (*FORMULA_START, FORMULA_GUARD)


# "Table 3: ", "Table 3. ", "Tab. 3 – " typed at the start of a caption: Word and LaTeX number tables themselves.
_TYPED_NUMBER = re.compile(r"^\s*(?:table|tab\.)\s*\d+\s*[:.\-–—]?\s*", re.IGNORECASE)


NOTE_PREFIX = "Note: "


def unnumbered_caption(caption: str) -> str:
    """The caption without a table number typed before it, for the writers that number tables (DOCX, LaTeX)."""
    return _TYPED_NUMBER.sub("", caption, count=1) or caption


@dataclass(frozen=True)
class Heading:
    """A row that heads the rows after it (a section of the table): its text across the whole row, in bold
    where the format has bold (a LaTeX \\multicolumn, a merged Word cell); the first cell of a CSV/XLSX row."""

    text: str


@dataclass
class Table:
    """A caption, headers and rows (an iterator is fine: it is read once)."""

    caption: str
    headers: Sequence[str]
    rows: Iterable[Sequence[Cell] | Heading]
    # Optional hints: the number of rows (LaTeX picks longtable for long tables),
    # relative column widths, columns holding numbers (right-aligned), a LaTeX label.
    row_count: int | None = None
    widths: Sequence[float] | None = None
    numeric: frozenset[int] = field(default_factory=frozenset)
    label: str = ""
    # Per-row callback (e.g. progress); called with the number of rows written so far.
    on_row: Any = None
    # The page, shared by DOCX and LaTeX: paper "a4" or "letter"; landscape True/False, or None to turn
    # the page when the table has many columns.
    paper: str = "a4"
    landscape: bool | None = None
    # What a reader must know to read the numbers, printed under the table in every format: a table note
    # in LaTeX, DOCX and Markdown, "Note: …" rows after a blank row in CSV, a Notes sheet in XLSX.
    notes: Sequence[str] = ()
    # A header row above `headers` grouping them, as a paper's wide table does ("Control" over "All", "None"):
    # (heading, number of columns it spans) from the left, spans adding up to the columns; "" for no heading.
    # Spreadsheets and Word get the row (merged cells), LaTeX \multicolumn with rules, Markdown, which has
    # no spans, the heading before each header ("Control: All").
    column_groups: Sequence[tuple[str, int]] = ()

    def __post_init__(self) -> None:
        if self.column_groups and sum(span for _, span in self.column_groups) != len(self.headers):
            raise ValueError(f"The column groups span {sum(span for _, span in self.column_groups)} columns; "
                             f"the table has {len(self.headers)}.")

    def iter_rows(self) -> Iterator[Sequence[Cell]]:
        for n, row in enumerate(self.rows, start=1):
            yield row
            if self.on_row is not None:
                self.on_row(n)

    def is_landscape(self, wide_after: int) -> bool:
        return self.landscape if self.landscape is not None else len(self.headers) > wide_after

    def group_of_column(self) -> list[str]:
        """Each column's group heading ("" outside any group, and for every column when there are no groups)."""
        if not self.column_groups:
            return [""] * len(self.headers)
        return [heading for heading, span in self.column_groups for _ in range(span)]

    def column_widths(self) -> list[float]:
        widths = list(self.widths or [1.0] * len(self.headers))
        total = sum(widths) or 1.0
        return [w / total for w in widths]


FORMATS: dict[str, tuple[str, str]] = {
    # format: (file extension, content type)
    "csv": ("csv", "text/csv; charset=utf-8"),
    "xlsx": ("xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
    "docx": ("docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
    "tex": ("tex", "application/x-tex; charset=utf-8"),
    "md": ("md", "text/markdown; charset=utf-8"),
}
STREAMED = frozenset({"csv", "tex", "md"})
PAPERS = {"a4": "A4", "letter": "US Letter"}
ORIENTATIONS = {"auto": "Automatic (landscape for wide tables)", "portrait": "Portrait", "landscape": "Landscape"}


def page_from_query(query: Any) -> dict[str, Any]:
    """The page chosen in a query string (`paper`, `orientation`) as Table keyword arguments; unknown values fall back."""
    paper = query.get("paper") if query.get("paper") in PAPERS else "a4"
    orientation = query.get("orientation")
    return {"paper": paper, "landscape": {"portrait": False, "landscape": True}.get(orientation)}


def write_table(fmt: str, table: Table, out: BinaryIO) -> None:
    """Write `table` in format `fmt` (one of FORMATS) to a binary file."""
    if fmt not in FORMATS:
        raise ValueError(f"Unknown table format {fmt!r}; choose from {', '.join(FORMATS)}.")
    if fmt in STREAMED:
        for chunk in iter_table(fmt, table):
            out.write(chunk)
        return
    if fmt == "xlsx":
        from reports.writers.xlsx import write_xlsx

        write_xlsx(table, out)
    else:
        from reports.writers.docx import write_docx

        write_docx(table, out)


def iter_table(fmt: str, table: Table) -> Iterator[bytes]:
    """The text formats as a stream of byte chunks (for StreamingHttpResponse)."""
    if fmt == "csv":
        from reports.writers.csv import iter_csv

        return iter_csv(table)
    if fmt == "tex":
        from reports.writers.latex import iter_latex

        return iter_latex(table)
    if fmt == "md":
        from reports.writers.markdown import iter_markdown

        return iter_markdown(table)
    raise ValueError(f"{fmt} is not a streamed text format")
