"""CSV that Excel opens correctly: UTF-8 with a BOM, CRLF rows, formula-safe cells."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterator, Sequence

from reports.writers import Cell, Table

BOM = "\ufeff"
# A cell starting with one of these is run as a formula by spreadsheet programs
# (CSV injection); tab and carriage return are on OWASP's list too.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# Spreadsheets have no infinity, and csv would write "inf". "+∞" starts with a formula
# trigger (Excel shows #NAME?, and the guard's apostrophe stays visible in a CSV), so
# +∞ is the bare "∞"; −∞ uses the Unicode minus sign (U+2212), which no program runs.
INFINITY_TEXT: dict[float, str] = {math.inf: "∞", -math.inf: "\u2212∞"}
FLUSH_ROWS = 500


def safe_cell(value: Cell) -> Cell:
    """Text that a spreadsheet would read as a formula gets a leading apostrophe; numbers stay numbers."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    if isinstance(value, float):
        return INFINITY_TEXT.get(value, value)
    return value


def safe_row(row: Sequence[Cell]) -> list[Cell]:
    # Inlined safe_cell: this runs for every cell of every row.
    return [("'" + v) if v.__class__ is str and v.startswith(FORMULA_START)
            else INFINITY_TEXT.get(v, v) if v.__class__ is float else v for v in row]


def iter_csv(table: Table) -> Iterator[bytes]:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    buffer.write(BOM)
    writer.writerow(safe_row(table.headers))
    n = 0
    for row in table.iter_rows():
        writer.writerow(safe_row(row))
        n += 1
        if n % FLUSH_ROWS == 0:
            yield buffer.getvalue().encode("utf-8")
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue().encode("utf-8")
