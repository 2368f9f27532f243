"""Reading probe items from CSV, XLSX or JSONL, filtering them and drawing a balanced sample.

Pure functions over rows (no database), so the import service can check everything
before it writes anything: an import lands whole or not at all.
"""

from __future__ import annotations

import csv
import io
import json
import math
import random
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from interviews.parsers.archive import XlsxLimits, check_xlsx
from interviews.parsers.base import ParseError, human_size, json_value_count
from projects import safejson

FORMATS = ("csv", "xlsx", "jsonl")

# What one item file may hold: it is read in the web request and every row is kept as Python objects until the
# import lands whole, so these bound its memory and time, and are checked as the file is read. Time goes with
# rows (~0.5 ms each, most of it inserting the item), memory with cells: 99,000 rows of 20 cells (2 million)
# took 545 MB and 80 s. A dataset of 10,000 texts with a few labels holds 50,000 cells.
MAX_FILE_BYTES = 20 * 1024 * 1024
MAX_ROWS = 50_000
MAX_COLUMNS = 200
MAX_CELLS = 500_000
MAX_JSON_VALUES = 4_000_000  # JSONL: values in all records together (~72 bytes each once parsed)
XLSX_LIMITS = XlsxLimits(max_shared_text_bytes=64 * 1024 * 1024, max_shared_strings=1_000_000,
                         max_sheet_bytes=256 * 1024 * 1024, max_total_bytes=512 * 1024 * 1024)


class ItemImportError(ValueError):
    """The file cannot be imported; the message names the row and column."""


@dataclass
class ItemRow:
    line: int  # 1-based data row (CSV/XLSX: the sheet's row number minus the header's; JSONL: line number)
    text: str
    labels: dict[str, str]
    attributes: dict[str, Any]


@dataclass
class ItemFilters:
    min_words: int = 0
    exclude_words: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"min_words": self.min_words, "exclude_words": self.exclude_words}

    def reason_to_drop(self, text: str) -> str | None:
        """"short" or "excluded word", or None when the row is kept."""
        if self.min_words and len(text.split()) < self.min_words:
            return "short"
        if self.exclude_words and _word_pattern(tuple(self.exclude_words)).search(text):
            return "excluded word"
        return None


_patterns: dict[tuple[str, ...], re.Pattern[str]] = {}


def _word_pattern(words: tuple[str, ...]) -> re.Pattern[str]:
    """Whole words, case-insensitive: "wife" drops "my wife" but not "midwifery"."""
    if words not in _patterns:
        _patterns[words] = re.compile(r"\b(?:" + "|".join(re.escape(w) for w in words) + r")\b", re.IGNORECASE)
    return _patterns[words]


def format_of(filename: str) -> str:
    ext = filename.rsplit(".", 1)[-1].lower() if "." in filename else ""
    if ext not in FORMATS:
        raise ItemImportError(f"{filename}: choose a .csv, .xlsx or .jsonl file (this one ends in “.{ext}”).")
    return ext


def read_records(filename: str, data: BinaryIO) -> Iterable[tuple[int, dict[str, Any]]]:
    """(row number, {column: value}) for every data row of the file."""
    fmt = format_of(filename)
    if fmt == "csv":
        return _csv_records(filename, data)
    if fmt == "xlsx":
        return _xlsx_records(filename, data)
    return _jsonl_records(filename, data)


def _csv_records(filename: str, data: BinaryIO) -> Iterable[tuple[int, dict[str, Any]]]:
    raw = _capped(filename, data)
    # Decoded as it is read: the whole text at once can take four times the file's size.
    lines = io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8-sig", newline="")
    try:
        reader = csv.reader(lines, delimiter=_delimiter(lines.readline()))
        lines.seek(0)
        header = _header(filename, next(reader, []))
        rows = _Counter(filename, len(header))
        for number, values in enumerate(reader, start=1):
            if not any(v.strip() for v in values):
                continue  # a blank line, or only delimiters: XLSX skips empty rows too
            if any(v.strip() for v in values[len(header):]):
                raise ItemImportError(f"{_where(filename, number)}: more cells than the header has columns.")
            rows.add(number)
            values += [""] * (len(header) - len(values))
            yield number, {h: v for h, v in zip(header, values, strict=False) if h}
    except UnicodeDecodeError:
        _utf8(filename, raw)  # raises, naming the line and column
        raise
    except csv.Error as exc:
        raise ItemImportError(f"{filename}: not a readable CSV file ({exc}).") from None


def _capped(filename: str, data: BinaryIO) -> bytes:
    raw = data.read(MAX_FILE_BYTES + 1)
    if len(raw) > MAX_FILE_BYTES:
        raise ItemImportError(too_large(filename, MAX_FILE_BYTES))
    return raw


def too_large(filename: str, limit: int) -> str:
    return (f"{filename}: larger than {human_size(limit)}, the most an item file may be here (and at most "
            f"{MAX_ROWS:,} rows). Split it into several probes or drop columns.")


class _Counter:
    """Counts rows and cells as they are read; refuses the file as soon as it holds more than an item file may."""

    def __init__(self, filename: str, columns: int) -> None:
        self.filename, self.rows, self.cells = filename, 0, 0
        if columns > MAX_COLUMNS:
            raise ItemImportError(f"{filename}, row 1: {columns:,} columns; an item file may have at most {MAX_COLUMNS}.")
        self.columns = max(columns, 1)

    def add(self, number: int, cells: int | None = None) -> None:
        self.rows += 1
        self.cells += self.columns if cells is None else cells
        if self.rows > MAX_ROWS:
            raise ItemImportError(f"{self.filename}: more than {MAX_ROWS:,} data rows; an item file may hold at most "
                                  f"{MAX_ROWS:,}. Split it into several probes.")
        if self.cells > MAX_CELLS:
            raise ItemImportError(f"{_where(self.filename, number)}: more than {MAX_CELLS:,} cells in all; an item "
                                  f"file may hold at most {MAX_CELLS:,}. Drop columns you do not need.")


def _delimiter(header_line: str) -> str:
    """A comma, or the semicolon or tab of a header with no comma (Excel in many locales saves CSV with ";")."""
    if "," in header_line:
        return ","
    return next((d for d in (";", "\t") if d in header_line), ",")


def _header(filename: str, names: list[Any]) -> list[str]:
    """The column names with spaces around them stripped; a name used twice is refused."""
    from openpyxl.utils import get_column_letter

    header = ["" if name is None else str(name).strip() for name in names]
    seen: dict[str, int] = {}
    for index, name in enumerate(header, start=1):
        if name and name in seen:
            raise ItemImportError(f"{filename}, row 1: the column “{name}” appears twice (columns "
                                  f"{get_column_letter(seen[name])} and {get_column_letter(index)}); rename one.")
        seen.setdefault(name, index)
    return header


def _where(filename: str, number: int) -> str:
    """Where a record is, as the user's program shows it: the sheet row (the header is row 1) or the JSONL line."""
    if filename.lower().endswith(".jsonl"):
        return f"{filename}, line {number}"
    return f"{filename}, row {number + 1}"


def _utf8(filename: str, raw: bytes) -> str:
    """The file as text: UTF-8, with or without a byte-order mark; anything else is refused with its line."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        before = raw[raw.rfind(b"\n", 0, exc.start) + 1:exc.start].decode("utf-8-sig")  # valid up to the bad byte
        fix = "save the sheet as “CSV UTF-8”" if format_of(filename) == "csv" else "save the file as UTF-8"
        raise ItemImportError(f"{filename}, line {line}: not UTF-8 text (byte 0x{raw[exc.start]:02X} at column "
                              f"{len(before) + 1}); {fix}.") from None


def _xlsx_records(filename: str, data: BinaryIO) -> Iterable[tuple[int, dict[str, Any]]]:
    from openpyxl import load_workbook

    _check_unpacked_size(filename, data)
    try:
        workbook = load_workbook(data, read_only=True, data_only=True)
    except MemoryError:
        raise  # the server's problem, never the file's: the checks above keep a workbook from getting here
    except Exception as exc:  # noqa: BLE001 - any unreadable workbook is the user's file, not our bug
        raise ItemImportError(f"{filename}: not a readable XLSX workbook ({type(exc).__name__}).") from None
    try:
        rows = workbook.worksheets[0].iter_rows(values_only=True)
        names = list(next(rows, ()))
        while names and names[-1] is None:
            names.pop()
        header = _header(filename, names)
        counter = _Counter(filename, len(header))
        for number, values in enumerate(rows, start=1):
            if all(v is None for v in values):
                continue
            counter.add(number)
            yield number, {h: _json_value(v) for h, v in zip(header, values, strict=False) if h}
    finally:
        workbook.close()


def _json_value(value: Any) -> Any:
    """A cell as JSON can store it: dates and times as ISO text, empty cells as ""."""
    if value is None:
        return ""
    if isinstance(value, str | int | float | bool):
        return value
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def _check_unpacked_size(filename: str, data: BinaryIO) -> None:
    """An XLSX is a ZIP: refuse one that would take more memory to read than an item sheet may (a ZIP bomb, a
    huge shared-text table, an overlong row), before openpyxl opens it."""
    import zipfile

    from django.conf import settings

    limit = int(getattr(settings, "RTA_MAX_UNCOMPRESSED_BYTES", 1024 * 1024 * 1024))
    try:
        with zipfile.ZipFile(data) as archive:
            unpacked = sum(info.file_size for info in archive.infolist())
    except zipfile.BadZipFile:
        raise ItemImportError(f"{filename}: not a readable XLSX workbook (not a ZIP file).") from None
    finally:
        data.seek(0)
    if unpacked > limit:
        raise ItemImportError(f"{filename}: the workbook would unpack to {unpacked:,} bytes, over the limit of {limit:,}.")
    try:
        check_xlsx(data, filename, XLSX_LIMITS)
    except ParseError as exc:
        raise ItemImportError(str(exc)) from None


def _jsonl_records(filename: str, data: BinaryIO) -> Iterable[tuple[int, dict[str, Any]]]:
    # Split on "\n" only: JSON strings may hold U+2028 and other characters str.splitlines() breaks at.
    raw = _capped(filename, data)
    values = json_value_count(raw)
    if values > MAX_JSON_VALUES:
        raise ItemImportError(f"{filename}: about {values:,} separate values (texts, numbers, fields); an item file "
                              f"may hold at most {MAX_JSON_VALUES:,}. Split it into several probes.")
    counter = _Counter(filename, 0)
    # Line by line (a UTF-8 character never holds the byte of "\n"): no copy of the whole file as text.
    for number, line_bytes in enumerate(io.BytesIO(raw.removeprefix(b"\xef\xbb\xbf")), start=1):
        try:
            line = line_bytes.decode("utf-8").strip()
        except UnicodeDecodeError:
            _utf8(filename, raw)  # raises, naming the line and column
            raise
        if not line:
            continue
        try:
            record = safejson.loads(line)
        except safejson.JSONInputError as exc:
            raise ItemImportError(f"{filename}, line {number}: not valid JSON ({exc.found} at column {exc.column}, "
                                  f"expected {exc.expected}).") from None
        if not isinstance(record, dict):
            raise ItemImportError(f"{filename}, line {number}: expected a JSON object with one item's fields.")
        if (field_value := _not_finite(record)) is not None:
            raise ItemImportError(f"{filename}, line {number}, field “{field_value[0]}”: {json.dumps(field_value[1])} is "
                                  "not a number JSON can hold; write null or a finite number.")
        if len(record) > MAX_COLUMNS:
            raise ItemImportError(f"{filename}, line {number}: {len(record):,} fields; an item may have at most "
                                  f"{MAX_COLUMNS}.")
        counter.add(number, len(record))
        yield number, record


def _not_finite(record: dict[str, Any]) -> tuple[str, float] | None:
    """The first field holding (at any depth) NaN or an infinity, which Python's JSON reader accepts (NaN, Infinity,
    1e999) but neither JSON nor PostgreSQL's jsonb can store: (field, value)."""
    def first(value: Any) -> float | None:
        if isinstance(value, float):
            return None if math.isfinite(value) else value
        inner = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
        return next((found for item in inner if (found := first(item)) is not None), None)

    return next(((key, found) for key, value in record.items() if (found := first(value)) is not None), None)


def item_rows(
    filename: str, records: Iterable[tuple[int, dict[str, Any]]], *, text_column: str, label_columns: list[str]
) -> list[ItemRow]:
    """Check every record and split it into text, labels and attributes."""
    rows: list[ItemRow] = []
    for number, record in records:
        where = _where(filename, number)
        _check_columns(where if rows else filename, record, [text_column, *label_columns])
        text = _cell(record.get(text_column))
        if not text:
            raise ItemImportError(f"{where}, column “{text_column}”: the text is empty.")
        labels = {}
        for column in label_columns:
            value = _cell(record.get(column))
            if not value:
                raise ItemImportError(f"{where}, column “{column}”: the ground-truth label is empty.")
            labels[column] = value
        attributes = {_no_nul(k): _no_nul(v) for k, v in record.items() if k not in labels and k != text_column}
        rows.append(ItemRow(number, text, labels, attributes))
    if not rows:
        raise ItemImportError(f"{filename}: no data rows.")
    return rows


def _check_columns(where: str, record: dict[str, Any], wanted: list[str]) -> None:
    missing = [c for c in wanted if c not in record]
    if missing:
        found = ", ".join(f"“{c}”" for c in record) or "none"
        raise ItemImportError(f"{where}: no column {', '.join(f'“{c}”' for c in missing)}; the columns are {found}.")


def _cell(value: Any) -> str:
    return "" if value is None else _no_nul(str(value)).strip()


def _no_nul(value: Any) -> Any:
    """PostgreSQL text and jsonb cannot hold NUL characters; they carry nothing a reader sees."""
    return value.replace("\x00", "") if isinstance(value, str) else value


def filtered(rows: list[ItemRow], filters: ItemFilters) -> tuple[list[ItemRow], dict[str, int]]:
    """The rows the filters keep, and how many each filter dropped."""
    kept, dropped = [], {"short": 0, "excluded word": 0}
    for row in rows:
        reason = filters.reason_to_drop(row.text)
        if reason:
            dropped[reason] += 1
        else:
            kept.append(row)
    return kept, dropped


def balanced_sample(rows: list[ItemRow], *, column: str, per_label: int, seed: int) -> list[ItemRow]:
    """`per_label` rows of each value of `column`, drawn with `seed`; the same seed draws the same rows.

    Raises when a label has fewer rows than asked: a silently unbalanced sample would bias every rate.
    """
    # One quota per value whatever its case ("Woman" and "woman" are one group, as scoring counts them), drawn in
    # the order of each group's first spelling: files without mixed spellings draw what they always drew.
    groups: dict[str, list[ItemRow]] = defaultdict(list)
    for row in rows:
        groups[truth_key(row.labels[column])].append(row)
    spelling = {key: min(row.labels[column] for row in members) for key, members in groups.items()}
    short = {spelling[key]: len(members) for key, members in groups.items() if len(members) < per_label}
    if short:
        have = ", ".join(f"“{label}” has {n}" for label, n in sorted(short.items()))
        raise ItemImportError(f"Cannot sample {per_label} per label after filtering: {have}.")
    rng = random.Random(seed)
    chosen = [row for key in sorted(groups, key=spelling.__getitem__) for row in rng.sample(groups[key], per_label)]
    return sorted(chosen, key=lambda row: row.line)


def truth_key(value: str) -> str:
    """A ground-truth value as groups and scores compare it: spaces around and case do not count."""
    return str(value).strip().casefold()
