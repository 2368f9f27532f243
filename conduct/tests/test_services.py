"""Conduct services against PostgreSQL and the local chat-completions server."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from conduct import services
from conduct.models import AnswerJob, EndpointKey
from interviews.models import Interview, Participant, Segment, Turn

pytestmark = pytest.mark.django_db


def _start(project, owner, guide, participants, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        return services.session_start(
            project=project, user=owner, guide_version=guide.versions.get(), participants=participants
        )


def test_starting_sends_the_opening_prompt_to_every_model(
    project, owner, guide, live, fake_openai, inline_answers, settings, django_capture_on_commit_callbacks
):
    settings.OPENAI_BASE_URL = fake_openai.base_url  # the deployment's endpoint, where its key may go
    fake_openai.script("model-a", answer="Fairness is equal treatment.", model_id="model-a-2026")
    fake_openai.script("model-b", answer="Fairness is context dependent.")
    a = live("A", "model-a", temperature=0.2, seed=7, base_url="", use_deployment_key=True)
    b = live("B", "model-b")

    session = _start(project, owner, guide, [a, b], django_capture_on_commit_callbacks)

    interviews = [seat.interview for seat in session.seats.order_by("position")]
    assert [iv.participant for iv in interviews] == [a, b]
    for iv in interviews:
        assert iv.origin == Interview.Origin.LIVE and iv.guide_version == guide.versions.get()
        question, answer = iv.turns.order_by("position")
        assert (question.speaker, question.text, question.status) == ("interviewer", "What does fairness mean to you?", "complete")
        assert answer.speaker == "participant" and answer.status == Turn.Status.COMPLETE
    answer_a = interviews[0].turns.get(position=1)
    assert answer_a.text == "Fairness is equal treatment."
    assert answer_a.model_slug == "model-a-2026"
    prov = answer_a.metadata["provenance"]
    assert prov["request"]["messages"] == [
        {"role": "system", "content": "You are taking part in a research interview."},
        {"role": "user", "content": "What does fairness mean to you?"},
    ]
    assert prov["request"]["temperature"] == 0.2 and prov["request"]["seed"] == 7
    assert prov["usage"]["completion_tokens"] == 4
    [sent] = fake_openai.chat_requests("model-a")
    assert sent.api_key == "sk-deployment-test"


def test_follow_ups_carry_the_whole_conversation(
    project, owner, guide, live, fake_openai, inline_answers, django_capture_on_commit_callbacks
):
    fake_openai.script("m", answer=["First answer.", "Second answer."])
    session = _start(project, owner, guide, [live("M", "m")], django_capture_on_commit_callbacks)
    interview = session.seats.get().interview

    with django_capture_on_commit_callbacks(execute=True):
        services.question_ask(session=session, interviews=[interview], text="Why?", user=owner, planned_index=1)

    assert list(interview.turns.order_by("position").values_list("text", flat=True)) == [
        "What does fairness mean to you?", "First answer.", "Why?", "Second answer."
    ]
    last = fake_openai.chat_requests("m")[-1].body
    assert [m["role"] for m in last["messages"]] == ["system", "user", "assistant", "user"]
    session.refresh_from_db()
    assert session.checked_questions == [1]


def test_a_question_waits_for_the_previous_answer(project, owner, guide, live, django_capture_on_commit_callbacks):
    # No callbacks executed: the first answer stays queued.
    session = services.session_start(project=project, user=owner, guide_version=guide.versions.get(), participants=[live("M", "m")])
    interview = session.seats.get().interview
    with pytest.raises(ValidationError, match="Still answering: M"):
        services.question_ask(session=session, interviews=[interview], text="Next?", user=owner)
    assert interview.turns.count() == 2


def test_a_failed_answer_is_marked_and_the_question_is_kept(
    project, owner, guide, live, fake_openai, inline_answers, django_capture_on_commit_callbacks
):
    fake_openai.strict_models = True
    session = _start(project, owner, guide, [live("Typo", "gpt-typo")], django_capture_on_commit_callbacks)

    question, answer = session.seats.get().interview.turns.order_by("position")
    assert question.text == "What does fairness mean to you?"
    assert answer.status == Turn.Status.FAILED and answer.text == ""
    assert answer.metadata["failure"]["kind"] == "model_not_found"
    assert "'gpt-typo'" in answer.metadata["failure"]["message"]


def test_retry_asks_again_and_keeps_the_earlier_partial_text(
    project, owner, guide, live, fake_openai, inline_answers, django_capture_on_commit_callbacks
):
    fake_openai.script("flaky", answer="The first words and then the rest.", chunk_chars=5, die_after_chunks=2)
    session = _start(project, owner, guide, [live("F", "flaky")], django_capture_on_commit_callbacks)
    answer = session.seats.get().interview.turns.get(position=1)
    assert answer.status == Turn.Status.INTERRUPTED and answer.text == "The first "

    fake_openai.script("flaky", answer="A complete answer.")
    with django_capture_on_commit_callbacks(execute=True):
        services.answer_retry(turn=answer)

    answer.refresh_from_db()
    assert answer.status == Turn.Status.COMPLETE and answer.text == "A complete answer."
    assert answer.metadata["previous_attempts"][0]["text"] == "The first "
    assert answer.answer_job.attempt == 2


def test_a_missing_key_fails_with_what_to_set(project, owner, guide, live, settings, inline_answers, django_capture_on_commit_callbacks):
    settings.OPENAI_API_KEY = ""
    participant = live("M", "m", base_url="", use_deployment_key=True)
    session = _start(project, owner, guide, [participant], django_capture_on_commit_callbacks)
    answer = session.seats.get().interview.turns.get(position=1)
    assert answer.status == Turn.Status.FAILED
    assert "OPENAI_API_KEY" in answer.metadata["failure"]["message"]


def test_a_stored_project_key_is_encrypted_and_used(
    project, owner, guide, live, fake_openai, inline_answers, django_capture_on_commit_callbacks
):
    key = services.endpoint_key_store(project=project, user=owner, label="Lab", plain_key="sk-lab-secret-9876",
                                      base_url=fake_openai.base_url)
    stored = EndpointKey.objects.get(pk=key.pk)
    assert "sk-lab-secret-9876" not in stored.encrypted and stored.hint == "sk-…9876"
    fake_openai.api_key = "sk-lab-secret-9876"

    session = _start(project, owner, guide, [live("M", "m", api_key=key)], django_capture_on_commit_callbacks)

    answer = session.seats.get().interview.turns.get(position=1)
    assert answer.status == Turn.Status.COMPLETE
    assert "sk-lab-secret-9876" not in str(answer.metadata)


def test_stop_before_the_worker_starts_marks_it_interrupted(project, owner, guide, live):
    session = services.session_start(project=project, user=owner, guide_version=guide.versions.get(), participants=[live("M", "m")])
    answer = session.seats.get().interview.turns.get(position=1)
    services.answer_stop(turn=answer)
    answer.refresh_from_db()
    assert answer.status == Turn.Status.INTERRUPTED
    assert answer.answer_job.state == AnswerJob.State.DONE


def test_ending_segments_every_turn(project, owner, guide, live, fake_openai, inline_answers, django_capture_on_commit_callbacks):
    fake_openai.script("m", answer="Fairness is hard. It depends:\n\n- on context\n- on power")
    session = _start(project, owner, guide, [live("M", "m")], django_capture_on_commit_callbacks)

    services.session_end(session=session)

    interview = session.seats.get().interview
    interview.refresh_from_db()
    assert interview.status == Interview.Status.READY
    segments = list(Segment.objects.filter(interview=interview).order_by("position"))
    assert [s.text for s in segments] == [
        "What does fairness mean to you?", "Fairness is hard.", "It depends:", "- on context", "- on power"
    ]
    assert all(s.turn.text[s.start : s.end] == s.text for s in segments)
    assert [s.speaker for s in segments] == ["interviewer"] + ["participant"] * 4
    with pytest.raises(ValidationError, match="ended"):
        services.question_ask(session=session, interviews=[interview], text="More?", user=owner)
    with pytest.raises(ValidationError, match="ended and is segmented"):
        services.answer_retry(turn=interview.turns.get(position=1))


def test_ending_is_refused_while_answers_arrive(project, owner, guide, live):
    session = services.session_start(project=project, user=owner, guide_version=guide.versions.get(), participants=[live("M", "m")])
    with pytest.raises(ValidationError, match="still arriving"):
        services.session_end(session=session)
    assert not Segment.objects.exists()


def test_rerun_replays_the_original_questions_in_order(
    project, owner, guide, live, fake_openai, inline_answers, django_capture_on_commit_callbacks
):
    fake_openai.script("old", answer=["Old one.", "Old two."])
    fake_openai.script("new", answer=["New one.", "New two."])
    session = _start(project, owner, guide, [live("Old", "old")], django_capture_on_commit_callbacks)
    original = session.seats.get().interview
    with django_capture_on_commit_callbacks(execute=True):
        services.question_ask(session=session, interviews=[original], text="And why?", user=owner)

    with django_capture_on_commit_callbacks(execute=True):
        rerun_session = services.interview_rerun(interview=original, participant=live("New", "new"), user=owner)
    # The second question is asked when the first answer completes, from inside the task.
    rerun = rerun_session.seats.get().interview
    assert rerun.rerun_of == original
    texts = list(rerun.turns.order_by("position").values_list("text", flat=True))
    assert texts == ["What does fairness mean to you?", "New one.", "And why?", "New two."]
    assert rerun_session.seats.get().replay == []


def test_guide_edits_create_versions_only_when_something_changed(project, owner, guide):
    v1 = guide.versions.get()
    fields = {"name": "Values", "opening_prompt": v1.opening_prompt, "system_prompt": v1.system_prompt,
              "planned_questions": v1.planned_questions, "notes": ""}
    assert services.guide_revise(guide=guide, user=owner, **fields) == v1
    v2 = services.guide_revise(guide=guide, user=owner, **(fields | {"opening_prompt": "What is justice?"}))
    assert v2.number == 2 and guide.versions.count() == 2
    assert v1.opening_prompt == "What does fairness mean to you?"


@pytest.mark.django_db(transaction=True)
def test_without_a_broker_answers_stream_in_a_background_thread(project, owner, guide, live, fake_openai, settings):
    """Laptop mode (tasks eager): the request returns at once and the answer streams in a thread."""
    from conduct.tests.conftest import wait_until

    settings.OPENAI_API_KEY = "sk-deployment-test"
    fake_openai.script("m", answer="word " * 100, chunk_chars=5, delay=0.01)

    session = services.session_start(project=project, user=owner, guide_version=guide.versions.get(), participants=[live("M", "m")])

    answer = session.seats.get().interview.turns.get(position=1)
    assert answer.status in (Turn.Status.PENDING, Turn.Status.STREAMING), "the request did not wait for the answer"
    wait_until(lambda: Turn.objects.get(pk=answer.pk).status == Turn.Status.COMPLETE, message="the answer")
    assert Turn.objects.get(pk=answer.pk).text == "word " * 100


def test_the_demo_command_sets_up_live_participants(project, owner, fake_openai):
    from conduct.management.commands.fake_llm import DEMO_MODELS, Command

    Command()._setup(owner.username, fake_openai.base_url)
    Command()._setup(owner.username, fake_openai.base_url)  # safe to repeat

    live = Participant.objects.filter(project=project, is_live=True)
    assert sorted(live.values_list("model_id", flat=True)) == sorted(DEMO_MODELS.values())
    assert all(p.live_endpoint.api_key.hint == "sk-…demo" for p in live)
    assert project.guides.count() == 1


def test_a_rate_limited_answer_is_retried_and_the_note_is_cleared(
    project, owner, guide, live, fake_openai, inline_answers, django_capture_on_commit_callbacks
):
    fake_openai.script("busy", answer="Finally.", status=429, retry_after=0.01, fail_times=1)
    session = _start(project, owner, guide, [live("B", "busy")], django_capture_on_commit_callbacks)
    answer = session.seats.get().interview.turns.get(position=1)
    assert answer.status == Turn.Status.COMPLETE and answer.text == "Finally."
    assert "retrying" not in answer.metadata
    assert [a["ok"] for a in answer.metadata["provenance"]["attempts"]] == [False, True]


def test_an_answer_whose_send_was_lost_is_sent_again_by_the_sweeper_and_answered_once(
    project, owner, guide, live, fake_openai, inline_answers
):
    from datetime import timedelta

    from django.utils import timezone

    from conduct.answering import answer_run
    from projects.jobs import jobs_resend

    fake_openai.script("lost", answer="Late but whole.")
    # No on-commit callbacks run: the answer is queued and never sent, as after a broker outage and a restart.
    session = services.session_start(project=project, user=owner, guide_version=guide.versions.get(),
                                     participants=[live("L", "lost")])
    answer = session.seats.get().interview.turns.get(position=1)
    assert answer.status == Turn.Status.PENDING and jobs_resend() == 0
    AnswerJob.objects.filter(turn=answer).update(sent_at=timezone.now() - timedelta(seconds=61))
    assert jobs_resend() == 1
    answer.refresh_from_db()
    assert answer.status == Turn.Status.COMPLETE and answer.text == "Late but whole."
    assert answer_run(answer.pk) == "skipped"  # a duplicate delivery asks nothing twice
    assert len(fake_openai.chat_requests("lost")) == 1
