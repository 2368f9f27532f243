"""Opening uploads safely: ZIP archives are checked before anything is extracted."""

from __future__ import annotations

import posixpath
import re
import stat
import zipfile
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


def is_zip(source: SourceFile) -> bool:
    with source.open() as f:
        return f.read(4) == b"PK\x03\x04"


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
        if info.flag_bits & 0x1:
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
    def opener() -> IO[bytes]:
        return zf.open(info)

    return SourceFile(name=f"{archive}/{info.filename}", size=info.file_size, opener=opener)


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
