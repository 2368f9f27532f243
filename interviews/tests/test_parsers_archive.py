"""Uploads: ZIP bombs, path traversal, size limits, bundles of transcripts, detection."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from interviews.parsers import Limits, ParseError, SourceFile, detect_format, expand, parse_upload


def zip_bytes(files: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buf.getvalue()


def test_zip_bomb_by_ratio_is_refused():
    data = zip_bytes({"conversations.json": b" " * (20 * 1024 * 1024)})
    with pytest.raises(ParseError) as exc:
        expand(SourceFile.from_bytes("export.zip", data), Limits())
    msg = str(exc.value)
    assert msg.startswith("export.zip: member 'conversations.json': expected a compression ratio")
    assert "ZIP bomb" in msg


def test_zip_bomb_by_total_size_is_refused():
    files = {f"t{i}.txt": b"User: hi\nAssistant: " + bytes(str(i), "ascii") * 400 for i in range(10)}
    limits = Limits(max_archive_total_bytes=2000)
    with pytest.raises(ParseError, match="expected at most 2.0 KB once unpacked"):
        expand(SourceFile.from_bytes("many.zip", zip_bytes(files)), limits)


def test_too_many_members_is_refused():
    files = {f"t{i}.txt": b"User: hi\nAssistant: yo\n" for i in range(5)}
    with pytest.raises(ParseError, match="expected at most 3 files in the archive, found 5"):
        expand(SourceFile.from_bytes("many.zip", zip_bytes(files)), Limits(max_archive_members=3))


@pytest.mark.parametrize("evil", ["../../etc/passwd.txt", "/abs/path.txt", "a/../../b.txt",
                                  "C:/windows/x.txt", "..\\up.txt"])
def test_path_traversal_is_refused(evil):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(zipfile.ZipInfo(evil), b"User: hi\nAssistant: yo\n")
    with pytest.raises(ParseError, match="expected paths inside the archive, found a path that points outside it"):
        expand(SourceFile.from_bytes("evil.zip", buf.getvalue()), Limits())


def test_symlink_member_is_refused():
    info = zipfile.ZipInfo("link.txt")
    info.external_attr = (0o120777 << 16)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(info, "/etc/passwd")
    with pytest.raises(ParseError, match="found a symbolic link"):
        expand(SourceFile.from_bytes("link.zip", buf.getvalue()), Limits())


def test_file_over_the_size_limit_is_refused():
    with pytest.raises(ParseError) as exc:
        expand(SourceFile.from_bytes("big.txt", b"x" * 3000), Limits(max_file_bytes=1024))
    assert str(exc.value) == "big.txt: expected a file of at most 1.0 KB, found 2.9 KB"


def test_text_over_the_text_limit_is_refused():
    data = b"User: hi\nAssistant: " + b"y" * 5000
    with pytest.raises(ParseError, match="^big.txt: expected a file of at most"):
        list(parse_upload(SourceFile.from_bytes("big.txt", data), limits=Limits(max_text_bytes=1000)))


def test_empty_file_is_refused():
    with pytest.raises(ParseError, match="^empty.json: expected a transcript, found an empty file"):
        list(parse_upload(SourceFile.from_bytes("empty.json", b"")))


def test_corrupt_zip_is_refused():
    with pytest.raises(ParseError, match="^bad.zip: expected a readable ZIP archive"):
        expand(SourceFile.from_bytes("bad.zip", b"PK\x03\x04garbage"), Limits())


def test_bundle_zip_parses_each_transcript_and_skips_junk():
    files = {
        "interviews/one.txt": b"User: hi\nGPT-4o: hello\n",
        "interviews/two.md": b"#### You:\nQ\n\n#### ChatGPT:\nA\n",
        "interviews/three.jsonl": json.dumps({"messages": [{"role": "user", "content": "x"}]}).encode(),
        "__MACOSX/interviews/._one.txt": b"\x00\x05junk",
        "interviews/.DS_Store": b"\x00",
        "interviews/picture.png": b"\x89PNG",
    }
    convs = list(parse_upload(SourceFile.from_bytes("bundle.zip", zip_bytes(files))))
    assert sorted((c.source_name, c.source_format) for c in convs) == [
        ("bundle.zip/interviews/one.txt", "text"),
        ("bundle.zip/interviews/three.jsonl", "openai"),
        ("bundle.zip/interviews/two.md", "markdown"),
    ]


def test_zip_without_transcripts_is_named():
    with pytest.raises(ParseError, match="^photos.zip: expected conversations.json or transcript files"):
        expand(SourceFile.from_bytes("photos.zip", zip_bytes({"a.png": b"x"})), Limits())


def test_nested_zip_is_refused():
    inner = zip_bytes({"a.txt": b"User: a\nAssistant: b\n"})
    with pytest.raises(ParseError, match="expected a transcript file, found a ZIP archive inside a ZIP"):
        list(parse_upload(SourceFile.from_bytes("outer.zip", zip_bytes({"inner.json": inner}))))


def test_unknown_format_name_is_refused():
    with pytest.raises(ParseError, match="expected a format among auto, chatgpt"):
        list(parse_upload(SourceFile.from_bytes("a.txt", b"User: x\n"), format="pdf"))


@pytest.mark.parametrize(("name", "data", "fmt"), [
    ("a.json", b'[{"title": "x", "mapping": {}}]', "chatgpt"),
    ("a.json", b'\xef\xbb\xbf[{"uuid": "x", "chat_messages": []}]', "claude"),
    ("a.jsonl", b'{"messages": [{"role": "user", "content": "\\"from\\": 1"}]}', "openai"),
    ("a.json", b'{"conversations": [{"from": "human", "value": "hi"}]}', "sharegpt"),
    ("a.json", b'{"conversations": [{"title": "t", "mapping": {}}]}', "chatgpt"),
    ("a.md", b"User: hi", "markdown"),
    ("a.txt", b"User: hi", "text"),
    ("a.xlsx", b"PK", "csv"),
    ("a.tsv", b"speaker\ttext", "csv"),
])
def test_detect_format(name, data, fmt):
    assert detect_format(SourceFile.from_bytes(name, data)) == fmt
