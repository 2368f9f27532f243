"""Job files in PostgreSQL: written and read a chunk at a time, seekable, removed when done or expired."""

from __future__ import annotations

import hashlib
import io
import os
import tracemalloc
import zipfile
from datetime import timedelta

import pytest
from django.utils import timezone

from projects.blobs import CHUNK_BYTES, BlobMissing, blob_create, blob_open, blobs_delete, blobs_delete_expired
from projects.models import BlobChunk, StoredBlob

pytestmark = pytest.mark.django_db
DAY = timedelta(days=1)


class _Trickle(io.RawIOBase):
    """A stream that returns short reads, as sockets and pipes do."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = min(len(buffer), 1000, len(self.data) - self.pos)
        buffer[:n] = self.data[self.pos:self.pos + n]
        self.pos += n
        return n


def test_a_blob_reads_back_exactly_from_anywhere(owner):
    data = os.urandom(2 * CHUNK_BYTES + 12345)
    blob = blob_create(source=_Trickle(data), name="upload.json", keep=DAY, user=owner)
    assert (blob.size, blob.sha256, blob.created_by) == (len(data), hashlib.sha256(data).hexdigest(), owner)
    assert list(BlobChunk.objects.filter(blob=blob).order_by("index").values_list("index", flat=True)) == [0, 1, 2]
    with blob_open(str(blob.uuid)) as f:
        assert f.read() == data
        for at in (0, CHUNK_BYTES - 3, CHUNK_BYTES, 2 * CHUNK_BYTES + 12340, len(data)):
            f.seek(at)
            assert f.read(10) == data[at:at + 10]
        assert f.seek(-5, io.SEEK_END) == len(data) - 5 and f.read() == data[-5:]


def test_an_empty_file_is_an_empty_blob():
    blob = blob_create(source=io.BytesIO(b""), name="empty.txt", keep=DAY)
    assert blob.size == 0 and not BlobChunk.objects.filter(blob=blob).exists()
    assert blob_open(blob).read() == b""


def test_a_zip_in_a_blob_opens_like_a_file():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("a.txt", "alpha")
        zf.writestr("b.bin", os.urandom(CHUNK_BYTES + 10))
    blob = blob_create(source=buf, name="x.zip", keep=DAY)  # read from its start, wherever the stream stood
    with zipfile.ZipFile(blob_open(blob)) as zf:
        assert zf.read("a.txt") == b"alpha" and len(zf.read("b.bin")) == CHUNK_BYTES + 10


def test_a_file_too_short_for_a_zip_is_not_a_zip_as_a_file_on_disk_is_not(tmp_path):
    short = tmp_path / "short.zip"
    short.write_bytes(b"Theme,Code\r\n")
    with pytest.raises(zipfile.BadZipFile):
        zipfile.ZipFile(short)
    with pytest.raises(zipfile.BadZipFile):
        zipfile.ZipFile(blob_open(blob_create(source=io.BytesIO(short.read_bytes()), name="short.zip", keep=DAY)))


def test_a_large_blob_never_sits_in_memory_whole():
    size = 32 * CHUNK_BYTES
    source = _Zeros(size)
    tracemalloc.start()
    try:
        blob = blob_create(source=source, name="big.bin", keep=DAY)
        _, written_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        with blob_open(blob) as f:
            read = sum(len(block) for block in iter(lambda: f.read(256 * 1024), b""))
        _, read_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert blob.size == read == size
    # A few chunks' worth (the piece, the driver's copies: about 7 MB for 8 MB and 48 MB files alike), never the file.
    assert written_peak < 10 * CHUNK_BYTES and read_peak < 10 * CHUNK_BYTES, (written_peak, read_peak)


class _Zeros(io.RawIOBase):
    def __init__(self, size: int) -> None:
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = min(len(buffer), self.left)
        buffer[:n] = bytes(n)
        self.left -= n
        return n


def test_expired_and_deleted_blobs_are_gone():
    old = blob_create(source=io.BytesIO(b"old"), name="old", keep=DAY)
    fresh = blob_create(source=io.BytesIO(b"fresh"), name="fresh", keep=DAY)
    done = blob_create(source=io.BytesIO(b"done"), name="done", keep=DAY)
    StoredBlob.objects.filter(pk=old.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert blobs_delete_expired() == 1
    blobs_delete([done.uuid])
    assert list(StoredBlob.objects.values_list("name", flat=True)) == ["fresh"]
    assert set(BlobChunk.objects.values_list("blob", flat=True)) == {fresh.pk}
    with pytest.raises(BlobMissing):
        blob_open(str(old.uuid))


def test_a_blob_removed_while_it_is_read_says_so():
    blob = blob_create(source=io.BytesIO(os.urandom(CHUNK_BYTES + 1)), name="x", keep=DAY)
    f = blob_open(blob)
    f.read(10)
    blobs_delete([blob.uuid])
    with pytest.raises(BlobMissing, match="lost chunk 1"):
        f.seek(CHUNK_BYTES)
        f.read(1)
