"""Read REFI-QDA projects (.qdpx / project.qde) and codebooks (.qdc) into dataclasses."""

from __future__ import annotations

import datetime as dt
import io
import os
import re
import uuid
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import PurePosixPath
from typing import BinaryIO

from lxml import etree

from .container import DEFAULT_LIMITS, Limits, QdpxArchive, is_external_path
from .errors import QdpxError, UnsafeInputError
from .model import (
    Case,
    Code,
    Codebook,
    Coding,
    Link,
    Note,
    Project,
    Selection,
    Set,
    TextSource,
    User,
    Variable,
    VariableValue,
    VariableValueType,
    norm_guid,
)
from .positions import COUNTINGS, PositionMap, needs_table
from .safexml import child, child_text, children, element_count, grandchildren, local, parse_xml

_RGB = re.compile(r"^#([0-9A-Fa-f]{6}|[0-9A-Fa-f]{3})$")
_NON_TEXT_SOURCES = {"PictureSource", "PDFSource", "AudioSource", "VideoSource"}

# Reads a source by its plainTextPath: returns bytes, or None when it is missing.
SourceResolver = Callable[[str], "bytes | None"]


def decode_text(data: bytes, *, where: str) -> str:
    """Decode a plain-text source: UTF-8 (a BOM is stripped, never counted); CRLF kept."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    elif data.startswith((b"\xff\xfe", b"\xfe\xff")):
        # Not the standard, but unambiguous thanks to the BOM.
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise QdpxError(
                f"the text starts with a UTF-16 byte-order mark but is not UTF-16 ({exc.reason} at byte {exc.start}"
                f"{', an odd number of bytes' if len(data) % 2 else ''})", where=where) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise QdpxError(
            f"the text is not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
            "REFI-QDA plain-text sources must be UTF-8", where=where) from exc


@dataclass
class _Ctx:
    where: str
    warnings: list[str]

    def at(self, el: etree._Element) -> str:
        return f"{self.where} line {el.sourceline}" if el.sourceline else self.where

    def warn(self, el: etree._Element | None, message: str) -> None:
        self.warnings.append(f"{self.at(el) if el is not None else self.where}: {message}")


def _guid(el: etree._Element, ctx: _Ctx, attr: str = "guid") -> str:
    value = (el.get(attr) or "").strip()
    if not value:
        value = str(uuid.uuid4())
        ctx.warn(el, f"<{local(el)}> has no {attr}; gave it {value}")
    return value


def _int(el: etree._Element, attr: str, ctx: _Ctx) -> int:
    raw = el.get(attr)
    try:
        return int((raw or "").strip())
    except ValueError:
        raise QdpxError(f"<{local(el)}> {attr}={raw!r} is not a whole number",
                        where=ctx.at(el)) from None


def _datetime(el: etree._Element, attr: str, ctx: _Ctx) -> dt.datetime | None:
    raw = el.get(attr)
    if not raw:
        return None
    try:
        value = dt.datetime.fromisoformat(raw.strip())
    except ValueError:
        ctx.warn(el, f"{attr}={raw!r} is not a date and time; ignored")
        return None
    value = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
    try:
        value.astimezone(dt.UTC)  # as it is stored: 1 BC or the year 10000 would be stored, then never load again
    except OverflowError:
        ctx.warn(el, f"{attr}={raw!r} falls outside the years 1 to 9999 in UTC; ignored")
        return None
    return value


def _bool(raw: str | None, default: bool = True) -> bool:
    if raw is None:
        return default
    return raw.strip().lower() in ("true", "1")


def _refs(el: etree._Element, name: str, attr: str = "targetGUID") -> list[str]:
    return [r.get(attr, "") for r in children(el, name) if r.get(attr)]


def _color(el: etree._Element, ctx: _Ctx) -> str | None:
    raw = el.get("color")
    if raw is None:
        return None
    if _RGB.match(raw.strip()):
        return raw.strip()
    ctx.warn(el, f"color={raw!r} is not #RRGGBB; ignored")
    return None


def _code(el: etree._Element, ctx: _Ctx) -> Code:
    name = el.get("name")
    if name is None:
        name = "(unnamed code)"
        ctx.warn(el, "a <Code> has no name")
    return Code(
        guid=_guid(el, ctx),
        name=name,
        is_codable=_bool(el.get("isCodable")),
        color=_color(el, ctx),
        description=child_text(el, "Description"),
        children=[_code(c, ctx) for c in children(el, "Code")],
        note_refs=_refs(el, "NoteRef"),
    )


def _codes(parent: etree._Element, ctx: _Ctx) -> list[Code]:
    return [_code(c, ctx) for c in grandchildren(parent, "Codes", "Code")]


def _set(el: etree._Element, ctx: _Ctx, *, member_attr: str) -> Set:
    # The trap: a codebook's MemberCode has `guid`, a project's has `targetGUID`.
    other = "guid" if member_attr == "targetGUID" else "targetGUID"
    members = [m.get(member_attr) or m.get(other) or "" for m in children(el, "MemberCode")]
    return Set(
        guid=_guid(el, ctx),
        name=el.get("name") or "(unnamed set)",
        description=child_text(el, "Description"),
        member_codes=[m for m in members if m],
        member_sources=_refs(el, "MemberSource"),
        member_notes=_refs(el, "MemberNote"),
    )


def _typed_value(el: etree._Element, ctx: _Ctx) -> VariableValueType:
    for vel in el:
        kind, raw = local(vel), (vel.text or "")
        if kind == "VariableRef":
            continue
        try:
            if kind == "TextValue":
                return raw
            if kind == "BooleanValue":
                return _bool(raw, False)
            if kind == "IntegerValue":
                return int(raw.strip())
            if kind == "FloatValue":
                return Decimal(raw.strip())
            if kind == "DateValue":
                return dt.date.fromisoformat(raw.strip()[:10])
            if kind == "DateTimeValue":
                return dt.datetime.fromisoformat(raw.strip())
        except (ValueError, InvalidOperation):
            ctx.warn(vel, f"<{kind}> {raw!r} cannot be read; kept as text")
            return raw
    return None


def _variable_values(el: etree._Element, ctx: _Ctx) -> list[VariableValue]:
    out = []
    for vv in children(el, "VariableValue"):
        ref = child(vv, "VariableRef")
        if ref is None or not ref.get("targetGUID"):
            ctx.warn(vv, "<VariableValue> without <VariableRef targetGUID>; ignored")
            continue
        out.append(VariableValue(variable_guid=ref.get("targetGUID", ""), value=_typed_value(vv, ctx)))
    return out


def _coding(el: etree._Element, ctx: _Ctx) -> Coding | None:
    ref = child(el, "CodeRef")
    if ref is None or not ref.get("targetGUID"):
        ctx.warn(el, "<Coding> without <CodeRef targetGUID>; ignored")
        return None
    return Coding(
        guid=_guid(el, ctx),
        code_guid=ref.get("targetGUID", ""),
        creating_user=el.get("creatingUser"),
        created=_datetime(el, "creationDateTime", ctx),
        note_refs=_refs(el, "NoteRef"),
    )


def _codings(el: etree._Element, ctx: _Ctx) -> list[Coding]:
    return [c for c in (_coding(x, ctx) for x in children(el, "Coding")) if c is not None]


def _selection(el: etree._Element, ctx: _Ctx) -> Selection:
    start, end = _int(el, "startPosition", ctx), _int(el, "endPosition", ctx)
    return Selection(
        guid=_guid(el, ctx),
        start=start,
        end=end,
        raw_start=start,
        raw_end=end,
        name=el.get("name"),
        description=child_text(el, "Description"),
        creating_user=el.get("creatingUser"),
        created=_datetime(el, "creationDateTime", ctx),
        codings=_codings(el, ctx),
        note_refs=_refs(el, "NoteRef"),
    )


def _load_text(el: etree._Element, ctx: _Ctx, resolve: SourceResolver | None,
               kind: str) -> tuple[str | None, str | None]:
    """(text, plainTextPath) of a TextSource or Note; text None when missing."""
    content = child(el, "PlainTextContent")
    path = el.get("plainTextPath")
    if path:
        if content is not None:
            ctx.warn(el, f"{kind} has both plainTextPath and PlainTextContent; using the file")
        if is_external_path(path) or resolve is None:
            ctx.warn(el, f"{kind} {el.get('name') or path!r} is an external file ({path}) that "
                         "the archive does not include; imported without text")
            return None, path
        data = resolve(path)
        if data is None:
            ctx.warn(el, f"{kind} {el.get('name') or path!r}: {path} is not in the archive; "
                         "imported without text")
            return None, path
        return decode_text(data, where=f"{ctx.where} {path}"), path
    if content is not None:
        return content.text or "", None
    if kind == "note":
        return "", None
    ctx.warn(el, f"{kind} {el.get('name')!r} has neither plainTextPath nor PlainTextContent")
    return None, None


def _text_source(el: etree._Element, ctx: _Ctx, resolve: SourceResolver | None) -> TextSource:
    text, path = _load_text(el, ctx, resolve, "source")
    name = el.get("name") or (PurePosixPath(path.replace("internal://", "")).stem if path else "")
    return TextSource(
        guid=_guid(el, ctx),
        name=name or "(unnamed source)",
        text=text,
        plain_text_path=path,
        description=child_text(el, "Description"),
        creating_user=el.get("creatingUser"),
        created=_datetime(el, "creationDateTime", ctx),
        selections=[_selection(s, ctx) for s in children(el, "PlainTextSelection")],
        codings=_codings(el, ctx),
        note_refs=_refs(el, "NoteRef"),
        variable_values=_variable_values(el, ctx),
    )


def _note(el: etree._Element, ctx: _Ctx, resolve: SourceResolver | None) -> Note:
    text, _ = _load_text(el, ctx, resolve, "note")
    return Note(
        guid=_guid(el, ctx),
        name=el.get("name") or "",
        text=text or "",
        creating_user=el.get("creatingUser"),
        created=_datetime(el, "creationDateTime", ctx),
        modified=_datetime(el, "modifiedDateTime", ctx),
    )


def _case(el: etree._Element, ctx: _Ctx) -> Case:
    return Case(
        guid=_guid(el, ctx),
        name=el.get("name") or "",
        description=child_text(el, "Description"),
        code_refs=_refs(el, "CodeRef"),
        variable_values=_variable_values(el, ctx),
        source_refs=_refs(el, "SourceRef"),
        selection_refs=_refs(el, "SelectionRef"),
    )


def _check_root(root: etree._Element, expected: str, where: str) -> None:
    if local(root) != expected:
        raise QdpxError(f"the root element is <{local(root)}>, expected <{expected}>", where=where)


def parse_project_xml(data: bytes, *, where: str = "project.qde",
                      resolve: SourceResolver | None = None,
                      counting: str | None = None, max_nodes: int | None = None) -> Project:
    """Parse project.qde bytes; `resolve` reads sources by plainTextPath; `max_nodes` as in safexml.parse_xml."""
    sources = _SourcesReader(_Ctx(where=where, warnings=[]), resolve)
    root = parse_xml(data, where=where, max_nodes=max_nodes, each=sources.each)
    _check_root(root, "Project", where)
    ctx = _Ctx(where=where, warnings=[])
    project = Project(
        name=root.get("name") or "Imported project",
        origin=root.get("origin"),
        creating_user=root.get("creatingUserGUID"),
        created=_datetime(root, "creationDateTime", ctx),
        modified=_datetime(root, "modifiedDateTime", ctx),
        users=[User(guid=_guid(u, ctx), name=u.get("name") or "", id=u.get("id") or "")
               for u in grandchildren(root, "Users", "User")],
        codes=[c for cb in children(root, "CodeBook") for c in _codes(cb, ctx)],
        variables=[Variable(guid=_guid(v, ctx), name=v.get("name") or "",
                            type=v.get("typeOfVariable") or "Text",
                            description=child_text(v, "Description"))
                   for v in grandchildren(root, "Variables", "Variable")],
        cases=[_case(c, ctx) for c in grandchildren(root, "Cases", "Case")],
        notes=[_note(n, ctx, resolve) for n in grandchildren(root, "Notes", "Note")],
        links=[Link(guid=_guid(lk, ctx), name=lk.get("name") or "", direction=lk.get("direction"),
                    origin_guid=lk.get("originGUID"), target_guid=lk.get("targetGUID"),
                    color=lk.get("color"))
               for lk in grandchildren(root, "Links", "Link")],
        sets=[_set(s, ctx, member_attr="targetGUID") for s in grandchildren(root, "Sets", "Set")],
        description=child_text(root, "Description"),
        note_refs=_refs(root, "NoteRef"),
        sources=sources.text_sources,
        skipped_sources=sources.skipped,
        warnings=ctx.warnings,
    )
    ctx.warnings.extend(sources.ctx.warnings)  # after the other parts' warnings, as the sources follow them
    _drop_dangling_codings(project, ctx)
    apply_counting(project, forced=counting, where=where)
    return project


class _SourcesReader:
    """The project's sources, each read as soon as the parser has it whole (safexml.parse_xml's `each`), in order."""

    def __init__(self, ctx: _Ctx, resolve: SourceResolver | None) -> None:
        self.ctx, self.resolve = ctx, resolve
        self.text_sources: list[TextSource] = []
        self.skipped: list[str] = []
        self.each = dict.fromkeys(["TextSource", *_NON_TEXT_SOURCES], self.read)

    def read(self, el: etree._Element) -> None:
        # Only <Project><Sources>'s own children are sources; the same names anywhere else are not read.
        sources = el.getparent()
        if local(sources) != "Sources" or sources.getparent() is None or sources.getparent().getparent() is not None:
            return
        kind = local(el)
        if kind == "TextSource":
            self.text_sources.append(_text_source(el, self.ctx, self.resolve))
        else:
            self.skipped.append(el.get("name") or el.get("guid") or kind)
            self.ctx.warn(el, f"{kind} {el.get('name')!r} is not a text source; not imported")


def _drop_dangling_codings(project: Project, ctx: _Ctx) -> None:
    """Keep codings whose CodeRef names a code; tolerate CodeRefs to cases (and say so)."""
    codes = project.codes_by_guid()
    cases = {norm_guid(c.guid): c for c in project.cases}

    def keep(coding: Coding, source: TextSource) -> bool:
        key = norm_guid(coding.code_guid)
        if key in codes:
            return True
        if key in cases:
            ctx.warnings.append(
                f"{ctx.where}: coding {coding.guid} in source {source.name!r} refers to case "
                f"{cases[key].name or cases[key].guid!r}, not a code; skipped")
        else:
            ctx.warnings.append(
                f"{ctx.where}: coding {coding.guid} in source {source.name!r} refers to "
                f"{coding.code_guid}, which is not a code in this file; skipped")
        return False

    for src in project.sources:
        src.codings = [c for c in src.codings if keep(c, src)]
        for sel in src.selections:
            sel.codings = [c for c in sel.codings if keep(c, src)]


def _origin_counting(origin: str | None) -> str:
    low = (origin or "").strip().lower()
    if low.startswith("nvivo") or "utf-16 positions" in low:
        return "utf16"
    if low.startswith("atlas"):
        return "crlf1"
    return "codepoints"


def _squash(s: str) -> str:
    return " ".join(s.split())


def name_matches(name: str | None, selected: str) -> bool:
    """Does a selection's `name` hold its selected text (allowing for whitespace and truncation)?"""
    if not name or not selected:
        return False
    a, b = _squash(name), _squash(selected)
    if a == b:
        return True
    stem = a.rstrip(".…").rstrip()
    return len(stem) >= 20 and b.startswith(stem)


@dataclass
class _Trial:
    counting: str
    bad: str | None  # why this counting cannot be right
    matches: int


def _try_counting(project: Project, counting: str) -> _Trial:
    matches = 0
    for src in project.sources:
        if src.text is None or not src.selections:
            continue
        pmap = PositionMap(src.text, counting)
        for sel in src.selections:
            s, e = pmap.to_codepoint(sel.raw_start or 0), pmap.to_codepoint(sel.raw_end or 0)
            if s is None or e is None or s > e:
                label = f" ({sel.name!r})" if sel.name else ""
                return _Trial(counting, (
                    f"selection {sel.guid}{label} in source {src.name!r} spans "
                    f"{sel.raw_start}–{sel.raw_end}, which does not fit its text of "
                    f"{pmap.length} characters counted as {counting}"), 0)
            if name_matches(sel.name, src.text[s:e]):
                matches += 1
    return _Trial(counting, None, matches)


def apply_counting(project: Project, *, forced: str | None = None, where: str = "") -> None:
    """Choose how the file counted positions and convert every selection to code points.

    Preference comes from `origin` (NVivo → UTF-16, ATLAS.ti → CRLF = 1); a counting
    that puts any selection past its text is rejected; among the rest, the one whose
    selected texts match the selections' `name` most often wins.
    """
    preferred = forced or _origin_counting(project.origin)
    if forced is not None and forced not in COUNTINGS:
        raise QdpxError(f"unknown position counting {forced!r}; use one of {', '.join(COUNTINGS)}")
    texts = [s.text for s in project.sources if s.text is not None and s.selections]
    order = [preferred] + [c for c in COUNTINGS if c != preferred and forced is None]
    # Countings that are the identity on every text give the same answer as code points.
    order = [c for c in order if c == "codepoints" or c == preferred
             or any(needs_table(t, c) for t in texts)]
    trials = [_try_counting(project, c) for c in order]
    valid = [t for t in trials if t.bad is None]
    if not valid:
        raise QdpxError(f"{trials[0].bad}; no way of counting characters fits this file",
                        where=where)
    best = max(valid, key=lambda t: t.matches)  # max keeps the first (preferred) on ties
    if best.counting != preferred:
        project.warnings.append(
            f"{where}: positions read as {best.counting} rather than {preferred} "
            f"(origin {project.origin!r}) because the selected texts then match the "
            "selection names")
    project.counting = best.counting
    for src in project.sources:
        if src.text is None:
            continue
        pmap = PositionMap(src.text, best.counting)
        for sel in src.selections:
            sel.start = pmap.to_codepoint(sel.raw_start or 0) or 0
            sel.end = pmap.to_codepoint(sel.raw_end or 0) or 0


def _open(source: str | os.PathLike[str] | bytes | BinaryIO) -> bytes:
    if isinstance(source, bytes):
        return source
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as fh:
            return fh.read()
    return source.read()


def read_project(source: str | os.PathLike[str] | bytes | BinaryIO, *, name: str = "",
                 limits: Limits = DEFAULT_LIMITS, counting: str | None = None) -> Project:
    """Read a .qdpx archive (path, bytes or binary file) into a Project."""
    with QdpxArchive(source, name=name, limits=limits) as archive:
        def resolve(path: str) -> bytes | None:
            member = archive.find_source(path)
            return archive.read_member(member) if member else None

        data, where = archive.read_qde(), f"{archive.name}: {archive.qde_name}"
        if limits.max_codes is not None and (codes := element_count(data, "Code")) > limits.max_codes:
            raise UnsafeInputError(f"the project holds {codes:,} codes, more than the {limits.max_codes:,} one "
                                   "import may bring in", where=where)
        return parse_project_xml(data, where=where, resolve=resolve, counting=counting, max_nodes=limits.max_nodes)


def parse_codebook_xml(data: bytes, *, where: str = "codebook.qdc", max_nodes: int | None = None) -> Codebook:
    root = parse_xml(data, where=where, max_nodes=max_nodes)
    _check_root(root, "CodeBook", where)
    ctx = _Ctx(where=where, warnings=[])
    return Codebook(
        codes=_codes(root, ctx),
        sets=[_set(s, ctx, member_attr="guid") for s in grandchildren(root, "Sets", "Set")],
        origin=root.get("origin"),
    )


def read_codebook(source: str | os.PathLike[str] | bytes | BinaryIO, *, name: str = "",
                  limits: Limits = DEFAULT_LIMITS) -> Codebook:
    """Read a .qdc codebook; a .qdpx project is accepted too (its codes and sets)."""
    data = _open(source)
    where = name or (os.fspath(source) if isinstance(source, (str, os.PathLike)) else "codebook")
    if len(data) > limits.max_qde_bytes:
        raise QdpxError(f"the codebook is larger than {limits.max_qde_bytes} bytes", where=where)
    if zipfile.is_zipfile(io.BytesIO(data)):
        with QdpxArchive(data, name=where, limits=limits) as archive:
            qde_where = f"{where}: {archive.qde_name}"
            # The codes and sets only: each source is let go as soon as it is read.
            root = parse_xml(archive.read_qde(), where=qde_where, max_nodes=limits.max_nodes,
                             each={"TextSource": lambda el: None})
            _check_root(root, "Project", qde_where)
            ctx = _Ctx(where=qde_where, warnings=[])
            codes = [c for cb in children(root, "CodeBook") for c in _codes(cb, ctx)]
            sets = [_set(s, ctx, member_attr="targetGUID") for s in grandchildren(root, "Sets", "Set")]
            return Codebook(codes=codes, sets=sets, origin=root.get("origin"))
    return parse_codebook_xml(data, where=where, max_nodes=limits.max_nodes)

