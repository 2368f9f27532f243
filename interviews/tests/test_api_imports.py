"""REST API imports in two steps, as on the import page: upload → preview → start with the user's choices."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from interviews.models import ImportJob, Interview, Participant, Turn
from interviews.services_import import import_paths, importjob_preview
from projects.models import StoredBlob

SAMPLES = Path(__file__).resolve().parents[3] / "shared" / "samples"
CLAUDE = SAMPLES / "claude" / "claude-history-synthetic-conversations.json"
TALK = b"Alice: Hello?\nBob: Hi.\nAlice: Bye?\nBob: Bye.\n"

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path


def api(project, tail: str) -> str:
    return f"/api/projects/{project.uuid}/{tail}"


def upload(client, project, name: str, content: bytes) -> dict:
    response = client.post(api(project, "imports/"), {"files": [SimpleUploadedFile(name, content)], "start": "false"})
    assert response.status_code == 201, response.content
    return response.json()


def start(client, project, job: dict, body: dict):
    return client.post(api(project, f"imports/{job['uuid']}/start/"), body, content_type="application/json")


def keys(job: dict) -> list[str]:
    return [c["key"] for f in job["preview"]["files"] for c in f["conversations"]]


def test_upload_without_start_returns_the_preview_and_imports_nothing(client_for, project, analyst):
    job = upload(client_for(analyst), project, "talk.txt", TALK)
    assert job["status"] == "uploaded" and job["file_names"] == ["talk.txt"]
    [conversation] = job["preview"]["files"][0]["conversations"]
    assert conversation["key"] == "talk.txt#0" and conversation["turns"] == 4 and conversation["duplicate_of"] is None
    assert {"title", "started_at", "models", "format"} <= set(conversation)
    [labels] = job["preview"]["speaker_labels"]
    assert labels["source"] == "talk.txt" and [item["label"] for item in labels["labels"]] == ["Alice", "Bob"]
    assert "text" in labels["choices"]  # plain text lines may be folded into the turn before
    assert Interview.objects.count() == 0 and ImportJob.objects.get().status == ImportJob.Status.UPLOADED


def test_start_imports_with_the_mapped_labels_new_participant_and_depth(
        client_for, project, owner, django_capture_on_commit_callbacks):
    client = client_for(owner)
    job = upload(client, project, "talk.txt", TALK)
    with django_capture_on_commit_callbacks(execute=True):
        response = start(client, project, job, {
            "conversations": ["talk.txt#0"], "label_maps": {"talk.txt": {"Alice": "participant", "Bob": "interviewer"}},
            "participant": "new:Bob's bot", "depth": "brief"})
    assert response.status_code == 202, response.content
    assert response.json()["options"]["label_maps"] == {"talk.txt": {"Alice": "participant", "Bob": "interviewer"}}
    done = client.get(api(project, f"imports/{job['uuid']}/")).json()
    assert done["status"] == "done", done["errors"]
    interview = Interview.objects.get()
    assert interview.participant.label == "Bob's bot" and interview.depth == "brief"
    assert list(Turn.objects.order_by("position").values_list("speaker", flat=True)) == [
        "participant", "interviewer", "participant", "interviewer"]


def test_start_imports_only_the_chosen_conversations_for_an_existing_participant(
        client_for, project, analyst, django_capture_on_commit_callbacks):
    chosen = Participant.objects.create(project=project, label="Claude 3.5")
    client = client_for(analyst)
    job = upload(client, project, CLAUDE.name, CLAUDE.read_bytes())
    assert len(keys(job)) == 3
    titles = {c["key"]: c["title"] for c in job["preview"]["files"][0]["conversations"]}
    wanted = keys(job)[::2]
    with django_capture_on_commit_callbacks(execute=True):
        response = start(client, project, job, {"conversations": wanted, "participant": str(chosen.uuid)})
    assert response.status_code == 202, response.content
    assert set(Interview.objects.values_list("title", flat=True)) == {titles[k] for k in wanted}
    assert set(Interview.objects.values_list("participant", flat=True)) == {chosen.pk}
    assert Participant.objects.count() == 1


def test_duplicates_are_flagged_and_imported_again_only_when_allowed(
        client_for, project, owner, django_capture_on_commit_callbacks):
    import_paths(project=project, user=owner, paths=[str(CLAUDE)])
    client = client_for(owner)
    job = upload(client, project, CLAUDE.name, CLAUDE.read_bytes())
    assert all(c["duplicate_of"]["uuid"] for c in job["preview"]["files"][0]["conversations"])
    assert job["preview"]["files"][0]["imported_before"] is not None
    with django_capture_on_commit_callbacks(execute=True):
        assert start(client, project, job, {"conversations": keys(job)[:1], "allow_duplicates": True}).status_code == 202
    assert Interview.objects.count() == 4


@pytest.mark.parametrize(("body", "field", "named"), [
    ({"conversations": ["talk.txt#0", "talk.txt#7"]}, "conversations", "'talk.txt#7'"),
    ({"conversations": []}, "conversations", ""),
    ({"label_maps": {"other.txt": {"Alice": "participant"}}}, "label_maps", "other.txt"),
    ({"label_maps": {"talk.txt": {"Carol": "participant"}}}, "label_maps", "'Carol'"),
    ({"label_maps": {"talk.txt": {"Alice": "chatbot"}}}, "label_maps", "chatbot"),
    ({"participant": "00000000-0000-0000-0000-000000000000"}, "participant", "00000000-0000-0000-0000-000000000000"),
    ({"participant": "new:  "}, "participant", "new:"),
    ({"participant": "GPT-4o"}, "participant", "'GPT-4o'"),
    ({"depth": "deep"}, "depth", "deep"),
])
def test_bad_choices_are_400_naming_them_and_leave_the_upload_waiting(client_for, project, analyst, body, field, named):
    client = client_for(analyst)
    job = upload(client, project, "talk.txt", TALK)
    response = start(client, project, job, body)
    assert response.status_code == 400
    assert field in response.json() and named in str(response.json()[field]), response.json()
    stored = ImportJob.objects.get()
    assert stored.status == ImportJob.Status.UPLOADED and stored.options == {}
    assert Interview.objects.count() == 0 and Participant.objects.count() == 0


def test_a_csv_label_cannot_be_folded_into_text(client_for, project, analyst):
    client = client_for(analyst)
    csv = b"speaker,text\nUser,Hello?\nBot,Hi.\n"
    job = upload(client, project, "talk.csv", csv)
    [group] = job["preview"]["speaker_labels"]
    assert "text" not in group["choices"]
    label = group["labels"][0]["label"]
    response = start(client, project, job, {"label_maps": {"talk.csv": {label: "text"}}})
    assert response.status_code == 400 and "only plain text and Markdown" in str(response.json()["label_maps"])


def test_a_started_job_cannot_be_started_again(client_for, project, analyst, django_capture_on_commit_callbacks):
    client = client_for(analyst)
    job = upload(client, project, "talk.txt", TALK)
    with django_capture_on_commit_callbacks(execute=True):
        assert start(client, project, job, {}).status_code == 202
    again = start(client, project, job, {})
    assert again.status_code == 409 and "already been started" in again.json()["detail"]
    assert Interview.objects.count() == 1


def test_start_permissions(client_for, project, analyst, viewer, outsider):
    job = upload(client_for(analyst), project, "talk.txt", TALK)
    assert start(client_for(viewer), project, job, {}).status_code == 403
    assert start(client_for(outsider), project, job, {}).status_code == 404
    anonymous = start(Client(), project, job, {})
    assert anonymous.status_code == 401
    assert client_for(viewer).get(api(project, f"imports/{job['uuid']}/")).json()["preview"]["files"]
    assert client_for(outsider).get(api(project, f"imports/{job['uuid']}/")).status_code == 404
    assert ImportJob.objects.get().status == ImportJob.Status.UPLOADED


def test_upload_without_start_by_viewer_403_outsider_404_anonymous_401(client_for, project, viewer, outsider):
    for client, expected in ((client_for(viewer), 403), (client_for(outsider), 404), (Client(), 401)):
        data = {"files": [SimpleUploadedFile("talk.txt", TALK)], "start": "false"}
        assert client.post(api(project, "imports/"), data).status_code == expected
    assert ImportJob.objects.count() == 0


def test_one_call_import_with_a_bad_participant_is_400_and_leaves_nothing(client_for, project, analyst):
    response = client_for(analyst).post(api(project, "imports/"), {
        "files": [SimpleUploadedFile("talk.txt", TALK)], "participant": "nobody"})
    assert response.status_code == 400 and "'nobody'" in response.json()["participant"][0]
    assert ImportJob.objects.count() == 0


def test_job_detail_queries_do_not_grow_with_the_preview(client_for, project, analyst, django_assert_num_queries):
    client = client_for(analyst)
    small = upload(client, project, "talk.txt", TALK)
    large = upload(client, project, CLAUDE.name, CLAUDE.read_bytes())
    for job in (small, large):
        # session, user, membership (+project), the job
        with django_assert_num_queries(4):
            assert client.get(api(project, f"imports/{job['uuid']}/")).status_code == 200


def test_a_large_upload_can_be_started_once_the_worker_has_read_it(
        client_for, project, analyst, settings, django_capture_on_commit_callbacks):
    settings.RTA_IMPORT_INLINE_PREVIEW_BYTES = 100  # the sample counts as large: read in the worker
    client = client_for(analyst)
    job = upload(client, project, CLAUDE.name, CLAUDE.read_bytes())  # the preview task waits for a commit that never comes
    assert job["status"] == "analysing" and job["preview"]["files"] == []
    early = start(client, project, job, {})
    assert early.status_code == 409 and "still being read" in early.json()["detail"]
    importjob_preview(job_id=ImportJob.objects.get().pk)
    read = client.get(api(project, f"imports/{job['uuid']}/")).json()
    assert read["status"] == "uploaded" and len(keys(read)) == 3
    with django_capture_on_commit_callbacks(execute=True):
        assert start(client, project, read, {"conversations": keys(read)[:1]}).status_code == 202
    assert Interview.objects.count() == 1


def test_an_upload_can_be_discarded_until_it_starts(client_for, project, analyst, viewer, outsider, settings,
                                                    django_capture_on_commit_callbacks):
    client = client_for(analyst)
    job = upload(client, project, "talk.txt", TALK)
    url = api(project, f"imports/{job['uuid']}/")
    assert client_for(viewer).delete(url).status_code == 403
    assert client_for(outsider).delete(url).status_code == 404
    stored = StoredBlob.objects.filter(uuid=ImportJob.objects.get(uuid=job["uuid"]).files[0]["blob"])
    assert stored.exists()
    with django_capture_on_commit_callbacks(execute=True):
        assert client.delete(url).status_code == 204
    assert not ImportJob.objects.exists() and not stored.exists()
    started = upload(client, project, "talk.txt", TALK)
    with django_capture_on_commit_callbacks(execute=True):
        start(client, project, started, {})
    refused = client.delete(api(project, f"imports/{started['uuid']}/"))
    assert refused.status_code == 409 and "can no longer be discarded" in refused.json()["detail"]
    assert ImportJob.objects.filter(status=ImportJob.Status.DONE).count() == 1


def padded_export(size: int) -> bytes:
    """The Claude sample padded with JSON whitespace to `size` bytes: a big file that is quick to parse."""
    data = CLAUDE.read_bytes()
    return data + b" " * (size - len(data))


def test_an_11_mb_import_over_the_in_memory_upload_size_lands_whole(
        client_for, project, analyst, settings, django_capture_on_commit_callbacks):
    # Over FILE_UPLOAD_MAX_MEMORY_SIZE the upload is a temporary file on disk (this was a 500),
    # and exactly at the import limit it is still accepted.
    content = padded_export(11 * 1024 * 1024)
    assert len(content) > settings.FILE_UPLOAD_MAX_MEMORY_SIZE
    settings.RTA_MAX_UPLOAD_BYTES = len(content)
    client = client_for(analyst)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(api(project, "imports/"), {
            "files": [SimpleUploadedFile("conversations.json", content)], "participant": "new:Claude 3.5"})
    assert response.status_code == 202, response.content
    job = client.get(api(project, f"imports/{response.json()['uuid']}/")).json()
    assert job["status"] == "done" and len(job["summary"]["interviews"]) == 3
    assert Interview.objects.filter(project=project, participant__label="Claude 3.5").count() == 3


def test_a_file_over_the_import_limit_gets_a_clear_413_and_leaves_nothing(client_for, project, analyst, settings):
    content = padded_export(11 * 1024 * 1024)
    settings.RTA_MAX_UPLOAD_BYTES = 10 * 1024 * 1024
    response = client_for(analyst).post(api(project, "imports/"), {
        "files": [SimpleUploadedFile("small.json", CLAUDE.read_bytes()), SimpleUploadedFile("big.json", content)]})
    assert response.status_code == 413
    assert response.json()["detail"] == "big.json: the file is 11.0 MB; the limit is 10.0 MB per file."
    assert ImportJob.objects.count() == 0 and Interview.objects.count() == 0


def test_the_import_limit_is_200_mb_by_default(settings):
    assert settings.RTA_MAX_UPLOAD_BYTES == 200 * 1024 * 1024


def test_a_job_waiting_for_the_worker_can_be_sent_again_or_discarded(client_for, project, analyst, viewer, outsider):
    client = client_for(analyst)
    job = upload(client, project, "talk.txt", TALK)
    start(client, project, job, {})  # queued; its on-commit send never runs here, as if the broker had been down
    url = api(project, f"imports/{job['uuid']}/send-again/")
    assert client_for(viewer).post(url).status_code == 403
    assert client_for(outsider).post(url).status_code == 404
    sent = client.post(url)
    assert sent.status_code == 202 and sent.json()["status"] == "done"  # tasks run in-process here
    assert Interview.objects.count() == 1
    refused = client.post(url)
    assert refused.status_code == 409 and "no longer waiting" in refused.json()["detail"]

    lost = upload(client, project, "other.txt", TALK.replace(b"Hello", b"Good morning"))
    start(client, project, lost, {})
    assert client_for(viewer).delete(api(project, f"imports/{lost['uuid']}/")).status_code == 403
    assert client.delete(api(project, f"imports/{lost['uuid']}/")).status_code == 204
    assert not ImportJob.objects.filter(uuid=lost["uuid"]).exists()
