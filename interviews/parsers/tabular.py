"""CSV, TSV and XLSX files with one turn per row."""

from __future__ import annotations

import csv
import io
import os
import zipfile
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from .archive import XlsxLimits, check_xlsx
from .base import (
    Limits,
    ParsedConversation,
    ParsedTurn,
    ParseError,
    SourceFile,
    guess_labels,
    iso_to_datetime,
    model_slugs_from_labels,
)

COLUMNS = {
    "speaker": ("speaker", "role", "from", "author", "sender", "who"),
    "text": ("text", "content", "message", "value", "utterance", "body"),
    "timestamp": ("timestamp", "time", "created_at", "create_time", "date", "datetime"),
    "model": ("model", "model_slug", "model_id"),
    "conversation": ("conversation", "conversation_id", "interview", "interview_id", "thread",
                     "thread_id", "chat_id", "session"),
    "title": ("title", "conversation_title", "name"),
}


def _find_columns(header: list[str], name: str, where: str) -> dict[str, int]:
    normal = [str(h or "").strip().lower().replace(" ", "_") for h in header]
    cols: dict[str, int] = {}
    for key, aliases in COLUMNS.items():
        for alias in aliases:
            if alias in normal:
                cols[key] = normal.index(alias)
                break
    for key in ("speaker", "text"):
        if key not in cols:
            raise ParseError(
                name, f"{where}, header row",
                f"a column named {' or '.join(repr(a) for a in COLUMNS[key][:4])}",
                "columns " + ", ".join(repr(h) for h in header if h) if any(header) else
                "an empty row",
            )
    return cols


def _rows_csv(source: SourceFile, limits: Limits) -> Iterator[tuple[int, list[Any]]]:
    text = source.read_text(limits.max_text_bytes)
    try:
        dialect: Any = csv.Sniffer().sniff(text[:8192], delimiters=",;\t")
    except csv.Error:
        dialect = csv.excel_tab if source.name.lower().endswith(".tsv") else csv.excel
    reader = csv.reader(io.StringIO(text, newline=""), dialect)
    try:
        for row in reader:
            yield reader.line_num, row
    except csv.Error as e:
        raise ParseError(source.name, f"line {reader.line_num}", "well-formed CSV",
                         f"'{e}'") from None


def _rows_xlsx(source: SourceFile, limits: Limits) -> Iterator[tuple[int, list[Any]]]:
    import openpyxl

    data = source.read_bytes(limits.max_file_bytes)
    # An .xlsx is a ZIP: the same bomb checks, and what openpyxl would load whole (shared text, styles) or
    # hold per row, before it opens anything.
    check_xlsx(data, source.name, XlsxLimits(max_total_bytes=limits.max_archive_total_bytes,
                                             max_ratio=limits.max_archive_ratio,
                                             max_members=limits.max_archive_members))
    try:
        wb = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except (zipfile.BadZipFile, KeyError, OSError, ValueError) as e:
        raise ParseError(source.name, None, "an Excel workbook (.xlsx)", f"'{e}'") from None
    try:
        ws = wb.worksheets[0]
        for i, row in enumerate(ws.iter_rows(values_only=True), start=1):
            yield i, list(row)
    finally:
        wb.close()


def parse(source: SourceFile, limits: Limits) -> Iterator[ParsedConversation]:
    is_xlsx = source.name.lower().endswith(".xlsx")
    rows = _rows_xlsx(source, limits) if is_xlsx else _rows_csv(source, limits)
    unit = "row" if is_xlsx else "line"
    cols: dict[str, int] | None = None
    convs: dict[str, list[ParsedTurn]] = {}
    titles: dict[str, str] = {}
    turns = 0  # every turn is held until the file is read (~600 bytes each): bounded by max_table_rows
    for lineno, row in rows:
        if not any(c not in (None, "") for c in row):
            continue
        if cols is None:
            cols = _find_columns([str(c) if c is not None else "" for c in row],
                                 source.name, f"{unit} {lineno}")
            continue
        turns += 1
        if turns > limits.max_table_rows:
            raise ParseError(source.name, f"{unit} {lineno}",
                             f"at most {limits.max_table_rows:,} turns in one file; split it into smaller files",
                             "more")
        key, turn, title = _turn(row, cols, source.name, f"{unit} {lineno}")
        convs.setdefault(key, []).append(turn)
        if title:
            titles.setdefault(key, title)
    if cols is None:
        raise ParseError(source.name, None, "a header row and one row per turn", "no rows")
    if not convs:
        raise ParseError(source.name, None, "at least one row after the header", "none")
    stem = os.path.splitext(os.path.basename(source.name))[0]
    for index, (key, turns) in enumerate(convs.items()):
        yield _conversation(source.name, index, key, titles.get(key) or stem, turns)


def _cell(row: list[Any], cols: dict[str, int], key: str) -> Any:
    i = cols.get(key)
    return row[i] if i is not None and i < len(row) else None


def _turn(
    row: list[Any], cols: dict[str, int], name: str, where: str
) -> tuple[str, ParsedTurn, str]:
    speaker = _cell(row, cols, "speaker")
    text = _cell(row, cols, "text")
    if speaker in (None, ""):
        raise ParseError(name, f"{where}, column 'speaker'", "a speaker", "an empty cell")
    if text in (None, ""):
        raise ParseError(name, f"{where}, column 'text'", "the turn's text", "an empty cell")
    label = str(speaker).strip()
    meta: dict[str, Any] = {"label": label, "row": where}
    stamp = _cell(row, cols, "timestamp")
    if isinstance(stamp, datetime):
        meta["created_at"] = stamp.isoformat()
    elif stamp not in (None, ""):
        dt = iso_to_datetime(str(stamp))
        if dt is None:
            raise ParseError(name, f"{where}, column 'timestamp'",
                             "a date and time such as 2025-03-01T14:30:00, in the years 1 to 9999",
                             repr(str(stamp)))
        meta["created_at"] = dt.isoformat()
    model = _cell(row, cols, "model")
    if model not in (None, ""):
        meta["model"] = str(model).strip()
    conv = _cell(row, cols, "conversation")
    title = _cell(row, cols, "title")
    turn = ParsedTurn(speaker="interviewer", text=str(text), metadata=meta, label=label)
    return ("" if conv in (None, "") else str(conv)), turn, str(title or "").strip()


def _conversation(
    name: str, index: int, key: str, title: str, turns: list[ParsedTurn]
) -> ParsedConversation:
    guesses = guess_labels([t.label for t in turns if t.label])
    slugs: list[str] = []
    for t in turns:
        t.speaker = guesses[t.label]  # type: ignore[index]
        m = t.metadata.get("model")
        if m and m not in slugs:
            slugs.append(m)
    stamps = [t.metadata["created_at"] for t in turns if "created_at" in t.metadata]
    return ParsedConversation(
        external_id=key, title=title, started_at=iso_to_datetime(min(stamps)) if stamps else None,
        source_format="csv", source_name=name, index=index,
        model_slugs=slugs or model_slugs_from_labels(guesses), metadata={}, turns=turns,
        speaker_labels=guesses,
    )
