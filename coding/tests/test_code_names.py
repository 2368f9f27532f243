"""One live code per name: names that look the same are one name, whatever their case, also when two people (or a
double click) save at once; codes named before the rule get numbered, not lost."""

from __future__ import annotations

import importlib
import unicodedata

import pytest
from django.apps import apps
from django.db import IntegrityError, connection, transaction
from rest_framework.test import APIClient

from coding.codebook_import import CodebookImportError, codebook_import, rows_from_csv
from coding.models import Code
from coding.services import NameTaken, code_create, code_update
from projects.tests.race import second_while_first_uncommitted

CAFE = "Zuhause Café"
LOOK_ALIKES = [unicodedata.normalize("NFD", CAFE), "Zuhause Ca\u200bfé", "Zuhause\u00a0Café", "zuhause  CAFÉ"]


@pytest.mark.django_db
@pytest.mark.parametrize("variant", LOOK_ALIKES, ids=["NFD", "zero-width space", "no-break space", "case and spaces"])
def test_a_name_that_looks_like_a_codes_is_refused_naming_that_code(project, owner, variant):
    code_create(project=project, actor=owner, name=CAFE)
    with pytest.raises(NameTaken) as refused:
        code_create(project=project, actor=owner, name=variant)
    assert refused.value.messages == [f"There is already a code named “{CAFE}” in this project."]
    assert Code.objects.for_project(project).count() == 1


@pytest.mark.django_db
def test_a_name_is_stored_as_it_looks(project, owner):
    other = code_create(project=project, actor=owner, name="Other")
    assert code_create(project=project, actor=owner, name=LOOK_ALIKES[0]).name == CAFE
    assert code_update(code=other, actor=owner, version=other.version, name=" Ca\u200bre\u00a0work ").name == "Care work"


@pytest.mark.django_db
def test_the_api_refuses_a_look_alike_under_name(project, owner, analyst):
    code_create(project=project, actor=owner, name=CAFE)
    client = APIClient()
    client.force_authenticate(analyst)
    response = client.post(f"/api/projects/{project.uuid}/codes/", {"name": LOOK_ALIKES[1]}, format="json")
    assert response.status_code == 400 and f"There is already a code named “{CAFE}”" in response.json()["name"][0]


@pytest.mark.django_db
def test_the_database_refuses_a_live_code_whose_name_differs_only_in_case(project, owner):
    code_create(project=project, actor=owner, name="Trust")
    with pytest.raises(IntegrityError), transaction.atomic():
        Code.objects.create(project=project, name="TRUST")


@pytest.mark.django_db
def test_a_codebook_file_naming_a_code_in_another_spelling_is_refused(project, owner):
    code_create(project=project, actor=owner, name=CAFE)
    rows = rows_from_csv(f"name\n{LOOK_ALIKES[0]}\n".encode())
    with pytest.raises(CodebookImportError) as refused:
        codebook_import(project=project, actor=owner, rows=rows, source="codebook.csv")
    assert f"a code named “{CAFE}” already exists" in refused.value.errors[0]


@pytest.mark.django_db(transaction=True)
def test_two_people_creating_one_name_in_two_cases_at_once_get_one_code_and_a_refusal(project, owner, analyst):
    second = second_while_first_uncommitted(
        lambda: code_create(project=project, actor=owner, name="Race Code"),
        lambda: code_create(project=project, actor=analyst, name="race code"),
    )
    assert isinstance(second, NameTaken) and second.messages == ["There is already a code named “Race Code” in this project."]
    assert list(Code.objects.for_project(project).values_list("name", flat=True)) == ["Race Code"]


@pytest.mark.django_db
def test_the_migration_normalises_names_and_numbers_those_then_taken_oldest_first(project, owner):
    migration = importlib.import_module("coding.migrations.0009_names_one_whatever_their_case")
    constraint = next(c for c in Code._meta.constraints if c.name == "unique_live_code_name")
    with connection.schema_editor() as editor:  # as before the migration (rolled back with the test)
        editor.remove_constraint(Code, constraint)
    first = Code.objects.create(project=project, name=CAFE)
    look_alikes = [Code.objects.create(project=project, name=name) for name in LOOK_ALIKES[:3]]
    taken = Code.objects.create(project=project, name=f"{CAFE} (2)")
    trashed = Code.objects.create(project=project, name=LOOK_ALIKES[0], deleted_at="2026-11-01T00:00:00Z")
    with connection.schema_editor() as editor:
        migration.normalise_names(apps, editor)
        editor.add_constraint(Code, constraint)
    names = {c.pk: c.name for c in Code.objects.all()}
    assert names[first.pk] == CAFE and names[taken.pk] == f"{CAFE} (2)" and names[trashed.pk] == CAFE
    assert [names[c.pk] for c in look_alikes] == [f"{CAFE} (3)", f"{CAFE} (4)", f"{CAFE} (5)"]
