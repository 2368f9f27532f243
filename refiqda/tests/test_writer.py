"""Writing .qdpx and .qdc: schema-valid, export rules, lossless round trips."""

from __future__ import annotations

import datetime as dt
import io
import zipfile
from decimal import Decimal

import pytest
from lxml import etree

import refiqda
from refiqda import (
    Case,
    Code,
    Codebook,
    Coding,
    Note,
    Project,
    QdpxError,
    Selection,
    Set,
    TextSource,
    User,
    Variable,
    VariableValue,
)

from .helpers import CODEBOOK_XSD, PROJECT_XSD, QDPX_SAMPLES, G

TEXT = "Interviewer: Hi \U0001F600\r\nGPT-4o: Hello!\r\nIt's \u00e9t\u00e9 & <fine>.\n"


def _span(sub: str) -> tuple[int, int]:
    start = TEXT.index(sub)
    return start, start + len(sub)


def sample_project() -> Project:
    user = User(guid=G(1), name="Ann")
    code = Code(guid=G(2), name="greeting", color="#AA0000", description="Says hello",
                children=[Code(guid=G(3), name="emoji", is_codable=True)])
    folder = Code(guid=G(4), name="Folder", is_codable=False)
    s1, e1 = _span("Hello!")
    s2, e2 = _span("\U0001F600\r\nGPT")
    s3, e3 = _span("<fine>.\n")
    src = TextSource(guid=G(10), name="GPT-4o interview", text=TEXT, selections=[
        Selection(guid=G(11), start=s1, end=e1, creating_user=G(1),
                  created=dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.UTC),
                  codings=[Coding(guid=G(12), code_guid=G(2), creating_user=G(1))],
                  note_refs=[G(30)]),
        Selection(guid=G(13), start=s2, end=e2,
                  codings=[Coding(guid=G(14), code_guid=G(3), creating_user=G(1))]),
        Selection(guid=G(15), start=s3, end=e3, codings=[]),
    ])
    return Project(
        name="Chatbots & us", users=[user], codes=[code, folder],
        variables=[Variable(guid=G(20), name="provider"), Variable(guid=G(21), name="turns",
                                                                   type="Integer"),
                   Variable(guid=G(22), name="temp", type="Float")],
        cases=[Case(guid=G(23), name="GPT-4o", variable_values=[
            VariableValue(G(20), "openai"), VariableValue(G(21), 12),
            VariableValue(G(22), Decimal("0.7"))], source_refs=[G(10)])],
        sources=[src],
        notes=[Note(guid=G(30), name="memo", text="Line 1\r\nLine 2 **bold**", creating_user=G(1))],
        sets=[Set(guid=G(40), name="Theme: openness", description="def",
                  member_codes=[G(2), G(3)])],
        created=dt.datetime(2026, 11, 22, 2, 0, tzinfo=dt.UTC),
    )


def test_the_project_file_is_written_a_part_at_a_time_as_its_whole_tree_would_print():
    project = sample_project()
    project.sources.append(TextSource(guid=G(50), name="second", text="Plain words.", description="Second\r\nsource"))
    project.links = [refiqda.Link(guid=G(60), name="relates", direction="OneWay", origin_guid=G(2), target_guid=G(3))]
    project.description = "A project\r\nabout chatbots"
    project.note_refs = [G(30)]
    for positions in ("codepoints", "utf16"):
        written = refiqda.build_project_xml(project, positions=positions)
        whole = etree.fromstring(written, etree.XMLParser(remove_blank_text=True))
        assert written == etree.tostring(whole, xml_declaration=True, encoding="UTF-8", pretty_print=True)
        assert [etree.QName(part).localname for part in whole] == [
            "Users", "CodeBook", "Variables", "Cases", "Sources", "Notes", "Links", "Sets", "Description", "NoteRef"]
        assert {etree.QName(el).namespace for el in whole.iter()} == {"urn:QDA-XML:project:1.0"}
    assert refiqda.build_project_xml(Project(name="empty")) == (
        b"<?xml version='1.0' encoding='UTF-8'?>\n"
        b'<Project xmlns="urn:QDA-XML:project:1.0" name="empty" origin="RTA Studio"/>\n')


def _qdpx(project: Project, **kw) -> bytes:
    buf = io.BytesIO()
    refiqda.write_qdpx(project, buf, **kw)
    return buf.getvalue()


@pytest.mark.parametrize("positions", ["codepoints", "utf16"])
def test_export_validates_against_project_xsd(positions):
    data = _qdpx(sample_project(), positions=positions)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        qde = zf.read("project.qde")
    assert PROJECT_XSD.validate(etree.fromstring(qde)), PROJECT_XSD.error_log


def test_export_follows_the_container_rules():
    data = _qdpx(sample_project())
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert sorted(zf.namelist()) == ["project.qde", f"sources/{G(10)}.txt"]
        qde = zf.read("project.qde")
        txt = zf.read(f"sources/{G(10)}.txt")
    assert not qde.startswith(b"\xef\xbb\xbf") and not txt.startswith(b"\xef\xbb\xbf")
    assert txt.decode("utf-8") == TEXT  # CRLF kept as is
    root = etree.fromstring(qde)
    ns = {"q": "urn:QDA-XML:project:1.0"}
    [src] = root.findall("q:Sources/q:TextSource", ns)
    assert src.get("plainTextPath") == f"internal://{G(10)}.txt"
    assert src.find("q:PlainTextContent", ns) is None
    names = [s.get("name") for s in src.findall("q:PlainTextSelection", ns)]
    assert names == ["Hello!", "\U0001F600\r\nGPT", "<fine>.\n"]
    sel = src.find("q:PlainTextSelection", ns)
    assert int(sel.get("startPosition")) == TEXT.index("Hello!")
    [member] = root.findall("q:Sets/q:Set/q:MemberCode", ns)[:1]
    assert member.get("targetGUID") == G(2) and member.get("guid") is None


def test_utf16_option_counts_code_units():
    data = _qdpx(sample_project(), positions="utf16")
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        root = etree.fromstring(zf.read("project.qde"))
    starts = [int(e.get("startPosition")) for e in root.iter("{*}PlainTextSelection")]
    cp = TEXT.index("Hello!")
    assert starts[0] == cp + 1  # the emoji before it is two UTF-16 units


@pytest.mark.parametrize("positions", ["codepoints", "utf16"])
def test_round_trip_keeps_texts_codes_codings_notes_sets_and_cases(positions):
    original = sample_project()
    back = refiqda.read_project(_qdpx(original, positions=positions))
    assert back.counting == positions  # confirmed by the selection names
    assert back.name == original.name
    assert [(c.guid, c.name, c.color, c.is_codable, c.description, d)
            for c, _, d in back.iter_codes()] == [
        (c.guid, c.name, c.color, c.is_codable, c.description, d)
        for c, _, d in original.iter_codes()]
    [src], [osrc] = back.sources, original.sources
    assert src.text == osrc.text
    assert [(s.guid, s.start, s.end, [(c.code_guid, c.creating_user) for c in s.codings],
             s.note_refs) for s in src.selections] == [
        (s.guid, s.start, s.end, [(c.code_guid, c.creating_user) for c in s.codings], s.note_refs)
        for s in osrc.selections]
    assert src.selections[0].created == osrc.selections[0].created
    assert back.notes[0].text == "Line 1\r\nLine 2 **bold**"
    assert back.sets[0].member_codes == [G(2), G(3)]
    assert [vv.value for vv in back.cases[0].variable_values] == ["openai", 12, Decimal("0.7")]
    assert back.users[0].name == "Ann"
    assert back.warnings == []


@pytest.mark.parametrize("path", QDPX_SAMPLES, ids=lambda p: p.name)
def test_samples_reexport_valid_and_reimport_identically(path):
    project = refiqda.read_project(path)
    data = _qdpx(project, positions="utf16")
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert PROJECT_XSD.validate(etree.fromstring(zf.read("project.qde"))), PROJECT_XSD.error_log
    back = refiqda.read_project(data)
    assert [c.name for c, _, _ in back.iter_codes()] == [c.name for c, _, _ in project.iter_codes()]
    assert [s.text for s in back.sources] == [s.text for s in project.sources]
    assert [[(x.start, x.end, len(x.codings)) for x in s.selections] for s in back.sources] == [
        [(x.start, x.end, len(x.codings)) for x in s.selections] for s in project.sources]


def test_codebook_validates_and_round_trips_with_member_code_guid():
    book = Codebook(codes=sample_project().codes,
                    sets=[Set(guid=G(40), name="Theme", member_codes=[G(2)])])
    qdc = refiqda.build_codebook_xml(book)
    root = etree.fromstring(qdc)
    assert CODEBOOK_XSD.validate(root), CODEBOOK_XSD.error_log
    assert root.find("{*}Sets/{*}Set/{*}MemberCode").get("guid") == G(2)
    back = refiqda.read_codebook(qdc)
    assert [(c.name, c.color, c.is_codable, c.description) for c, _, _ in back.iter_codes()] == [
        (c.name, c.color, c.is_codable, c.description) for c, _, _ in book.iter_codes()]
    assert back.sets[0].member_codes == [G(2)]


def test_empty_codebook_is_refused():
    with pytest.raises(QdpxError, match="at least one code"):
        refiqda.build_codebook_xml(Codebook())


def test_bad_guid_and_out_of_range_selection_are_refused():
    project = sample_project()
    project.codes[0].guid = "not-a-guid"
    with pytest.raises(QdpxError, match="code 'greeting' has guid 'not-a-guid'"):
        refiqda.build_project_xml(project)
    project = sample_project()
    project.sources[0].selections[0].end = 10_000
    with pytest.raises(QdpxError, match="outside its text"):
        refiqda.build_project_xml(project)


def test_control_characters_do_not_break_the_xml():
    project = sample_project()
    project.notes[0].text = "bell\x07 here"
    root = etree.fromstring(refiqda.build_project_xml(project))
    assert PROJECT_XSD.validate(root)
