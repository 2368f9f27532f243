"""Exchange pages: permissions, downloads that read back, uploads that create projects or explain why not."""

from __future__ import annotations

import io
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

import refiqda
from coding.models import Coding
from projects.models import Project, StoredBlob
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
    if who == "owner":  # what the backup leaves out (backup.EXCLUDED) is said before it is downloaded
        said = " ".join(response.content.decode().split())
        assert "the AI second reader's runs with their pending and rejected suggestions" in said


def test_outsiders_get_404_everywhere(project, client_for, outsider):
    c = client_for(outsider)
    assert c.get(_url("exchange", project)).status_code == 404
    for name in ("export_qdpx", "download_backup"):
        assert c.post(_url(name, project)).status_code == 404, name


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
    response = client_for(viewer).post(_url("export_qdpx", demo_project), {"positions": positions})
    assert response.status_code == 200
    assert response["Content-Disposition"].startswith("attachment;")
    data = _body(response)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        from lxml import etree

        assert PROJECT_XSD.validate(etree.fromstring(zf.read("project.qde")))
    assert refiqda.read_project(data).counting == positions


@pytest.mark.parametrize("who,status", [("analyst", 403), ("viewer", 403), ("owner", 200)])
def test_only_owners_download_backups(project, client_for, request, who, status):
    response = client_for(request.getfixturevalue(who)).post(_url("download_backup", project))
    assert response.status_code == status
    if status == 200:
        with zipfile.ZipFile(io.BytesIO(_body(response))) as zf:
            assert "manifest.json" in zf.namelist()


def test_import_page_creates_a_project_from_a_qdpx_after_asking_who_is_who(client_for, outsider, _media):
    c = client_for(outsider)
    assert c.get(reverse("exchange_import")).status_code == 200
    upload = SimpleUploadedFile("qc-demo.qdpx", (SAMPLES / "qdpx" / "qc-demo.qdpx").read_bytes())
    response = c.post(reverse("exchange_import"), {"kind": "qdpx", "qdpx-file": upload, "qdpx-project_name": "From QC"})
    assert response.status_code == 302 and "/import/qdpx/" in response["Location"]
    assert not Project.objects.filter(name="From QC").exists()  # nothing imported before the people step
    page = c.get(response["Location"]).content.decode()
    assert "The file names these coders" in page and 'value="" selected>Keep as a name only (their codings become yours)' in page
    done = c.post(response["Location"], {"person-0": "", "project_name": "From QC"})
    project = Project.objects.get(name="From QC")
    assert done.status_code == 302 and done["Location"] == reverse("project_home", args=[project.uuid])
    assert list(project.memberships.values_list("user__username", "role")) == [("oscar", "owner")]
    assert set(Coding.objects.filter(interview__project=project).values_list("coder__username", flat=True)) == {"oscar"}
    assert not StoredBlob.objects.exists()  # the waiting upload is gone
    assert c.get(response["Location"]).status_code == 302  # and the step cannot be replayed


def test_a_qdpx_naming_nobody_but_the_importer_is_imported_at_once(client_for, make_user, _media):
    cp = make_user("cp")  # qc-demo.qdpx's only coder is called cp
    upload = SimpleUploadedFile("qc-demo.qdpx", (SAMPLES / "qdpx" / "qc-demo.qdpx").read_bytes())
    response = client_for(cp).post(reverse("exchange_import"), {"kind": "qdpx", "qdpx-file": upload})
    project = Project.objects.get(memberships__user=cp)
    assert response.status_code == 302 and response["Location"] == reverse("project_home", args=[project.uuid])
    assert set(Coding.objects.filter(interview__project=project).values_list("coder", flat=True)) == {cp.pk}


def _hostile_qdpx(names: list[str]) -> SimpleUploadedFile:
    from reports.tests.test_exchange import _qdpx_with_coders

    return SimpleUploadedFile("crafted.qdpx", _qdpx_with_coders(names))


def test_qdpx_people_step_maps_a_coder_to_a_member_and_creates_no_account(project, client_for, owner, analyst,
                                                                          make_user, _media):
    from django.contrib.auth import get_user_model

    from reports.tests.test_exchange import HOSTILE_NAMES

    make_user("admin")
    users_before = get_user_model().objects.count()
    c = client_for(owner)
    step = c.post(reverse("exchange_import"), {"kind": "qdpx", "qdpx-file": _hostile_qdpx([*HOSTILE_NAMES, "Arjun"]),
                                               "qdpx-project_name": "Crafted"})["Location"]
    page = c.get(step).content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>alert" not in page
    assert "stranger" not in page and ">arjun (Arjun Analyst)</option>" in page
    labels = ["<script>alert(1)</script>", "admin", "Arjun", "root", "victim@example.org"]  # as the step lists them
    mapping = {f"person-{i}": str(analyst.pk) if name == "Arjun" else "" for i, name in enumerate(labels)}
    doubled = c.post(step, {**mapping, "person-0": str(analyst.pk)})
    assert doubled.status_code == 400 and "are all mapped to arjun" in doubled.content.decode()
    assert c.post(step, {**mapping, "project_name": "Crafted", "members": "on"}).status_code == 302
    imported = Project.objects.get(name="Crafted")
    assert get_user_model().objects.count() == users_before
    assert set(imported.memberships.values_list("user__username", "role")) == {("olivia", "owner"), ("arjun", "analyst")}
    codings = Coding.objects.filter(interview__project=imported)
    assert set(codings.values_list("coder__username", flat=True)) == {"olivia", "arjun"}


def test_someone_elses_waiting_qdpx_cannot_be_imported(client_for, outsider, owner, _media):
    step = client_for(outsider).post(reverse("exchange_import"), {"kind": "qdpx", "qdpx-file": _hostile_qdpx(["x"]),
                                                                  "qdpx-project_name": "Theirs"})["Location"]
    response = client_for(owner).post(step, {"person-0": ""})
    assert response.status_code == 302 and response["Location"] == reverse("exchange_import")
    assert not Project.objects.filter(name="Theirs").exists()


def test_the_qdpx_people_step_costs_the_same_queries_for_few_or_many_coders(client_for, outsider, _media,
                                                                            django_assert_num_queries):
    c = client_for(outsider)
    few = c.post(reverse("exchange_import"), {"kind": "qdpx", "qdpx-file": _hostile_qdpx(["a"])})["Location"]
    many = c.post(reverse("exchange_import"), {"kind": "qdpx", "qdpx-file": _hostile_qdpx([f"c{i}" for i in range(60)])})["Location"]
    # session, user, the waiting upload, its one chunk (a small file), the accounts the importer may choose
    with django_assert_num_queries(5):
        assert c.get(few).content.decode().count("Keep as a name only") == 1
    with django_assert_num_queries(5):
        assert c.get(many).content.decode().count("Keep as a name only") == 60


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


def _demo_backup(project) -> bytes:
    buf = io.BytesIO()
    project_backup(project=project, out=buf)
    return buf.getvalue()


def _upload_backup(client, data: bytes, name: str = "Mine now"):
    return client.post(reverse("exchange_import"), {
        "kind": "restore", "restore-file": SimpleUploadedFile("demo.zip", data), "restore-project_name": name})


@pytest.fixture
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    return tmp_path


def test_restore_asks_who_is_who_then_restores_without_creating_accounts(demo_project, client_for, outsider, _media):
    from django.contrib.auth import get_user_model

    users_before = get_user_model().objects.count()
    c = client_for(outsider)
    response = _upload_backup(c, _demo_backup(demo_project))
    assert response.status_code == 302 and "/import/restore/" in response["Location"]
    assert not Project.objects.filter(name="Mine now").exists()  # nothing restored before the people step
    page = c.get(response["Location"])
    html = page.content.decode()
    assert page.status_code == 200 and "demo" in html and "codings" in html
    assert 'value="" selected>— choose an account' in html  # demo coded: an account is needed, none is guessed
    done = c.post(response["Location"], {"person-0": str(outsider.pk), "project_name": "Mine now"})
    assert done.status_code == 302
    restored = Project.objects.get(name="Mine now")
    assert list(restored.memberships.values_list("user__username", "role")) == [("oscar", "owner")]
    assert Coding.objects.filter(interview__project=restored, coder=outsider).count() == Coding.objects.filter(
        interview__project=demo_project).count()
    assert get_user_model().objects.count() == users_before
    assert not StoredBlob.objects.exists()  # the waiting upload is gone
    assert c.get(response["Location"]).status_code == 302  # and the step cannot be replayed


def test_restore_people_step_explains_missing_and_doubled_choices(demo_project, client_for, outsider, _media):
    c = client_for(outsider)
    step = _upload_backup(c, _demo_backup(demo_project))["Location"]
    missing = c.post(step, {"person-0": ""})
    assert missing.status_code == 400
    assert "demo coded segments or wrote notes: choose the account that is them here." in missing.content.decode()
    assert Project.objects.filter(name="Mine now").count() == 0


def test_only_accounts_the_restorer_shares_a_project_with_are_offered(demo_project, client_for, outsider, make_user,
                                                                      _media):
    stranger = make_user("stranger")
    c = client_for(outsider)
    step = _upload_backup(c, _demo_backup(demo_project))["Location"]
    assert "stranger" not in c.get(step).content.decode()
    response = c.post(step, {"person-0": str(stranger.pk)})
    assert response.status_code == 400 and "Select a valid choice" in response.content.decode()
    assert not Project.objects.filter(name="Mine now").exists()


def test_someone_elses_waiting_upload_cannot_be_restored(demo_project, client_for, outsider, owner, _media):
    step = _upload_backup(client_for(outsider), _demo_backup(demo_project))["Location"]
    response = client_for(owner).post(step, {"person-0": str(owner.pk)})
    assert response.status_code == 302 and response["Location"] == reverse("exchange_import")
    assert not Project.objects.filter(name="Mine now").exists()


@pytest.mark.parametrize("step", ["exchange_restore_people", "exchange_qdpx_people"])
@pytest.mark.parametrize("method", ["get", "post"])
def test_another_stored_file_of_ones_own_is_not_taken_for_a_waiting_upload(client_for, outsider, step, method):
    from datetime import timedelta

    from projects.blobs import blob_create

    export = blob_create(source=io.BytesIO(b"Theme,Code,Quote\r\n"), name="excerpts.csv", user=outsider,
                         keep=timedelta(hours=1))
    client = client_for(outsider)
    response = getattr(client, method)(reverse(step, args=[export.uuid]), {"person-0": str(outsider.pk)})
    assert response.status_code == 302 and response["Location"] == reverse("exchange_import")
    said = [str(m) for m in response.wsgi_request._messages]
    assert len(said) == 1 and "excerpts.csv" in said[0] and "choose the file again" in said[0]
    assert StoredBlob.objects.filter(pk=export.pk).exists()  # the export's file is left as it was


def test_the_people_step_costs_the_same_queries_for_few_or_many_people(demo_project, client_for, outsider, _media,
                                                                       django_assert_num_queries):
    from reports.tests.test_backup import _crafted

    c = client_for(outsider)
    few = _upload_backup(c, _demo_backup(demo_project))["Location"]
    many = _upload_backup(c, _crafted(_demo_backup(demo_project), [f"ghost{i}" for i in range(60)],
                                      members=("data/projects.membership.json",)))["Location"]
    c.get(few)
    # session, user, the waiting upload, its one chunk (a small backup), the accounts the restorer may choose
    with django_assert_num_queries(5):
        assert "Keep as a name only" not in c.get(few).content.decode()
    with django_assert_num_queries(5):
        assert c.get(many).content.decode().count("Keep as a name only") == 60


def test_a_junk_backup_is_refused_beside_the_field(client_for, outsider, _media):
    c = client_for(outsider)
    before = Project.objects.count()
    response = c.post(reverse("exchange_import"), {"kind": "restore", "restore-file": SimpleUploadedFile("x.zip", b"junk")})
    assert response.status_code == 200
    assert "This backup cannot be restored: x.zip: not a ZIP archive" in response.content.decode()
    assert Project.objects.count() == before and not StoredBlob.objects.exists()


    assert Project.objects.count() == before


def _qdpx_with_source(data: bytes) -> SimpleUploadedFile:
    from refiqda.tests.helpers import G, make_zip, project_xml

    body = f'<Sources><TextSource guid="{G(5)}" name="chat" plainTextPath="internal://{G(5)}.txt"/></Sources>'
    return SimpleUploadedFile("chat.qdpx", make_zip({"project.qde": project_xml(body), f"sources/{G(5)}.txt": data}))


TRANSCRIPT = "Interviewer: Hi\x00 there\nGPT-4o: Hello."


@pytest.mark.parametrize(("data", "message"), [
    (b"\xff\xfeI\x00n\x00t", "the text starts with a UTF-16 byte-order mark but is not UTF-16 (truncated data at byte 6, an odd number of bytes)"),
    (TRANSCRIPT.encode("utf-16"), "chat.qdpx: source &#x27;chat&#x27; holds a NUL character (at character 15)"),
    (TRANSCRIPT.encode(), "chat.qdpx: source &#x27;chat&#x27; holds a NUL character (at character 15)"),
], ids=["UTF-16 BOM, odd length", "NUL in UTF-16 text", "NUL in UTF-8 text"])
def test_an_undecodable_or_unstorable_source_is_explained_inline_and_creates_nothing(client_for, outsider, data, message):
    before = Project.objects.count()
    response = client_for(outsider).post(reverse("exchange_import"), {"kind": "qdpx", "qdpx-file": _qdpx_with_source(data)})
    assert response.status_code == 200
    assert message in response.content.decode()
    assert Project.objects.count() == before


def test_a_deeply_nested_backup_member_is_explained_inline_and_creates_nothing(demo_project, client_for, outsider):
    buf = io.BytesIO()
    project_backup(project=demo_project, out=buf)
    src, out = zipfile.ZipFile(io.BytesIO(buf.getvalue())), io.BytesIO()
    with zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            deep = b"[" * 100_000 + b"]" * 100_000
            dst.writestr(info.filename, deep if info.filename == "data/interviews.turn.json" else src.read(info))
    before = Project.objects.count()
    response = client_for(outsider).post(reverse("exchange_import"), {
        "kind": "restore", "restore-file": SimpleUploadedFile("demo.zip", out.getvalue())})
    assert response.status_code == 200
    assert ("This backup cannot be restored: demo.zip: data/interviews.turn.json: data nested deeper than 100 levels "
            "at line 1, column 101") in response.content.decode()
    assert Project.objects.count() == before
