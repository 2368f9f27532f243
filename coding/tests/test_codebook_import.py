"""The .qdc codebook import gets back every field the app's own export packs into a code's Description,
and treats other tools' codebooks the way the .qdpx project import does."""

from __future__ import annotations

import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from coding.codebook_import import CodebookImportError, codebook_import, renamed_codes, rows_from_csv, rows_from_qdc
from coding.models import Code
from coding.services import code_archive
from projects.models import Membership, Project, Role
from refiqda.tests.helpers import QDPX_SAMPLES, make_zip
from reports.exchange import project_export_qdpx, project_import_qdpx

pytestmark = pytest.mark.django_db


def _fields(project: Project) -> dict[str, tuple]:
    return {c.name: (c.definition, c.include_when, c.exclude_when, c.example, c.kind, c.colour,
                     c.parent.name if c.parent else None, c.archived)
            for c in Code.objects.for_project(project).select_related("parent")}


def _without_colour(project: Project) -> dict[str, tuple]:
    """Fields but the colour, for files that give none (each import then picks from the palette)."""
    return {name: f[:5] + f[6:] for name, f in _fields(project).items()}


@pytest.fixture
def other_project(owner) -> Project:
    project = Project.objects.create(name="Second study", created_by=owner)
    Membership.objects.create(project=project, user=owner, role=Role.OWNER)
    return project


def test_the_apps_own_qdc_export_imports_back_field_for_field(client_for, owner, project, other_project, make_code):
    place = make_code("Place", kind="latent", colour="#aa0000", definition="Where belonging is located.",
                      include_when="a named place", exclude_when="metaphors of place", example="“Home is Lagos.”")
    make_code("Home 🏠", parent=place, colour="#00aa00",
              definition="Home as people.\n\nNote: a free paragraph that is not one of our labels.")
    make_code("Borders", parent=place, kind="latent", include_when="visas, passports")  # no definition at all
    make_code("Language", example="“I switch to Yoruba.”")
    c = client_for(owner)
    qdc = c.get(reverse("reports:codebook_download", args=[project.uuid, "qdc"])).content
    response = c.post(reverse("coding:import", args=[other_project.uuid]), {"file": SimpleUploadedFile("book.qdc", qdc)})
    assert response.status_code == 302, response.content[:500]
    assert _fields(other_project) == _fields(project)
    assert _fields(other_project)["Place"][4] == "latent"  # was "semantic" with the kind folded into the definition


def test_a_folder_code_lands_as_an_ordinary_parent_as_in_the_qdpx_import(owner, project):
    qdc = b"""<?xml version="1.0" encoding="utf-8"?>
<CodeBook xmlns="urn:QDA-XML:codebook:1.0" origin="QualCoder">
  <Codes>
    <Code guid="11111111-1111-1111-1111-111111111111" name="Feelings" isCodable="false" color="#A0C">
      <Description>A category.</Description>
      <Code guid="22222222-2222-2222-2222-222222222222" name="Warmth" isCodable="true"/>
    </Code>
  </Codes>
</CodeBook>"""
    codebook_import(project=project, actor=owner, rows=rows_from_qdc(qdc, filename="qc.qdc"), source="qc.qdc")
    assert _without_colour(project) == {"Feelings": ("A category.", "", "", "", "semantic", None, False),
                                        "Warmth": ("", "", "", "", "semantic", "Feelings", False)}
    assert _fields(project)["Feelings"][5] == "#aa00cc"  # #RGB widened
    project_qde = (qdc.replace(b'<CodeBook xmlns="urn:QDA-XML:codebook:1.0" origin="QualCoder">',
                               b'<Project xmlns="urn:QDA-XML:project:1.0" name="QC"><CodeBook>')
                   .replace(b"</CodeBook>", b"</CodeBook></Project>"))
    imported = project_import_qdpx(source=make_zip({"project.qde": project_qde}), owner=owner).project
    assert _without_colour(imported) == _without_colour(project)
    assert _fields(imported)["Feelings"][5].lower() == "#aa00cc"  # that import keeps the file's upper case


@pytest.mark.parametrize("path", [p for p in QDPX_SAMPLES if p.name == "atlasti-23-codebook.qdpx"], ids=lambda p: p.name)
def test_a_real_atlas_ti_codebook_imports_like_its_qdpx_project(owner, project, path):
    codebook_import(project=project, actor=owner, rows=rows_from_qdc(path.read_bytes(), filename=path.name),
                    source=path.name)
    imported = project_import_qdpx(source=path.read_bytes(), owner=owner, filename=path.name).project
    assert len(_fields(project)) == 3 and _without_colour(project) == _without_colour(imported)


def test_a_kind_the_app_does_not_know_stays_in_the_definition(owner, project):
    qdc = b"""<?xml version="1.0" encoding="utf-8"?>
<CodeBook xmlns="urn:QDA-XML:codebook:1.0"><Codes>
  <Code guid="33333333-3333-3333-3333-333333333333" name="Trust" isCodable="true">
    <Description>Relying on others.

Kind: descriptive</Description></Code>
</Codes></CodeBook>"""
    [code] = codebook_import(project=project, actor=owner, rows=rows_from_qdc(qdc, filename="x.qdc"), source="x.qdc")
    assert (code.definition, code.kind) == ("Relying on others.\n\nKind: descriptive", "semantic")


def test_an_error_names_the_code(owner, project, make_code):
    make_code("Trust")
    qdc = b"""<?xml version="1.0" encoding="utf-8"?>
<CodeBook xmlns="urn:QDA-XML:codebook:1.0"><Codes>
  <Code guid="33333333-3333-3333-3333-333333333333" name="Trust" isCodable="true"/>
</Codes></CodeBook>"""
    with pytest.raises(CodebookImportError, match=r"x.qdc, code “Trust” \(33333333-.*\): a code named “Trust” already"):
        codebook_import(project=project, actor=owner, rows=rows_from_qdc(qdc, filename="x.qdc"), source="x.qdc")


def _siblings(project: Project) -> dict[str | None, list[str]]:
    """Each parent's children (None: the top level) in the codebook's order."""
    out: dict[str | None, list[str]] = {}
    for c in Code.objects.for_project(project).select_related("parent").order_by("position", "name"):
        out.setdefault(c.parent.name if c.parent else None, []).append(c.name)
    return out


# The same code tree comes with NVivo's and QualCoder's demo projects; these names repeat under other parents.
RENAMED_IN_DEMO_CODETREE = [
    ("programming", "programming (cs_as_programming)"),
    ("computational_literacy", "computational_literacy (practices)"),
    ("citizenship", "citizenship (digital_citizenship)"),
    ("digital_citizenship", "digital_citizenship (cs_literacy)"),
    ("citizenship", "citizenship (2)"),
    ("choice", "choice (electives)"),
    ("graduation_requirement", "graduation_requirement (graduation_requirement)"),  # under a parent of the same name
    ("pedagogy", "pedagogy (pedagogy)"),
    ("cs_inclusion", "cs_inclusion (rq3_process)"),
    ("fun", "fun (affect_toward_cs)"),
]


@pytest.mark.parametrize("path", [p for p in QDPX_SAMPLES if p.name in ("nvivo-mac-15-codetree.qdpx", "qc-demo.qdpx")],
                         ids=lambda p: p.name)
def test_a_real_codebook_with_repeated_names_imports_renamed_like_its_qdpx_project(owner, project, path):
    rows = rows_from_qdc(path.read_bytes(), filename=path.name)
    assert renamed_codes(rows) == RENAMED_IN_DEMO_CODETREE
    codebook_import(project=project, actor=owner, rows=rows, source=path.name)
    imported = project_import_qdpx(source=path.read_bytes(), owner=owner, filename=path.name)
    fields = _without_colour(project)
    assert len(fields) == 262 and fields == _without_colour(imported.project)
    assert _siblings(project) == _siblings(imported.project)
    assert [w for w in imported.warnings if "appears more than once" in w] == [
        f"Code {old!r} appears more than once; imported as {new!r}." for old, new in renamed_codes(rows)]
    assert fields["programming (cs_as_programming)"][5] == "cs_as_programming"
    assert fields["citizenship (2)"][5] == "digital_citizenship (cs_literacy)"
    assert fields["digital_citizenship (cs_literacy)"][5] == "cs_literacy"
    assert _siblings(project)[None][:2] == ["rq1_definition", "rq2_curriculum_and_instruction"]
    assert _siblings(project)["concepts"][:3] == ["abstraction", "algorithms", "computer_graphics"]


def test_the_import_summary_names_the_renamed_codes(client_for, owner, project):
    qdc = b"""<?xml version="1.0" encoding="utf-8"?>
<CodeBook xmlns="urn:QDA-XML:codebook:1.0"><Codes>
  <Code guid="11111111-1111-1111-1111-111111111111" name="Place" isCodable="true">
    <Code guid="22222222-2222-2222-2222-222222222222" name="Home" isCodable="true"/>
  </Code>
  <Code guid="33333333-3333-3333-3333-333333333333" name="People" isCodable="true">
    <Code guid="44444444-4444-4444-4444-444444444444" name="Home" isCodable="true"/>
  </Code>
</Codes></CodeBook>"""
    response = client_for(owner).post(reverse("coding:import", args=[project.uuid]),
                                      {"file": SimpleUploadedFile("book.qdc", qdc)}, follow=True)
    assert "Imported 4 codes from book.qdc. Names that repeat in the file were imported as: “Home” as “Home (People)”." \
        in response.content.decode()
    assert _fields(project)["Home (People)"][6] == "People" and _fields(project)["Home"][6] == "Place"


def test_a_csv_codebook_keeps_the_files_order_after_the_projects_codes(owner, project, make_code):
    make_code("Zebra")
    csv = b"name,parent\nZeta,\nBeta,Zeta\nAlpha,\nAardvark,Zeta\nYak,Later\nLater,\n"
    codebook_import(project=project, actor=owner, rows=rows_from_csv(csv, filename="book.csv"), source="book.csv")
    assert _siblings(project) == {None: ["Zebra", "Zeta", "Alpha", "Later"], "Zeta": ["Beta", "Aardvark"], "Later": ["Yak"]}


@pytest.mark.parametrize("fmt", ["qdc", "csv"])
def test_an_exported_codebook_with_archived_and_nested_codes_comes_back_the_same(client_for, owner, project,
                                                                                  other_project, make_code, fmt):
    place = make_code("Place", kind="latent", colour="#aa0000", definition="Where belonging is located.",
                      include_when="a named place", exclude_when="metaphors of place", example="“Home is Lagos.”")
    make_code("Kitchen", parent=make_code("Home", parent=place, colour="#00aa00"), example="“We cooked.”")
    make_code("Borders", parent=place, kind="latent", include_when="visas, passports")
    code_archive(code=make_code("Abroad", parent=place, definition="Old idea."), actor=owner)
    code_archive(code=make_code("Zoning", kind="latent"), actor=owner)
    make_code("Language")
    c = client_for(owner)
    exported = b"".join(c.get(reverse("reports:codebook_download", args=[project.uuid, fmt])))  # CSV streams
    response = c.post(reverse("coding:import", args=[other_project.uuid]), {"file": SimpleUploadedFile(f"book.{fmt}", exported)})
    assert response.status_code == 302, response.content[:500]
    assert _fields(other_project) == _fields(project)
    assert _siblings(other_project) == _siblings(project)
    assert {n for n, f in _fields(other_project).items() if f[7]} == {"Abroad", "Zoning"}
    archived = Code.objects.get(project=other_project, name="Abroad")
    assert [e.action for e in archived.events.order_by("pk")] == ["imported", "archived"]
    if fmt == "csv":
        return
    # The .qdpx project export and import carry the flag the same way.
    out = io.BytesIO()
    project_export_qdpx(project=project, out=out)
    imported = project_import_qdpx(source=out.getvalue(), owner=owner, filename="p.qdpx").project
    assert _fields(imported) == _fields(project) and _siblings(imported) == _siblings(project)


def _nested_qdc(levels: int) -> bytes:
    guid = "{:08d}-0000-4000-8000-000000000000".format
    opening = "".join(f'<Code guid="{guid(i)}" name="level {i}" isCodable="true">' for i in range(levels))
    return (f'<?xml version="1.0" encoding="utf-8"?>\n<CodeBook xmlns="urn:QDA-XML:codebook:1.0"><Codes>{opening}'
            f"{'</Code>' * levels}</Codes></CodeBook>").encode()


@pytest.mark.django_db
def test_a_codebook_nested_too_deep_is_refused_on_the_page_naming_the_place(client_for, owner, project):
    response = client_for(owner).post(reverse("coding:import", args=[project.uuid]),
                                      {"file": SimpleUploadedFile("deep.qdc", _nested_qdc(300))})
    assert "deep.qdc: elements nested deeper than 256 levels at line 2, column " in response.content.decode()
    assert not Code.objects.filter(project=project).exists()


@pytest.mark.django_db
def test_a_codebook_nested_just_under_the_xml_limit_imports(owner, project):
    # <CodeBook><Codes> and 254 levels of codes: 256 elements deep.
    codes = codebook_import(project=project, actor=owner, rows=rows_from_qdc(_nested_qdc(254), filename="deep.qdc"),
                            source="deep.qdc")
    assert len(codes) == 254 and Code.objects.get(project=project, name="level 253").parent.name == "level 252"


def test_a_file_of_millions_of_tiny_lines_is_refused_at_the_code_limit_before_it_is_read_whole():
    import tracemalloc

    from coding.codebook_import import MAX_CODES

    data = b"name\n" + b"a\n" * 2_000_000  # 4 MB, under the size limit
    tracemalloc.start()
    try:
        with pytest.raises(CodebookImportError) as refused:
            rows_from_csv(data, filename="tiny.csv")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert refused.value.errors == [f"tiny.csv, line {MAX_CODES + 2}: more than 10,000 codes; a codebook may hold at "
                                    "most 10,000."]
    assert peak < 40 * 1024 * 1024  # the text and 10,000 rows, not two million


def test_a_file_of_bad_lines_lists_the_first_problems_only():
    with pytest.raises(CodebookImportError) as refused:
        rows_from_csv(b"name\n" + b"a,b,c\n" * 5_000, filename="bad.csv")
    assert len(refused.value.errors) == 51
    assert refused.value.errors[0] == "bad.csv, line 2: 3 cells but the header has 1."
    assert refused.value.errors[-1] == "bad.csv: more problems after line 52 are not listed; fix these first."


def test_an_upload_over_the_size_limit_is_read_no_further_than_it_takes_to_refuse(client_for, owner, project):
    from coding.codebook_import import MAX_BYTES

    upload = SimpleUploadedFile("big.csv", b"name\n" + b"x" * (MAX_BYTES + 10), content_type="text/csv")
    response = client_for(owner).post(reverse("coding:import", args=[project.uuid]), {"file": upload})
    assert response.status_code == 400
    assert "big.csv: the file is larger than 5.0 MB, the most a codebook file may be." in response.content.decode()


def test_an_exported_codebook_csv_with_cells_a_spreadsheet_would_run_comes_back_the_same(client_for, owner, project,
                                                                                            other_project, make_code):
    """The CSV export guards such cells with an apostrophe (reports.writers.safe_cell); the import takes it off."""
    make_code("+1 agreement", definition="- a passage that agrees\n- with the question", example="=a formula?",
              include_when="@someone", exclude_when="'quoted' asides")
    make_code("-ve affect", parent=Code.objects.get(project=project, name="+1 agreement"))
    c = client_for(owner)
    exported = b"".join(c.get(reverse("reports:codebook_download", args=[project.uuid, "csv"])))
    assert b"'+1 agreement" in exported  # guarded in the file
    response = c.post(reverse("coding:import", args=[other_project.uuid]), {"file": SimpleUploadedFile("book.csv", exported)})
    assert response.status_code == 302, response.content[:500]
    assert _fields(other_project) == _fields(project)


@pytest.mark.parametrize("newline", [b"\r", b"\r\n", b"\n"])
def test_a_csv_codebook_reads_whatever_its_line_endings(newline):
    """Excel for Mac's “CSV (Macintosh)” ends lines with a lone CR; a definition may hold its own line breaks."""
    data = newline.join([b"name,definition", b'Trust,"Belief in others.' + newline + b'Not faith."', b"Doubt,", b""])
    rows = rows_from_csv(data, filename="mac.csv")
    assert [row.name for row in rows] == ["Trust", "Doubt"]
    assert rows[0].values["definition"].splitlines() == ["Belief in others.", "Not faith."]


def test_a_csv_codebook_holding_a_nul_is_refused_naming_the_line(client_for, owner, project):
    """PostgreSQL text cannot hold NUL; in a CSV it means the file is not the UTF-8 text it looks like."""
    response = client_for(owner).post(reverse("coding:import", args=[project.uuid]),
                                      {"file": SimpleUploadedFile("book.csv", b"name,definition\r\nTrust,Bel\x00ief\r\n")})
    assert response.status_code == 400
    assert ("book.csv, line 2: a NUL character (byte 0x00), which no text may hold; save the spreadsheet as CSV "
            "UTF-8.") in response.content.decode()
    assert not Code.objects.filter(project=project).exists()


@pytest.mark.parametrize(("name", "data", "found"), [
    ("screenshot.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "found a PNG image"),
    ("codes.xlsx", b"PK\x03\x04\x14\x00\x00\x00", "found an Excel workbook or another ZIP file (save the sheet as CSV UTF-8"),
    ("codes.pdf", b"%PDF-1.7\n\xe2\xe3\xcf\xd3", "found a PDF document"),
])
def test_a_file_of_another_type_is_named_as_such_not_as_a_byte_that_is_not_utf8(client_for, owner, project, name, data, found):
    response = client_for(owner).post(reverse("coding:import", args=[project.uuid]), {"file": SimpleUploadedFile(name, data)})
    body = response.content.decode()
    assert response.status_code == 400
    assert f"{name}: expected a codebook as CSV (UTF-8) or a REFI-QDA .qdc or .qdpx file, {found}" in body
    assert "not UTF-8 text" not in body and not Code.objects.filter(project=project).exists()
