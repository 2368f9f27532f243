"""REST API: participants, interviews with turns and segments, imports; same rules as pages."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from interviews.models import ImportJob, Interview, Participant
from interviews.services_import import import_paths

SAMPLES = Path(__file__).resolve().parents[3] / "shared" / "samples"
CHATGPT = SAMPLES / "chatgpt" / "chatgpt2graph-conversations.json"
CLAUDE = SAMPLES / "claude" / "claude-history-synthetic-conversations.json"

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path


def api(project, tail: str) -> str:
    return f"/api/projects/{project.uuid}/{tail}"


def test_participants_list_and_create(client_for, project, analyst):
    client = client_for(analyst)
    created = client.post(api(project, "participants/"), {"label": "GPT-4o", "provider": "OpenAI", "model_id": "gpt-4o"},
                          content_type="application/json")
    assert created.status_code == 201
    listed = client.get(api(project, "participants/")).json()
    assert [(p["label"], p["interview_count"]) for p in listed["results"]] == [("GPT-4o", 0)]
    clash = client.post(api(project, "participants/"), {"label": "GPT-4o"}, content_type="application/json")
    assert clash.status_code == 400 and "already has a participant" in clash.json()["label"][0]


def test_participant_writes_by_viewer_403_and_outsider_404(client_for, project, viewer, outsider):
    body = {"label": "X"}
    assert client_for(viewer).post(api(project, "participants/"), body, content_type="application/json").status_code == 403
    assert client_for(outsider).post(api(project, "participants/"), body, content_type="application/json").status_code == 404
    assert client_for(outsider).get(api(project, "participants/")).status_code == 404
    assert client_for(viewer).get(api(project, "participants/")).status_code == 200
    assert Participant.objects.count() == 0


def test_interview_detail_has_turns_with_segments(client_for, project, owner, viewer):
    import_paths(project=project, user=owner, paths=[str(CHATGPT)])
    interview = Interview.objects.get()
    data = client_for(viewer).get(api(project, f"interviews/{interview.uuid}/")).json()
    assert data["title"] == "Average Distance in U(0,1)" and data["turn_count"] == 16
    assert [t["speaker"] for t in data["turns"]][:2] == ["interviewer", "participant"]
    turn = data["turns"][1]
    assert turn["model_slug"] == "gpt-4-code-interpreter"
    assert all(turn["text"][s["start"]:s["end"]] == s["text"] for s in turn["segments"])


def test_interview_queries_do_not_grow(client_for, project, owner, django_assert_num_queries):
    client = client_for(owner)
    import_paths(project=project, user=owner, paths=[str(CLAUDE)])
    one = Interview.objects.first()
    # session, user, membership (+project), interview (+participant, turn count), turns, segments
    with django_assert_num_queries(6):
        client.get(api(project, f"interviews/{one.uuid}/"))
    import_paths(project=project, user=owner, paths=[str(CHATGPT)])
    big = Interview.objects.get(source_format="chatgpt")
    with django_assert_num_queries(6):
        client.get(api(project, f"interviews/{big.uuid}/"))
    # session, user, membership (+project), count, page of interviews (+participant, turn count)
    with django_assert_num_queries(5):
        assert len(client.get(api(project, "interviews/")).json()["results"]) == 4


def test_interview_list_filters_by_depth_and_hides_other_projects(client_for, project, owner, outsider):
    import_paths(project=project, user=owner, paths=[str(CLAUDE)])
    Interview.objects.filter(title__startswith="Debug").update(depth="brief")
    client = client_for(owner)
    brief = client.get(api(project, "interviews/?depth=brief")).json()["results"]
    assert [i["title"] for i in brief] == ["Debug a failing pytest fixture"]
    interview = Interview.objects.first()
    assert client_for(outsider).get(api(project, f"interviews/{interview.uuid}/")).status_code == 404


def test_import_upload_runs_and_reports(client_for, project, analyst, django_capture_on_commit_callbacks):
    client = client_for(analyst)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(api(project, "imports/"), {
            "files": [SimpleUploadedFile(CLAUDE.name, CLAUDE.read_bytes())], "participant": "new:Claude 3.5"})
    assert response.status_code == 202, response.content
    job_uuid = response.json()["uuid"]
    job = client.get(api(project, f"imports/{job_uuid}/")).json()
    assert job["status"] == "done"
    assert job["progress"] == {"done": 3, "total": 3}
    assert len(job["summary"]["interviews"]) == 3
    assert set(Interview.objects.values_list("participant__label", flat=True)) == {"Claude 3.5"}


def test_import_bad_file_is_400_with_the_message(client_for, project, analyst):
    bad = SimpleUploadedFile("conversations.json", CLAUDE.read_bytes()[:-30])
    response = client_for(analyst).post(api(project, "imports/"), {"files": [bad]})
    assert response.status_code == 400
    assert response.json()["detail"].startswith("conversations.json: line ")
    assert ImportJob.objects.count() == 0


def test_import_by_viewer_403_outsider_404(client_for, project, viewer, outsider):
    data = {"files": [SimpleUploadedFile(CLAUDE.name, CLAUDE.read_bytes())]}
    assert client_for(viewer).post(api(project, "imports/"), data).status_code == 403
    data = {"files": [SimpleUploadedFile(CLAUDE.name, CLAUDE.read_bytes())]}
    assert client_for(outsider).post(api(project, "imports/"), data).status_code == 404
    assert ImportJob.objects.count() == 0


def test_import_of_a_large_upload_is_read_and_imported_by_the_worker(
        client_for, project, analyst, settings, django_capture_on_commit_callbacks):
    settings.RTA_IMPORT_INLINE_PREVIEW_BYTES = 100  # the sample counts as large: read in the worker
    client = client_for(analyst)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(api(project, "imports/"), {"files": [SimpleUploadedFile(CLAUDE.name, CLAUDE.read_bytes())]})
    assert response.status_code == 202
    job = client.get(api(project, f"imports/{response.json()['uuid']}/")).json()
    assert job["status"] == "done" and len(job["summary"]["interviews"]) == 3
    assert job["progress"] == {"done": 3, "total": 3}
