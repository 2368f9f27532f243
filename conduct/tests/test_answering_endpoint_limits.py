"""Answers from endpoints unlike OpenAI's: the worker path remembers what each endpoint refused."""

from __future__ import annotations

import pytest

from conduct import services
from conduct.models import LiveEndpoint
from interviews.models import Turn

pytestmark = pytest.mark.django_db


def _start(project, owner, guide, participant, capture):
    with capture(execute=True):
        session = services.session_start(
            project=project, user=owner, guide_version=guide.versions.get(), participants=[participant]
        )
    return session.seats.get().interview


def _ask(session_interview, owner, text, capture):
    session = session_interview.conduct_seat.session
    with capture(execute=True):
        [answer] = services.question_ask(session=session, interviews=[session_interview], text=text, user=owner)
    answer.refresh_from_db()
    return answer


def test_with_streaming_off_the_whole_answer_is_saved_with_provenance(
    project, owner, guide, live, fake_openai, inline_answers, django_capture_on_commit_callbacks
):
    fake_openai.script("batch", answer="Fairness is equal treatment.", model_id="batch-2026")
    interview = _start(project, owner, guide, live("B", "batch", stream_answers=False), django_capture_on_commit_callbacks)

    answer = interview.turns.get(position=1)
    assert answer.status == Turn.Status.COMPLETE and answer.text == "Fairness is equal treatment."
    assert answer.model_slug == "batch-2026"
    prov = answer.metadata["provenance"]
    assert prov["mode"] == "non-streaming" and "stream" not in prov["request"]
    assert prov["usage"]["completion_tokens"] == 4 and prov["finish_reason"] == "stop"
    [sent] = fake_openai.chat_requests("batch")
    assert "stream" not in (sent.body or {})


def test_what_an_endpoint_refused_is_remembered_for_the_next_answer(
    project, owner, guide, live, fake_openai, inline_answers, django_capture_on_commit_callbacks
):
    fake_openai.script("picky", answer=["First.", "Second."], rejects_stream_options=True, rejects_max_tokens=True)
    participant = live("P", "picky", max_tokens=100)
    interview = _start(project, owner, guide, participant, django_capture_on_commit_callbacks)

    first = interview.turns.get(position=1)
    assert first.status == Turn.Status.COMPLETE and first.text == "First."
    assert len(first.metadata["provenance"]["fallbacks"]) == 2
    endpoint = LiveEndpoint.objects.get(participant=participant)
    assert (endpoint.send_stream_options, endpoint.max_tokens_param, endpoint.can_stream) == (
        False, "max_completion_tokens", True
    )

    fake_openai.requests.clear()
    second = _ask(interview, owner, "Why?", django_capture_on_commit_callbacks)

    assert second.status == Turn.Status.COMPLETE and second.text == "Second."
    [sent] = fake_openai.chat_requests("picky")
    assert "stream_options" not in sent.body and sent.body["max_completion_tokens"] == 100
    prov = second.metadata["provenance"]
    assert prov["fallbacks"] == [] and len(prov["adjustments"]) == 2


def test_an_endpoint_that_answered_in_one_piece_is_asked_without_streaming_next(
    project, owner, guide, live, fake_openai, inline_answers, django_capture_on_commit_callbacks
):
    fake_openai.script("no-sse", answer=["First.", "Second."], cannot_stream="json")
    participant = live("N", "no-sse")
    interview = _start(project, owner, guide, participant, django_capture_on_commit_callbacks)
    assert interview.turns.get(position=1).text == "First."
    assert LiveEndpoint.objects.get(participant=participant).can_stream is False

    second = _ask(interview, owner, "Why?", django_capture_on_commit_callbacks)

    assert second.text == "Second."
    assert "stream" not in fake_openai.chat_requests("no-sse")[-1].body
    assert second.metadata["provenance"]["adjustments"] == [
        "non-streaming: the endpoint could not stream on an earlier answer"
    ]


def test_a_refused_parameter_fails_the_answer_naming_it(
    project, owner, guide, live, fake_openai, inline_answers, django_capture_on_commit_callbacks
):
    words = "Unsupported value: 'temperature' does not support 0.2 with this model."
    fake_openai.script("o-mini", status=400, error_message=words, error_param="temperature")
    interview = _start(project, owner, guide, live("O", "o-mini", temperature=0.2), django_capture_on_commit_callbacks)

    answer = interview.turns.get(position=1)
    assert answer.status == Turn.Status.FAILED
    assert "'temperature'" in answer.metadata["failure"]["message"] and words in answer.metadata["failure"]["message"]


def test_learned_limits_are_forgotten_when_the_model_changes(project, live):
    participant = live("P", "picky")
    LiveEndpoint.objects.filter(participant=participant).update(
        can_stream=False, send_stream_options=False, max_tokens_param="max_completion_tokens"
    )
    fields = {
        "label": "P", "provider": "Fake", "base_url": participant.base_url, "temperature": 0.5, "top_p": None,
        "seed": None, "max_tokens": None, "timeout_seconds": 5.0, "api_key": None,
    }

    services.live_participant_save(project=project, participant=participant, model_id="picky", **fields)
    endpoint = LiveEndpoint.objects.get(participant=participant)
    assert endpoint.learned_notes, "a new temperature is the same endpoint"

    services.live_participant_save(project=project, participant=participant, model_id="other", **fields)
    endpoint.refresh_from_db()
    assert (endpoint.can_stream, endpoint.send_stream_options, endpoint.max_tokens_param) == (True, True, "max_tokens")
    assert endpoint.learned_notes == [] and endpoint.stream_answers is True
