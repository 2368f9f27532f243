"""Write schema-valid REFI-QDA: project.qde inside a .qdpx, and .qdc codebooks.

Export rules (FORMATS.md §1): no BOM, lowercase `sources/`, `<GUID>.txt`,
only `plainTextPath` for plain text, `PlainTextSelection@name` = the selected text,
positions in code points or, on request, UTF-16 code units (NVivo).
"""

from __future__ import annotations

import datetime as dt
import io
import os
import re
import zipfile
from collections.abc import Iterator
from decimal import Decimal
from typing import BinaryIO

from lxml import etree

from .errors import QdpxError
from .model import (
    Code,
    Codebook,
    Coding,
    Project,
    Selection,
    Set,
    TextSource,
    VariableValue,
)
from .positions import PositionMap

PROJECT_NS = "urn:QDA-XML:project:1.0"
CODEBOOK_NS = "urn:QDA-XML:codebook:1.0"
EXPORT_COUNTINGS = ("codepoints", "utf16")
_GUID = re.compile(r"^\{?[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\}?$")
# Characters XML 1.0 cannot carry at all, even escaped.
_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _clean(text: str) -> str:
    return _XML_ILLEGAL.sub("\ufffd", text)


def _check_guid(guid: str, what: str) -> str:
    if not _GUID.match(guid or ""):
        raise QdpxError(f"{what} has guid {guid!r}, which is not a GUID (8-4-4-4-12 hex)")
    return guid


def _datetime(value: dt.datetime | None) -> str | None:
    if value is None:
        return None
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC)
    return value.replace(tzinfo=None).isoformat() + "Z"  # fractions of a second too (xs:dateTime has them): exact


def _attributes(attrs: dict[str, object]) -> dict[str, str]:
    return {k: _clean(str(v)) for k, v in attrs.items() if v is not None}


class _Builder:
    """Elements in namespace `ns`, declared on each element made without a parent; with no `ns`, elements for
    write_project_xml to place under a root that declares it."""

    def __init__(self, ns: str | None) -> None:
        self.ns = ns

    def el(self, parent: etree._Element | None, name: str, /, **attrs: object) -> etree._Element:
        tag = f"{{{self.ns}}}{name}" if self.ns else name
        if parent is None:
            return etree.Element(tag, _attributes(attrs), nsmap={None: self.ns} if self.ns else None)
        return etree.SubElement(parent, tag, _attributes(attrs))

    def text_el(self, parent: etree._Element | None, name: str, text: str) -> etree._Element:
        node = self.el(parent, name)
        node.text = _clean(text)
        return node

    def description(self, parent: etree._Element, text: str) -> None:
        if text:
            self.text_el(parent, "Description", text)

    def refs(self, parent: etree._Element, name: str, guids: list[str], attr: str = "targetGUID") -> None:
        for g in guids:
            self.el(parent, name, **{attr: _check_guid(g, name)})

    def code(self, parent: etree._Element, code: Code, *, with_notes: bool) -> None:
        node = self.el(parent, "Code", guid=_check_guid(code.guid, f"code {code.name!r}"),
                       name=code.name, isCodable="true" if code.is_codable else "false",
                       color=code.color or None)
        self.description(node, code.description)
        if with_notes:
            self.refs(node, "NoteRef", code.note_refs)
        for c in code.children:
            self.code(node, c, with_notes=with_notes)

    def set(self, parent: etree._Element, s: Set, *, codebook: bool) -> None:
        node = self.el(parent, "Set", guid=_check_guid(s.guid, f"set {s.name!r}"), name=s.name)
        self.description(node, s.description)
        # The trap, in reverse: a codebook's MemberCode carries `guid`, a project's `targetGUID`.
        self.refs(node, "MemberCode", s.member_codes, "guid" if codebook else "targetGUID")
        if not codebook:
            self.refs(node, "MemberSource", s.member_sources)
            self.refs(node, "MemberNote", s.member_notes)


def _variable_value(b: _Builder, parent: etree._Element, vv: VariableValue) -> None:
    node = b.el(parent, "VariableValue")
    b.el(node, "VariableRef", targetGUID=_check_guid(vv.variable_guid, "VariableRef"))
    v = vv.value
    if v is None:
        return
    if isinstance(v, bool):
        b.text_el(node, "BooleanValue", "true" if v else "false")
    elif isinstance(v, int):
        b.text_el(node, "IntegerValue", str(v))
    elif isinstance(v, (float, Decimal)):
        b.text_el(node, "FloatValue", str(v))
    elif isinstance(v, dt.datetime):
        b.text_el(node, "DateTimeValue", _datetime(v) or "")
    elif isinstance(v, dt.date):
        b.text_el(node, "DateValue", v.isoformat())
    else:
        b.text_el(node, "TextValue", str(v))


def _coding(b: _Builder, parent: etree._Element, c: Coding) -> None:
    node = b.el(parent, "Coding", guid=_check_guid(c.guid, "coding"),
                creatingUser=c.creating_user or None, creationDateTime=_datetime(c.created))
    b.el(node, "CodeRef", targetGUID=_check_guid(c.code_guid, "CodeRef"))
    b.refs(node, "NoteRef", c.note_refs)


def _selection(b: _Builder, parent: etree._Element, src: TextSource, sel: Selection,
               pmap: PositionMap) -> None:
    text = src.text or ""
    if not 0 <= sel.start <= sel.end <= len(text):
        raise QdpxError(f"selection {sel.guid} in source {src.name!r} spans {sel.start}–{sel.end}, "
                        f"outside its text of {len(text)} characters")
    node = b.el(parent, "PlainTextSelection", guid=_check_guid(sel.guid, "selection"),
                name=text[sel.start:sel.end], startPosition=pmap.from_codepoint(sel.start),
                endPosition=pmap.from_codepoint(sel.end),
                creatingUser=sel.creating_user or None, creationDateTime=_datetime(sel.created))
    b.description(node, sel.description)
    for c in sel.codings:
        _coding(b, node, c)
    b.refs(node, "NoteRef", sel.note_refs)


def source_filename(src: TextSource) -> str:
    return f"{src.guid.strip('{}')}.txt"


WRITER_ORIGIN = "RTA Studio"


def build_project_xml(project: Project, *, positions: str = "codepoints",
                      origin: str = WRITER_ORIGIN) -> bytes:
    """project.qde bytes (UTF-8, no BOM) for a Project whose positions are code points (see write_project_xml)."""
    out = io.BytesIO()
    write_project_xml(project, out, positions=positions, origin=origin)
    return out.getvalue()


def write_project_xml(project: Project, out: BinaryIO, *, positions: str = "codepoints",
                      origin: str = WRITER_ORIGIN) -> None:
    """Write project.qde (UTF-8, no BOM) for a Project whose positions are code points.

    `origin` names this writer, not the tool the data first came from: importers
    choose their position counting by it.

    Written a part at a time, each text source's elements let go once written: the whole tree took ~6 times
    its XML's size in memory (300 MB for a project 50× the peer corpus). The bytes are those of the whole tree
    pretty-printed: the parts are built without a namespace and indented as they sit, under a root declaring it.
    """
    if positions not in EXPORT_COUNTINGS:
        raise QdpxError(f"positions must be one of {', '.join(EXPORT_COUNTINGS)}, not {positions!r}")
    if positions == "utf16":
        # Say so in the origin, so a reader (ours included) picks the right counting.
        origin = f"{origin} (NVivo-compatible UTF-16 positions)"
    attrs = {"name": project.name, "origin": origin, "creatingUserGUID": project.creating_user or None,
             "creationDateTime": _datetime(project.created), "modifiedDateTime": _datetime(project.modified)}
    b = _Builder(None)
    before = _parts_before_sources(b, project)
    # A project with no part at all is a self-closed root, which an incremental writer cannot make once it has opened
    # it: the parts after the sources are built only as they are written, so their conditions are asked here.
    if not (before or project.sources or project.notes or project.links or project.sets or project.description
            or project.note_refs):
        out.write(etree.tostring(_Builder(PROJECT_NS).el(None, "Project", **attrs), xml_declaration=True,
                                 encoding="UTF-8", pretty_print=True))
        return
    with etree.xmlfile(out, encoding="UTF-8") as xf:
        xf.write_declaration()
        with xf.element(f"{{{PROJECT_NS}}}Project", _attributes(attrs), nsmap={None: PROJECT_NS}):
            for part in before:
                _write_part(xf, part, level=1)
            if project.sources:
                xf.write("\n  ")
                with xf.element(f"{{{PROJECT_NS}}}Sources"):
                    for src in project.sources:
                        _write_part(xf, _text_source(b, src, positions), level=2)
                    xf.write("\n  ")
            for part in _parts_after_sources(b, project):
                _write_part(xf, part, level=1)
            xf.write("\n")
    out.write(b"\n")


def _write_part(xf, part: etree._Element, *, level: int) -> None:
    etree.indent(part, space="  ", level=level)
    xf.write("\n" + "  " * level)
    xf.write(part)


# Children in the order the schema's sequence demands; empty wrappers are omitted
# because each wrapper requires at least one child.
def _parts_before_sources(b: _Builder, project: Project) -> list[etree._Element]:
    parts = []
    if project.users:
        users = b.el(None, "Users")
        for u in project.users:
            b.el(users, "User", guid=_check_guid(u.guid, f"user {u.name!r}"), name=u.name or None,
                 id=u.id or None)
        parts.append(users)
    if project.codes:
        codebook = b.el(None, "CodeBook")
        codes = b.el(codebook, "Codes")
        for c in project.codes:
            b.code(codes, c, with_notes=True)
        parts.append(codebook)
    if project.variables:
        variables = b.el(None, "Variables")
        for v in project.variables:
            node = b.el(variables, "Variable", guid=_check_guid(v.guid, f"variable {v.name!r}"),
                        name=v.name, typeOfVariable=v.type)
            b.description(node, v.description)
        parts.append(variables)
    if project.cases:
        cases = b.el(None, "Cases")
        for case in project.cases:
            node = b.el(cases, "Case", guid=_check_guid(case.guid, f"case {case.name!r}"),
                        name=case.name or None)
            b.description(node, case.description)
            b.refs(node, "CodeRef", case.code_refs)
            for vv in case.variable_values:
                _variable_value(b, node, vv)
            b.refs(node, "SourceRef", case.source_refs)
            b.refs(node, "SelectionRef", case.selection_refs)
        parts.append(cases)
    return parts


def _text_source(b: _Builder, src: TextSource, positions: str) -> etree._Element:
    node = b.el(None, "TextSource", guid=_check_guid(src.guid, f"source {src.name!r}"),
                name=src.name, plainTextPath=f"internal://{source_filename(src)}",
                creatingUser=src.creating_user or None,
                creationDateTime=_datetime(src.created))
    b.description(node, src.description)
    pmap = PositionMap(src.text or "", positions)
    for sel in src.selections:
        _selection(b, node, src, sel, pmap)
    for c in src.codings:
        _coding(b, node, c)
    b.refs(node, "NoteRef", src.note_refs)
    for vv in src.variable_values:
        _variable_value(b, node, vv)
    return node


def _parts_after_sources(b: _Builder, project: Project) -> Iterator[etree._Element]:
    if project.notes:
        notes = b.el(None, "Notes")
        for n in project.notes:
            node = b.el(notes, "Note", guid=_check_guid(n.guid, f"note {n.name!r}"),
                        name=n.name or None, creatingUser=n.creating_user or None,
                        creationDateTime=_datetime(n.created),
                        modifiedDateTime=_datetime(n.modified))
            # Notes travel inline; lxml escapes CR as &#13;, so CRLF survives the trip.
            b.text_el(node, "PlainTextContent", n.text)
        yield notes
    if project.links:
        links = b.el(None, "Links")
        for lk in project.links:
            b.el(links, "Link", guid=_check_guid(lk.guid, "link"), name=lk.name or None,
                 direction=lk.direction, color=lk.color, originGUID=lk.origin_guid,
                 targetGUID=lk.target_guid)
        yield links
    if project.sets:
        sets = b.el(None, "Sets")
        for s in project.sets:
            b.set(sets, s, codebook=False)
        yield sets
    if project.description:
        yield b.text_el(None, "Description", project.description)
    for g in project.note_refs:
        yield b.el(None, "NoteRef", targetGUID=_check_guid(g, "NoteRef"))


def write_qdpx(project: Project, target: str | os.PathLike[str] | BinaryIO, *,
               positions: str = "codepoints", origin: str = WRITER_ORIGIN) -> None:
    """Write a .qdpx: project.qde plus one sources/<GUID>.txt per text source (UTF-8, no BOM)."""
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        with zf.open("project.qde", "w") as qde:
            write_project_xml(project, qde, positions=positions, origin=origin)
        for src in project.sources:
            zf.writestr(f"sources/{source_filename(src)}", (src.text or "").encode("utf-8"))


def build_codebook_xml(codebook: Codebook) -> bytes:
    """A .qdc codebook document (codes with hierarchy, colours, descriptions; sets)."""
    if not codebook.codes:
        raise QdpxError("a REFI-QDA codebook needs at least one code")
    b = _Builder(CODEBOOK_NS)
    root = b.el(None, "CodeBook", origin=WRITER_ORIGIN)
    codes = b.el(root, "Codes")
    for c in codebook.codes:
        b.code(codes, c, with_notes=False)
    if codebook.sets:
        sets = b.el(root, "Sets")
        for s in codebook.sets:
            b.set(sets, s, codebook=True)
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True)
