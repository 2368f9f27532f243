"""conduct.client against servers that differ from OpenAI's: each fallback end to end, real openai client."""

from __future__ import annotations

import time

from conduct.client import Endpoint, FailureKind, stream_answer
from conduct.egress import EgressPolicy
from conduct.testing.fake_openai import FakeOpenAIServer

# The fake server listens on 127.0.0.1, which endpoints may reach only where the deployment allows it.
LOCAL = EgressPolicy(allow_private_networks=True)

MESSAGES = [{"role": "user", "content": "What does fairness mean to you?"}]
ANSWER = "Fairness means treating like cases alike."
REJECTED_STREAM_OPTIONS = "Unrecognized request argument supplied: stream_options"
REJECTED_MAX_TOKENS = (
    "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."
)


def endpoint(server: FakeOpenAIServer, model: str, **kwargs: object) -> Endpoint:
    return Endpoint(model=model, base_url=server.base_url, api_key="sk-test-123", egress=LOCAL, **kwargs)  # type: ignore[arg-type]


def sent_bodies(server: FakeOpenAIServer, model: str) -> list[dict]:
    return [request.body or {} for request in server.chat_requests(model)]


# -- stream_options ----------------------------------------------------------------


def test_a_rejected_stream_options_is_dropped_and_asked_again_once(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.script("old-vllm", answer=ANSWER, rejects_stream_options=True)

    result = stream_answer(endpoint(fake_openai, "old-vllm"), MESSAGES, max_attempts=1)

    assert result.ok and result.text == ANSWER
    first, second = sent_bodies(fake_openai, "old-vllm")
    assert first["stream_options"] == {"include_usage": True}
    assert "stream_options" not in second and second["stream"] is True
    prov = result.provenance
    assert prov["request"] == second, "provenance shows the request that was answered"
    assert prov["mode"] == "streaming"
    assert prov["fallbacks"] == [
        {"fallback": "omit_stream_options", "after_attempt": 1, "because": REJECTED_STREAM_OPTIONS}
    ]
    assert [(a["ok"], a.get("fallback")) for a in prov["attempts"]] == [(False, "omit_stream_options"), (True, None)]
    assert prov["usage"] is None
    assert "not known" in prov["usage_note"]
    assert result.learned == {"send_stream_options": False}


def test_without_stream_options_usage_comes_from_the_final_chunk(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.script("llama-cpp", answer=ANSWER, rejects_stream_options=True, usage_in_final_chunk=True)

    result = stream_answer(endpoint(fake_openai, "llama-cpp"), MESSAGES)

    assert result.ok
    assert result.provenance["usage"]["completion_tokens"] == len(ANSWER.split())
    assert "final chunk" in result.provenance["usage_note"]


def test_a_remembered_stream_options_refusal_sends_one_request_without_it(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.script("old-vllm", answer=ANSWER, rejects_stream_options=True)

    result = stream_answer(endpoint(fake_openai, "old-vllm", send_stream_options=False), MESSAGES)

    assert result.ok and result.learned == {}
    [sent] = sent_bodies(fake_openai, "old-vllm")
    assert "stream_options" not in sent
    assert result.provenance["fallbacks"] == []
    assert result.provenance["adjustments"] == ["stream_options omitted: the endpoint rejected it on an earlier answer"]


def test_a_fallback_is_taken_only_once(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.script("stubborn", status=400, error_message=REJECTED_STREAM_OPTIONS)

    result = stream_answer(endpoint(fake_openai, "stubborn"), MESSAGES, max_attempts=4)

    assert len(fake_openai.chat_requests("stubborn")) == 2
    assert result.failure is not None and result.failure.kind == FailureKind.BAD_REQUEST
    assert "'stream_options'" in result.failure.message


# -- max_tokens --------------------------------------------------------------------


def test_max_tokens_becomes_max_completion_tokens_when_the_model_asks(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.script("o-reasoner", answer=ANSWER, rejects_max_tokens=True)

    result = stream_answer(endpoint(fake_openai, "o-reasoner", max_tokens=300), MESSAGES, max_attempts=1)

    assert result.ok and result.text == ANSWER
    first, second = sent_bodies(fake_openai, "o-reasoner")
    assert first["max_tokens"] == 300 and "max_completion_tokens" not in first
    assert second["max_completion_tokens"] == 300 and "max_tokens" not in second
    assert second["stream_options"] == {"include_usage": True}, "only the refused parameter changes"
    assert result.provenance["fallbacks"][0] == {
        "fallback": "max_completion_tokens", "after_attempt": 1, "because": REJECTED_MAX_TOKENS
    }
    assert result.provenance["usage"]["completion_tokens"] == len(ANSWER.split())
    assert result.learned == {"max_tokens_param": "max_completion_tokens"}


def test_a_remembered_max_completion_tokens_is_sent_from_the_start(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.script("o-reasoner", answer=ANSWER, rejects_max_tokens=True)
    ep = endpoint(fake_openai, "o-reasoner", max_tokens=50, max_tokens_param="max_completion_tokens")

    result = stream_answer(ep, MESSAGES)

    assert result.ok
    [sent] = sent_bodies(fake_openai, "o-reasoner")
    assert sent["max_completion_tokens"] == 50 and "max_tokens" not in sent
    assert "max_completion_tokens sent instead of max_tokens" in result.provenance["adjustments"][0]


# -- servers that do not stream ------------------------------------------------------


def test_a_plain_json_reply_to_a_streaming_request_is_taken_whole(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.script("no-sse", answer=ANSWER, cannot_stream="json", model_id="no-sse-2026", system_fingerprint="fp_j")
    pushed: list[str] = []

    result = stream_answer(endpoint(fake_openai, "no-sse"), MESSAGES, on_text=pushed.append)

    assert result.ok and result.text == ANSWER
    assert pushed == [ANSWER], "the whole answer is saved at once"
    assert len(fake_openai.chat_requests("no-sse")) == 1, "the answer already arrived; the model is not asked twice"
    prov = result.provenance
    assert prov["request"]["stream"] is True, "provenance shows what was sent"
    assert prov["mode"] == "non-streaming"
    assert prov["fallbacks"][0]["fallback"] == "non_streaming" and "plain JSON" in prov["fallbacks"][0]["because"]
    assert (prov["model_returned"], prov["system_fingerprint"], prov["finish_reason"]) == ("no-sse-2026", "fp_j", "stop")
    assert prov["usage"]["completion_tokens"] == len(ANSWER.split())
    assert prov["raw_response"]["object"] == "chat.completion"
    assert prov["raw_response"]["choices"][0]["message"]["content"] == ANSWER
    assert prov["time_to_first_token_ms"] is None and prov["latency_ms"] >= 0
    assert result.learned == {"can_stream": False}


def test_a_server_refusing_to_stream_is_asked_again_without_streaming(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.script("batch-only", answer=ANSWER, cannot_stream="error")

    result = stream_answer(endpoint(fake_openai, "batch-only"), MESSAGES, max_attempts=1)

    assert result.ok and result.text == ANSWER
    first, second = sent_bodies(fake_openai, "batch-only")
    assert first["stream"] is True
    assert "stream" not in second and "stream_options" not in second
    prov = result.provenance
    assert prov["mode"] == "non-streaming" and prov["request"] == second
    assert prov["fallbacks"][0]["because"] == "Streaming is not supported by this server."
    assert prov["usage"]["total_tokens"] > 0
    assert result.learned == {"can_stream": False}


def test_with_streaming_off_the_answer_is_asked_for_whole_with_full_provenance(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.script("gpt-x", answer=ANSWER, model_id="gpt-x-2026-11-01", system_fingerprint="fp_abc")

    result = stream_answer(endpoint(fake_openai, "gpt-x", stream_answers=False, temperature=0.3), MESSAGES)

    assert result.ok and result.text == ANSWER
    [sent] = sent_bodies(fake_openai, "gpt-x")
    assert sent == {"model": "gpt-x", "messages": MESSAGES, "temperature": 0.3}
    prov = result.provenance
    assert prov["request"] == sent and prov["mode"] == "non-streaming"
    assert prov["adjustments"] == ["non-streaming: the participant's “Stream answers” setting is off"]
    assert prov["fallbacks"] == [] and result.learned == {}
    assert (prov["model_returned"], prov["system_fingerprint"], prov["finish_reason"]) == ("gpt-x-2026-11-01", "fp_abc", "stop")
    assert prov["usage"] == {"prompt_tokens": 6, "completion_tokens": 6, "total_tokens": 12}
    assert prov["raw_response"]["id"] == prov["response_id"] and prov["response_id"].startswith("chatcmpl-")
    assert prov["latency_ms"] >= 0 and prov["usage_note"] is None


def test_every_fallback_in_turn_and_none_counts_as_a_retry(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.script(
        "picky", answer=ANSWER, rejects_stream_options=True, rejects_max_tokens=True, cannot_stream="error"
    )

    result = stream_answer(endpoint(fake_openai, "picky", max_tokens=200), MESSAGES, max_attempts=1)

    assert result.ok and result.text == ANSWER
    assert [f["fallback"] for f in result.provenance["fallbacks"]] == [
        "omit_stream_options", "max_completion_tokens", "non_streaming"
    ]
    assert sent_bodies(fake_openai, "picky")[-1] == {"model": "picky", "messages": MESSAGES, "max_completion_tokens": 200}
    assert result.learned == {
        "send_stream_options": False, "max_tokens_param": "max_completion_tokens", "can_stream": False
    }


def test_stopping_a_non_streamed_answer_does_not_wait_for_it(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.script("slow-batch", answer=ANSWER, first_delay=120)
    started = time.monotonic()

    result = stream_answer(
        endpoint(fake_openai, "slow-batch", stream_answers=False), MESSAGES, should_stop=lambda: True, interval=0.05
    )

    assert time.monotonic() - started < 60  # not the two minutes the answer takes, however busy the machine
    assert result.failure is not None and result.failure.kind == FailureKind.CANCELLED
    assert result.text == ""


def test_a_non_streamed_answer_gets_the_total_timeout(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.script("slow-batch", answer=ANSWER, first_delay=1.0)
    ep = endpoint(fake_openai, "slow-batch", stream_answers=False, timeout=0.3, total_timeout=60)

    assert stream_answer(ep, MESSAGES).ok, "the per-chunk timeout does not cut a whole answer short"

    fake_openai.script("stuck-batch", answer=ANSWER, first_delay=120)
    ep = endpoint(fake_openai, "stuck-batch", stream_answers=False, timeout=0.3, total_timeout=0.6)
    result = stream_answer(ep, MESSAGES)
    assert result.failure is not None and result.failure.kind == FailureKind.TIMEOUT
    assert "0.6 s" in result.failure.message


# -- what a 400 says --------------------------------------------------------------


def test_a_400_names_the_parameter_from_the_error_and_quotes_the_server(fake_openai: FakeOpenAIServer) -> None:
    words = "Unsupported value: 'temperature' does not support 0.2 with this model. Only the default (1) value is supported."
    fake_openai.script("o-mini", status=400, error_message=words, error_param="temperature")

    result = stream_answer(endpoint(fake_openai, "o-mini", temperature=0.2), MESSAGES)

    failure = result.failure
    assert failure is not None and failure.kind == FailureKind.BAD_REQUEST
    assert failure.param == "temperature"
    assert "'temperature'" in failure.message and f"“{words}”" in failure.message
    assert "top_p" not in failure.message, "no generic list of suspects"
    assert len(fake_openai.chat_requests("o-mini")) == 1


def test_a_400_without_a_param_field_names_the_parameter_its_message_mentions(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.script("local", status=400, error_message="top_p must be in (0, 1], got 1.5")

    result = stream_answer(endpoint(fake_openai, "local", top_p=1.5), MESSAGES)

    assert result.failure is not None and result.failure.param == "top_p"
    assert "refused the parameter 'top_p'" in result.failure.message
    assert "“top_p must be in (0, 1], got 1.5”" in result.failure.message


def test_a_400_naming_no_parameter_quotes_the_server_without_guessing(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.script("local", status=400, error_message="Context window exceeded.")

    result = stream_answer(endpoint(fake_openai, "local"), MESSAGES)

    assert result.failure is not None and result.failure.param is None
    assert "“Context window exceeded.”" in result.failure.message
    assert "parameter '" not in result.failure.message
