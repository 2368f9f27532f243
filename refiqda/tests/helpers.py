"""Build small .qdpx archives in memory for tests."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from lxml import etree

SAMPLES = Path("/work/shared/samples")
QDPX_SAMPLES = sorted((SAMPLES / "qdpx").glob("*.qdpx"))
PROJECT_XSD = etree.XMLSchema(etree.parse(str(SAMPLES / "schemas" / "Project.xsd")))
CODEBOOK_XSD = etree.XMLSchema(etree.parse(str(SAMPLES / "schemas" / "Codebook.xsd")))

NS = "urn:QDA-XML:project:1.0"
G = "00000000-0000-4000-8000-{:012d}".format  # deterministic GUIDs: G(1), G(2), ...


def make_zip(files: dict[str, bytes | str]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data.encode("utf-8") if isinstance(data, str) else data)
    return buf.getvalue()


def project_xml(body: str, *, origin: str = "Test", ns: str = NS, name: str = "P") -> str:
    return (f'<?xml version="1.0" encoding="utf-8"?>\n'
            f'<Project xmlns="{ns}" name="{name}" origin="{origin}">{body}</Project>')


def codebook(*codes: tuple[int, str]) -> str:
    inner = "".join(f'<Code guid="{G(n)}" name="{name}" isCodable="true"/>' for n, name in codes)
    return f"<CodeBook><Codes>{inner}</Codes></CodeBook>"


def one_source_project(text: str, selections: list[tuple[int, int, str | None]], *,
                       origin: str = "Test", text_bytes: bytes | None = None) -> bytes:
    """A qdpx with code G(1) and one text source holding the given selections."""
    sels = "".join(
        f'<PlainTextSelection guid="{G(100 + i)}" startPosition="{s}" endPosition="{e}"'
        + (f' name="{escape_attr(n)}"' if n is not None else "")
        + f'><Coding guid="{G(200 + i)}"><CodeRef targetGUID="{G(1)}"/></Coding></PlainTextSelection>'
        for i, (s, e, n) in enumerate(selections))
    body = (codebook((1, "c1")) + f'<Sources><TextSource guid="{G(50)}" name="doc" '
            f'plainTextPath="internal://{G(50)}.txt">{sels}</TextSource></Sources>')
    return make_zip({"project.qde": project_xml(body, origin=origin),
                     f"sources/{G(50)}.txt": text_bytes if text_bytes is not None
                     else text.encode("utf-8")})


def escape_attr(s: str) -> str:
    return (s.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
            .replace("\r", "&#13;").replace("\n", "&#10;"))


def encrypted(data: bytes, member: str) -> bytes:
    """The archive with `member` marked as encrypted (as a ZIP tool with a password writes it); its bytes unchanged."""
    out = bytearray(data)
    name = member.encode()
    for signature, flags, name_length, name_at in ((b"PK\x03\x04", 6, 26, 30), (b"PK\x01\x02", 8, 28, 46)):
        at = out.find(signature)
        while at >= 0:
            length = int.from_bytes(out[at + name_length:at + name_length + 2], "little")
            if bytes(out[at + name_at:at + name_at + length]) == name:
                out[at + flags] |= 0x1
            at = out.find(signature, at + 4)
    return bytes(out)


def damaged(data: bytes, member: str) -> bytes:
    """The archive with `member`'s compressed bytes scrambled, as a download cut or changed on the way would leave it."""
    info = zipfile.ZipFile(io.BytesIO(data)).getinfo(member)
    out = bytearray(data)
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    for at in range(start + 5, start + min(info.compress_size, 60)):
        out[at] ^= 0x55
    return bytes(out)
