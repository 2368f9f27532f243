"""Case variables of many participants at once: an uploaded sheet (CSV or XLSX) or the table on the case-variables page.

The first column names the participant (its label, as on the participants page; the table uses
its uuid); every other column is a case variable, its header the variable's name. A cell sets
that variable; an empty cell removes it; variables not in the sheet and participants not in the
sheet keep what they have. Numbers in an XLSX stay numbers; a CSV holds text, kept as written.
The whole sheet lands or nothing does (participant_attributes_set is one transaction).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import zipfile
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from interviews.forms import shown_value
from interviews.models import Interview, Participant
from interviews.parsers.archive import XlsxLimits, check_xlsx
from interviews.parsers.base import ParseError

MAX_ROWS = 5000
MAX_COLUMNS = 1000  # case variables in one sheet
MAX_NAME = 100
MAX_VALUE = 1000
# What reading one uploaded XLSX may unpack to (see interviews.parsers.archive.check_xlsx): 5,000 rows of
# 1,000 variables are far below it, and openpyxl then holds at most ~40 MB of shared text.
XLSX_LIMITS = XlsxLimits(max_shared_text_bytes=16 * 1024 * 1024, max_shared_strings=300_000,
                         max_sheet_bytes=64 * 1024 * 1024, max_total_bytes=128 * 1024 * 1024)


# PostgreSQL text cannot hold it; in a CSV it most often means UTF-16 saved without its byte-order mark.
NUL_IN_SHEET = "a NUL character (byte 0x00), which no text may hold; save the sheet as “CSV UTF-8”."


class SheetError(ValueError):
    pass


@dataclass
class SheetRow:
    where: str  # "row 3" (a file's line) or the participant's label (the table)
    who: str  # the participant's label (file) or uuid (table)
    values: list[Any]


@dataclass
class Sheet:
    source: str  # the file's name, or "the table"
    names: list[str]
    rows: list[SheetRow]
    keyed_by: str = "label"  # the participant field SheetRow.who holds
    removed: frozenset[str] = frozenset()  # variables whose column was renamed or cleared in the table


PARTICIPANT_LAYOUT = "first column: participant; one column per case variable"
INTERVIEW_LAYOUT = "first column: the interview’s title or uuid; one column per attribute"


def read_sheet(filename: str, data: bytes, *, layout: str = PARTICIPANT_LAYOUT) -> Sheet:
    """A CSV or XLSX file as a Sheet; a clear error naming the file, row and column when it cannot be read.

    `layout` is what the sheet should hold, said when the file is of another type."""
    lower = filename.lower()
    if lower.endswith(".csv"):
        grid = _csv_grid(filename, data)
    elif lower.endswith(".xlsx"):
        grid = _xlsx_grid(filename, data)
    else:
        raise SheetError(f"{filename}: upload a .csv or .xlsx file ({layout}).")
    if not grid:
        raise SheetError(f"{filename}: the sheet is empty.")
    header = [str(v).strip() if v is not None else "" for v in grid[0]]
    rows = [SheetRow(where=f"row {n}", who=str(r[0]).strip() if r and r[0] is not None else "",
                     values=[_blank(v) for v in r[1:]]) for n, r in enumerate(grid[1:], start=2)]
    return Sheet(source=filename, names=_names(filename, header[1:]), rows=rows)


def table_sheet(names: Sequence[str], shown: Sequence[str], cells: dict[str, Sequence[str]],
                labels: dict[str, str]) -> Sheet:
    """The posted case-variables table as a Sheet: `cells` maps a participant uuid to its row of values;
    `shown` are the column names the table was shown with, so a renamed or cleared header drops the old name."""
    rows = [SheetRow(where=labels.get(uuid, uuid), who=uuid, values=[_blank(v) for v in values])
            for uuid, values in cells.items()]
    names = _names("the table", [n.strip() for n in names])
    return Sheet(source="the table", names=names, rows=rows, keyed_by="uuid",
                 removed=frozenset(n for n in shown if n) - set(names))


def sheet_attributes(sheet: Sheet, participants: dict[str, Participant]) -> dict[Participant, dict[str, Any]]:
    """Each participant named in the sheet with its new case variables (only the ones that change)."""
    return _sheet_values(sheet, participants, what="participant", hint="use the labels on the participants page",
                         current=lambda p: p.attributes)


def sheet_interview_attributes(sheet: Sheet, interviews: list[Interview]) -> dict[Interview, dict[str, Any]]:
    """Each interview named in the sheet (by uuid, or by title when no other interview has it) with its new
    attributes, kept in the interview's metadata beside what its import recorded."""
    titles = Counter(iv.title for iv in interviews)
    by = {iv.title: iv for iv in interviews if titles[iv.title] == 1} | {str(iv.uuid): iv for iv in interviews}
    return _sheet_values(sheet, by, what="interview",
                         hint="use its title (when no other interview has it) or its uuid", current=lambda iv: iv.metadata)


def _sheet_values(sheet: Sheet, targets: dict[str, Any], *, what: str, hint: str,
                  current: Callable[[Any], Any]) -> dict[Any, dict[str, Any]]:
    result: dict[Any, dict[str, Any]] = {}
    for row in sheet.rows:
        target = targets.get(row.who)
        if target is None:
            raise SheetError(f"{sheet.source}, {row.where}: there is no {what} “{row.who}” in this project; {hint}.")
        if target in result:
            raise SheetError(f"{sheet.source}, {row.where}: {what} “{row.who}” appears twice.")
        old = current(target) if isinstance(current(target), dict) else {}
        new = {k: v for k, v in old.items() if k not in sheet.removed}
        for column, name in enumerate(sheet.names):
            value = row.values[column] if column < len(row.values) else None
            if not name:
                if value is not None:
                    raise SheetError(f"{sheet.source}, {row.where}, column {column + 2}: the value “{str(value)[:40]}” "
                                     "has no variable name; give the column a header or clear it.")
                continue
            if value is None:
                new.pop(name, None)
            elif isinstance(value, str) and len(value) > MAX_VALUE:
                raise SheetError(f"{sheet.source}, {row.where}, “{name}”: at most {MAX_VALUE} characters.")
            elif isinstance(value, str) and "\x00" in value:
                raise SheetError(f"{sheet.source}, {row.where}, “{name}”: {NUL_IN_SHEET}")
            elif not (name in old and shown_value(old[name]) == value):  # shown unchanged keeps its type
                new[name] = value
        if new != old:
            result[target] = new
    return result


def _names(source: str, names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    for column, name in enumerate(names, start=2):
        if len(name) > MAX_NAME:
            raise SheetError(f"{source}, column {column}: a variable name has at most {MAX_NAME} characters.")
        if "\x00" in name:
            raise SheetError(f"{source}, column {column}: {NUL_IN_SHEET}")
        if name and name in seen:
            raise SheetError(f"{source}: the variable “{name}” is in columns {seen[name]} and {column}; names must be unique.")
        if name:
            seen[name] = column
    return names


def _blank(value: Any) -> Any:
    """None for an empty cell; text stripped; dates as ISO text; numbers as they are."""
    if value is None:
        return None
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    return value


def _csv_grid(filename: str, data: bytes) -> list[list[Any]]:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise SheetError(f"{filename}: not UTF-8 text; save the sheet as “CSV UTF-8”.") from None
    try:
        dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t")
    except csv.Error:
        dialect = csv.excel
    try:
        return _grid(filename, csv.reader(io.StringIO(text, newline=""), dialect))  # a lone CR (Excel for Mac) ends a line too
    except csv.Error as exc:
        raise SheetError(f"{filename}: not a readable CSV file ({exc}).") from None


def _grid(filename: str, rows: Iterable[Sequence[Any]]) -> list[list[Any]]:
    """The non-blank rows, trailing empty cells dropped; refused as soon as there are more rows or columns than
    a sheet may hold, so a hostile file never gets to fill memory."""
    grid: list[list[Any]] = []
    for row in rows:
        values = list(row)
        while values and _blank(values[-1]) is None:
            values.pop()
        if not values:
            continue
        if len(values) > MAX_COLUMNS + 1:
            raise SheetError(f"{filename}, row {len(grid) + 1}: {len(values) - 1} case variables; "
                             f"a sheet holds at most {MAX_COLUMNS}.")
        if len(grid) > MAX_ROWS:
            raise SheetError(f"{filename}: more than {MAX_ROWS} rows; a sheet holds at most {MAX_ROWS}.")
        grid.append(values)
    return grid


def _xlsx_grid(filename: str, data: bytes) -> list[list[Any]]:
    from openpyxl import load_workbook
    from openpyxl.utils.exceptions import InvalidFileException

    try:
        check_xlsx(data, filename, XLSX_LIMITS)  # before openpyxl loads anything
    except ParseError as exc:
        raise SheetError(str(exc) if "expected an Excel workbook" not in str(exc)
                         else f"{filename}: not a readable Excel workbook (.xlsx).") from None
    try:
        workbook = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
        try:
            return _grid(filename, workbook.worksheets[0].iter_rows(values_only=True))
        finally:
            workbook.close()
    except SheetError:
        raise
    except (zipfile.BadZipFile, InvalidFileException, KeyError, IndexError, ValueError, TypeError, OSError):
        # What openpyxl raises on a damaged or foreign file.
        raise SheetError(f"{filename}: not a readable Excel workbook (.xlsx).") from None
