"""Hostile inputs: entity expansion, external entities, zip slip, zip bombs, size caps."""

from __future__ import annotations

import io
import re
import time
import zipfile

import pytest

import refiqda
from refiqda import Limits, QdpxError, UnsafeInputError

from .helpers import G, codebook, make_zip, project_xml

BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE Project [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<Project xmlns="urn:QDA-XML:project:1.0" name="&lol9;"><Description>&lol9;</Description></Project>
"""

XXE = """<?xml version="1.0"?>
<!DOCTYPE Project [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
<Project xmlns="urn:QDA-XML:project:1.0" name="x"><Description>&secret;</Description></Project>
"""

XXE_EXTERNAL_DTD = """<?xml version="1.0"?>
<!-- a comment first, to make sure the prolog scan looks past it -->
<!DOCTYPE Project SYSTEM "http://127.0.0.1:9/evil.dtd">
<Project xmlns="urn:QDA-XML:project:1.0" name="x"/>
"""


def test_billion_laughs_is_refused_quickly_with_a_clear_error():
    started = time.perf_counter()
    with pytest.raises(UnsafeInputError, match="DTD") as exc:
        refiqda.read_project(make_zip({"project.qde": BILLION_LAUGHS}), name="laughs.qdpx")
    assert time.perf_counter() - started < 10  # refused at the DTD, not after expanding it (which never ends)
    assert "laughs.qdpx" in str(exc.value)


def test_external_entity_is_refused_and_never_read():
    with pytest.raises(UnsafeInputError) as exc:
        refiqda.read_project(make_zip({"project.qde": XXE}))
    assert "root:" not in str(exc.value)


def test_external_dtd_after_a_comment_is_refused():
    with pytest.raises(UnsafeInputError, match="DTD"):
        refiqda.read_project(make_zip({"project.qde": XXE_EXTERNAL_DTD}))


def test_utf16_encoded_doctype_is_refused():
    data = XXE.replace('<?xml version="1.0"?>', '<?xml version="1.0" encoding="UTF-16"?>')
    with pytest.raises(UnsafeInputError):
        refiqda.read_project(make_zip({"project.qde": data.encode("utf-16")}))


def test_codebook_with_entities_is_refused():
    qdc = BILLION_LAUGHS.replace("Project", "CodeBook").replace("project", "codebook")
    with pytest.raises(UnsafeInputError):
        refiqda.read_codebook(qdc.encode())


def test_doctype_text_inside_a_note_is_not_mistaken_for_a_dtd():
    body = (f'<Notes><Note guid="{G(9)}" name="n"><PlainTextContent><![CDATA[<!DOCTYPE html><p>hi</p>]]>'
            "</PlainTextContent></Note></Notes>")
    project = refiqda.read_project(make_zip({"project.qde": project_xml(body)}))
    assert project.notes[0].text == "<!DOCTYPE html><p>hi</p>"


def test_zip_slip_member_is_refused():
    data = make_zip({"project.qde": project_xml(""), "../../evil.txt": "x"})
    with pytest.raises(UnsafeInputError, match="outside the archive"):
        refiqda.read_project(data)


def test_absolute_member_name_is_refused():
    # zipfile.writestr keeps a ZipInfo's name as given, leading slash included.
    info = zipfile.ZipInfo("/etc/evil.txt")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("project.qde", project_xml(""))
        zf.writestr(info, "x")
    with pytest.raises(UnsafeInputError, match="outside the archive"):
        refiqda.read_project(buf.getvalue())


def test_source_path_climbing_out_of_the_archive_is_refused():
    body = (f'<Sources><TextSource guid="{G(5)}" name="s" '
            'plainTextPath="internal://../../etc/passwd"/></Sources>')
    with pytest.raises(UnsafeInputError, match="outside the archive"):
        refiqda.read_project(make_zip({"project.qde": project_xml(body)}))


def test_absolute_source_path_is_an_external_source_and_is_not_read():
    body = f'<Sources><TextSource guid="{G(5)}" name="s" plainTextPath="/etc/passwd"/></Sources>'
    project = refiqda.read_project(make_zip({"project.qde": project_xml(body)}))
    assert project.sources[0].text is None
    assert any("external file" in w for w in project.warnings)


def test_zip_bomb_is_refused_by_compression_ratio_before_unpacking():
    bomb = b"\0" * (50 * 1024 * 1024)
    data = make_zip({"project.qde": project_xml(""), "sources/bomb.txt": bomb})
    assert len(data) < 200_000
    with pytest.raises(UnsafeInputError, match="ZIP bomb"):
        refiqda.read_project(data)


def test_member_larger_than_the_cap_is_refused():
    data = make_zip({"project.qde": project_xml(""), "sources/a.txt": "y" * 5000})
    with pytest.raises(UnsafeInputError, match="limit"):
        refiqda.read_project(data, limits=Limits(max_member_bytes=1000))


def test_total_size_cap():
    data = make_zip({"project.qde": project_xml(""), "sources/a.txt": "a" * 600,
                     "sources/b.txt": "b" * 600})
    with pytest.raises(UnsafeInputError, match="unpacks to"):
        refiqda.read_project(data, limits=Limits(max_total_bytes=1000))


def test_too_many_entries():
    files = {"project.qde": project_xml("")} | {f"sources/{i}.txt": "x" for i in range(10)}
    with pytest.raises(UnsafeInputError, match="holds 11 files"):
        refiqda.read_project(make_zip(files), limits=Limits(max_entries=5))


def test_not_a_zip():
    with pytest.raises(QdpxError, match="not a ZIP"):
        refiqda.read_project(b"<Project/>", name="p.qdpx")


def test_no_qde_at_the_root():
    with pytest.raises(QdpxError, match=r"no project file \(\*\.qde\)"):
        refiqda.read_project(make_zip({"sub/project.qde": project_xml("")}))


def test_two_qde_files_are_ambiguous():
    data = make_zip({"project.qde": project_xml(""), "Other.QDE": project_xml("")})
    with pytest.raises(QdpxError, match="more than one project file"):
        refiqda.read_project(data)


def test_malformed_xml_names_the_file_and_line():
    bad = project_xml(codebook((1, "a")) + "\n\n<Sources><TextSource></Sources>")
    with pytest.raises(QdpxError, match=r"project\.qde line \d+: not well-formed"):
        refiqda.read_project(make_zip({"project.qde": bad}))


def test_wrong_root_element():
    with pytest.raises(QdpxError, match="expected <Project>"):
        refiqda.read_project(make_zip({"project.qde": "<CodeBook/>"}))


def test_source_that_is_not_utf8_names_the_file_and_offset():
    body = (f'<Sources><TextSource guid="{G(5)}" name="s" plainTextPath="internal://{G(5)}.txt"/>'
            "</Sources>")
    data = make_zip({"project.qde": project_xml(body),
                     f"sources/{G(5)}.txt": "caf\u00e9".encode("latin-1")})
    with pytest.raises(QdpxError, match=rf"{G(5)}\.txt: the text is not UTF-8 .*offset 3"):
        refiqda.read_project(data)


def _nested_codes(levels: int) -> str:
    opening = "".join(f'<Code guid="{G(i)}" name="c{i}" isCodable="true">' for i in range(levels))
    return f"<CodeBook><Codes>{opening}{'</Code>' * levels}</Codes></CodeBook>"


def test_absurdly_deep_nesting_is_refused_by_the_parser_naming_the_place():
    with pytest.raises(QdpxError, match=r"^archive: project\.qde: elements nested deeper than 256 levels at line 2, column \d+$"):
        refiqda.read_project(make_zip({"project.qde": project_xml(_nested_codes(400))}))


def test_codes_nested_just_under_the_depth_limit_are_read():
    # <Project><CodeBook><Codes> and 253 levels of codes: 256 elements deep.
    project = refiqda.read_project(make_zip({"project.qde": project_xml(_nested_codes(253))}))
    assert len(list(project.codebook.iter_codes())) == 253


@pytest.mark.parametrize("data", [b"\xff\xfeh\x00i\x00!", b"\xfe\xff\xd8\x00\x00a"], ids=["odd length", "lone surrogate"])
def test_source_with_a_utf16_bom_that_is_not_utf16_names_the_file(data):
    body = (f'<Sources><TextSource guid="{G(5)}" name="s" plainTextPath="internal://{G(5)}.txt"/>'
            "</Sources>")
    archive = make_zip({"project.qde": project_xml(body), f"sources/{G(5)}.txt": data})
    with pytest.raises(QdpxError, match=rf"{G(5)}\.txt: the text starts with a UTF-16 byte-order mark but is not UTF-16"):
        refiqda.read_project(archive)


@pytest.mark.parametrize("member", ["project.qde", f"sources/{G(50)}.txt"])
def test_an_encrypted_member_is_refused_naming_it(member):
    from .helpers import encrypted, one_source_project

    with pytest.raises(QdpxError, match=rf"x\.qdpx: member '{re.escape(member)}' is encrypted"):
        refiqda.read_project(encrypted(one_source_project("hello world. " * 50, [(0, 5, None)]), member), name="x.qdpx")
