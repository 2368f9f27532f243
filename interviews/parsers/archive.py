"""Opening uploads safely: ZIP archives are checked before anything is extracted."""

from __future__ import annotations

import io
import posixpath
import re
import stat
import zipfile
import zlib
from dataclasses import dataclass
from typing import IO

from .base import Limits, ParseError, SourceFile, human_size

TRANSCRIPT_EXTENSIONS = (".json", ".jsonl", ".ndjson", ".txt", ".md", ".markdown",
                         ".csv", ".tsv", ".xlsx")
EXPORT_FILE_RE = re.compile(r"^conversations(-\d+)?\.json$", re.IGNORECASE)
# Small files compress very well without being bombs; only judge the ratio above this.
RATIO_FLOOR_BYTES = 1024 * 1024


class ExchangeFileError(ParseError):
    """A REFI-QDA project (.qdpx) or codebook (.qdc): not a transcript, and it has an import of its own."""

    def __init__(self, file: str, kind: str) -> None:
        self.kind = kind  # "project" or "codebook"
        what = "a REFI-QDA project (.qdpx)" if kind == "project" else "a REFI-QDA codebook (.qdc)"
        super().__init__(file, None, "a transcript", what)

    def __str__(self) -> str:
        if self.kind == "project":
            return (f"{self.file} is a REFI-QDA project (.qdpx) from a QDA tool, not a transcript. "
                    "Import a project brings it in as a new project, with its documents, codes and codings.")
        return (f"{self.file} is a REFI-QDA codebook (.qdc), not a transcript. "
                "Import it into the codebook: its codes are added to this project.")


def refi_qda_kind(source: SourceFile) -> str | None:
    """"project" for a .qdpx (or a bare project.qde), "codebook" for a .qdc, else None."""
    lower = source.name.lower()
    if lower.endswith(".qdpx"):
        return "project"
    if lower.endswith(".qdc"):
        return "codebook"
    with source.open() as f:
        head = f.read(4096)
    if head.startswith(b"PK\x03\x04"):
        try:
            with zipfile.ZipFile(source.open()) as zf:
                names = {posixpath.basename(n).lower() for n in zf.namelist()}
        except zipfile.BadZipFile:
            return None
        return "project" if "project.qde" in names else None
    if b"urn:QDA-XML:project" in head and b"<Project" in head:
        return "project"
    if b"urn:QDA-XML:codebook" in head and b"<CodeBook" in head:
        return "codebook"
    return None


def unpacked_size(source: SourceFile) -> int:
    """The bytes a parser reads from the file: a ZIP's (or workbook's) members as their directory says they
    unpack, anything else its own size. What it costs to read follows this, not the compressed size."""
    if not is_zip(source):
        return source.size
    try:
        with zipfile.ZipFile(source.open()) as zf:
            return sum(info.file_size for info in zf.infolist())
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return source.size  # the parse says what is wrong with it


def is_zip(source: SourceFile) -> bool:
    with source.open() as f:
        return f.read(4) == b"PK\x03\x04"


# What reading a ZIP member whose bytes do not unpack raises (a download cut short, a file changed on the way):
# a bad CRC, a broken deflate stream, a member shorter than its header says.
DAMAGED = (zipfile.BadZipFile, zlib.error, EOFError)


def is_encrypted(info: zipfile.ZipInfo) -> bool:
    """Whether the member needs a password: zipfile would only ask for one once the member is read."""
    return bool(info.flag_bits & 0x1)


def check_zip(zf: zipfile.ZipFile, name: str, limits: Limits) -> list[zipfile.ZipInfo]:
    """The archive's file members, refusing bombs, traversal, links and encryption."""
    infos = zf.infolist()
    if len(infos) > limits.max_archive_members:
        raise ParseError(name, None, f"at most {limits.max_archive_members} files in the archive",
                         f"{len(infos)}")
    total = 0
    members = []
    for info in infos:
        _check_member_name(info, name)
        if info.is_dir():
            continue
        if stat.S_ISLNK(info.external_attr >> 16):
            raise ParseError(name, f"member {info.filename!r}", "regular files", "a symbolic link")
        if is_encrypted(info):
            raise ParseError(name, f"member {info.filename!r}", "an unencrypted archive",
                             "an encrypted file")
        total += info.file_size
        if total > limits.max_archive_total_bytes:
            raise ParseError(name, None,
                             f"at most {human_size(limits.max_archive_total_bytes)} once unpacked",
                             "more (the archive may be a ZIP bomb)")
        if info.file_size > RATIO_FLOOR_BYTES and (
            info.file_size > limits.max_archive_ratio * max(info.compress_size, 1)
        ):
            raise ParseError(name, f"member {info.filename!r}",
                             f"a compression ratio of at most {limits.max_archive_ratio:.0f}:1",
                             f"{info.file_size / max(info.compress_size, 1):.0f}:1 "
                             "(the archive may be a ZIP bomb)")
        if info.file_size > limits.max_file_bytes:
            raise ParseError(name, f"member {info.filename!r}",
                             f"a file of at most {human_size(limits.max_file_bytes)}", human_size(info.file_size))
        members.append(info)
    return members


def _check_member_name(info: zipfile.ZipInfo, name: str) -> None:
    # zipfile would sanitise names on extract(); we read members directly, so refuse outright.
    raw = info.filename.replace("\\", "/")
    parts = raw.split("/")
    if raw.startswith("/") or re.match(r"^[A-Za-z]:", raw) or ".." in parts or "\x00" in raw:
        raise ParseError(name, f"member {info.filename!r}",
                         "paths inside the archive", "a path that points outside it")


def _is_junk(path: str) -> bool:
    base = posixpath.basename(path)
    return path.startswith("__MACOSX/") or base.startswith(".")


def zip_sources(source: SourceFile, limits: Limits) -> list[SourceFile]:
    """The transcript files inside a ZIP: a chat export's conversations files, or every
    supported file when the archive is a bundle of separate transcripts."""
    try:
        zf = zipfile.ZipFile(source.open())
    except zipfile.BadZipFile as e:
        raise ParseError(source.name, None, "a readable ZIP archive", f"'{e}'") from None
    members = [m for m in check_zip(zf, source.name, limits) if not _is_junk(m.filename)]
    export = sorted((m for m in members if EXPORT_FILE_RE.match(posixpath.basename(m.filename))),
                    key=lambda m: m.filename)
    chosen = export or [m for m in members
                        if m.filename.lower().endswith(TRANSCRIPT_EXTENSIONS)]
    if not chosen:
        raise ParseError(source.name, None,
                         "conversations.json or transcript files (" +
                         ", ".join(TRANSCRIPT_EXTENSIONS) + ") inside the archive",
                         "none")
    return [_member_source(zf, source.name, m) for m in chosen]


def _member_source(zf: zipfile.ZipFile, archive: str, info: zipfile.ZipInfo) -> SourceFile:
    name = f"{archive}/{info.filename}"

    def opener() -> IO[bytes]:
        return io.BufferedReader(_Unpacking(zf.open(info), name))

    return SourceFile(name=name, size=info.file_size, opener=opener)


class _Unpacking(io.RawIOBase):
    """A member as it unpacks: bytes that do not (a download cut short, a file changed on the way) are a ParseError
    naming it, wherever a parser happens to reach them, not the decompressor's exception."""

    def __init__(self, member: IO[bytes], name: str) -> None:
        self.member, self.name = member, name

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # noqa: ANN001 - a writable buffer (memoryview, bytearray)
        try:
            data = self.member.read(len(buffer))
        except DAMAGED:
            raise ParseError(self.name, None, "a file that unpacks", "damaged bytes; copy or download it again") from None
        buffer[:len(data)] = data
        return len(data)

    def close(self) -> None:
        self.member.close()
        super().close()


def expand(source: SourceFile, limits: Limits) -> list[SourceFile]:
    """The files to parse for one upload: the file itself, or a ZIP's transcript files."""
    if source.size > limits.max_file_bytes:
        raise ParseError(source.name, None, f"a file of at most {human_size(limits.max_file_bytes)}",
                         human_size(source.size))
    if source.size == 0:
        raise ParseError(source.name, None, "a transcript", "an empty file")
    if kind := refi_qda_kind(source):
        raise ExchangeFileError(source.name, kind)
    if is_zip(source) and not source.name.lower().endswith(".xlsx"):
        return zip_sources(source, limits)
    return [source]


# -- XLSX: every reader checks the workbook here before openpyxl opens it ----------------------------------

@dataclass(frozen=True)
class XlsxLimits:
    """What one workbook may unpack to. openpyxl (read-only mode too) loads the whole shared-text table
    (~130 bytes a text in memory) and every part but the worksheets whole; worksheets are streamed a row at a
    time, each row's cells held at once. Each reader passes limits for what it reads (a case-variables sheet
    is far smaller than a sheet of probe items)."""

    max_shared_text_bytes: int = 64 * 1024 * 1024  # xl/sharedStrings.xml, unpacked
    max_shared_strings: int = 1_000_000  # entries in it
    max_sheet_bytes: int = 256 * 1024 * 1024  # each worksheet, unpacked
    max_part_bytes: int = 8 * 1024 * 1024  # every other part (workbook, styles, relationships, ...)
    max_part_elements: int = 500_000  # elements in each of those
    max_total_bytes: int = 512 * 1024 * 1024
    max_members: int = 1000
    max_ratio: float = 200.0
    max_row_cells: int = 16_384  # Excel's own limit on columns


SHARED_STRINGS_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"
WORKSHEET_TYPES = ("application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml",
                   "application/vnd.ms-excel.worksheet")
_OVERRIDE_RE = re.compile(rb"<(?:\w+:)?Override\b[^>]*>")
_ATTR_RE = {k: re.compile(rb"\b" + k.encode() + rb"\s*=\s*[\"']([^\"']*)[\"']") for k in ("PartName", "ContentType")}
_ROW_RE = re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?row[\s>/]")
_CELL_MARKS = (b"<c ", b"<c>", b"<c/", b":c ", b":c>", b":c/")
_SI_MARKS = (b"<si>", b"<si ", b"<si/", b":si>", b":si ", b":si/")
_CARRY = 8  # longer than any mark: a mark cut between two chunks is counted in the next one
_CHUNK = 1 << 20


def _content_types(zf: zipfile.ZipFile) -> dict[str, str]:
    """Part name (no leading slash, lower case) -> declared content type, from [Content_Types].xml."""
    try:
        info = zf.getinfo("[Content_Types].xml")
    except KeyError:
        return {}
    if info.file_size > 1024 * 1024:  # a real one is a few KB
        return {}
    with zf.open(info) as f:
        data = f.read(1024 * 1024 + 1)
    types = {}
    for m in _OVERRIDE_RE.finditer(data):
        name, ctype = (_ATTR_RE[k].search(m.group(0)) for k in ("PartName", "ContentType"))
        if name and ctype:
            types[name.group(1).decode("utf-8", "replace").lstrip("/").lower()] = ctype.group(1).decode("ascii", "replace")
    return types


def _scan_part(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> tuple[int, int, int, int]:
    """(elements, shared-text entries, most cells in one row, that row's number) of one member, streamed in
    1 MB chunks with constant memory. Marks inside text are counted too, which only errs on the safe side."""
    elements = entries = most = most_row = 0
    cells = rows = 0  # cells of the row being read, rows seen
    carry = b""
    with zf.open(info) as f:
        while True:
            chunk = f.read(_CHUNK)
            buf = carry + chunk
            end = len(buf) if not chunk else max(len(buf) - _CARRY, 0)
            elements += buf.count(b"<", 0, end)
            entries += sum(buf.count(m, 0, end + len(m) - 1) for m in _SI_MARKS)
            start = 0
            for m in _ROW_RE.finditer(buf, 0, end):
                cells += sum(buf.count(c, start, m.start()) for c in _CELL_MARKS)
                if cells > most:
                    most, most_row = cells, rows
                cells, rows, start = 0, rows + 1, m.start()
            cells += sum(buf.count(c, start, end + len(c) - 1) for c in _CELL_MARKS)
            if cells > most:
                most, most_row = cells, rows
            carry = buf[end:]
            if not chunk:
                return elements, entries, most, most_row


def _check_part_size(info: zipfile.ZipInfo, ctype: str, name: str, limits: XlsxLimits) -> None:
    size = info.file_size
    if ctype == SHARED_STRINGS_TYPE:
        if size > limits.max_shared_text_bytes:
            raise ParseError(name, None, "a workbook whose text table (xl/sharedStrings.xml) unpacks to at "
                             f"most {human_size(limits.max_shared_text_bytes)}",
                             f"{human_size(size)} (the file may be a ZIP bomb)")
    elif ctype in WORKSHEET_TYPES:
        if size > limits.max_sheet_bytes:
            raise ParseError(name, f"worksheet {info.filename!r}",
                             f"a worksheet of at most {human_size(limits.max_sheet_bytes)} once unpacked",
                             human_size(size))
    elif size > limits.max_part_bytes and not info.is_dir() and \
            not info.filename.lower().startswith(("xl/media/", "docprops/thumbnail")):
        raise ParseError(name, f"member {info.filename!r}",
                         f"a part of at most {human_size(limits.max_part_bytes)} once unpacked",
                         f"{human_size(size)} (the file may be a ZIP bomb)")


def check_xlsx(data: bytes | IO[bytes], name: str, limits: XlsxLimits | None = None) -> None:
    """Refuse a workbook that would take more memory to read than `limits` allow, before openpyxl opens it:
    a ZIP bomb, a shared-text table too large or with too many texts, a worksheet too large, a row with
    more cells than Excel allows, or any other part too large. Reads only the ZIP's directory and streams
    each member once (no member is held in memory). `data` is left at its start.
    Raises ParseError naming the file and the limit."""
    limits = limits or XlsxLimits()
    f = io.BytesIO(data) if isinstance(data, bytes) else data
    try:
        zf = zipfile.ZipFile(f)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        raise ParseError(name, None, "an Excel workbook (.xlsx)", "a file that is not one") from None
    try:
        types = _content_types(zf)
        # Sizes first (from the ZIP's directory), so the message names the part that is too large.
        for info in zf.infolist():
            _check_part_size(info, types.get(info.filename.lower(), ""), name, limits)
        check_zip(zf, name, Limits(max_file_bytes=max(limits.max_sheet_bytes, limits.max_shared_text_bytes),
                                   max_archive_total_bytes=limits.max_total_bytes,
                                   max_archive_ratio=limits.max_ratio, max_archive_members=limits.max_members))
        shared = 0
        for info in zf.infolist():
            if info.is_dir():
                continue
            ctype = types.get(info.filename.lower(), "")
            if info.filename.lower().startswith("xl/media/"):
                continue  # images: openpyxl's read-only mode never opens them
            try:
                elements, entries, most, row = _scan_part(zf, info)
            except (*DAMAGED, OSError, ValueError, NotImplementedError) as e:
                raise ParseError(name, f"member {info.filename!r}", "an undamaged workbook", f"'{e}'") from None
            shared += entries
            if shared > limits.max_shared_strings:
                raise ParseError(name, None, f"a workbook of at most {limits.max_shared_strings:,} different texts",
                                 "more (the file may be a ZIP bomb)")
            if most > limits.max_row_cells:
                raise ParseError(name, f"worksheet {info.filename!r}, row {row}",
                                 f"at most {limits.max_row_cells:,} cells in a row", f"{most:,}")
            if ctype not in WORKSHEET_TYPES and ctype != SHARED_STRINGS_TYPE and elements > limits.max_part_elements:
                raise ParseError(name, f"member {info.filename!r}",
                                 f"a part of at most {limits.max_part_elements:,} XML elements",
                                 f"about {elements:,} (the file may be a ZIP bomb)")
    finally:
        zf.close()
        f.seek(0)
