"""Importing a codebook from CSV or REFI-QDA .qdc: everything lands, or nothing does.

Codes keep the file's order (after the project's codes). In a .qdc a name that repeats under
another parent is renamed as the .qdpx project import does (refiqda.conventions.unique_name),
and the row says so, for the import summary.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

import refiqda
from coding.models import Code, CodeEvent
from coding.services import COLOUR_RE, code_archive, code_create
from interviews.parsers.base import human_size
from projects.models import Project
from projects.names import name_key, normalised_name
from projects.text import formula_unguarded
from refiqda.conventions import parse_code_description, unique_name

MAX_BYTES = 5 * 1024 * 1024
# A codebook of more codes than this is not one; counted as the file is read, so a file of millions of tiny lines
# is refused before it becomes millions of rows (or messages).
MAX_CODES = 10_000
MAX_ERRORS_LISTED = 50
# Header aliases, lower-cased: researchers' spreadsheets say things differently.
COLUMNS = {
    "name": "name", "code": "name", "code name": "name",
    "definition": "definition", "description": "definition",
    "what counts": "include_when", "include": "include_when", "include_when": "include_when", "inclusion": "include_when",
    "what does not count": "exclude_when", "exclude": "exclude_when", "exclude_when": "exclude_when", "exclusion": "exclude_when",
    "example": "example", "kind": "kind", "type": "kind", "colour": "colour", "color": "colour",
    "parent": "parent", "parent code": "parent",
    "include when": "include_when", "exclude when": "exclude_when", "archived": "archived",
}
# Columns our own CSV export adds for reading (reports/codebook_export.py); an import skips them.
EXPORT_ONLY_COLUMNS = {"themes", "coded segments"}
ARCHIVED_YES = {"yes", "true", "1", "archived"}


class CodebookImportError(Exception):
    """The file cannot be imported; `errors` lists every problem with its place (file, line, field)."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = errors
        super().__init__("; ".join(errors))


@dataclass
class Row:
    where: str
    name: str
    parent: str = ""
    values: dict[str, str] = field(default_factory=dict)
    archived: bool = False
    renamed_from: str = ""  # the file's name, when it repeated and `name` is the one given instead


def upload_bytes(upload: Any) -> bytes:
    """An uploaded file's bytes, read no further than one byte past the limit: enough to refuse it."""
    return upload.read(MAX_BYTES + 1)


# Files people pick by mistake, by their first bytes: said by name rather than as a byte that is not UTF-8.
NOT_CODEBOOKS = (
    (b"PK\x03\x04", "an Excel workbook or another ZIP file (save the sheet as CSV UTF-8, or choose a .qdc or .qdpx)"),
    (b"\xd0\xcf\x11\xe0", "an old Word or Excel file (save the sheet as CSV UTF-8)"),
    (b"\x89PNG", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image"), (b"GIF8", "a GIF image"), (b"%PDF", "a PDF document"),
)


def _decode(data: bytes, filename: str) -> str:
    if len(data) > MAX_BYTES:
        raise CodebookImportError([f"{filename}: the file is larger than {human_size(MAX_BYTES)}, the most a codebook file may be."])
    if kind := next((kind for magic, kind in NOT_CODEBOOKS if data.startswith(magic)), None):
        raise CodebookImportError([f"{filename}: expected a codebook as CSV (UTF-8) or a REFI-QDA .qdc or .qdpx file, found {kind}."])
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CodebookImportError([f"{filename}: not UTF-8 text (byte {exc.start}); save the spreadsheet as CSV UTF-8."]) from exc
    if (at := text.find("\x00")) >= 0:  # UTF-16 without a byte-order mark reads as UTF-8 full of them
        raise CodebookImportError([f"{filename}, line {text.count(chr(10), 0, at) + 1}: a NUL character (byte 0x00), "
                                   "which no text may hold; save the spreadsheet as CSV UTF-8."])
    return text


def rows_from_csv(data: bytes, *, filename: str = "codebook.csv") -> list[Row]:
    """Parse a CSV codebook: a header row naming at least a `name` column."""
    text = _decode(data, filename)
    try:
        dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t")
    except csv.Error:
        dialect = csv.excel
    reader = csv.reader(io.StringIO(text, newline=""), dialect)  # newline="": a lone CR (Excel for Mac) ends a line too
    try:
        header = next(reader)
    except StopIteration:
        raise CodebookImportError([f"{filename}: the file is empty."]) from None
    except csv.Error as exc:
        raise CodebookImportError([f"{filename}, line 1: {exc}"]) from exc
    fields: list[str | None] = []
    errors: list[str] = []
    for i, h in enumerate(header, start=1):
        key = COLUMNS.get(h.strip().lower())
        if key is None and h.strip() and h.strip().lower() not in EXPORT_ONLY_COLUMNS:
            errors.append(f"{filename}, line 1, column {i}: unknown column “{h.strip()}” "
                          f"(expected name, definition, what counts, what does not count, example, kind, colour, parent, archived).")
        fields.append(key)
    if "name" not in fields:
        errors.append(f"{filename}, line 1: no “name” column in the header.")
    if errors:
        raise CodebookImportError(errors)
    rows: list[Row] = []
    try:
        for record in reader:
            line = reader.line_num
            if not any(c.strip() for c in record):
                continue
            if len(rows) + len(errors) >= MAX_CODES:
                raise CodebookImportError([f"{filename}, line {line}: more than {MAX_CODES:,} codes; a codebook may "
                                           f"hold at most {MAX_CODES:,}."])
            if len(errors) >= MAX_ERRORS_LISTED:
                errors.append(f"{filename}: more problems after line {line} are not listed; fix these first.")
                break
            if len(record) > len(fields):
                errors.append(f"{filename}, line {line}: {len(record)} cells but the header has {len(fields)}.")
                continue
            # Our export guarded cells a spreadsheet would run ("'-ve affect"): the guard is not the code's text.
            values = {f: (formula_unguarded(record[i]).strip() if i < len(record) else "") for i, f in enumerate(fields) if f}
            if "kind" in values:  # the export writes the display name ("Latent")
                values["kind"] = values["kind"].lower()
            rows.append(Row(where=f"{filename}, line {line}", name=values.pop("name", ""), parent=values.pop("parent", ""),
                            archived=values.pop("archived", "").lower() in ARCHIVED_YES, values=values))
    except csv.Error as exc:
        errors.append(f"{filename}, line {reader.line_num}: {exc}")
    if errors:
        raise CodebookImportError(errors)
    return rows


def rows_from_qdc(data: bytes, *, filename: str = "codebook.qdc") -> list[Row]:
    """Parse a REFI-QDA codebook (.qdc, or the codebook inside a .qdpx) through the hardened reader."""
    if len(data) > MAX_BYTES:
        raise CodebookImportError([f"{filename}: the file is larger than {human_size(MAX_BYTES)}, the most a codebook file may be."])
    try:
        book = refiqda.read_codebook(data, name=filename)
    except refiqda.QdpxError as exc:
        raise CodebookImportError([str(exc)]) from exc
    rows = []
    taken: set[str] = set()
    names: dict[int, str] = {}  # id(file code) → the name it is imported under
    for code, parent, _depth in book.iter_codes():
        if len(rows) >= MAX_CODES:
            raise CodebookImportError([f"{filename}: more than {MAX_CODES:,} codes; a codebook may hold at most "
                                       f"{MAX_CODES:,}."])
        # The Description packs definition, what counts, what does not, example, kind and the
        # archived flag (refiqda.conventions); other tools' free text comes back whole as the
        # definition. A code marked isCodable="false" (a folder) becomes an ordinary parent
        # code, as in the .qdpx project import: here any code may group others.
        values = parse_code_description(code.description or "")
        archived = bool(values.pop("archived", False))
        if code.color:
            values["colour"] = _six_digit(code.color)
        name = _unique_in_file(code.name, taken, hint=parent.name if parent else "")
        names[id(code)] = name
        rows.append(Row(where=f"{filename}, code “{code.name}” ({code.guid})", name=name,
                        parent=names[id(parent)] if parent else "", values={k: str(v) for k, v in values.items()},
                        archived=archived, renamed_from=code.name if name != normalised_name(code.name) else ""))
    if not rows:
        raise CodebookImportError([f"{filename}: the codebook has no codes."])
    return rows


def _unique_in_file(name: str, taken: set[str], *, hint: str) -> str:
    """The project import's renaming of a repeated name; names that are empty or too long stay, for _validate to report."""
    name = normalised_name(name)
    if not name or len(name) > 200:
        return name
    return unique_name(name, taken, 200, normalised_name(hint))


def renamed_codes(rows: list[Row]) -> list[tuple[str, str]]:
    """(name in the file, name given) for every code renamed because its name repeats in the file."""
    return [(row.renamed_from, row.name) for row in rows if row.renamed_from]


def _six_digit(colour: str) -> str:
    """#RGB (which REFI-QDA allows) widened to #RRGGBB, as the .qdpx import does."""
    return colour if len(colour) != 4 else "#" + "".join(ch * 2 for ch in colour[1:])


def _validate(project: Project, rows: list[Row]) -> list[str]:
    errors = []
    existing = {name_key(n) for n in Code.objects.for_project(project).values_list("name", flat=True)}
    seen: dict[str, str] = {}
    for row in rows:
        name = normalised_name(row.name)
        if not name:
            errors.append(f"{row.where}: the name is empty.")
            continue
        if len(name) > 200:
            errors.append(f"{row.where}: the name is longer than 200 characters.")
        key = name_key(name)
        if key in existing:
            errors.append(f"{row.where}: a code named “{name}” already exists in this project.")
        if key in seen:
            errors.append(f"{row.where}: “{name}” appears twice (first at {seen[key]}).")
        seen.setdefault(key, row.where)
        kind = row.values.get("kind", "").lower()
        if kind and kind not in Code.Kind.values:
            errors.append(f"{row.where}, kind: “{row.values['kind']}” is neither semantic nor latent.")
        colour = row.values.get("colour", "")
        if colour and not COLOUR_RE.match(colour):
            errors.append(f"{row.where}, colour: “{colour}” is not a colour like #4c78a8.")
    for row in rows:
        if row.parent and name_key(row.parent) not in seen and name_key(row.parent) not in existing:
            errors.append(f"{row.where}, parent: no code named “{row.parent}” in the file or the codebook.")
    return errors


@transaction.atomic
def codebook_import(*, project: Project, actor: Any, rows: list[Row], source: str) -> list[Code]:
    """Create every code in `rows` (parents before children, in the file's order) or raise CodebookImportError and create none."""
    errors = _validate(project, rows)
    if errors:
        raise CodebookImportError(errors)
    existing = list(Code.objects.for_project(project))
    by_name = {name_key(c.name): c for c in existing}
    first_position = max((c.position for c in existing), default=-1) + 1
    order = {id(row): i for i, row in enumerate(rows)}
    created: list[Code] = []
    pending = list(rows)
    # Parents may come after their children in a spreadsheet: place rows whose parent exists, repeat.
    while pending:
        progress = False
        for row in list(pending):
            parent = by_name.get(name_key(row.parent)) if row.parent else None
            if row.parent and parent is None:
                continue
            try:
                code = code_create(project=project, actor=actor, name=row.name, parent=parent, action=CodeEvent.Action.IMPORTED,
                                   reason=f"Imported from {source}", **{k: v for k, v in row.values.items() if v})
            except ValidationError as exc:
                raise CodebookImportError([f"{row.where}: {m}" for m in exc.messages]) from exc
            code.position = first_position + order[id(row)]
            if row.archived:
                code_archive(code=code, actor=actor, reason=f"Archived in {source}")
            by_name[name_key(code.name)] = code
            created.append(code)
            pending.remove(row)
            progress = True
        if not progress:
            raise CodebookImportError([f"{r.where}, parent: “{r.parent}” forms a cycle." for r in pending])
    Code.objects.bulk_update(created, ["position"])
    return created
