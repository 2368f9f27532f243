"""Reading real and deviant REFI-QDA projects and codebooks."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

import refiqda
from refiqda import QdpxError, norm_guid

from .helpers import QDPX_SAMPLES, SAMPLES, G, codebook, make_zip, one_source_project, project_xml


def test_all_samples_are_present():
    assert {p.name for p in QDPX_SAMPLES} == {
        "atlasti-23-codebook.qdpx", "nvivo-mac-15-codetree.qdpx", "qc-demo.qdpx"}


@pytest.mark.parametrize("path", QDPX_SAMPLES, ids=lambda p: p.name)
def test_every_sample_reads_with_codes_and_in_range_selections(path):
    project = refiqda.read_project(path)
    assert list(project.iter_codes())
    for src in project.sources:
        for sel in src.selections:
            assert 0 <= sel.start <= sel.end <= len(src.text or "")


def test_atlas_codebook_sample_keeps_hierarchy_and_upper_case_guids():
    project = refiqda.read_project(SAMPLES / "qdpx" / "atlasti-23-codebook.qdpx")
    assert project.origin.startswith("ATLAS.ti")
    [root] = project.codes
    assert root.name == "Commits"
    assert [c.name for c in root.children] == ["2022-05-10T02:05:59Z 19e4dce",
                                               "2022-02-11T10:39:25Z cdbfd92"]
    assert root.guid == "A182CD3A-D83C-4D8C-BC80-26D9103EC6D6"
    assert norm_guid(root.guid) in project.codes_by_guid()
    assert [u.name for u in project.users] == ["Enric Llagostera", "ATLAS.ti"]
    assert project.created == dt.datetime(2023, 8, 16, 15, 49, 36, tzinfo=dt.UTC)


def test_nvivo_sample_deep_tree_sources_root_and_one_newline_texts():
    project = refiqda.read_project(SAMPLES / "qdpx" / "nvivo-mac-15-codetree.qdpx")
    codes = list(project.iter_codes())
    assert len(codes) == 262
    assert max(depth for _, _, depth in codes) >= 3
    assert [s.text for s in project.sources] == ["\n", "\n"]
    assert project.users[0].id == "CP"


def test_qc_sample_resolves_paths_without_internal_prefix():
    project = refiqda.read_project(SAMPLES / "qdpx" / "qc-demo.qdpx")
    assert [s.plain_text_path for s in project.sources] == ["board_2017.txt", "admin-1.txt"]
    board = project.sources[0]
    assert board.name == "board_2017"  # qc writes no name: fall back to the file name
    assert len(board.selections) == 158
    assert sum(len(s.codings) for s in board.selections) == 205
    codes = project.codes_by_guid()
    assert all(norm_guid(c.code_guid) in codes for s in board.selections for c in s.codings)
    first = board.selections[0]
    assert (first.start, first.end) == (320, 400)
    assert board.selected_text(first).startswith("This district goal is engage every student")


@pytest.mark.parametrize("ns", ["urn:QDA-XML:project:1.0", "urn:QDA-XML:project:0:10", ""])
def test_namespace_variants_are_matched_by_local_name(ns):
    xml = project_xml(codebook((1, "a")), ns=ns) if ns else project_xml(codebook((1, "a"))).replace(
        ' xmlns="urn:QDA-XML:project:1.0"', "")
    project = refiqda.read_project(make_zip({"project.qde": xml}))
    assert [c.name for c, _, _ in project.iter_codes()] == ["a"]


@pytest.mark.parametrize("ns", ["urn:QDA-XML:codebook:1.0", "urn:QDA-XML:codebook:1:0",
                                "urn:QDA-XML:codebook:0:4"])
def test_codebook_namespace_variants_and_member_code_guid(ns):
    qdc = (f'<?xml version="1.0"?><CodeBook xmlns="{ns}" origin="X"><Codes>'
           f'<Code guid="{G(1)}" name="parent" isCodable="false" color="#FF0000">'
           f'<Description>folder</Description>'
           f'<Code guid="{G(2)}" name="child" isCodable="true"/></Code></Codes>'
           f'<Sets><Set guid="{G(3)}" name="S"><MemberCode guid="{G(2)}"/></Set></Sets></CodeBook>')
    book = refiqda.read_codebook(qdc.encode())
    [parent] = book.codes
    assert (parent.name, parent.is_codable, parent.color, parent.description) == (
        "parent", False, "#FF0000", "folder")
    assert parent.children[0].name == "child"
    assert book.sets[0].member_codes == [G(2)]


def test_project_member_code_uses_target_guid():
    body = codebook((1, "a")) + f'<Sets><Set guid="{G(3)}" name="S"><MemberCode targetGUID="{G(1)}"/>' \
        f'<MemberSource targetGUID="{G(7)}"/></Set></Sets>'
    project = refiqda.read_project(make_zip({"project.qde": project_xml(body)}))
    assert project.sets[0].member_codes == [G(1)]
    assert project.sets[0].member_sources == [G(7)]


def test_read_codebook_accepts_a_qdpx():
    book = refiqda.read_codebook(SAMPLES / "qdpx" / "atlasti-23-codebook.qdpx")
    assert book.codes[0].name == "Commits"


def test_upper_case_sources_folder_stray_root_bom_stripped_crlf_kept():
    text = "Line one\r\nLine two caf\u00e9\r\n"
    body = codebook((1, "a")) + (
        f'<Sources><TextSource guid="{G(5)}" name="doc" plainTextPath="internal://{G(5)}.TXT">'
        f'<PlainTextSelection guid="{G(6)}" startPosition="10" endPosition="23" name="Line two caf\u00e9">'
        f'<Coding guid="{G(7)}"><CodeRef targetGUID="{G(1)}"/></Coding></PlainTextSelection>'
        "</TextSource></Sources>")
    data = make_zip({"project.qde": project_xml(body), "Sources/.root": "",
                     f"Sources/{G(5)}.txt": b"\xef\xbb\xbf" + text.encode()})
    project = refiqda.read_project(data)
    src = project.sources[0]
    assert src.text == text
    assert src.selected_text(src.selections[0]) == "Line two caf\u00e9"


def test_plain_text_content_source():
    body = codebook((1, "a")) + (
        f'<Sources><TextSource guid="{G(5)}" name="inline"><PlainTextContent>Hello there'
        f'</PlainTextContent><PlainTextSelection guid="{G(6)}" startPosition="6" endPosition="11">'
        f'<Coding guid="{G(7)}"><CodeRef targetGUID="{G(1)}"/></Coding></PlainTextSelection>'
        "</TextSource></Sources>")
    src = refiqda.read_project(make_zip({"project.qde": project_xml(body)})).sources[0]
    assert src.selected_text(src.selections[0]) == "there"


EMOJI_CRLF = "Hi \U0001F600 there\r\nsecond line \U0001F680 go\r\nend"


def _span(text: str, sub: str) -> tuple[int, int]:
    start = text.index(sub)
    return start, start + len(sub)


def _utf16(text: str, cp: int) -> int:
    return len(text[:cp].encode("utf-16-le")) // 2


def _crlf1(text: str, cp: int) -> int:
    return cp - text[:cp].count("\r\n")


def test_nvivo_positions_are_utf16_code_units():
    s, e = _span(EMOJI_CRLF, "go\r\nend")
    data = one_source_project(EMOJI_CRLF, [(_utf16(EMOJI_CRLF, s), _utf16(EMOJI_CRLF, e), None)],
                              origin="NVivo 14")
    project = refiqda.read_project(data)
    assert project.counting == "utf16"
    src = project.sources[0]
    assert src.selected_text(src.selections[0]) == "go\r\nend"
    assert src.selections[0].raw_start == _utf16(EMOJI_CRLF, s)


def test_atlas_positions_count_crlf_as_one():
    s, e = _span(EMOJI_CRLF, "second line")
    data = one_source_project(EMOJI_CRLF, [(_crlf1(EMOJI_CRLF, s), _crlf1(EMOJI_CRLF, e),
                                            "second line")], origin="ATLAS.ti 23")
    project = refiqda.read_project(data)
    assert project.counting == "crlf1"
    src = project.sources[0]
    assert src.selected_text(src.selections[0]) == "second line"


def test_selection_names_override_the_origin_guess():
    # Claims NVivo, but counted code points: the names show which counting is right.
    s, e = _span(EMOJI_CRLF, "second line")
    data = one_source_project(EMOJI_CRLF, [(s, e, "second line")], origin="NVivo 14")
    project = refiqda.read_project(data)
    assert project.counting == "codepoints"
    assert project.sources[0].selected_text(project.sources[0].selections[0]) == "second line"
    assert any("rather than utf16" in w for w in project.warnings)


def test_a_counting_that_puts_an_end_past_the_text_is_rejected():
    # The end equals the UTF-16 length: past the end in code points, so utf16 must win
    # even though the origin suggests code points.
    text = "a\U0001F600b"
    data = one_source_project(text, [(0, 4, None)], origin="MAXQDA 2024")
    project = refiqda.read_project(data)
    assert project.counting == "utf16"
    assert project.sources[0].selected_text(project.sources[0].selections[0]) == text


def test_no_counting_fits_gives_a_clear_error():
    data = one_source_project("short", [(0, 3, None), (2, 99, "x")])
    with pytest.raises(QdpxError, match=r"selection .*\('x'\) in source 'doc' spans 2–99"):
        refiqda.read_project(data, name="bad.qdpx")


def test_forced_counting():
    text = "a\r\nb"
    data = one_source_project(text, [(2, 3, None)])
    assert refiqda.read_project(data).sources[0].selections[0].start == 2
    forced = refiqda.read_project(data, counting="crlf1")
    assert forced.sources[0].selected_text(forced.sources[0].selections[0]) == "b"


def test_tolerates_note_only_zero_length_case_coderef_duplicates_and_missing_sources():
    body = (codebook((1, "a"))
            + f'<Cases><Case guid="{G(40)}" name="Case A"/></Cases>'
            + "<Sources>"
            + f'<TextSource guid="{G(5)}" name="dup" plainTextPath="internal://{G(5)}.txt">'
            + f'<PlainTextSelection guid="{G(6)}" startPosition="0" endPosition="4">'
            + f'<NoteRef targetGUID="{G(30)}"/></PlainTextSelection>'
            + f'<PlainTextSelection guid="{G(8)}" startPosition="2" endPosition="2">'
            + f'<Coding guid="{G(9)}"><CodeRef targetGUID="{G(1)}"/></Coding></PlainTextSelection>'
            + f'<PlainTextSelection guid="{G(10)}" startPosition="0" endPosition="3">'
            + f'<Coding guid="{G(11)}"><CodeRef targetGUID="{G(40)}"/></Coding></PlainTextSelection>'
            + "</TextSource>"
            + f'<TextSource guid="{G(12)}" name="dup"><PlainTextContent>other</PlainTextContent>'
            + "</TextSource>"
            + f'<TextSource guid="{G(13)}" name="gone" plainTextPath="internal://{G(13)}.txt"/>'
            + f'<TextSource guid="{G(14)}" name="ext" plainTextPath="C:\\Users\\x\\a.txt"/>'
            + f'<PDFSource guid="{G(15)}" name="paper.pdf"/>'
            + "</Sources>"
            + f'<Notes><Note guid="{G(30)}" name="memo"><PlainTextContent>why</PlainTextContent></Note>'
            + "</Notes>")
    data = make_zip({"project.qde": project_xml(body), f"sources/{G(5)}.txt": "text body"})
    project = refiqda.read_project(data)
    dup1, dup2, gone, ext = project.sources
    assert [s.name for s in project.sources] == ["dup", "dup", "gone", "ext"]
    note_only, zero, to_case = dup1.selections
    assert note_only.codings == [] and note_only.note_refs == [G(30)]
    assert (zero.start, zero.end, len(zero.codings)) == (2, 2, 1)
    assert to_case.codings == []
    assert any("refers to case 'Case A'" in w for w in project.warnings)
    assert dup2.text == "other"
    assert gone.text is None and ext.text is None
    assert any("not in the archive" in w for w in project.warnings)
    assert project.skipped_sources == ["paper.pdf"]
    assert project.notes[0].text == "why"


def test_guid_matching_ignores_case_and_braces():
    body = (f'<CodeBook><Codes><Code guid="{{{G(1).upper()}}}" name="a" isCodable="true"/>'
            f"</Codes></CodeBook>"
            f'<Sources><TextSource guid="{G(5)}" name="s"><PlainTextContent>abc</PlainTextContent>'
            f'<PlainTextSelection guid="{G(6)}" startPosition="0" endPosition="1">'
            f'<Coding guid="{G(7)}"><CodeRef targetGUID="{G(1)}"/></Coding>'
            "</PlainTextSelection></TextSource></Sources>")
    project = refiqda.read_project(make_zip({"project.qde": project_xml(body)}))
    assert len(project.sources[0].selections[0].codings) == 1
    assert project.warnings == []


def test_users_variables_cases_and_typed_values():
    body = (f'<Users><User guid="{G(1)}" name="Ann" id="A"/></Users>'
            f'<Variables><Variable guid="{G(2)}" name="provider" typeOfVariable="Text"/>'
            f'<Variable guid="{G(3)}" name="n" typeOfVariable="Integer"/>'
            f'<Variable guid="{G(4)}" name="ok" typeOfVariable="Boolean"/>'
            f'<Variable guid="{G(8)}" name="t" typeOfVariable="Float"/>'
            f'<Variable guid="{G(9)}" name="d" typeOfVariable="Date"/></Variables>'
            f'<Cases><Case guid="{G(5)}" name="GPT-4o"><Description>chatbot</Description>'
            f'<VariableValue><VariableRef targetGUID="{G(2)}"/><TextValue>openai</TextValue></VariableValue>'
            f'<VariableValue><VariableRef targetGUID="{G(3)}"/><IntegerValue>7</IntegerValue></VariableValue>'
            f'<VariableValue><VariableRef targetGUID="{G(4)}"/><BooleanValue>true</BooleanValue></VariableValue>'
            f'<VariableValue><VariableRef targetGUID="{G(8)}"/><FloatValue>0.7</FloatValue></VariableValue>'
            f'<VariableValue><VariableRef targetGUID="{G(9)}"/><DateValue>2024-05-13</DateValue></VariableValue>'
            f'<SourceRef targetGUID="{G(6)}"/></Case></Cases>')
    project = refiqda.read_project(make_zip({"project.qde": project_xml(body)}))
    assert project.users[0].name == "Ann"
    assert [v.type for v in project.variables] == ["Text", "Integer", "Boolean", "Float", "Date"]
    case = project.cases[0]
    assert [vv.value for vv in case.variable_values] == [
        "openai", 7, True, Decimal("0.7"), dt.date(2024, 5, 13)]
    assert case.source_refs == [G(6)] and case.description == "chatbot"


def test_bad_position_number_names_the_line():
    body = codebook((1, "a")) + (
        f'<Sources><TextSource guid="{G(5)}" name="s"><PlainTextContent>abc</PlainTextContent>'
        f'\n<PlainTextSelection guid="{G(6)}" startPosition="zero" endPosition="1"/>'
        "</TextSource></Sources>")
    with pytest.raises(QdpxError, match=r"line 3: <PlainTextSelection> startPosition='zero'"):
        refiqda.read_project(make_zip({"project.qde": project_xml(body)}))


def test_a_qde_named_after_the_project_is_accepted():
    # ATLAS.ti 26 writes Trial.qde instead of project.qde.
    project = refiqda.read_project(make_zip({"Trial.qde": project_xml(codebook((1, "a")), origin="ATLAS.ti 26"),
                                             "sources/.root": ""}))
    assert [c.name for c, _, _ in project.iter_codes()] == ["a"]


def test_qde_and_qdc_with_a_byte_order_mark():
    bom = b"\xef\xbb\xbf"
    project = refiqda.read_project(make_zip({"project.qde": bom + project_xml(codebook((1, "a"))).encode()}))
    assert project.codes[0].name == "a"
    qdc = bom + f'<CodeBook xmlns="urn:QDA-XML:codebook:1.0"><Codes><Code guid="{G(1)}" name="b" isCodable="true"/>' \
        "</Codes></CodeBook>".encode()
    assert refiqda.read_codebook(qdc).codes[0].name == "b"


def _source(n: int, text: str, *, coded: bool = True) -> str:
    selection = (f'<PlainTextSelection guid="{G(n + 1)}" startPosition="0" endPosition="2">'
                 f'<Coding guid="{G(n + 2)}"><CodeRef targetGUID="{G(1)}"/></Coding></PlainTextSelection>')
    return (f'<TextSource guid="{G(n)}" name="s{n}"><PlainTextContent>{text}</PlainTextContent>'
            f'{selection if coded else ""}</TextSource>')


def test_parse_xml_hands_each_named_element_over_whole_then_lets_it_go():
    from refiqda.safexml import children, local, parse_xml

    seen = []
    data = project_xml(codebook((1, "a")) + f"<Sources>{_source(10, 'one')}{_source(20, 'two')}</Sources>").encode()
    root = parse_xml(data, where="p.qde", each={"TextSource": lambda el: seen.append(
        (el.get("name"), [local(child) for child in el]))})
    assert seen == [("s10", ["PlainTextContent", "PlainTextSelection"]), ("s20", ["PlainTextContent", "PlainTextSelection"])]
    sources = [el for s in children(root, "Sources") for el in s]
    assert [(local(el), len(el), dict(el.attrib)) for el in sources] == [("TextSource", 0, {}), ("TextSource", 0, {})]
    assert [c.get("name") for cb in children(root, "CodeBook") for c in cb.iter("{*}Code")] == ["a"]  # the rest kept


def test_a_project_read_a_source_at_a_time_keeps_every_source_and_the_order_of_its_warnings():
    body = (codebook((1, "a"))
            + f'<Sources>{_source(10, "one")}<PDFSource guid="{G(15)}" name="paper.pdf"/>{_source(20, "two")}'
            + f'<TextSource guid="{G(30)}" name="nothing"/></Sources>'
            # Sources only where the format puts them: the same element elsewhere is not a document.
            + f'<Notes><Note guid="{G(50)}" name="n" creationDateTime="yesterday">{_source(60, "not a source")}'
            + "</Note></Notes>")
    project = refiqda.read_project(make_zip({"project.qde": project_xml(body)}))
    assert [(s.name, s.text, [(sel.start, sel.end, len(sel.codings)) for sel in s.selections]) for s in project.sources] == [
        ("s10", "one", [(0, 2, 1)]), ("s20", "two", [(0, 2, 1)]), ("nothing", None, [])]
    assert project.skipped_sources == ["paper.pdf"]
    # The other parts' warnings first, as before sources were read as they come.
    assert [w.split(": ", 2)[-1] for w in project.warnings] == [
        "creationDateTime='yesterday' is not a date and time; ignored",
        "PDFSource 'paper.pdf' is not a text source; not imported",
        "source 'nothing' has neither plainTextPath nor PlainTextContent",
    ]


def test_a_fault_after_the_sources_read_so_far_is_named_with_its_line():
    body = codebook((1, "a")) + f"<Sources>{_source(10, 'one')}\n{_source(20, 'two')}\n<TextSource></Sources>"
    with pytest.raises(QdpxError, match=r"^archive: project\.qde line 4: not well-formed"):
        refiqda.read_project(make_zip({"project.qde": project_xml(body)}))


def test_a_source_nested_too_deep_is_refused_naming_the_place():
    deep = "<Description>" * 300 + "</Description>" * 300
    body = f'<Sources><TextSource guid="{G(10)}" name="s">{deep}</TextSource></Sources>'
    with pytest.raises(QdpxError, match=r"^archive: project\.qde: elements nested deeper than 256 levels at line 2"):
        refiqda.read_project(make_zip({"project.qde": project_xml(body)}))
