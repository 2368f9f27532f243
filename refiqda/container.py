"""Open a .qdpx ZIP safely: one .qde at the root, a flat sources/ folder, hard size caps."""

from __future__ import annotations

import io
import os
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import BinaryIO, Self

from .errors import QdpxError, UnsafeInputError
from .safexml import MAX_NODES


@dataclass(frozen=True)
class Limits:
    """Caps that keep a hostile archive from exhausting memory or disk."""

    max_entries: int = 20_000
    max_member_bytes: int = 200 * 1024 * 1024
    max_total_bytes: int = 1024 * 1024 * 1024
    # The .qde becomes an lxml tree (~120 bytes an element, ~220 an attribute; max_nodes caps their count), its
    # sources one at a time: real projects keep their documents in sources/ and their .qde is a few MB.
    max_qde_bytes: int = 100 * 1024 * 1024
    max_nodes: int = MAX_NODES
    # Every document's text is held at once while a project is read (as bytes, then as text).
    max_sources_bytes: int = 256 * 1024 * 1024
    # Codes a project may hold (None: any number). Each becomes a row, written one by one with its history;
    # counted in the project file's bytes, before its tree is built.
    max_codes: int | None = None
    # Text and XML compress ~5-20x; a ratio above this on a non-trivial member is a bomb.
    max_ratio: int = 200
    ratio_floor_bytes: int = 1024 * 1024


DEFAULT_LIMITS = Limits()


def _unsafe_name(name: str) -> bool:
    if "\x00" in name:
        return True
    norm = name.replace("\\", "/")
    if norm.startswith("/") or (len(norm) > 1 and norm[1] == ":"):
        return True
    return ".." in PurePosixPath(norm).parts


class QdpxArchive:
    """Read-only view of a .qdpx archive; members are looked up case-insensitively."""

    def __init__(self, source: str | os.PathLike[str] | bytes | BinaryIO, *,
                 name: str = "", limits: Limits = DEFAULT_LIMITS) -> None:
        self.limits = limits
        if isinstance(source, bytes):
            fileobj: BinaryIO | str | os.PathLike[str] = io.BytesIO(source)
        else:
            fileobj = source
        self.name = name or (os.fspath(source) if isinstance(source, (str, os.PathLike)) else "archive")
        try:
            self._zip = zipfile.ZipFile(fileobj)
        except zipfile.BadZipFile as exc:
            raise QdpxError("not a ZIP archive (a .qdpx file is a ZIP)", where=self.name) from exc
        self._infos = self._check_members()
        self._sources_read = 0
        self._by_lower = {info.filename.lower(): info for info in self._infos}
        self.qde_name = self._find_qde()

    def close(self) -> None:
        self._zip.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_members(self) -> list[zipfile.ZipInfo]:
        infos = self._zip.infolist()
        if len(infos) > self.limits.max_entries:
            raise UnsafeInputError(
                f"the archive holds {len(infos)} files, more than the limit of "
                f"{self.limits.max_entries}", where=self.name)
        total = 0
        for info in infos:
            if _unsafe_name(info.filename):
                raise UnsafeInputError(
                    f"member {info.filename!r} points outside the archive (path traversal)",
                    where=self.name)
            if info.flag_bits & 0x1:  # zipfile would only ask for the password once the member is read
                raise QdpxError(
                    f"member {info.filename!r} is encrypted; export the project again without a password",
                    where=self.name)
            if info.file_size > self.limits.max_member_bytes:
                raise UnsafeInputError(
                    f"member {info.filename!r} unpacks to {info.file_size} bytes, more than the "
                    f"limit of {self.limits.max_member_bytes}", where=self.name)
            if (info.file_size > self.limits.ratio_floor_bytes
                    and info.file_size > self.limits.max_ratio * max(info.compress_size, 1)):
                raise UnsafeInputError(
                    f"member {info.filename!r} is compressed more than {self.limits.max_ratio}:1 "
                    "(a ZIP bomb?)", where=self.name)
            total += info.file_size
        if total > self.limits.max_total_bytes:
            raise UnsafeInputError(
                f"the archive unpacks to {total} bytes, more than the limit of "
                f"{self.limits.max_total_bytes}", where=self.name)
        return infos

    def _find_qde(self) -> str:
        qdes = [i.filename for i in self._infos
                if "/" not in i.filename.strip("/") and i.filename.lower().endswith(".qde")]
        if not qdes:
            listing = ", ".join(i.filename for i in self._infos[:10]) or "nothing"
            raise QdpxError(
                f"no project file (*.qde) at the root of the archive; it holds {listing}",
                where=self.name)
        if len(qdes) > 1:
            raise QdpxError(
                f"more than one project file at the root of the archive: {', '.join(qdes)}",
                where=self.name)
        return qdes[0]

    def names(self) -> list[str]:
        return [i.filename for i in self._infos if not i.is_dir()]

    def _read(self, info: zipfile.ZipInfo, cap: int) -> bytes:
        # Headers can lie about sizes: read in chunks and stop at the cap.
        out = bytearray()
        try:
            with self._zip.open(info) as fh:
                while chunk := fh.read(1024 * 1024):
                    out += chunk
                    if len(out) > cap:
                        raise UnsafeInputError(
                            f"member {info.filename!r} unpacks to more than {cap} bytes",
                            where=self.name)
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError) as exc:
            raise QdpxError(f"member {info.filename!r} is damaged: {exc}", where=self.name) from exc
        return bytes(out)

    def read_qde(self) -> bytes:
        info = self._by_lower[self.qde_name.lower()]
        if info.file_size > self.limits.max_qde_bytes:
            raise UnsafeInputError(
                f"the project file {info.filename!r} unpacks to {info.file_size / 2**20:.0f} MB, more than the "
                f"{self.limits.max_qde_bytes / 2**20:.0f} MB that can be imported", where=self.name)
        return self._read(info, self.limits.max_qde_bytes)

    def find_source(self, path: str) -> str | None:
        """The archive member for a plainTextPath (with or without `internal://`), or None.

        Looks in `sources/` case-insensitively, then at the root; refuses paths that
        climb out of the archive.
        """
        rel = path[len("internal://"):] if path.lower().startswith("internal://") else path
        rel = rel.replace("\\", "/")
        if _unsafe_name(rel):
            raise UnsafeInputError(f"source path {path!r} points outside the archive",
                                   where=self.name)
        while rel.startswith("./"):
            rel = rel[2:]
        for candidate in (f"sources/{rel}", rel):
            info = self._by_lower.get(candidate.lower())
            if info is not None and not info.is_dir():
                return info.filename
        return None

    def read_member(self, member: str) -> bytes:
        """A document's bytes; all documents read from one archive together may be max_sources_bytes."""
        info = self._by_lower[member.lower()]
        left = self.limits.max_sources_bytes - self._sources_read
        if info.file_size > left:
            raise UnsafeInputError(
                f"its documents unpack to more than {self.limits.max_sources_bytes / 2**20:.0f} MB in all (at "
                f"{info.filename!r}), more than one import can hold; import a project with fewer or shorter "
                "documents", where=self.name)
        data = self._read(info, min(self.limits.max_member_bytes, left))
        self._sources_read += len(data)
        return data


def is_external_path(path: str) -> bool:
    """A plainTextPath that names a file outside the archive (absolute or a URL)."""
    p = path.strip()
    low = p.lower()
    if low.startswith("internal://"):
        return False
    return (low.startswith(("file:", "http:", "https:", "relative://", "absolute://"))
            or p.startswith(("/", "\\")) or (len(p) > 1 and p[1] == ":"))
