"""The exchange flows in a real browser: download a .qdpx, import it as a new project, restore a backup."""

from __future__ import annotations

import pytest

import refiqda
from coding.models import Coding
from projects.models import Project

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_owner_downloads_qdpx_and_backup_then_brings_both_back(page, login, demo_project, tmp_path):
    from django.contrib.auth import get_user_model

    from conftest import PASSWORD

    owner = get_user_model().objects.get(username="demo")
    owner.set_password(PASSWORD)
    owner.save()
    login(page, owner)
    page.goto(f"/p/{demo_project.uuid}/reports/exchange/")
    page.get_by_label("NVivo-compatible (UTF-16 positions)").check()
    with page.expect_download() as download:
        page.get_by_role("button", name="Download .qdpx").click()
    qdpx = tmp_path / download.value.suggested_filename
    download.value.save_as(qdpx)
    assert qdpx.name.endswith(".qdpx") and "-refi-qda-nvivo-" in qdpx.name
    assert refiqda.read_project(qdpx).counting == "utf16"
    with page.expect_download() as download:
        page.get_by_role("button", name="Download backup").click()
    backup = tmp_path / "backup.zip"
    download.value.save_as(backup)

    page.get_by_role("link", name="Import a project").click()
    page.get_by_label("REFI-QDA project (.qdpx)").set_input_files(str(qdpx))
    page.locator("#id_qdpx-project_name").fill("Back from NVivo")
    page.get_by_role("button", name="Import .qdpx").click()
    # demo is the only coder, and the importer: the worker imports it straight away; its page follows the job.
    page.get_by_role("link", name="Open Back from NVivo").wait_for()
    assert page.get_by_text("Imported 3 interviews").is_visible()
    page.get_by_role("link", name="Open Back from NVivo").click()
    page.wait_for_url(lambda url: "/p/" in url)
    imported = Project.objects.get(name="Back from NVivo")
    assert imported.interviews.count() == 3
    assert Coding.objects.filter(interview__project=imported).count() == Coding.objects.filter(
        interview__project=demo_project).count()

    page.goto("/import/")
    page.get_by_label("Project backup (.zip)").set_input_files(str(backup))
    page.locator("#id_restore-project_name").fill("Restored copy")
    page.get_by_role("button", name="Restore backup").click()
    page.get_by_text("The backup names these people").wait_for()  # the worker has read it
    # Who is who: demo is the restorer here (chosen for them); nobody gets an account made for them.
    assert page.get_by_label("demo").input_value() == str(owner.pk)
    assert page.get_by_label("Name of the new project").input_value() == "Restored copy"
    page.get_by_role("button", name="Restore the project").click()
    page.get_by_role("link", name="Open Restored copy").click()
    page.wait_for_url(lambda url: "/p/" in url)
    assert Project.objects.filter(name="Restored copy").exists()


def test_a_bad_upload_is_explained_on_its_import_page(page, login, owner, tmp_path):
    login(page, owner)
    bad = tmp_path / "broken.qdpx"
    bad.write_bytes(b"not a zip")
    page.goto("/import/")
    page.get_by_label("REFI-QDA project (.qdpx)").set_input_files(str(bad))
    page.get_by_role("button", name="Import .qdpx").click()
    alert = page.get_by_role("alert").filter(has_text="This file cannot be imported")
    assert "broken.qdpx: not a ZIP archive" in alert.inner_text()
    assert not Project.objects.exists()


def test_a_qdpx_from_a_team_asks_who_is_who_then_imports(page, login, project, owner, analyst, tmp_path):
    from django.contrib.auth import get_user_model

    from reports.tests.test_exchange import _qdpx_with_coders

    users_before = get_user_model().objects.count()
    path = tmp_path / "team.qdpx"
    path.write_bytes(_qdpx_with_coders(["Arjun A.", "Nadia"]))
    login(page, owner)
    page.goto("/import/")
    page.get_by_label("REFI-QDA project (.qdpx)").set_input_files(str(path))
    page.locator("#id_qdpx-project_name").fill("From the team")
    page.get_by_role("button", name="Import .qdpx").click()
    page.get_by_text("The file names these coders").wait_for()
    # Nobody is guessed: each coder starts as a name only, and the accounts offered are people olivia works with.
    assert page.get_by_label("Nadia").input_value() == ""
    page.get_by_label("Arjun A.").select_option(label="arjun (Arjun Analyst)")
    page.get_by_role("button", name="Import the project").click()
    page.get_by_role("link", name="Open From the team").wait_for()
    imported = Project.objects.get(name="From the team")
    assert set(Coding.objects.filter(interview__project=imported).values_list("coder__username", flat=True)) == {
        "arjun", "olivia"}
    assert get_user_model().objects.count() == users_before
