"""Exchange pages: permissions, downloads that read back, uploads that create projects or explain why not."""

from __future__ import annotations

import io
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

import refiqda
from coding.models import Coding
from projects.models import Project
from refiqda.tests.helpers import PROJECT_XSD, SAMPLES
from reports.backup import project_backup

pytestmark = pytest.mark.django_db


def _url(name: str, project: Project) -> str:
    return reverse(f"reports:{name}", args=[project.uuid])


def _body(response) -> bytes:
    return b"".join(response.streaming_content)


@pytest.mark.parametrize("who", ["owner", "analyst", "viewer"])
def test_members_see_the_exchange_page(project, client_for, request, who):
    response = client_for(request.getfixturevalue(who)).get(_url("exchange", project))
    assert response.status_code == 200
    assert b"Download .qdpx" in response.content
    assert (b"Download backup" in response.content) == (who == "owner")


def test_outsiders_get_404_everywhere(project, client_for, outsider):
    c = client_for(outsider)
    for name in ("exchange", "export_qdpx", "download_backup"):
        assert c.get(_url(name, project)).status_code == 404, name


def test_anonymous_users_are_sent_to_log_in(project, client):
    assert client.get(_url("exchange", project)).status_code == 302
    assert client.get(reverse("exchange_import")).status_code == 302


def test_exchange_page_query_count_does_not_grow(demo_project, client_for, django_assert_num_queries):
    c = client_for(demo_project.memberships.get(role="owner").user)
    # 1 session, 2 user, 3 membership joined with its project, 4 unread-mentions badge — whatever the project holds.
    with django_assert_num_queries(4):
        assert c.get(_url("exchange", demo_project)).status_code == 200


@pytest.mark.parametrize("positions", ["codepoints", "utf16"])
def test_viewers_may_download_a_valid_qdpx(demo_project, client_for, make_user, positions):
    from projects.models import Membership, Role

    viewer = make_user("vic")
    Membership.objects.create(project=demo_project, user=viewer, role=Role.VIEWER)
    response = client_for(viewer).get(_url("export_qdpx", demo_project), {"positions": positions})
    assert response.status_code == 200
    assert response["Content-Disposition"].startswith("attachment;")
    data = _body(response)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        from lxml import etree

        assert PROJECT_XSD.validate(etree.fromstring(zf.read("project.qde")))
    assert refiqda.read_project(data).counting == positions


@pytest.mark.parametrize("who,status", [("analyst", 403), ("viewer", 403), ("owner", 200)])
def test_only_owners_download_backups(project, client_for, request, who, status):
    response = client_for(request.getfixturevalue(who)).get(_url("download_backup", project))
    assert response.status_code == status
    if status == 200:
        with zipfile.ZipFile(io.BytesIO(_body(response))) as zf:
            assert "manifest.json" in zf.namelist()


def test_import_page_creates_a_project_from_a_qdpx(client_for, outsider):
    c = client_for(outsider)
    assert c.get(reverse("exchange_import")).status_code == 200
    upload = SimpleUploadedFile("qc-demo.qdpx", (SAMPLES / "qdpx" / "qc-demo.qdpx").read_bytes())
    response = c.post(reverse("exchange_import"), {"kind": "qdpx", "qdpx-file": upload, "qdpx-project_name": "From QC"})
    project = Project.objects.get(name="From QC")
    assert response.status_code == 302 and response["Location"] == reverse("project_home", args=[project.uuid])
    assert project.memberships.get(user=outsider).role == "owner"
    assert Coding.objects.filter(interview__project=project).exists()


def test_import_page_explains_a_bad_file_inline_and_creates_nothing(client_for, outsider):
    before = Project.objects.count()
    c = client_for(outsider)
    bad = SimpleUploadedFile("broken.qdpx", b"this is not a zip")
    response = c.post(reverse("exchange_import"), {"kind": "qdpx", "qdpx-file": bad})
    assert response.status_code == 200
    assert "This file cannot be imported: broken.qdpx: not a ZIP archive" in response.content.decode()
    wrong = SimpleUploadedFile("notes.txt", b"hello")
    response = c.post(reverse("exchange_import"), {"kind": "qdpx", "qdpx-file": wrong})
    assert "Choose a .qdpx file" in response.content.decode()
    assert Project.objects.count() == before


def test_restore_page_restores_a_backup_and_refuses_junk(demo_project, client_for, outsider):
    buf = io.BytesIO()
    project_backup(project=demo_project, out=buf)
    c = client_for(outsider)
    response = c.post(reverse("exchange_import"), {
        "kind": "restore", "restore-file": SimpleUploadedFile("demo.zip", buf.getvalue()), "restore-project_name": "Mine now"})
    restored = Project.objects.get(name="Mine now")
    assert response.status_code == 302
    assert list(restored.memberships.values_list("user__username", "role")) == [("oscar", "owner")]
    before = Project.objects.count()
    response = c.post(reverse("exchange_import"), {"kind": "restore", "restore-file": SimpleUploadedFile("x.zip", b"junk")})
    assert response.status_code == 200
    assert "This backup cannot be restored: x.zip: not a ZIP archive" in response.content.decode()
    assert Project.objects.count() == before
