"""Hostile uploads through the public upload pages (the parsers are the apps' own; each app
also tests its parser directly): ZIP bombs, path traversal, XML entity expansion and
external entities, oversized files. Each is refused with a clear message and leaves nothing.
"""

from __future__ import annotations

import io
import json
import tempfile
import zipfile
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from coding.models import Code
from interviews.models import ImportJob, Interview
from interviews.tests.factories import xlsx
from projects.models import Project

pytestmark = pytest.mark.django_db

# A file an external entity would leak, holding a marker no page can contain by chance (the
# machine's hostname, used before, is short enough to turn up inside a random CSRF token).
SECRET_FILE = Path(tempfile.gettempdir()) / "rta-hostile-upload-secret.txt"
SECRET = "canary-a2f9c41e7d6b583f"


@pytest.fixture(autouse=True)
def _secret_file():
    SECRET_FILE.write_text(SECRET)
BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<CodeBook xmlns="urn:QDA-XML:codebook:1.0" origin="evil"><Codes><Code guid="a1b2c3d4-0000-4000-8000-000000000001" name="&lol9;" isCodable="true"/></Codes></CodeBook>
"""
XXE = f"""<?xml version="1.0"?>
<!DOCTYPE c [<!ENTITY xxe SYSTEM "file://{SECRET_FILE}">]>
<CodeBook xmlns="urn:QDA-XML:codebook:1.0" origin="evil"><Codes><Code guid="a1b2c3d4-0000-4000-8000-000000000002" name="&xxe;" isCodable="true"/></Codes></CodeBook>
"""
XXE_PROJECT = f"""<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE Project [<!ENTITY xxe SYSTEM "file://{SECRET_FILE}">]>
<Project xmlns="urn:QDA-XML:project:1.0" name="&xxe;" origin="evil"><Users><User guid="a1b2c3d4-0000-4000-8000-000000000003" name="x"/></Users></Project>
"""


def _zip(entries: dict[str, bytes], compression=zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return buffer.getvalue()


BOMB_LIMIT = 16 * 1024 * 1024


@pytest.fixture(autouse=True)
def _small_limits(settings):
    # The same checks as with the production limit (1 GiB), on a bomb that is quick to build.
    settings.RTA_MAX_UNCOMPRESSED_BYTES = BOMB_LIMIT


def _bomb(name: str, size: int = 4 * BOMB_LIMIT) -> bytes:
    """A ~60 KB archive that inflates to four times the uncompressed limit."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive, archive.open(name, "w", force_zip64=True) as entry:
        chunk = b"\0" * (8 * 1024 * 1024)
        for _ in range(size // len(chunk)):
            entry.write(chunk)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def bomb_qdpx() -> bytes:
    return _bomb("project.qde")


# --- codebook (.qdc) through the codebook import page ---------------------------------------

@pytest.mark.parametrize("payload,what", [(BILLION_LAUGHS, "entity expansion"), (XXE, "external entity")])
def test_codebook_import_refuses_hostile_xml(project, analyst, client_for, payload, what):
    url = reverse("coding:import", args=[project.uuid])
    response = client_for(analyst).post(url, {"file": SimpleUploadedFile("evil.qdc", payload.encode(), "application/xml")})
    assert response.status_code == 400, what
    body = response.content.decode()
    assert "evil.qdc" in body  # the message names the file
    assert not Code.objects.filter(project=project).exists()
    assert SECRET not in body


# --- projects (.qdpx) through the project import page ----------------------------------------

@pytest.fixture
def import_qdpx(django_capture_on_commit_callbacks):
    """Upload a .qdpx, let the worker (in-process here) read it, and return the import's page."""

    def post(client, content: bytes, name: str = "evil.qdpx"):
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(reverse("exchange_import"),
                                   {"kind": "qdpx", "qdpx-file": SimpleUploadedFile(name, content, "application/zip")})
        return client.get(response["Location"])

    return post


def test_qdpx_zip_bomb_is_refused_without_inflating(owner, client_for, bomb_qdpx, import_qdpx):
    before = Project.objects.count()
    response = import_qdpx(client_for(owner), bomb_qdpx)
    body = response.content.decode()
    assert response.status_code in (200, 400) and "cannot be imported" in body
    assert Project.objects.count() == before


def test_qdpx_path_traversal_is_refused(owner, client_for, import_qdpx):
    content = _zip({"project.qde": b"<Project/>", "../../../../tmp/rta-evil.txt": b"owned", "sources/../../evil.txt": b"x"})
    before = Project.objects.count()
    response = import_qdpx(client_for(owner), content)
    assert "cannot be imported" in response.content.decode()
    assert Project.objects.count() == before
    assert not Path("/tmp/rta-evil.txt").exists()


def test_qdpx_external_entity_is_refused(owner, client_for, import_qdpx):
    before = Project.objects.count()
    response = import_qdpx(client_for(owner), _zip({"project.qde": XXE_PROJECT.encode()}))
    body = response.content.decode()
    assert "cannot be imported" in body
    assert Project.objects.count() == before
    assert SECRET not in body


def test_a_qdpx_holding_more_xml_than_a_project_may_is_refused_and_the_cap_is_the_settings(owner, client_for,
                                                                                           import_qdpx, settings):
    import refiqda.safexml
    from refiqda.tests.helpers import one_source_project

    content = one_source_project("word " * 200, [(5 * k, 5 * k + 4, None) for k in range(40)])
    nodes = refiqda.safexml.node_count(zipfile.ZipFile(io.BytesIO(content)).read("project.qde"))
    assert nodes < refiqda.safexml.MAX_NODES < settings.RTA_QDPX_MAX_NODES  # projects may hold more than codebooks
    before = Project.objects.count()
    settings.RTA_QDPX_MAX_NODES = nodes - 1
    body = import_qdpx(client_for(owner), content, name="large.qdpx").content.decode()
    assert (f"This file cannot be imported: large.qdpx: project.qde: the file holds about {nodes:,} XML elements and "
            f"attributes, more than the {nodes - 1:,} that can be read at once") in body
    assert Project.objects.count() == before
    settings.RTA_QDPX_MAX_NODES = nodes
    import_qdpx(client_for(owner), content, name="large.qdpx")
    assert Project.objects.count() == before + 1


# --- transcripts through the interview import page --------------------------------------------

def _upload_transcripts(client, project, name: str, content: bytes):
    """The upload page; a refused upload re-renders it with the reason (200 or 400), never a redirect onwards."""
    return client.post(reverse("interviews:import_start", args=[project.uuid]),
                       {"format": "auto", "files": [SimpleUploadedFile(name, content, "application/zip")]})


def test_transcript_zip_bomb_is_refused(project, analyst, client_for):
    response = _upload_transcripts(client_for(analyst), project, "conversations.zip", _bomb("conversations.json"))
    _assert_refused(response, "conversations.zip")
    assert not Interview.objects.filter(project=project).exists()


def test_transcript_zip_with_path_traversal_is_refused(project, analyst, client_for):
    content = _zip({"../../../tmp/rta-evil.json": b"[]", "conversations.json": b"[]"})
    response = _upload_transcripts(client_for(analyst), project, "export.zip", content)
    _assert_refused(response, "export.zip")
    assert not Interview.objects.filter(project=project).exists()
    assert not Path("/tmp/rta-evil.json").exists()


def test_an_upload_over_the_size_limit_is_refused_clearly(project, analyst, client_for, settings):
    settings.RTA_MAX_UPLOAD_BYTES = 1024
    response = _upload_transcripts(client_for(analyst), project, "big.json", b"[" + b" " * 4096 + b"]")
    _assert_refused(response, "big.json")
    assert not ImportJob.objects.filter(project=project, status=ImportJob.Status.DONE).exists()
    assert not Interview.objects.filter(project=project).exists()


def _assert_refused(response, filename: str) -> None:
    assert response.status_code in (200, 400), response.status_code
    body = response.content.decode()
    alert = body[body.find('role="alert"'):][:600]
    assert 'role="alert"' in body and filename in alert, f"no clear message naming {filename}: {alert!r}"


# --- dates a database cannot hold, in any imported file ----------------------------------------

# Read as written, both are valid ISO dates, but in UTC (as the database stores them) they fall in 1 BC and in the
# year 10000: PostgreSQL stores them, and then no page that reads the row can load it.
UNSTORABLE_DATES = ["0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00"]


def _pages_load(client, project) -> None:
    for name in ("interviews:list", "interviews:statistics"):
        assert client.get(reverse(name, args=[project.uuid])).status_code == 200, name
    for interview in Interview.objects.filter(project=project):
        assert client.get(reverse("interviews:interview_detail", args=[project.uuid, interview.uuid])).status_code == 200


@pytest.mark.parametrize("stamp", UNSTORABLE_DATES)
def test_a_chat_export_dated_beyond_what_can_be_stored_imports_without_the_date(project, owner, client_for, tmp_path,
                                                                                stamp):
    from interviews.services_import import import_paths

    path = tmp_path / "conversations.json"
    messages = [{"uuid": f"m{i}", "sender": sender, "text": f"Turn {i}.", "created_at": stamp,
                 "content": [{"type": "text", "text": f"Turn {i}."}]} for i, sender in enumerate(["human", "assistant"])]
    path.write_text(json.dumps([{"uuid": "c1", "name": "Dated", "created_at": stamp, "chat_messages": messages}]))
    import_paths(project=project, user=owner, paths=[str(path)])
    assert Interview.objects.get(project=project).conducted_at is None
    _pages_load(client_for(owner), project)


@pytest.mark.parametrize("stamp", UNSTORABLE_DATES)
def test_a_turn_table_dated_beyond_what_can_be_stored_is_refused_naming_the_row(project, owner, tmp_path, stamp):
    from interviews.parsers import ParseError
    from interviews.services_import import import_paths

    path = tmp_path / "turns.csv"
    path.write_text(f"speaker,text,timestamp\nUser,Hello.,2025-03-01T10:00:00\nAssistant,Hi.,{stamp}\n")
    with pytest.raises(ParseError, match=r"turns\.csv: line 3, column 'timestamp'.*years 1 to 9999"):
        import_paths(project=project, user=owner, paths=[str(path)])
    assert not Interview.objects.filter(project=project).exists()


@pytest.mark.parametrize("stamp", UNSTORABLE_DATES)
def test_a_qdpx_dated_beyond_what_can_be_stored_imports_without_the_date_and_says_so(owner, client_for, stamp):
    from refiqda.tests.helpers import G, codebook, make_zip, project_xml
    from reports.exchange import project_import_qdpx

    body = (codebook((1, "c1")) + f'<Sources><TextSource guid="{G(50)}" name="doc" creationDateTime="{stamp}" '
            f'plainTextPath="internal://{G(50)}.txt"/></Sources>')
    content = make_zip({"project.qde": project_xml(body), f"sources/{G(50)}.txt": "Hello there."})
    result = project_import_qdpx(source=content, owner=owner, filename="dated.qdpx")
    assert any(f"creationDateTime={stamp!r}" in w for w in result.warnings), result.warnings
    assert Interview.objects.get(project=result.project).conducted_at is None
    _pages_load(client_for(owner), result.project)


# --- damaged archives: bytes that do not unpack ---------------------------------------------------

def test_a_damaged_transcript_zip_is_refused_naming_the_file(project, analyst, client_for):
    from refiqda.tests.helpers import damaged

    export = _zip({"conversations.json": json.dumps([{"uuid": "c", "name": "n", "chat_messages": [
        {"uuid": "m", "sender": "human", "text": "Hello there. " * 100, "content": []}]}]).encode()})
    response = _upload_transcripts(client_for(analyst), project, "export.zip", damaged(export, "conversations.json"))
    _assert_refused(response, "export.zip")
    assert not Interview.objects.filter(project=project).exists()


def test_a_damaged_workbook_is_refused_naming_the_file_wherever_it_is_uploaded(project, analyst, client_for):
    from interviews.models import Participant
    from probes.services import probe_create
    from refiqda.tests.helpers import damaged

    def broken(rows):
        return damaged(xlsx(rows), "xl/worksheets/sheet1.xml")

    client = client_for(analyst)
    turns = _upload_transcripts(client, project, "turns.xlsx", broken([["speaker", "text"]] + [["User", "Hi " * 50]] * 20))
    _assert_refused(turns, "turns.xlsx")
    participant = Participant.objects.create(project=project, label="GPT-4o")
    sheet = client.post(reverse("interviews:participant_variables", args=[project.uuid]), {
        "action": "upload", "sheet": SimpleUploadedFile("vars.xlsx", broken([["participant", "family"]] + [["GPT-4o", "GPT " * 50]] * 20))})
    _assert_refused(sheet, "vars.xlsx")
    participant.refresh_from_db()
    assert participant.attributes == {}
    probe = probe_create(project=project, user=analyst, name="Pilot")
    items = client.post(reverse("probes:items_import", args=[project.uuid, probe.uuid]), {
        "file": SimpleUploadedFile("items.xlsx", broken([["text", "label"]] + [["A review. " * 20, "a"]] * 20)),
        "text_column": "text", "label_columns": "label"})
    assert items.status_code == 400 and "items.xlsx" in items.content.decode()
    assert not probe.items.exists()
