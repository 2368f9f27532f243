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
    assert clash.status_code == 400 and "already called “GPT-4o”" in clash.json()["label"][0]


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
    assert data["title"] == "Average Distance in U(0,1)" and data["turn_count"] == 42
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


def test_interview_list_filters_by_participant_and_names_a_malformed_filter(client_for, project, owner):
    import_paths(project=project, user=owner, paths=[str(CLAUDE)])
    interview = Interview.objects.first()
    client = client_for(owner)
    same = client.get(api(project, "interviews/"), {"participant": str(interview.participant.uuid)}).json()["results"]
    assert str(interview.uuid) in [i["uuid"] for i in same]
    assert client.get(api(project, "interviews/"), {"participant": "00000000-0000-0000-0000-000000000000"}).json()["results"] == []
    bad = client.get(api(project, "interviews/"), {"participant": "GPT-4o", "depth": "deep"})
    assert bad.status_code == 400 and {"participant", "depth"} <= set(bad.json())


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


@pytest.fixture
def small_interview(project):
    from interviews.tests.factories import make_interview, make_participant

    return make_interview(project, make_participant(project, label="GPT-4o"), [("participant", "Hello.")], title="Identity")


def test_interview_patch_corrects_details_and_audits_them(client_for, project, analyst, small_interview):
    from interviews.tests.factories import make_participant
    from projects.models import AuditEvent

    claude = make_participant(project, label="Claude")
    response = client_for(analyst).patch(api(project, f"interviews/{small_interview.uuid}/"), {
        "title": "Identity, pilot", "depth": "brief", "conducted_at": "2025-11-03T14:30:00Z", "participant": str(claude.uuid),
    }, content_type="application/json")
    assert response.status_code == 200, response.content
    data = response.json()
    assert (data["title"], data["depth"], data["participant"], data["participant_label"], data["turn_count"]) == (
        "Identity, pilot", "brief", str(claude.uuid), "Claude", 1)
    assert data["conducted_at"].startswith("2025-11-03T14:30:00")
    small_interview.refresh_from_db()
    assert small_interview.notes == "" and small_interview.participant == claude  # fields not sent stay as they were
    event = AuditEvent.objects.get(target_id=str(small_interview.uuid))
    assert "title Identity → Identity, pilot" in event.summary and event.actor == analyst


def test_interview_patch_names_the_bad_field(client_for, project, owner, small_interview):
    client = client_for(owner)
    url = api(project, f"interviews/{small_interview.uuid}/")
    bad_depth = client.patch(url, {"depth": "medium"}, content_type="application/json")
    assert bad_depth.status_code == 400 and "depth" in bad_depth.json()
    blank = client.patch(url, {"title": "   "}, content_type="application/json")
    assert blank.status_code == 400 and "title" in blank.json()
    stranger = client.patch(url, {"participant": "00000000-0000-0000-0000-000000000000"}, content_type="application/json")
    assert stranger.status_code == 400 and "participant" in stranger.json()
    small_interview.refresh_from_db()
    assert (small_interview.title, small_interview.depth) == ("Identity", "comprehensive")


def test_interview_patch_by_viewer_403_outsider_404(client_for, project, viewer, outsider, small_interview):
    url = api(project, f"interviews/{small_interview.uuid}/")
    assert client_for(viewer).patch(url, {"title": "X"}, content_type="application/json").status_code == 403
    assert client_for(outsider).patch(url, {"title": "X"}, content_type="application/json").status_code == 404
    assert Interview.objects.get(pk=small_interview.pk).title == "Identity"


def test_interview_put_and_delete_are_not_offered(client_for, project, owner, small_interview):
    url = api(project, f"interviews/{small_interview.uuid}/")
    assert client_for(owner).put(url, {"title": "X"}, content_type="application/json").status_code == 405
    assert client_for(owner).delete(url).status_code == 405


def test_participant_patch_is_audited_and_refuses_a_taken_label(client_for, project, analyst):
    from projects.models import AuditEvent

    client = client_for(analyst)
    gpt = client.post(api(project, "participants/"), {"label": "GPT-4o"}, content_type="application/json").json()
    client.post(api(project, "participants/"), {"label": "Claude"}, content_type="application/json")
    renamed = client.patch(api(project, f"participants/{gpt['uuid']}/"), {"label": "GPT-4o (Aug)", "attributes": {"n": 1}},
                           content_type="application/json")
    assert renamed.status_code == 200 and renamed.json()["label"] == "GPT-4o (Aug)"
    assert "label GPT-4o → GPT-4o (Aug)" in AuditEvent.objects.get(target_id=gpt["uuid"], action="changed").summary
    clash = client.patch(api(project, f"participants/{gpt['uuid']}/"), {"label": "Claude"}, content_type="application/json")
    assert clash.status_code == 400 and "label" in clash.json()
    assert Participant.objects.get(uuid=gpt["uuid"]).label == "GPT-4o (Aug)"


@pytest.mark.parametrize("attributes,message", [
    ("hello", "Case attributes must be a mapping from non-empty names to values."),
    ([1, 2], "Case attributes must be a mapping from non-empty names to values."),
    ({"": 1}, "Case attributes must be a mapping from non-empty names to values."),
    ({"k": "v\u0000"}, "Case attribute “k”: Null characters are not allowed."),
    ({"k\u0000": 1}, "Case attribute “k\N{SYMBOL FOR NULL}”: Null characters are not allowed."),
    ({"k": {"deep": ["x\ud800"]}}, "Case attribute “k”: Surrogate characters are not allowed: U+D800."),
], ids=["text", "list", "empty name", "NUL in a value", "NUL in a name", "surrogate deep in a value"])
def test_creating_a_participant_checks_attributes_as_an_edit_does(client_for, project, analyst, attributes, message):
    from projects.models import AuditEvent

    client = client_for(analyst)
    created = client.post(api(project, "participants/"), {"label": "x", "attributes": attributes}, content_type="application/json")
    assert created.status_code == 400 and created.json() == {"attributes": [message]}
    gpt = client.post(api(project, "participants/"), {"label": "GPT-4o"}, content_type="application/json").json()
    edited = client.patch(api(project, f"participants/{gpt['uuid']}/"), {"attributes": attributes}, content_type="application/json")
    assert edited.status_code == 400 and edited.json() == {"attributes": [message]}
    assert list(Participant.objects.values_list("label", "attributes")) == [("GPT-4o", {})]
    assert list(AuditEvent.objects.values_list("action", flat=True)) == ["created"]


def test_a_created_participant_is_audited_and_can_be_edited_field_by_field(client_for, project, analyst):
    from projects.models import AuditEvent

    client = client_for(analyst)
    created = client.post(api(project, "participants/"), {"label": " GPT-4o ", "provider": "OpenAI", "attributes": {"size": "large"}},
                          content_type="application/json")
    assert created.status_code == 201
    assert (created.json()["label"], created.json()["attributes"], created.json()["interview_count"]) == ("GPT-4o", {"size": "large"}, 0)
    event = AuditEvent.objects.get(target_id=created.json()["uuid"])
    assert (event.action, event.summary, event.actor) == ("created", "Participant “GPT-4o” added", analyst)
    assert event.data["fields"]["attributes"] == {"size": "large"}
    edited = client.patch(api(project, f"participants/{created.json()['uuid']}/"), {"provider": "OpenAI, Inc."},
                          content_type="application/json")
    assert edited.status_code == 200 and edited.json()["attributes"] == {"size": "large"}
