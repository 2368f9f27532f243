"""Import pages: upload, preview choices, progress fragment, permissions, query counts."""

from __future__ import annotations

import io
import json
import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from interviews.models import ImportJob, Interview, Participant, Turn
from interviews.services_import import ImportOptions, importjob_create, importjob_queue, importjob_run
from projects.blobs import blob_create, blobs_delete
from projects.models import StoredBlob

SAMPLES = Path(__file__).resolve().parents[3] / "shared" / "samples"
CHATGPT = SAMPLES / "chatgpt" / "chatgpt2graph-conversations.json"
CLAUDE = SAMPLES / "claude" / "claude-history-synthetic-conversations.json"

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path


def start_url(project) -> str:
    return reverse("interviews:import_start", args=[project.uuid])


def job_url(job) -> str:
    return reverse("interviews:import_job", args=[job.project.uuid, job.uuid])


def upload(path: Path) -> SimpleUploadedFile:
    return SimpleUploadedFile(path.name, path.read_bytes())


def test_upload_page_for_members_shows_the_form(client_for, project, analyst):
    response = client_for(analyst).get(start_url(project))
    assert response.status_code == 200
    assert b'name="files"' in response.content and b"Upload and preview" in response.content


def test_upload_page_tells_viewers_they_cannot_import(client_for, project, viewer):
    response = client_for(viewer).get(start_url(project))
    assert response.status_code == 200
    assert b'name="files"' not in response.content and b"read-only" in response.content


def test_upload_page_is_404_for_outsiders(client_for, project, outsider):
    assert client_for(outsider).get(start_url(project)).status_code == 404


def test_upload_creates_a_job_and_redirects_to_its_preview(client_for, project, analyst):
    client = client_for(analyst)
    response = client.post(start_url(project), {"files": [upload(CLAUDE)], "format": "auto"})
    job = ImportJob.objects.get()
    assert response.status_code == 302 and response["Location"] == job_url(job)
    page = client.get(job_url(job)).content.decode()
    assert "Build a sortable data table in React" in page
    assert page.count('name="conversations"') == 3
    assert Interview.objects.count() == 0


def test_upload_by_viewer_is_403(client_for, project, viewer):
    response = client_for(viewer).post(start_url(project), {"files": [upload(CLAUDE)]})
    assert response.status_code == 403
    assert ImportJob.objects.count() == 0


def test_upload_by_outsider_is_404(client_for, project, outsider):
    assert client_for(outsider).post(start_url(project), {"files": [upload(CLAUDE)]}).status_code == 404
    assert ImportJob.objects.count() == 0


def test_bad_upload_shows_the_message_inline(client_for, project, analyst):
    bad = SimpleUploadedFile("notes.txt", b"Just prose.\n")
    response = client_for(analyst).post(start_url(project), {"files": [bad]})
    assert response.status_code == 200
    assert "notes.txt: expected speaker labels at the start of lines" in response.content.decode()
    assert ImportJob.objects.count() == 0


def test_empty_upload_is_refused_inline(client_for, project, analyst):
    response = client_for(analyst).post(start_url(project), {"format": "auto"})
    assert response.status_code == 200 and b"Choose at least one file" in response.content


def text_job(project, user):
    f = SimpleUploadedFile("talk.txt", b"Alice: Hello?\nBob: Hi.\nAlice: Bye?\nBob: Bye.\n")
    return importjob_create(project=project, user=user, uploads=[f])


def test_preview_maps_labels_and_creates_the_participant(client_for, project, analyst, django_capture_on_commit_callbacks):
    job = text_job(project, analyst)
    page = client_for(analyst).get(job_url(job)).content.decode()
    assert "<code>Alice</code> is the" in page and "<code>Bob</code> is the" in page
    assert '<option value="text">not a speaker: part of the text</option>' in page
    with django_capture_on_commit_callbacks(execute=True):
        response = client_for(analyst).post(reverse("interviews:import_job_start", args=[project.uuid, job.uuid]), {
            "conversations": [job.preview["files"][0]["conversations"][0]["key"]],
            "label-0-0": "participant", "label-0-1": "interviewer",
            "participant": "new", "new_participant": "Bob's bot", "depth": "brief",
        })
    assert response.status_code == 302
    job.refresh_from_db()
    assert job.status == ImportJob.Status.DONE, job.errors
    interview = Interview.objects.get()
    assert interview.participant.label == "Bob's bot" and interview.depth == "brief"
    assert list(Turn.objects.order_by("position").values_list("speaker", flat=True)) == [
        "participant", "interviewer", "participant", "interviewer"]
    summary = client_for(analyst).get(job_url(job)).content.decode()
    assert "1 interview imported (4 turns" in summary


def test_start_with_nothing_ticked_shows_an_inline_error(client_for, project, analyst):
    job = text_job(project, analyst)
    response = client_for(analyst).post(reverse("interviews:import_job_start", args=[project.uuid, job.uuid]),
                                        {"participant": "auto"})
    assert response.status_code == 200
    assert "Tick at least one conversation to import." in response.content.decode()
    job.refresh_from_db()
    assert job.status == ImportJob.Status.UPLOADED


def test_an_error_keeps_every_choice_made_so_the_next_submit_imports_what_was_chosen(client_for, project, analyst):
    job = text_job(project, analyst)
    existing = Participant.objects.create(project=project, label="Claude")
    url = reverse("interviews:import_job_start", args=[project.uuid, job.uuid])
    key = job.preview["files"][0]["conversations"][0]["key"]
    page = client_for(analyst).post(url, {"conversations": [key], "label-0-0": "participant", "label-0-1": "interviewer",
                                          "participant": "new", "new_participant": " ", "depth": "brief"}).content.decode()
    assert "Give the new participant a label" in page
    assert '<option value="new" selected>' in page and f'<option value="{existing.uuid}" selected>' not in page
    assert '<option value="brief" selected>' in page and '<option value="comprehensive" selected>' not in page
    assert 'aria-invalid="true"' in page and 'id="id_new_participant"' in page
    first, second = (re.search(rf'<select name="label-0-{i}".*?</select>', page, re.S).group(0) for i in (0, 1))
    assert '<option value="participant" selected>' in first and '<option value="interviewer" selected>' in second
    page = client_for(analyst).post(url, {"participant": existing.uuid, "depth": "brief"}).content.decode()
    assert f'<option value="{existing.uuid}" selected>' in page


def test_start_by_viewer_is_403_and_outsider_404(client_for, project, analyst, viewer, outsider):
    job = text_job(project, analyst)
    url = reverse("interviews:import_job_start", args=[project.uuid, job.uuid])
    data = {"conversations": [job.preview["files"][0]["conversations"][0]["key"]], "participant": "auto"}
    assert client_for(viewer).post(url, data).status_code == 403
    assert client_for(outsider).post(url, data).status_code == 404
    assert client_for(outsider).get(job_url(job)).status_code == 404
    job.refresh_from_db()
    assert job.status == ImportJob.Status.UPLOADED


def test_job_of_another_project_is_404(client_for, project, analyst, make_user):
    from projects.models import Membership, Project, Role

    other = Project.objects.create(name="Other")
    Membership.objects.create(project=other, user=analyst, role=Role.OWNER)
    job = text_job(other, analyst)
    url = reverse("interviews:import_job", args=[project.uuid, job.uuid])
    assert client_for(analyst).get(url).status_code == 404


def test_progress_fragment_while_running(client_for, project, analyst):
    job = importjob_create(project=project, user=analyst, uploads=[upload(CLAUDE)])
    importjob_queue(job=job, options=ImportOptions())
    response = client_for(analyst).get(job_url(job), headers={"HX-Request": "true"})
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="job-status"')
    assert 'hx-trigger="every 1s"' in html and '<progress id="import-progress" max="3" value="0"' in html
    importjob_run(job_id=job.id)
    html = client_for(analyst).get(job_url(job), headers={"HX-Request": "true"}).content.decode()
    assert "hx-trigger" not in html and "3 interviews imported" in html


def test_failed_job_shows_the_error(client_for, project, analyst, tmp_path):
    job = importjob_create(project=project, user=analyst, uploads=[upload(CLAUDE)])
    importjob_queue(job=job, options=ImportOptions())
    spoiled = blob_create(source=io.BytesIO(b'[{"uuid": "x", "chat_messages": "oops"}]'), name="x", keep=timedelta(days=1))
    blobs_delete([job.files[0]["blob"]])
    job.files[0].update(blob=str(spoiled.uuid), size=spoiled.size)  # the stored file went bad
    job.save(update_fields=["files"])
    importjob_run(job_id=job.id)
    html = client_for(analyst).get(job_url(job)).content.decode()
    assert "Nothing was imported" in html
    assert "field &#x27;chat_messages&#x27;: expected a list of messages" in html
    assert Interview.objects.count() == 0


def test_recent_jobs_list_queries_do_not_grow(client_for, project, analyst, django_assert_num_queries):
    client = client_for(analyst)
    text_job(project, analyst)
    # session, user, membership (+project), recent jobs (+creator), unread-mentions badge
    with django_assert_num_queries(5):
        client.get(start_url(project))
    for _ in range(4):
        text_job(project, analyst)
    with django_assert_num_queries(5):
        client.get(start_url(project))


def test_preview_queries_do_not_grow_with_conversations(client_for, project, analyst, django_assert_num_queries):
    Participant.objects.create(project=project, label="GPT-4o")
    small = text_job(project, analyst)
    big = importjob_create(project=project, user=analyst, uploads=[upload(CLAUDE), upload(CHATGPT)])
    client = client_for(analyst)
    # session, user, membership (+project), job (+creator), participants, unread-mentions badge
    with django_assert_num_queries(6):
        client.get(job_url(small))
    with django_assert_num_queries(6):
        client.get(job_url(big))


def test_file_over_the_size_limit_is_refused_with_a_message(client_for, project, analyst, settings):
    settings.RTA_MAX_UPLOAD_BYTES = 1000
    response = client_for(analyst).post(start_url(project), {"files": [upload(CLAUDE)]})
    assert ("claude-history-synthetic-conversations.json: expected a file of at most 1000 bytes, found 6.6 KB"
            in response.content.decode())
    assert ImportJob.objects.count() == 0


def test_zip_of_transcripts_previews_every_conversation(client_for, project, analyst):
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("study/one.txt", "User: Hi\nGPT-4o: Hello\n")
        zf.writestr("study/two.md", "#### You:\nQ\n\n#### ChatGPT:\nA\n")
    response = client_for(analyst).post(start_url(project), {"files": [SimpleUploadedFile("study.zip", buf.getvalue())]})
    job = ImportJob.objects.get()
    assert response.status_code == 302
    keys = [c["key"] for c in job.preview["files"][0]["conversations"]]
    assert keys == ["study.zip/study/one.txt#0", "study.zip/study/two.md#0"]
    page = client_for(analyst).get(job_url(job)).content.decode()
    assert "study.zip/study/one.txt" in page and "<code>GPT-4o</code> is the" in page


def test_large_upload_is_read_by_the_worker_then_offers_the_choices(
        client_for, project, analyst, settings, django_capture_on_commit_callbacks):
    settings.RTA_IMPORT_INLINE_PREVIEW_BYTES = 100
    client = client_for(analyst)
    with django_capture_on_commit_callbacks() as callbacks:
        client.post(start_url(project), {"files": [upload(CLAUDE)]})
    job = ImportJob.objects.get()
    assert job.status == ImportJob.Status.ANALYSING
    fragment = client.get(job_url(job), headers={"HX-Request": "true"}).content.decode()
    assert "Reading the files…" in fragment and 'hx-trigger="every 1s"' in fragment
    for callback in callbacks:
        callback()  # the preview task, in-process
    job.refresh_from_db()
    assert job.status == ImportJob.Status.UPLOADED and job.progress_total == 3
    assert client.get(job_url(job), headers={"HX-Request": "true"})["HX-Refresh"] == "true"
    assert client.get(job_url(job)).content.decode().count('name="conversations"') == 3


def test_large_bad_upload_fails_in_the_worker_with_the_message(
        client_for, project, analyst, settings, django_capture_on_commit_callbacks):
    settings.RTA_IMPORT_INLINE_PREVIEW_BYTES = 100
    bad = SimpleUploadedFile("conversations.json", CLAUDE.read_bytes()[:-30])
    with django_capture_on_commit_callbacks(execute=True):
        client_for(analyst).post(start_url(project), {"files": [bad]})
    job = ImportJob.objects.get()
    assert job.status == ImportJob.Status.FAILED
    assert job.errors[0].startswith("conversations.json: line ")
    assert "Nothing was imported" in client_for(analyst).get(job_url(job)).content.decode()


def test_discard_removes_the_upload(client_for, project, analyst, viewer, outsider, django_capture_on_commit_callbacks):
    job = text_job(project, analyst)
    blob = job.files[0]["blob"]
    url = reverse("interviews:import_job_discard", args=[project.uuid, job.uuid])
    assert client_for(viewer).post(url).status_code == 403
    assert client_for(outsider).post(url).status_code == 404
    with django_capture_on_commit_callbacks(execute=True):
        response = client_for(analyst).post(url)
    assert response.status_code == 302 and response["Location"] == start_url(project)
    assert not ImportJob.objects.exists() and not StoredBlob.objects.filter(uuid=blob).exists()


def test_a_started_import_cannot_be_discarded(client_for, project, analyst):
    job = text_job(project, analyst)
    importjob_queue(job=job, options=ImportOptions())
    ImportJob.objects.filter(pk=job.pk).update(status=ImportJob.Status.RUNNING)  # the worker took it
    response = client_for(analyst).post(reverse("interviews:import_job_discard", args=[project.uuid, job.uuid]), follow=True)
    assert "it can no longer be discarded" in response.content.decode()
    assert ImportJob.objects.filter(pk=job.pk).exists()


QDPX_SAMPLES = sorted((SAMPLES / "qdpx").glob("*.qdpx"))


@pytest.mark.parametrize("sample", QDPX_SAMPLES, ids=[p.name for p in QDPX_SAMPLES])
@pytest.mark.parametrize("renamed", [False, True], ids=["as-qdpx", "renamed-zip"])
def test_a_qdpx_dropped_here_is_sent_to_import_a_project(client_for, project, analyst, sample, renamed):
    client = client_for(analyst)
    name = sample.stem + ".zip" if renamed else sample.name
    response = client.post(start_url(project), {"files": [SimpleUploadedFile(name, sample.read_bytes())]}, follow=True)
    assert response.redirect_chain == [(reverse("exchange_import"), 302)]
    page = response.content.decode()
    assert f"{name} is a REFI-QDA project (.qdpx)" in page and "Import a project" in page
    assert "Who is speaking" not in page
    assert not ImportJob.objects.exists()


def test_a_qdc_codebook_dropped_here_is_sent_to_the_codebook_import(client_for, project, analyst):
    qdc = (b'<?xml version="1.0" encoding="utf-8"?>\n<CodeBook xmlns="urn:QDA-XML:codebook:1.0" origin="x">'
           b"<Codes/></CodeBook>")
    client = client_for(analyst)
    response = client.post(start_url(project), {"files": [SimpleUploadedFile("codes.xml", qdc)]}, follow=True)
    assert response.redirect_chain == [(reverse("coding:import", args=[project.uuid]), 302)]
    assert "codes.xml is a REFI-QDA codebook (.qdc)" in response.content.decode()
    assert not ImportJob.objects.exists()


def test_a_large_qdpx_is_recognised_before_the_worker_reads_it(client_for, project, analyst, settings):
    settings.RTA_IMPORT_INLINE_PREVIEW_BYTES = 10
    response = client_for(analyst).post(start_url(project), {"files": [upload(QDPX_SAMPLES[0])]})
    assert response.status_code == 302 and response["Location"] == reverse("exchange_import")
    assert not ImportJob.objects.exists()


def test_a_depth_bomb_upload_is_refused_with_where_it_nests_too_deep(client_for, project, analyst, settings):
    settings.RTA_IMPORT_INLINE_PREVIEW_BYTES = 5 * 1024 * 1024  # read in the request, so refused there
    bomb = b'[{"title": "t", "mapping": ' + b'{"a": ' * 100_000 + b"1" + b"}" * 100_000 + b"}]"
    response = client_for(analyst).post(start_url(project), {"files": [SimpleUploadedFile("conversations.json", bomb)]},
                                        follow=True)
    assert response.status_code == 200
    assert "conversations.json: line 1, column " in response.content.decode()
    assert "found data nested deeper than 100 levels" in response.content.decode()
    assert Interview.objects.count() == 0


def queued_and_lost(project, user, *, seconds_ago: float = 61) -> ImportJob:
    """Queued, its send lost (the on-commit send never runs in these tests) a while ago."""
    job = text_job(project, user)
    importjob_queue(job=job, options=ImportOptions())
    ImportJob.objects.filter(pk=job.pk).update(sent_at=timezone.now() - timedelta(seconds=seconds_ago))
    job.refresh_from_db()
    return job


def test_an_import_waiting_a_minute_offers_send_again_and_discard_to_writers(client_for, project, analyst, viewer):
    fresh = queued_and_lost(project, analyst, seconds_ago=5)
    assert "job-send-again" not in client_for(analyst).get(job_url(fresh)).content.decode()
    job = queued_and_lost(project, analyst)
    fragment = client_for(analyst).get(job_url(job), headers={"HX-Request": "true"}).content.decode()
    assert "No worker has picked this up" in fragment
    assert reverse("interviews:import_job_send_again", args=[project.uuid, job.uuid]) in fragment
    assert reverse("interviews:import_job_discard", args=[project.uuid, job.uuid]) in fragment
    page = client_for(viewer).get(job_url(job)).content.decode()
    assert "No worker has picked this up" in page and "job-send-again" not in page


def test_send_again_runs_a_lost_import(client_for, project, analyst, viewer, outsider):
    job = queued_and_lost(project, analyst)
    url = reverse("interviews:import_job_send_again", args=[project.uuid, job.uuid])
    assert client_for(viewer).post(url).status_code == 403
    assert client_for(outsider).post(url).status_code == 404
    response = client_for(analyst).post(url, follow=True)
    assert "Sent to the worker again." in response.content.decode()
    job.refresh_from_db()
    assert job.status == ImportJob.Status.DONE and Interview.objects.count() == 1  # in-process "worker"
    again = client_for(analyst).post(url, follow=True)
    assert "no longer waiting for the worker" in again.content.decode()
    assert Interview.objects.count() == 1


def test_a_lost_import_can_be_discarded(client_for, project, analyst, django_capture_on_commit_callbacks):
    job = queued_and_lost(project, analyst)
    blob = job.files[0]["blob"]
    with django_capture_on_commit_callbacks(execute=True):
        response = client_for(analyst).post(reverse("interviews:import_job_discard", args=[project.uuid, job.uuid]))
    assert response.status_code == 302 and not ImportJob.objects.exists() and not StoredBlob.objects.filter(uuid=blob).exists()
    assert importjob_run(job_id=job.pk) is None  # its task, if it ever arrives, finds nothing to do


def chatgpt_export(titles: list[str], empty: int = 0) -> SimpleUploadedFile:
    def conversation(title: str) -> dict:
        return {"title": title, "create_time": 1, "current_node": "b", "mapping": {
            "a": {"id": "a", "message": None, "parent": None, "children": ["b"]},
            "b": {"id": "b", "parent": "a", "children": [], "message": {
                "author": {"role": "user"}, "content": {"content_type": "text", "parts": [f"About {title}?"]}}}}}

    data = [conversation(t) for t in titles] + [{"title": "Stub", "mapping": {}}] * empty
    return SimpleUploadedFile("conversations.json", json.dumps(data).encode())


def test_the_preview_lists_a_bounded_number_of_conversations_and_offers_the_rest_together(
        client_for, project, analyst, monkeypatch, django_capture_on_commit_callbacks):
    # The hostile export's preview rendered 133 MB of HTML in 226 s: one row per conversation, empty ones too.
    from interviews import views_import

    monkeypatch.setattr(views_import, "PREVIEW_ROWS", 3)
    job = importjob_create(project=project, user=analyst, uploads=[chatgpt_export([f"T{n}" for n in range(5)], empty=4)])
    page = client_for(analyst).get(job_url(job)).content.decode()
    assert page.count('name="conversations"') == 3 and "T2" in page and "T3" not in page
    assert "5 conversations found (4 more with no visible turns left out" in page
    assert "and 2 more conversations, not listed here: import them too" in page
    first = job.preview["files"][0]["conversations"][0]["key"]
    with django_capture_on_commit_callbacks(execute=True):
        client_for(analyst).post(reverse("interviews:import_job_start", args=[project.uuid, job.uuid]), {
            "conversations": [first], "unlisted": "1", "participant": "auto", "depth": "brief"})
    assert sorted(Interview.objects.values_list("title", flat=True)) == ["T0", "T3", "T4"]
