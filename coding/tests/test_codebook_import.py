"""The .qdc codebook import gets back every field the app's own export packs into a code's Description,
and treats other tools' codebooks the way the .qdpx project import does."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from coding.codebook_import import CodebookImportError, codebook_import, rows_from_qdc
from coding.models import Code
from projects.models import Membership, Project, Role
from refiqda.tests.helpers import QDPX_SAMPLES, make_zip
from reports.exchange import project_import_qdpx

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
