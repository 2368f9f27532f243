"""Parse untrusted XML: no DTD, no entities, no network, elements matched by local name."""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterator

from lxml import etree

from .errors import QdpxError, UnsafeInputError

# libxml2's own limit without huge_tree (which stays off: it also lifts the size limits).
MAX_DEPTH = 256
# Elements and attributes one file may hold: the tree is built in memory, ~120 bytes an element and
# ~220 an attribute (with its value), so 1 million stay under ~220 MB (measured: 135 MB for a 20 MB file of
# <Code/> elements), and the objects read from it come on top. A real .qde of 10 MB holds ~400,000. Parts read
# one at a time (`parse_xml`'s `each`) are let go as they are read, but the objects made of them stay.
MAX_NODES = 1_000_000

_PARSER_OPTIONS = {
    "resolve_entities": False,
    "no_network": True,
    "load_dtd": False,
    "dtd_validation": False,
    "huge_tree": False,
    "remove_comments": True,
    "remove_pis": True,
}


def _prolog_declares_dtd(data: bytes) -> bool:
    """True when the prolog (before the root element) holds `<!DOCTYPE` or any `<!` markup.

    A DTD may only appear in the prolog, and it is the only way to declare entities
    (billion laughs) or external entities (XXE). Scanning just the prolog avoids
    false alarms on text such as a CDATA note quoting HTML.
    """
    text: str
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        text = data.decode("utf-16", "replace")
    else:
        text = data[:1_000_000].decode("utf-8", "replace")
    text = text.lstrip("\ufeff")
    pos = 0
    while True:
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
        if text.startswith("<?", pos):
            closing = "?>"
        elif text.startswith("<!--", pos):
            closing = "-->"
        else:
            # `<!DOCTYPE` (or any other `<!` markup) before the root element, or the root.
            return text.startswith("<!", pos)
        pos = text.find(closing, pos + 2)
        if pos < 0:
            return False
        pos += len(closing)


def node_count(data: bytes) -> int:
    """Elements and attributes `data` may hold, at most: its `<` and `=` (in text too, which errs on the safe
    side), counted in C over the bytes before any tree is built."""
    return data.count(b"<") + data.count(b"=")


def element_count(data: bytes, name: str) -> int:
    """Elements called `name` (any namespace prefix) that `data` may hold, at most, counted in its bytes."""
    return sum(1 for _ in re.finditer(rb"<(?:[\w.-]+:)?" + re.escape(name.encode()) + rb"[\s/>]", data))


def parse_xml(data: bytes, *, where: str, max_nodes: int | None = None,
              each: dict[str, Callable[[etree._Element], None]] | None = None) -> etree._Element:
    """Parse XML bytes safely and return the root element; errors name `where` and the line.

    `each` maps local names to a function given every element of that name as soon as it has been read whole,
    wherever it stands; the element is emptied afterwards. A project file's sources, nearly all of it, are then
    held one at a time instead of as one tree (50 MB of XML make a tree of ~300 MB).
    """
    cap = MAX_NODES if max_nodes is None else max_nodes
    if (nodes := node_count(data)) > cap:
        raise UnsafeInputError(
            f"the file holds about {nodes:,} XML elements and attributes, more than the {cap:,} that can be read "
            "at once (reading it would exhaust the server's memory)", where=where)
    if _prolog_declares_dtd(data):
        raise UnsafeInputError(
            "the XML declares a DTD (<!DOCTYPE ...>); REFI-QDA files never need one and it is "
            "refused for safety (entity expansion, external entities)",
            where=where,
        )
    try:
        root = _read_each(data, each, where) if each else etree.fromstring(data, parser=etree.XMLParser(**_PARSER_OPTIONS))
    except etree.XMLSyntaxError as exc:
        line = f" line {exc.lineno}" if getattr(exc, "lineno", None) else ""
        if "Excessive depth" in (exc.msg or ""):
            line_no, column = exc.position
            raise UnsafeInputError(f"elements nested deeper than {MAX_DEPTH} levels at line {line_no}, column {column}",
                                   where=where) from None
        if "memory" in (exc.msg or "").lower():
            raise MemoryError(exc.msg) from exc  # the server's limit, never the file's fault
        raise QdpxError(f"not well-formed XML: {exc.msg}", where=f"{where}{line}") from exc
    docinfo = root.getroottree().docinfo
    if docinfo.internalDTD is not None or docinfo.externalDTD is not None:
        raise UnsafeInputError("the XML declares a DTD, which is refused for safety", where=where)
    _refuse_entities(root, where)
    return root


def _read_each(data: bytes, each: dict[str, Callable[[etree._Element], None]], where: str) -> etree._Element:
    events = etree.iterparse(io.BytesIO(data), events=("end",), tag=[f"{{*}}{name}" for name in each],
                             **_PARSER_OPTIONS)
    for _event, el in events:
        # Before the element is emptied: its entity references would leave the tree with it.
        _refuse_entities(el, where)
        each[local(el)](el)
        el.clear(keep_tail=True)
    return events.root


def _refuse_entities(el: etree._Element, where: str) -> None:
    # Entity references to undeclared entities stay in the tree as Entity nodes.
    for _ in el.iter(etree.Entity):
        raise UnsafeInputError("the XML uses entity references, which are refused", where=where)


def local(el: etree._Element) -> str:
    """Element name without namespace (`urn:QDA-XML:project:1.0` and variants alike)."""
    tag = el.tag
    if not isinstance(tag, str):
        return ""
    return tag.rsplit("}", 1)[-1]


def children(el: etree._Element, name: str) -> Iterator[etree._Element]:
    """Direct child elements with the given local name."""
    for child in el:
        if local(child) == name:
            yield child


def child(el: etree._Element, name: str) -> etree._Element | None:
    """The first direct child with this local name, or None."""
    return next(children(el, name), None)


def child_text(el: etree._Element, name: str) -> str:
    found = child(el, name)
    return "" if found is None or found.text is None else found.text


def grandchildren(el: etree._Element, wrapper: str, name: str) -> Iterator[etree._Element]:
    """`<wrapper><name/>...</wrapper>` children of `el`, e.g. Users/User."""
    for w in children(el, wrapper):
        yield from children(w, name)
