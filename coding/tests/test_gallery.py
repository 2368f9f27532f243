"""The codebook template gallery: every template file imports through the codebook import, and starting
from a template (or adding one to a codebook that has codes) is a member's write like any other."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.urls import reverse

from coding.codebook_import import CodebookImportError
from coding.gallery import TEMPLATES_DIR, codebook_template, codebook_template_apply, codebook_templates
from coding.models import Code, CodeEvent
from projects.models import Project

pytestmark = pytest.mark.django_db

TABLE_3 = "bias-negotiation-table3"
PANEL_A = ["Task", "Stakeholders", "Identity cues", "Relevance", "Epistemic uncertainty", "Power", "Harm by omission",
           "Harm by invocation", "User intent", "Policy constraints"]
PANEL_B = ["Elicit / gather", "Bracket", "Quantify / hedge", "Contextualize", "Balance / trade off", "Redirect / escalate",
           "Revise", "Refuse / boundary-set"]


def _tree(project: Project) -> dict[str, str | None]:
    return {c.name: c.parent.name if c.parent else None for c in Code.objects.for_project(project).select_related("parent")}


@pytest.mark.parametrize("sidecar", sorted(TEMPLATES_DIR.glob("*.json")), ids=lambda p: p.stem)
def test_every_template_in_the_directory_parses_and_imports_whole(owner, sidecar: Path):
    template = codebook_template(sidecar.stem)
    assert template is not None
    rows = template.rows()
    project = Project.objects.create(name=f"Fresh {sidecar.stem}", created_by=owner)
    outcome = codebook_template_apply(project=project, actor=owner, template=template)
    assert [c.name for c in outcome.created] == [r.name for r in rows] and outcome.skipped == []
    for code in Code.objects.for_project(project):
        assert code.definition.strip() and code.definition.endswith(f"Source: {template.citation}"), code.name
    assert CodeEvent.objects.filter(project=project, action=CodeEvent.Action.IMPORTED).count() == len(rows)


def test_no_template_file_is_left_without_its_pair():
    stems = {p.stem for p in TEMPLATES_DIR.glob("*.csv")}
    assert stems == {p.stem for p in TEMPLATES_DIR.glob("*.json")}
    assert {TABLE_3, "semantic-latent-starter"} <= stems


def test_the_table_3_template_has_both_panels_as_parents_with_their_children(owner, project):
    codebook_template_apply(project=project, actor=owner, template=codebook_template(TABLE_3))
    tree = _tree(project)
    assert [n for n, p in tree.items() if p == "Case features"] == PANEL_A
    assert [n for n, p in tree.items() if p == "Negotiation moves"] == PANEL_B
    assert tree["Case features"] is None and tree["Negotiation moves"] is None
    assert "Bias Negotiation" in Code.objects.get(project=project, name="Revise").definition


def test_the_starter_has_one_parent_of_each_kind(owner, project):
    codebook_template_apply(project=project, actor=owner, template=codebook_template("semantic-latent-starter"))
    kinds = {c.name: c.kind for c in Code.objects.for_project(project)}
    assert kinds == {"Semantic codes": Code.Kind.SEMANTIC, "Latent codes": Code.Kind.LATENT}


def test_a_broken_sidecar_is_named_with_what_is_wrong(tmp_path):
    (tmp_path / "half.json").write_text(json.dumps({"title": "Half"}), encoding="utf-8")
    with pytest.raises(CodebookImportError) as exc:
        codebook_templates(tmp_path)
    assert exc.value.errors == ["half.json: “description” is missing or empty.", "half.json: “citation” is missing or empty.",
                                "half.json: no half.csv beside it."]


# --- views ---------------------------------------------------------------------------------------

def test_an_analyst_starts_an_empty_codebook_from_a_template(client_for, analyst, project):
    r = client_for(analyst).post(reverse("coding:gallery_apply", args=[project.uuid, TABLE_3]), follow=True)
    assert r.status_code == 200
    assert "Added 20 codes from" in r.content.decode()
    assert len(_tree(project)) == 20


def test_on_a_codebook_with_codes_it_adds_only_new_names_and_says_which_it_skipped(client_for, owner, project, make_code):
    mine = make_code("revise", definition="Our own definition.")  # same name, other case
    make_code("Empathy")
    r = client_for(owner).post(reverse("coding:gallery_apply", args=[project.uuid, TABLE_3]), follow=True)
    body = r.content.decode()
    assert "Added 19 codes" in body and "Already in the codebook, so left as they were: Revise." in body
    mine.refresh_from_db()
    assert mine.definition == "Our own definition." and mine.parent is None
    assert len(_tree(project)) == 21
    # Applying it again adds nothing, and says so.
    r = client_for(owner).post(reverse("coding:gallery_apply", args=[project.uuid, TABLE_3]), follow=True)
    assert "Added 0 codes" in r.content.decode() and len(_tree(project)) == 21


def test_a_child_lands_under_a_parent_the_codebook_already_had(owner, project, make_code):
    make_code("Negotiation moves", definition="Ours.")
    codebook_template_apply(project=project, actor=owner, template=codebook_template(TABLE_3))
    assert _tree(project)["Bracket"] == "Negotiation moves"


def test_viewers_get_403_and_nothing_is_created(client_for, viewer, project):
    r = client_for(viewer).post(reverse("coding:gallery_apply", args=[project.uuid, TABLE_3]))
    assert r.status_code == 403 and not Code.objects.filter(project=project).exists()
    page = client_for(viewer).get(reverse("coding:gallery", args=[project.uuid]))
    assert page.status_code == 200 and "Start from this template" not in page.content.decode()


def test_outsiders_get_404_for_the_page_and_the_write(client_for, outsider, project):
    assert client_for(outsider).get(reverse("coding:gallery", args=[project.uuid])).status_code == 404
    r = client_for(outsider).post(reverse("coding:gallery_apply", args=[project.uuid, TABLE_3]))
    assert r.status_code == 404 and not Code.objects.filter(project=project).exists()


def test_an_unknown_template_is_404(client_for, owner, project):
    r = client_for(owner).post(reverse("coding:gallery_apply", args=[project.uuid, "no-such-template"]))
    assert r.status_code == 404


def test_the_codebook_page_and_its_empty_message_lead_to_the_gallery(client_for, owner, project):
    body = client_for(owner).get(reverse("coding:codebook", args=[project.uuid])).content.decode()
    gallery = reverse("coding:gallery", args=[project.uuid])
    assert body.count(f'href="{gallery}"') == 2  # the toolbar and the "No codes yet" message


@pytest.mark.parametrize("n", [0, 15])
def test_gallery_queries_do_not_grow_with_the_codebook(client_for, owner, project, make_code, django_assert_num_queries, n):
    for i in range(n):
        make_code(f"Code {i}")
    c = client_for(owner)
    # session, user, membership+project, the codebook's names, unread-mentions badge
    with django_assert_num_queries(5):
        r = c.get(reverse("coding:gallery", args=[project.uuid]))
    body = r.content.decode()
    assert r.status_code == 200 and "Bias negotiation: case features and negotiation moves" in body
    assert "Start from this template" in body and "Empty semantic / latent starter" in body
