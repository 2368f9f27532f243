"""One live theme per name in a project, whatever its case, on every path that names a theme; and the meeting's record
keeps the names the meeting saw."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from rest_framework.test import APIClient

from projects.trash import trash_restore
from themes import services
from themes.models import Theme

pytestmark = pytest.mark.django_db

TAKEN = "There is already a theme named “Home as practice” in this project"


@pytest.fixture
def home(project, owner):
    return services.theme_create(project=project, actor=owner, name="Home as practice")


def api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


# ---------------------------------------------------------------- services

@pytest.mark.parametrize("name", ["Home as practice", "home AS practice", "  Home   as practice "])
def test_a_second_live_theme_of_a_name_is_refused_whatever_its_case_or_spacing(project, owner, home, name):
    with pytest.raises(ValidationError) as refused:
        services.theme_create(project=project, actor=owner, name=name)
    assert TAKEN in refused.value.message_dict["name"][0]
    assert Theme.objects.for_project(project).count() == 1


def test_a_rename_onto_another_themes_name_is_refused_but_recasing_ones_own_is_not(project, owner, home):
    care = services.theme_create(project=project, actor=owner, name="Care")
    with pytest.raises(ValidationError) as refused:
        services.theme_update(theme=care, actor=owner, base_version=None, name="HOME as practice")
    assert TAKEN in refused.value.message_dict["name"][0]
    services.theme_update(theme=home, actor=owner, base_version=None, name="Home As Practice")
    assert Theme.objects.get(pk=home.pk).name == "Home As Practice"


def test_names_of_trashed_merged_and_other_projects_themes_are_free(project, owner, home, make_user):
    from projects.models import Project

    services.theme_delete(theme=home, actor=owner)
    again = services.theme_create(project=project, actor=owner, name="Home as practice")
    other = services.theme_create(project=project, actor=owner, name="Other")
    services.theme_merge(source=again, target=other, actor=owner)
    services.theme_create(project=project, actor=owner, name="home as practice")
    elsewhere = Project.objects.create(name="Elsewhere", created_by=make_user("sam"))
    services.theme_create(project=elsewhere, actor=owner, name="Home as practice")


def test_the_database_refuses_a_duplicate_the_services_did_not_see(project, owner, home):
    with pytest.raises(IntegrityError), transaction.atomic():
        Theme.objects.create(project=project, name="HOME AS PRACTICE")


def test_a_meeting_cannot_decide_a_rename_or_split_onto_a_taken_name(project, owner, home, make_code):
    import datetime

    care = services.theme_create(project=project, actor=owner, name="Care")
    code = make_code("looks after")
    services.theme_add_code(theme=care, actor=owner, code=code)
    review = services.review_create(project=project, actor=owner, title="Weekly", date=datetime.date(2026, 11, 25), themes=[care])
    with pytest.raises(ValidationError) as rename:
        services.decision_record(review=review, theme=care, actor=owner, kind="rename", payload={"name": "home as practice"})
    assert TAKEN in rename.value.message_dict["name"][0]
    with pytest.raises(ValidationError) as split:
        services.decision_record(review=review, theme=care, actor=owner, kind="split",
                                 payload={"name": "Home as practice", "codes": [str(code.uuid)]})
    assert TAKEN in split.value.message_dict["name"][0]


def test_a_meeting_may_give_a_name_that_one_of_its_decisions_frees_and_applies_them_in_order(project, owner, home, make_code):
    """Merge "Home as practice" into "Care", then rename "Routines" to "Home as practice": one meeting, in that order."""
    import datetime

    care = services.theme_create(project=project, actor=owner, name="Care")
    routines = services.theme_create(project=project, actor=owner, name="Routines")
    review = services.review_create(project=project, actor=owner, title="Weekly", date=datetime.date(2026, 11, 25),
                                    themes=[home, care, routines])
    merge = services.decision_record(review=review, theme=home, actor=owner, kind="merge", payload={"into": str(care.uuid)})
    rename = services.decision_record(review=review, theme=routines, actor=owner, kind="rename", payload={"name": "home as  practice"})
    assert rename.payload == {"name": "home as practice"}
    with pytest.raises(ValidationError) as too_soon:
        services.decision_apply(decision=rename, actor=owner)
    assert too_soon.value.message_dict["decision"] == [
        "Theme “Home as practice” still has the name “home as practice”: apply the decision to merge it into “Care” first. "
        "Nothing was changed."]
    assert Theme.objects.get(pk=routines.pk).name == "Routines"
    services.decision_apply(decision=merge, actor=owner)
    services.decision_apply(decision=rename, actor=owner)
    assert Theme.objects.get(pk=routines.pk).name == "home as practice"


def test_a_name_freed_only_by_a_declined_decision_or_another_meeting_is_still_taken(project, owner, home):
    import datetime

    care = services.theme_create(project=project, actor=owner, name="Care")
    weekly, other = (services.review_create(project=project, actor=owner, title=title, date=datetime.date(2026, 11, 25),
                                            themes=[home, care]) for title in ("Weekly", "Monthly"))
    merge = services.decision_record(review=other, theme=home, actor=owner, kind="merge", payload={"into": str(care.uuid)})
    with pytest.raises(ValidationError, match=TAKEN):
        services.decision_record(review=weekly, theme=care, actor=owner, kind="rename", payload={"name": "Home as practice"})
    services.decision_record(review=weekly, theme=home, actor=owner, kind="rename", payload={"name": "HOME AS PRACTICE"})
    with pytest.raises(ValidationError, match=TAKEN):  # a re-casing keeps the name taken
        services.decision_record(review=weekly, theme=care, actor=owner, kind="rename", payload={"name": "Home as practice"})
    services.decision_decline(decision=merge, actor=owner, reason="kept apart")
    with pytest.raises(ValidationError, match=TAKEN):
        services.decision_record(review=other, theme=care, actor=owner, kind="split", payload={"name": "Home as practice", "codes": []})


def test_applying_a_rename_whose_name_was_taken_since_changes_nothing(project, owner, home):
    import datetime

    care = services.theme_create(project=project, actor=owner, name="Care")
    review = services.review_create(project=project, actor=owner, title="Weekly", date=datetime.date(2026, 11, 25), themes=[care])
    decision = services.decision_record(review=review, theme=care, actor=owner, kind="rename", payload={"name": "Caring"})
    services.theme_create(project=project, actor=owner, name="caring")
    with pytest.raises(ValidationError, match="There is already a theme named “caring”"):
        services.decision_apply(decision=decision, actor=owner)
    decision.refresh_from_db()
    assert decision.applied_at is None and Theme.objects.get(pk=care.pk).name == "Care"


def test_restoring_a_theme_onto_a_name_taken_meanwhile_renames_it(project, owner, home):
    services.theme_delete(theme=home, actor=owner)
    services.theme_create(project=project, actor=owner, name="HOME AS PRACTICE")
    trash_restore(project=project, actor=owner, kind="theme", uuid=home.uuid)
    home.refresh_from_db()
    assert home.deleted_at is None and home.name == "Home as practice (restored)"


def test_restoring_skips_a_restored_name_taken_in_another_case(project, owner, home):
    services.theme_delete(theme=home, actor=owner)
    services.theme_create(project=project, actor=owner, name="home as practice")
    services.theme_create(project=project, actor=owner, name="HOME AS PRACTICE (RESTORED)")
    trash_restore(project=project, actor=owner, kind="theme", uuid=home.uuid)
    home.refresh_from_db()
    assert home.name == "Home as practice (restored 2)"


def test_the_migration_suffixes_existing_duplicates_oldest_first(project, owner, make_user):
    from projects.models import Project

    migration = importlib.import_module("themes.migrations.0007_unique_live_theme_name")
    constraint = next(c for c in Theme._meta.constraints if c.name == "unique_live_theme_name")
    with connection.schema_editor() as editor:  # as before the migration (rolled back with the test)
        editor.remove_constraint(Theme, constraint)
    first = Theme.objects.create(project=project, name="Home")
    second = Theme.objects.create(project=project, name="home")
    third = Theme.objects.create(project=project, name="HOME")
    taken = Theme.objects.create(project=project, name="Home (2)")
    trashed = Theme.objects.create(project=project, name="Home", deleted_at="2026-11-01T00:00:00Z")
    elsewhere = Theme.objects.create(project=Project.objects.create(name="Elsewhere", created_by=make_user("sam")), name="Home")
    with connection.schema_editor() as editor:
        migration.rename_duplicates(apps, editor)
        editor.add_constraint(Theme, constraint)
    names = {t.pk: t.name for t in Theme.objects.all()}
    assert names[first.pk] == "Home" and names[taken.pk] == "Home (2)"
    assert (names[second.pk], names[third.pk]) == ("home (3)", "HOME (4)")
    assert names[trashed.pk] == "Home" and names[elsewhere.pk] == "Home"


# ---------------------------------------------------------------- pages and API

def test_the_board_shows_a_refused_name_at_its_field_with_what_was_typed(project, analyst, home, client_for):
    response = client_for(analyst).post(f"/p/{project.uuid}/themes/new/", {"name": "home as practice"}, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200  # htmx swaps only 2xx answers
    assert 'id="new-theme-name-error" role="alert">There is already a theme named “Home as practice”' in html
    assert 'value="home as practice" aria-invalid="true" aria-describedby="new-theme-name-error"' in html
    assert Theme.objects.for_project(project).count() == 1


def test_the_board_shows_an_empty_name_at_its_field(project, analyst, client_for):
    response = client_for(analyst).post(f"/p/{project.uuid}/themes/new/", {"name": "   "})
    assert response.status_code == 400
    assert 'id="new-theme-name-error" role="alert">Give the theme a name.' in response.content.decode()


def test_a_refused_sub_theme_name_opens_its_form_with_the_message(project, analyst, home, client_for):
    response = client_for(analyst).post(f"/p/{project.uuid}/themes/new/", {"name": "Home as practice", "parent": home.uuid},
                                        HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert f'id="sub-{home.uuid}-error" role="alert">There is already a theme' in html
    assert '<details class="add-sub" open>' in html


def test_the_theme_form_shows_a_taken_name_at_the_name_field(project, owner, analyst, home, client_for):
    care = services.theme_create(project=project, actor=owner, name="Care")
    response = client_for(analyst).post(f"/p/{project.uuid}/themes/t/{care.uuid}/edit/",
                                        {"name": "HOME as practice", "definition": "", "colour": care.colour, "version": care.version})
    html = response.content.decode()
    assert response.status_code == 400
    assert 'aria-invalid="true" aria-describedby="id_name-error"' in html
    assert f'id="id_name-error" role="alert">{TAKEN}' in html
    assert Theme.objects.get(pk=care.pk).name == "Care"


def test_the_api_refuses_a_taken_name_under_name(project, owner, analyst, home):
    base = f"/api/projects/{project.uuid}/themes/"
    created = api(analyst).post(base, {"name": "home as practice"}, format="json")
    assert created.status_code == 400 and TAKEN in created.json()["name"][0]
    care = services.theme_create(project=project, actor=owner, name="Care")
    renamed = api(analyst).patch(base + f"{care.uuid}/", {"name": "Home as practice", "version": care.version}, format="json")
    assert renamed.status_code == 400 and TAKEN in renamed.json()["name"][0]


def test_a_meeting_form_names_the_field_of_a_taken_name(project, owner, analyst, home, client_for):
    import datetime

    care = services.theme_create(project=project, actor=owner, name="Care")
    review = services.review_create(project=project, actor=owner, title="Weekly", date=datetime.date(2026, 11, 25), themes=[care])
    response = client_for(analyst).post(f"/p/{project.uuid}/themes/reviews/{review.uuid}/decisions/",
                                        {"theme": care.uuid, "kind": "rename", "name": "home as practice"}, follow=True)
    assert f"New name: {TAKEN}" in response.content.decode()
    assert not review.decisions.exists()


# ---------------------------------------------------------------- the meeting's record

def test_an_applied_rename_keeps_the_old_name_in_the_minutes(project, owner, analyst, home, client_for):
    import datetime

    review = services.review_create(project=project, actor=owner, title="Weekly", date=datetime.date(2026, 11, 25), themes=[home])
    decision = services.decision_record(review=review, theme=home, actor=owner, kind="rename", payload={"name": "Home as routine"})
    services.decision_apply(decision=decision, actor=owner)
    html = client_for(analyst).get(f"/p/{project.uuid}/themes/reviews/{review.uuid}/").content.decode()
    assert "<strong>Rename</strong> “Home as practice” → “Home as routine”" in html
    assert "Home as routine: Rename" not in html


def test_a_decision_on_a_theme_renamed_since_names_both(project, owner, analyst, home, client_for):
    import datetime

    review = services.review_create(project=project, actor=owner, title="Weekly", date=datetime.date(2026, 11, 25), themes=[home])
    services.decision_record(review=review, theme=home, actor=owner, kind="status", payload={"status": "reviewed"})
    services.theme_update(theme=home, actor=owner, base_version=None, name="Dwelling")
    html = client_for(analyst).get(f"/p/{project.uuid}/themes/reviews/{review.uuid}/").content.decode()
    assert "<strong>Home as practice</strong> <span class=\"muted\">(now “Dwelling”)</span>: Change status" in html
    assert 'id="live-agenda" data-live-on="decision board codebook"' in html
