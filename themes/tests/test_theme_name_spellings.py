"""Theme names that look the same are one name (projects/names.py), as for codes, guides, probes and participants."""

from __future__ import annotations

import importlib
import unicodedata

import pytest
from django.apps import apps
from django.core.exceptions import ValidationError
from django.db import connection

from themes import services
from themes.models import Theme

pytestmark = pytest.mark.django_db

CAFE = "Zuhause Café"


@pytest.mark.parametrize("variant", [unicodedata.normalize("NFD", CAFE), "Zuhause Ca\u200bfé", "\ufeffzuhause\u00a0café"])
def test_a_name_that_looks_like_a_themes_is_refused_naming_it(project, owner, variant):
    services.theme_create(project=project, actor=owner, name=CAFE)
    with pytest.raises(ValidationError) as refused:
        services.theme_create(project=project, actor=owner, name=variant)
    assert refused.value.message_dict["name"] == [f"There is already a theme named “{CAFE}” in this project; choose another name."]


def test_a_theme_name_is_stored_as_it_looks(project, owner):
    theme = services.theme_create(project=project, actor=owner, name=unicodedata.normalize("NFD", "Ca\u200bfé"))
    assert theme.name == "Café"
    services.theme_update(theme=theme, actor=owner, base_version=None, name="Café\u00a0culture")
    assert Theme.objects.get(pk=theme.pk).name == "Café culture"


def test_the_migration_normalises_names_and_numbers_those_then_taken(project):
    migration = importlib.import_module("themes.migrations.0010_theme_names_normalised")
    constraint = next(c for c in Theme._meta.constraints if c.name == "unique_live_theme_name")
    with connection.schema_editor() as editor:  # as before the migration (rolled back with the test)
        editor.remove_constraint(Theme, constraint)
    first = Theme.objects.create(project=project, name=CAFE)
    nfd = Theme.objects.create(project=project, name=unicodedata.normalize("NFD", CAFE))
    spaced = Theme.objects.create(project=project, name="Home\u00a0 as practice ")
    with connection.schema_editor() as editor:
        migration.normalise_names(apps, editor)
        editor.add_constraint(Theme, constraint)
    assert [Theme.objects.get(pk=t.pk).name for t in (first, nfd, spaced)] == [CAFE, f"{CAFE} (2)", "Home as practice"]
