"""Job files in PostgreSQL: uploads waiting for an import or restore, and finished exports.

Any web process and any Celery worker can serve any request or job, so a job never reads a file from one
machine's disk: what it needs is a StoredBlob, written and read here in chunks of CHUNK_BYTES (bytea rows),
so a 200 MB upload never sits in a process's memory whole. Chosen over PostgreSQL large objects because
chunk rows work the same on SQLite (the laptop quick start), are removed with their blob by a plain
DELETE, and are read with ordinary queries inside any transaction; over an S3-compatible store because
the deployment then needs nothing beyond the database it already has.

A blob is removed when its job is done with it (`blobs_delete`), and every blob has an expiry after which
the hourly sweep (`blobs_delete_expired`, run by Celery beat) removes it, job or no job.
"""

from __future__ import annotations

import errno
import hashlib
import io
from collections.abc import Iterable, Iterator
from datetime import timedelta
from typing import IO

from django.db import transaction
from django.utils import timezone

from projects.models import BlobChunk, StoredBlob

CHUNK_BYTES = 1024 * 1024


class BlobMissing(FileNotFoundError):
    """The blob was removed (expired, or its job finished) or never existed."""


def _pieces(source: IO[bytes], size: int) -> Iterator[bytes]:
    """`source` in pieces of exactly `size` bytes (the last may be shorter), reading at most that much at a time."""
    if getattr(source, "seekable", lambda: False)():
        source.seek(0)
    while True:
        piece = source.read(size)
        while piece and len(piece) < size:  # a short read is not the end: fill the piece
            more = source.read(size - len(piece))
            if not more:
                break
            piece += more
        if not piece:
            return
        yield piece
        if len(piece) < size:
            return


@transaction.atomic
def blob_create(*, source: IO[bytes], name: str, keep: timedelta, user=None) -> StoredBlob:
    """Store `source` (read from its start, a chunk at a time) as a blob that expires after `keep`."""
    blob = StoredBlob.objects.create(name=name[:255], chunk_bytes=CHUNK_BYTES, created_by=user,
                                     expires_at=timezone.now() + keep)
    digest, size = hashlib.sha256(), 0
    for index, piece in enumerate(_pieces(source, CHUNK_BYTES)):
        BlobChunk.objects.create(blob=blob, index=index, data=piece)
        digest.update(piece)
        size += len(piece)
    blob.size, blob.sha256 = size, digest.hexdigest()
    blob.save(update_fields=["size", "sha256"])
    return blob


class _BlobReader(io.RawIOBase):
    """A seekable read-only view of a blob that fetches one chunk at a time (zipfile seeks, parsers stream)."""

    def __init__(self, blob: StoredBlob) -> None:
        self.blob_id, self.size, self.chunk_bytes = blob.pk, blob.size, blob.chunk_bytes
        self.pos, self.index, self.data = 0, -1, b""

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.size}[whence]
        if base + offset < 0:  # as a file says it: zipfile then knows a file too short for a ZIP
            raise OSError(errno.EINVAL, "Invalid argument: a seek before the start")
        self.pos = base + offset
        return self.pos

    def readinto(self, buffer) -> int:
        if self.pos >= self.size:
            return 0
        index, within = divmod(self.pos, self.chunk_bytes)
        if index != self.index:
            data = BlobChunk.objects.filter(blob_id=self.blob_id, index=index).values_list("data", flat=True).first()
            if data is None:
                raise BlobMissing(f"blob {self.blob_id} has lost chunk {index} (removed while it was read?)")
            self.index, self.data = index, bytes(data)
        n = min(len(buffer), len(self.data) - within)
        buffer[:n] = self.data[within:within + n]
        self.pos += n
        return n


def blob_open(blob: StoredBlob | str) -> io.BufferedReader:
    """The blob (or the blob with this UUID) as a seekable binary file; BlobMissing when it is gone."""
    if not isinstance(blob, StoredBlob):
        blob = StoredBlob.objects.filter(uuid=blob).first()
        if blob is None:
            raise BlobMissing("the stored file is gone (it expired or its job finished)")
    return io.BufferedReader(_BlobReader(blob), buffer_size=64 * 1024)


def blobs_delete(uuids: Iterable[str]) -> None:
    """Remove these blobs and their chunks (unknown ones are ignored)."""
    ids = [str(u) for u in uuids if u]
    if ids:
        # Chunks first, in one statement: a cascade from the blob rows would do the same, this says so.
        BlobChunk.objects.filter(blob__uuid__in=ids).delete()
        StoredBlob.objects.filter(uuid__in=ids).delete()


def blobs_delete_expired(*, now=None) -> int:
    """Remove every blob past its expiry; returns how many (the hourly sweep)."""
    expired = list(StoredBlob.objects.filter(expires_at__lte=now or timezone.now()).values_list("uuid", flat=True))
    blobs_delete(expired)
    return len(expired)
