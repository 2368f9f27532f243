"""The import service: one atomic batch, bulk inserts, duplicates, participants, jobs."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection

from interviews.models import ImportJob, Interview, Participant, Segment, Turn
from interviews.parsers import ParseError, SourceFile, parse_upload
from interviews.segmentation import segment_text
from interviews.services_import import (
    ImportOptions,
    ImportOptionsError,
    import_paths,
    importjob_create,
    importjob_queue,
    importjob_run,
)

SAMPLES = Path(__file__).resolve().parents[3] / "shared" / "samples"
CHATGPT = SAMPLES / "chatgpt" / "chatgpt2graph-conversations.json"
CLAUDE = SAMPLES / "claude" / "claude-history-synthetic-conversations.json"

pytestmark = pytest.mark.django_db


def counts() -> tuple[int, int, int, int]:
    return (Interview.objects.count(), Turn.objects.count(), Segment.objects.count(), Participant.objects.count())


def test_chatgpt_sample_lands_with_turns_segments_and_a_participant(project, owner):
    summary = import_paths(project=project, user=owner, paths=[str(CHATGPT)])
    interview = Interview.objects.get()
    assert interview.title == "Average Distance in U(0,1)"
    assert interview.origin == "imported" and interview.source_format == "chatgpt"
    assert interview.source_conversation_id == "966da5c4-5bb7-4e4d-ab6d-a7316b96266e"
    assert len(interview.source_sha256) == 64 and len(interview.content_sha256) == 64
    assert interview.participant.label == "gpt-4-code-interpreter"
    assert interview.participant.provider == "OpenAI"
    assert interview.metadata["model_slugs"] == ["gpt-4-code-interpreter"]
    turns = list(interview.turns.order_by("position"))
    assert [t.speaker for t in turns][:5] == ["interviewer", "participant", "tool", "tool", "participant"]
    assert [t.speaker for t in turns].count("tool") == 22
    assert turns[2].metadata["tool"]["step"] == "call" and turns[2].model_slug == ""
    assert turns[1].model_slug == "gpt-4-code-interpreter"
    assert turns[1].timestamp is not None
    segments = list(Segment.objects.filter(interview=interview).select_related("turn").order_by("position"))
    assert summary.segments == len(segments) > len(turns)
    assert [s.position for s in segments] == list(range(len(segments)))
    for s in segments:  # offsets are code points into the turn text, end exclusive
        assert s.turn.text[s.start:s.end] == s.text
        assert s.speaker == s.turn.speaker
    assert summary.participants_created == ["gpt-4-code-interpreter"]


def test_claude_sample_gets_one_participant_for_the_unnamed_model(project, owner):
    summary = import_paths(project=project, user=owner, paths=[str(CLAUDE)])
    assert len(summary.interviews) == 3
    assert set(Interview.objects.values_list("participant__label", flat=True)) == {"Claude"}
    assert Turn.objects.filter(interview__title="Build a sortable data table in React").count() == 4


def test_chosen_participant_is_used_and_an_existing_one_is_reused(project, owner):
    gpt = Participant.objects.create(project=project, label="GPT-4 (2023)", model_id="gpt-4-code-interpreter")
    import_paths(project=project, user=owner, paths=[str(CHATGPT)])
    assert Interview.objects.get().participant == gpt
    import_paths(project=project, user=owner, paths=[str(CLAUDE)], options=ImportOptions(participant="new:Claude 3.5"))
    assert set(Interview.objects.filter(source_format="claude").values_list("participant__label", flat=True)) == {"Claude 3.5"}


@pytest.mark.parametrize("participant", ["auto", "new:The chatbot"])
@pytest.mark.parametrize("sample", [CHATGPT, CLAUDE], ids=["chatgpt.com", "claude.ai"])
def test_a_web_app_export_is_recorded_as_a_web_app_not_an_api(project, owner, sample, participant):
    import_paths(project=project, user=owner, paths=[str(sample)], options=ImportOptions(participant=participant))
    assert set(Participant.objects.values_list("interface", flat=True)) == {Participant.Interface.WEB}


def test_a_file_imported_before_is_flagged_not_duplicated(project, owner):
    import_paths(project=project, user=owner, paths=[str(CHATGPT)])
    before = counts()
    summary = import_paths(project=project, user=owner, paths=[str(CHATGPT)])
    assert counts() == before
    assert summary.interviews == []
    assert summary.skipped[0]["reason"] == "already imported as “Average Distance in U(0,1)”"
    again = import_paths(project=project, user=owner, paths=[str(CHATGPT)], options=ImportOptions(allow_duplicates=True))
    assert len(again.interviews) == 1


def test_a_conversation_re_exported_in_another_file_is_recognised(project, owner, tmp_path):
    import_paths(project=project, user=owner, paths=[str(CLAUDE)])
    data = json.loads(CLAUDE.read_text())
    data[0]["updated_at"] = "2027-01-01T00:00:00Z"  # a newer export: another file hash
    newer = tmp_path / "conversations.json"
    newer.write_text(json.dumps(data, indent=1))
    summary = import_paths(project=project, user=owner, paths=[str(newer)])
    assert len(summary.skipped) == 3 and summary.interviews == []


def test_a_bad_file_in_a_batch_leaves_the_database_unchanged(project, owner, tmp_path):
    bad = tmp_path / "conversations.json"
    data = json.loads(CLAUDE.read_text())
    data[2]["chat_messages"][0]["sender"] = "robot"  # the third conversation is broken
    bad.write_text(json.dumps(data))
    before = counts()
    with pytest.raises(ParseError, match="conversation 3 .* field 'sender'"):
        import_paths(project=project, user=owner, paths=[str(CHATGPT), str(bad)])
    assert counts() == before


# Text that COPY's text format has to escape, or that is easy to cut wrongly: all of it must land as written.
ODD_TEXTS = [
    "Tabs\there and\tthere. A backslash \\ and C:\\new\\table. Next one.",
    "\\N is COPY's null marker. \\. ends COPY data.\n\\.\nStill here.",
    "Line one.\r\nLine two.\rLine three.\n\nA new paragraph.",
    "Emoji 👨\u200d👩\u200d👧 and CJK 家庭。中文！ Combining e\u0301 and RTL שלום. Done.",
    "Controls \x01\x1f\x7f and a\u2028separator. Quotes \" ' and | pipes |. End.",
    " ".join(f"Sentence {i} mentions lighthouse{i % 7} and the rota." for i in range(3000)),
    "word " * 30000 + "and no full stop",
]


def test_odd_and_very_long_text_lands_as_written_and_is_searchable(project, owner, tmp_path):
    path = tmp_path / "odd.jsonl"
    messages = [{"role": "user" if i % 2 else "assistant", "content": text} for i, text in enumerate(ODD_TEXTS)]
    path.write_text(json.dumps({"model": "odd\\model\tname", "messages": messages}) + "\n")
    (parsed,) = parse_upload(SourceFile.from_path(str(path), path.name))
    summary = import_paths(project=project, user=owner, paths=[str(path)])
    turns = list(Turn.objects.filter(interview__project=project).order_by("position"))
    assert [t.text for t in turns] == [t.text for t in parsed.turns]
    assert turns[0].model_slug == "odd\\model\tname" and turns[0].metadata == parsed.turns[0].metadata
    stored = list(Segment.objects.filter(interview__project=project).order_by("position"))
    expected = [(t.id, span.start, span.end, t.text[span.start:span.end], span.kind)
                for t in turns for span in segment_text(t.text)]
    assert [(s.turn_id, s.start, s.end, s.text, s.kind) for s in stored] == expected
    assert summary.segments == len(stored) and [s.position for s in stored] == list(range(len(stored)))
    with connection.cursor() as cursor:  # the stored vector search reads, filled by the import's own insert
        cursor.execute("SELECT count(*) FROM interviews_segment WHERE search_vector @@ plainto_tsquery('english', %s)",
                       ["lighthouse3"])
        assert cursor.fetchone()[0] == len([i for i in range(3000) if i % 7 == 3])


def test_label_maps_reassign_speakers(project, owner, tmp_path):
    path = tmp_path / "talk.txt"
    path.write_text("Alice: Hello?\nBob: Hi.\nAlice: Bye?\nBob: Bye.\n")
    options = ImportOptions(label_maps={"talk.txt": {"Alice": "participant", "Bob": "interviewer"}},
                            participant="new:Bob's bot")
    import_paths(project=project, user=owner, paths=[str(path)], options=options)
    assert list(Turn.objects.order_by("position").values_list("speaker", flat=True)) == [
        "participant", "interviewer", "participant", "interviewer"]
    assert Interview.objects.get().metadata["speaker_labels"] == {"Alice": "participant", "Bob": "interviewer"}


def test_bad_label_map_is_refused(project, owner):
    with pytest.raises(ImportOptionsError, match="must map to one of interviewer, participant, system, text"):
        import_paths(project=project, user=owner, paths=[str(CHATGPT)],
                     options=ImportOptions(label_maps={"x": {"A": "robot"}}))


def upload(path: Path, name: str | None = None) -> SimpleUploadedFile:
    return SimpleUploadedFile(name or path.name, path.read_bytes())


def test_job_preview_then_selected_import(project, analyst, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    job = importjob_create(project=project, user=analyst, uploads=[upload(CLAUDE), upload(CHATGPT)])
    assert job.status == ImportJob.Status.UPLOADED
    (claude, chatgpt) = job.preview["files"]
    assert [c["title"] for c in claude["conversations"]] == ["Build a sortable data table in React",
                                                             "Explain async/await vs Promises",
                                                             "Debug a failing pytest fixture"]
    assert chatgpt["conversations"][0]["models"] == ["gpt-4-code-interpreter"]
    assert chatgpt["conversations"][0]["turns"] == 42  # 20 messages and 22 tool steps
    assert Interview.objects.count() == 0  # nothing stored before the user chooses
    keys = {claude["conversations"][1]["key"], chatgpt["conversations"][0]["key"]}
    importjob_queue(job=job, options=ImportOptions(selected=keys))
    importjob_run(job_id=job.id)  # what the task does (eager Celery waits for commit)
    job.refresh_from_db()
    assert job.status == ImportJob.Status.DONE
    assert job.progress_done == job.progress_total == 2
    assert sorted(Interview.objects.values_list("title", flat=True)) == ["Average Distance in U(0,1)",
                                                                         "Explain async/await vs Promises"]
    assert importjob_run(job_id=job.id).status == ImportJob.Status.DONE  # safe to run twice
    assert Interview.objects.count() == 2


def test_job_preview_flags_duplicates(project, analyst, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    import_paths(project=project, user=analyst, paths=[str(CHATGPT)])
    job = importjob_create(project=project, user=analyst, uploads=[upload(CHATGPT)])
    f = job.preview["files"][0]
    assert f["imported_before"]["title"] == "Average Distance in U(0,1)"
    assert f["conversations"][0]["duplicate_of"]["title"] == "Average Distance in U(0,1)"


def test_job_with_a_bad_file_is_not_created_and_leaves_no_upload(project, analyst, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    bad = SimpleUploadedFile("conversations.json", CLAUDE.read_bytes()[:-30])
    with pytest.raises(ParseError, match=r"^conversations\.json: line \d+, column \d+: expected valid JSON"):
        importjob_create(project=project, user=analyst, uploads=[upload(CHATGPT), bad])
    assert ImportJob.objects.count() == 0
    assert not any((tmp_path / "imports").rglob("*.upload"))


def test_queue_refuses_an_empty_selection(project, analyst, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    job = importjob_create(project=project, user=analyst, uploads=[upload(CHATGPT)])
    with pytest.raises(ImportOptionsError, match="Tick at least one conversation"):
        importjob_queue(job=job, options=ImportOptions(selected=set()))
    with pytest.raises(ImportOptionsError, match="Give the new participant a label"):
        importjob_queue(job=job, options=ImportOptions(participant="new:  "))


def test_label_marked_not_a_speaker_stays_in_the_answer(project, owner, tmp_path):
    path = tmp_path / "options.txt"
    path.write_text("User: Which?\nGPT-4o: Two.\nOption A: cheap\nUser: Other?\nGPT-4o: See.\nOption A: still cheap\n")
    import_paths(project=project, user=owner, paths=[str(path)],
                 options=ImportOptions(label_maps={"options.txt": {"Option A": "text"}}))
    assert list(Turn.objects.order_by("position").values_list("text", flat=True)) == [
        "Which?", "Two.\nOption A: cheap", "Other?", "See.\nOption A: still cheap"]
    interview = Interview.objects.get()
    assert interview.participant.label == "GPT-4o"
    assert interview.metadata["model_slugs"] == ["GPT-4o"]


def test_nul_characters_are_dropped_not_fatal(project, owner, tmp_path):
    path = tmp_path / "conversations.json"
    data = json.loads(CLAUDE.read_text())[:1]
    data[0]["name"] = "Sortable\u0000 table"
    data[0]["chat_messages"][0]["content"][0]["text"] = "Can you\u0000 build it? Please."
    path.write_text(json.dumps(data))
    import_paths(project=project, user=owner, paths=[str(path)])
    interview = Interview.objects.get()
    assert interview.title == "Sortable table"
    first = interview.turns.get(position=0)
    assert first.text == "Can you build it? Please."
    assert all(first.text[s.start:s.end] == s.text for s in first.segments.all())


def test_preview_with_nul_characters_is_stored(project, analyst, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    data = json.loads(CLAUDE.read_text())[:1]
    data[0]["name"] = "Sortable\u0000 table"
    f = SimpleUploadedFile("conversations.json", json.dumps(data).encode())
    job = importjob_create(project=project, user=analyst, uploads=[f])
    job.refresh_from_db()
    assert job.preview["files"][0]["conversations"][0]["title"] == "Sortable table"


def test_a_job_is_queued_once(project, analyst, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    job = importjob_create(project=project, user=analyst, uploads=[upload(CLAUDE)])
    stale = ImportJob.objects.get(pk=job.pk)  # a second request that read the job before the first queued it
    importjob_queue(job=job, options=ImportOptions())
    with pytest.raises(ImportOptionsError, match="already been started"):
        importjob_queue(job=stale, options=ImportOptions(allow_duplicates=True))
    assert ImportJob.objects.get(pk=job.pk).options["allow_duplicates"] is False


def test_an_import_queued_while_the_upload_is_being_read_stays_queued(project, analyst, settings, tmp_path, monkeypatch,
                                                                      django_capture_on_commit_callbacks):
    """The API queues at once; the worker's preview, finishing after that, must not undo it."""
    from interviews import services_import

    settings.MEDIA_ROOT = tmp_path
    settings.RTA_IMPORT_INLINE_PREVIEW_BYTES = 100
    with django_capture_on_commit_callbacks() as preview_task:
        job = importjob_create(project=project, user=analyst, uploads=[upload(CLAUDE)])
    assert job.status == ImportJob.Status.ANALYSING
    read = services_import.preview_files

    def read_while_the_api_queues(**kwargs):
        preview = read(**kwargs)
        importjob_queue(job=ImportJob.objects.get(pk=job.pk), options=ImportOptions())  # another request, meanwhile
        return preview

    monkeypatch.setattr(services_import, "preview_files", read_while_the_api_queues)
    for run_preview in preview_task:
        run_preview()
    job.refresh_from_db()
    assert job.status == ImportJob.Status.QUEUED and len(job.preview["files"][0]["conversations"]) == 3
    importjob_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == ImportJob.Status.DONE and Interview.objects.filter(project=project).count() == 3


FINE_CHATGPT = {"title": "Fine", "create_time": 1, "current_node": "b", "mapping": {
    "a": {"id": "a", "message": None, "parent": None, "children": ["b"]},
    "b": {"id": "b", "parent": "a", "children": [], "message": {
        "author": {"role": "user"}, "content": {"content_type": "text", "parts": ["Hello?"]}}}}}


def test_conversations_with_no_visible_turns_are_counted_not_listed_in_the_preview(project, analyst):
    data = json.dumps([{"mapping": {}}, FINE_CHATGPT, {"mapping": {}}, {"title": "Stub", "mapping": {}}]).encode()
    job = importjob_create(project=project, user=analyst, uploads=[SimpleUploadedFile("conversations.json", data)])
    [previewed] = job.preview["files"]
    assert [c["title"] for c in previewed["conversations"]] == ["Fine"]
    assert previewed["empty"] == 3 and job.progress_total == 1


def test_a_zip_goes_to_the_worker_by_what_it_unpacks_to_not_its_compressed_size(project, analyst, settings):
    # The hostile one: 4.45 MB holding 14 members of ~5 MB text, read in the web request for 5 to 10 minutes.
    settings.RTA_IMPORT_INLINE_PREVIEW_BYTES = 64 * 1024
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for n in range(4):
            zf.writestr(f"chat{n}.txt", "A: x\nB: y\n" * 5_000)  # 50 KB each, 200 KB in all
    assert len(buf.getvalue()) < 64 * 1024
    job = importjob_create(project=project, user=analyst, uploads=[SimpleUploadedFile("chats.zip", buf.getvalue())])
    assert job.status == ImportJob.Status.ANALYSING and job.preview == {}


def test_a_text_of_many_turns_goes_to_the_worker_by_default(project, analyst):
    # 4.9 MB of "A: x" lines took 49 s and 650 MB to preview in the web request; a few hundred KB are read there.
    data = b"A: x\nB: y\n" * 30_000  # 300 KB, 60,000 turns
    job = importjob_create(project=project, user=analyst, uploads=[SimpleUploadedFile("chat.txt", data)])
    assert job.status == ImportJob.Status.ANALYSING
    small = importjob_create(project=project, user=analyst, uploads=[SimpleUploadedFile("short.txt", data[:20_000])])
    assert small.status == ImportJob.Status.UPLOADED and small.progress_total == 1


def test_an_import_stopped_by_an_error_of_ours_fails_with_a_message_and_leaves_nothing(project, analyst, settings,
                                                                                         tmp_path, monkeypatch):
    """Not left “running” for the sweeper to send again every minute, failing the same way each time."""
    from django.db import DataError

    import interviews.services_import as services_import

    settings.MEDIA_ROOT = tmp_path
    job = importjob_create(project=project, user=analyst, uploads=[upload(CLAUDE)])
    importjob_queue(job=job, options=ImportOptions(selected={c["key"] for c in job.preview["files"][0]["conversations"]}))

    def refused(**kwargs):  # after the interviews are written, as a value no check foresaw would be refused
        raise DataError("value too long for type character varying(300)")

    monkeypatch.setattr(services_import, "audit_record_many", refused)
    importjob_run(job_id=job.id)
    job.refresh_from_db()
    assert job.status == ImportJob.Status.FAILED
    assert job.errors == ["The import stopped on an error of ours (DataError). Nothing was imported. Try again; if it "
                          "keeps failing, tell the maintainers."]
    assert Interview.objects.count() == 0


def test_a_preview_stopped_by_an_error_of_ours_fails_with_a_message(project, analyst, settings, tmp_path, monkeypatch):
    import interviews.services_import as services_import

    settings.MEDIA_ROOT = tmp_path
    settings.RTA_IMPORT_INLINE_PREVIEW_BYTES = 0  # read in the worker
    job = importjob_create(project=project, user=analyst, uploads=[upload(CLAUDE)])
    assert job.status == ImportJob.Status.ANALYSING

    def broken(**kwargs):
        raise KeyError("mapping")

    monkeypatch.setattr(services_import, "preview_files", broken)
    services_import.importjob_preview(job_id=job.id)
    job.refresh_from_db()
    assert job.status == ImportJob.Status.FAILED
    assert job.errors == ["The import stopped on an error of ours (KeyError). Nothing was imported. Try again; if it "
                          "keeps failing, tell the maintainers."]
