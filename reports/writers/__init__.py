"""Table writers for papers: DOCX, XLSX, CSV, LaTeX and Markdown from one streamed `Table`.

Every writer takes rows as an iterator and keeps only the current row (plus a small
buffer) in memory, so a table of any length costs the same memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO

Cell = str | int | float | None


@dataclass
class Table:
    """A caption, headers and rows (an iterator is fine: it is read once)."""

    caption: str
    headers: Sequence[str]
    rows: Iterable[Sequence[Cell]]
    # Optional hints: the number of rows (LaTeX picks longtable for long tables),
    # relative column widths, columns holding numbers (right-aligned), a LaTeX label.
    row_count: int | None = None
    widths: Sequence[float] | None = None
    numeric: frozenset[int] = field(default_factory=frozenset)
    label: str = ""
    # Per-row callback (e.g. progress); called with the number of rows written so far.
    on_row: Any = None

    def iter_rows(self) -> Iterator[Sequence[Cell]]:
        for n, row in enumerate(self.rows, start=1):
            yield row
            if self.on_row is not None:
                self.on_row(n)

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
