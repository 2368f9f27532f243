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
from reports.models import ProjectImportJob

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


# --- bringing a project in: the request keeps the upload, the worker (in-process here) reads and imports it ---


@pytest.fixture
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    return tmp_path


@pytest.fixture
def upload(django_capture_on_commit_callbacks):
    """POST a file to the import page, let the worker read it, and return the job's page (as the browser follows
    the redirect)."""

    def post(client, kind: str, file: SimpleUploadedFile, name: str = ""):
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(reverse("exchange_import"), {"kind": kind, f"{kind}-file": file,
                                                                f"{kind}-project_name": name})
        assert response.status_code == 302, response.content.decode()[:300]
        assert response["Location"] == _job_url(ProjectImportJob.objects.get(uuid=_job_uuid(response)))
        return client.get(response["Location"])

    return post


@pytest.fixture
def choose(django_capture_on_commit_callbacks):
    """POST the people step, let the worker import, and return the job's page."""

    def post(client, page, data: dict):
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(page.wsgi_request.path, data)
        if response.status_code != 302:
            return response
        assert response["Location"] == page.wsgi_request.path
        return client.get(response["Location"])

    return post


def _job_uuid(response) -> str:
    return response["Location"].rstrip("/").rsplit("/", 1)[-1]


def _job_url(job: ProjectImportJob) -> str:
    return reverse("exchange_import_job", args=[job.uuid])


def _opens(page, project: Project) -> bool:
    """The job's page, once done, says so and links to the new project."""
    return f'id="import-open-project" href="{reverse("project_home", args=[project.uuid])}"' in page.content.decode()


def test_import_page_creates_a_project_from_a_qdpx_after_asking_who_is_who(client_for, outsider, _media, upload,
                                                                           choose):
    c = client_for(outsider)
    assert c.get(reverse("exchange_import")).status_code == 200
    page = upload(c, "qdpx", SimpleUploadedFile("qc-demo.qdpx", (SAMPLES / "qdpx" / "qc-demo.qdpx").read_bytes()),
                  "From QC")
    assert not Project.objects.filter(name="From QC").exists()  # nothing imported before the people step
    html = page.content.decode()
    assert "The file names these coders" in html and 'value="" selected>Keep as a name only (their codings become yours)' in html
    done = choose(c, page, {"person-0": "", "project_name": "From QC"})
    project = Project.objects.get(name="From QC")
    assert "Imported 2 interviews, 262 codes, 302 codings" in done.content.decode() and _opens(done, project)
    assert list(project.memberships.values_list("user__username", "role")) == [("oscar", "owner")]
    assert set(Coding.objects.filter(interview__project=project).values_list("coder__username", flat=True)) == {"oscar"}
    assert not StoredBlob.objects.exists()  # the waiting upload is gone
    again = choose(c, page, {"person-0": "", "project_name": "From QC"})  # the step cannot be replayed
    assert again.status_code == 200 and Project.objects.filter(name="From QC").count() == 1


def test_a_qdpx_naming_nobody_but_the_importer_is_imported_at_once(client_for, make_user, _media, upload):
    cp = make_user("cp")  # qc-demo.qdpx's only coder is called cp
    page = upload(client_for(cp), "qdpx", SimpleUploadedFile("qc-demo.qdpx", (SAMPLES / "qdpx" / "qc-demo.qdpx").read_bytes()))
    project = Project.objects.get(memberships__user=cp)
    assert _opens(page, project) and "Imported 2 interviews" in page.content.decode()
    assert set(Coding.objects.filter(interview__project=project).values_list("coder", flat=True)) == {cp.pk}
    assert not StoredBlob.objects.exists()


def _hostile_qdpx(names: list[str]) -> SimpleUploadedFile:
    from reports.tests.test_exchange import _qdpx_with_coders

    return SimpleUploadedFile("crafted.qdpx", _qdpx_with_coders(names))


def test_qdpx_people_step_maps_a_coder_to_a_member_and_creates_no_account(project, client_for, owner, analyst,
                                                                          make_user, _media, upload, choose):
    from django.contrib.auth import get_user_model

    from reports.tests.test_exchange import HOSTILE_NAMES

    make_user("admin")
    users_before = get_user_model().objects.count()
    c = client_for(owner)
    step = upload(c, "qdpx", _hostile_qdpx([*HOSTILE_NAMES, "Arjun"]), "Crafted")
    page = step.content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>alert" not in page
    assert "stranger" not in page and ">arjun (Arjun Analyst)</option>" in page
    labels = ["<script>alert(1)</script>", "admin", "Arjun", "root", "victim@example.org"]  # as the step lists them
    mapping = {f"person-{i}": str(analyst.pk) if name == "Arjun" else "" for i, name in enumerate(labels)}
    doubled = choose(c, step, {**mapping, "person-0": str(analyst.pk)})
    assert doubled.status_code == 400 and "are all mapped to arjun" in doubled.content.decode()
    done = choose(c, step, {**mapping, "project_name": "Crafted", "members": "on"})
    imported = Project.objects.get(name="Crafted")
    assert _opens(done, imported)
    assert get_user_model().objects.count() == users_before
    assert set(imported.memberships.values_list("user__username", "role")) == {("olivia", "owner"), ("arjun", "analyst")}
    codings = Coding.objects.filter(interview__project=imported)
    assert set(codings.values_list("coder__username", flat=True)) == {"olivia", "arjun"}


def test_the_qdpx_people_step_costs_the_same_queries_for_few_or_many_coders(client_for, outsider, _media, upload,
                                                                            django_assert_num_queries):
    c = client_for(outsider)
    few = upload(c, "qdpx", _hostile_qdpx(["a"])).wsgi_request.path
    many = upload(c, "qdpx", _hostile_qdpx([f"c{i}" for i in range(60)])).wsgi_request.path
    # session, user, the job (the worker read its people: the file is not read again), the accounts to choose from
    with django_assert_num_queries(4):
        assert c.get(few).content.decode().count("Keep as a name only") == 1
    with django_assert_num_queries(4):
        assert c.get(many).content.decode().count("Keep as a name only") == 60


def test_a_bad_file_is_explained_on_its_jobs_page_and_leaves_nothing(client_for, outsider, _media, upload):
    before = Project.objects.count()
    c = client_for(outsider)
    page = upload(c, "qdpx", SimpleUploadedFile("broken.qdpx", b"this is not a zip"))
    assert "This file cannot be imported: broken.qdpx: not a ZIP archive" in page.content.decode()
    assert ProjectImportJob.objects.get().status == ProjectImportJob.Status.FAILED
    wrong = c.post(reverse("exchange_import"), {"kind": "qdpx", "qdpx-file": SimpleUploadedFile("notes.txt", b"hello")})
    assert wrong.status_code == 200 and "Choose a .qdpx file" in wrong.content.decode()  # checked in the request
    assert Project.objects.count() == before and not StoredBlob.objects.exists()
    assert ProjectImportJob.objects.count() == 1


def _demo_backup(project) -> bytes:
    buf = io.BytesIO()
    project_backup(project=project, out=buf)
    return buf.getvalue()


def _backup_file(data: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile("demo.zip", data)


def test_restore_asks_who_is_who_then_restores_without_creating_accounts(demo_project, client_for, outsider, _media,
                                                                         upload, choose):
    from django.contrib.auth import get_user_model

    users_before = get_user_model().objects.count()
    c = client_for(outsider)
    page = upload(c, "restore", _backup_file(_demo_backup(demo_project)), "Mine now")
    assert not Project.objects.filter(name="Mine now").exists()  # nothing restored before the people step
    html = page.content.decode()
    assert page.status_code == 200 and "demo" in html and "codings" in html
    assert 'value="" selected>— choose an account' in html  # demo coded: an account is needed, none is guessed
    done = choose(c, page, {"person-0": str(outsider.pk), "project_name": "Mine now"})
    restored = Project.objects.get(name="Mine now")
    assert "Restored “Mine now”" in done.content.decode() and _opens(done, restored)
    assert list(restored.memberships.values_list("user__username", "role")) == [("oscar", "owner")]
    assert Coding.objects.filter(interview__project=restored, coder=outsider).count() == Coding.objects.filter(
        interview__project=demo_project).count()
    assert get_user_model().objects.count() == users_before
    assert not StoredBlob.objects.exists()  # the waiting upload is gone


def test_restore_people_step_explains_missing_and_doubled_choices(demo_project, client_for, outsider, _media, upload,
                                                                  choose):
    c = client_for(outsider)
    step = upload(c, "restore", _backup_file(_demo_backup(demo_project)), "Mine now")
    missing = choose(c, step, {"person-0": ""})
    assert missing.status_code == 400
    assert "demo coded segments or wrote notes: choose the account that is them here." in missing.content.decode()
    assert Project.objects.filter(name="Mine now").count() == 0


def test_only_accounts_the_restorer_shares_a_project_with_are_offered(demo_project, client_for, outsider, make_user,
                                                                      _media, upload, choose):
    stranger = make_user("stranger")
    c = client_for(outsider)
    step = upload(c, "restore", _backup_file(_demo_backup(demo_project)), "Mine now")
    assert "stranger" not in step.content.decode()
    response = choose(c, step, {"person-0": str(stranger.pk)})
    assert response.status_code == 400 and "Select a valid choice" in response.content.decode()
    assert not Project.objects.filter(name="Mine now").exists()


@pytest.mark.parametrize("url", ["exchange_import_job", "exchange_import_job_send_again", "exchange_import_job_discard"])
def test_someone_elses_import_is_a_404_and_stays_as_it_was(demo_project, client_for, outsider, owner, _media, upload,
                                                             url):
    step = upload(client_for(outsider), "restore", _backup_file(_demo_backup(demo_project)), "Mine now")
    job = ProjectImportJob.objects.get()
    theirs = client_for(owner)
    assert theirs.post(reverse(url, args=[job.uuid]), {"person-0": str(owner.pk)}).status_code == 404
    assert theirs.get(step.wsgi_request.path).status_code == 404
    job.refresh_from_db()
    assert job.status == ProjectImportJob.Status.PEOPLE and job.blob is not None
    assert not Project.objects.filter(name="Mine now").exists()


def test_the_people_step_costs_the_same_queries_for_few_or_many_people(demo_project, client_for, outsider, _media,
                                                                       upload, django_assert_num_queries):
    from reports.tests.test_backup import _crafted

    c = client_for(outsider)
    few = upload(c, "restore", _backup_file(_demo_backup(demo_project))).wsgi_request.path
    many = upload(c, "restore", _backup_file(_crafted(_demo_backup(demo_project), [f"ghost{i}" for i in range(60)],
                                                      members=("data/projects.membership.json",)))).wsgi_request.path
    # session, user, the job (the worker read its people: the backup is not read again), the accounts to choose from
    with django_assert_num_queries(4):
        assert "Keep as a name only" not in c.get(few).content.decode()
    with django_assert_num_queries(4):
        assert c.get(many).content.decode().count("Keep as a name only") == 60


def test_a_junk_backup_is_explained_on_its_jobs_page_and_leaves_nothing(client_for, outsider, _media, upload):
    before = Project.objects.count()
    page = upload(client_for(outsider), "restore", SimpleUploadedFile("x.zip", b"junk"))
    assert "This backup cannot be restored: x.zip: not a ZIP archive" in page.content.decode()
    assert Project.objects.count() == before and not StoredBlob.objects.exists()


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
def test_an_undecodable_or_unstorable_source_is_explained_and_creates_nothing(client_for, outsider, data, message,
                                                                              upload):
    before = Project.objects.count()
    page = upload(client_for(outsider), "qdpx", _qdpx_with_source(data))
    assert message in page.content.decode()
    assert Project.objects.count() == before


def test_a_deeply_nested_backup_member_is_explained_and_creates_nothing(demo_project, client_for, outsider, upload):
    buf = io.BytesIO()
    project_backup(project=demo_project, out=buf)
    src, out = zipfile.ZipFile(io.BytesIO(buf.getvalue())), io.BytesIO()
    with zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            deep = b"[" * 100_000 + b"]" * 100_000
            dst.writestr(info.filename, deep if info.filename == "data/interviews.turn.json" else src.read(info))
    before = Project.objects.count()
    page = upload(client_for(outsider), "restore", SimpleUploadedFile("demo.zip", out.getvalue()))
    assert ("This backup cannot be restored: demo.zip: data/interviews.turn.json: data nested deeper than 100 levels "
            "at line 1, column 101") in page.content.decode()
    assert Project.objects.count() == before
