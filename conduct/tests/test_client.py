"""conduct.client against a real local HTTP server, with the real openai client."""

from __future__ import annotations

import itertools
import time

from conduct.client import Endpoint, FailureKind, backoff_seconds, stream_answer
from conduct.egress import EgressPolicy
from conduct.testing.fake_openai import FakeOpenAIServer

# The fake server listens on 127.0.0.1, which endpoints may reach only where the deployment allows it.
LOCAL = EgressPolicy(allow_private_networks=True)

MESSAGES = [
    {"role": "system", "content": "You are being interviewed."},
    {"role": "user", "content": "What does fairness mean to you?"},
]


def endpoint(server: FakeOpenAIServer, model: str, **kwargs: object) -> Endpoint:
    return Endpoint(
        model=model, base_url=server.base_url, api_key="sk-test-123", egress=LOCAL, **kwargs
    )  # type: ignore[arg-type]


def test_it_streams_the_answer_and_returns_full_provenance(
    fake_openai: FakeOpenAIServer,
) -> None:
    answer = "Fairness means treating like cases alike. It also means listening."
    fake_openai.script(
        "gpt-x", answer=answer, model_id="gpt-x-2026-11-01", system_fingerprint="fp_abc"
    )
    ep = endpoint(
        fake_openai, "gpt-x", temperature=0.7, top_p=0.9, seed=42, max_tokens=300
    )

    result = stream_answer(ep, MESSAGES)

    assert result.ok and result.text == answer
    prov = result.provenance
    assert prov["request"] == {
        "model": "gpt-x",
        "messages": MESSAGES,
        "temperature": 0.7,
        "top_p": 0.9,
        "seed": 42,
        "max_tokens": 300,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    assert prov["model_returned"] == "gpt-x-2026-11-01"
    assert prov["system_fingerprint"] == "fp_abc"
    assert prov["finish_reason"] == "stop"
    assert prov["usage"]["completion_tokens"] == len(answer.split())
    assert prov["usage"]["prompt_tokens"] == 10
    assert prov["raw_response"]["choices"][0]["message"]["content"] == answer
    assert prov["raw_response"]["chunk_count"] > 3
    assert prov["latency_ms"] >= prov["time_to_first_token_ms"] >= 0
    assert prov["attempts"] == [
        {"attempt": 1, "started_at": prov["attempts"][0]["started_at"], "ok": True}
    ]
    # What the server actually received matches what provenance claims was sent.
    [sent] = fake_openai.chat_requests("gpt-x")
    assert sent.body == prov["request"]
    assert sent.api_key == "sk-test-123"


def test_the_api_key_never_appears_in_provenance(fake_openai: FakeOpenAIServer) -> None:
    result = stream_answer(endpoint(fake_openai, "any"), MESSAGES)
    assert "sk-test-123" not in repr(result.provenance)
    assert "sk-test-123" not in repr(endpoint(fake_openai, "any"))


def test_unset_parameters_are_not_sent(fake_openai: FakeOpenAIServer) -> None:
    stream_answer(endpoint(fake_openai, "plain"), MESSAGES)
    [sent] = fake_openai.chat_requests("plain")
    assert not {"temperature", "top_p", "seed", "max_tokens"} & set(sent.body or {})


def test_it_reports_accumulated_text_while_streaming_throttled(
    fake_openai: FakeOpenAIServer,
) -> None:
    answer = "word " * 60
    fake_openai.script(
        "slow", answer=answer, chunk_chars=5, delay=0.02
    )  # ~1.2 s in 60 chunks
    seen: list[tuple[float, str]] = []
    started = time.monotonic()

    result = stream_answer(
        endpoint(fake_openai, "slow"),
        MESSAGES,
        on_text=lambda t: seen.append((time.monotonic(), t)),
        interval=0.15,
    )

    assert result.ok
    elapsed = time.monotonic() - started
    # At most one push per 0.15 s (plus the final one), however slow the machine is.
    assert 4 <= len(seen) <= elapsed / 0.15 + 2 and len(seen) < 30, "pushes are throttled, not one per chunk"
    texts = [t for _, t in seen]
    assert all(answer.startswith(t) for t in texts)
    assert [len(t) for t in texts] == sorted(len(t) for t in texts)
    assert texts[-1] == answer, "the final text is always pushed"
    # Timestamps are taken in the callback, a moment after each push: allow a busy machine its jitter.
    gaps = [b - a for (a, _), (b, _) in itertools.pairwise(seen[:-1])]
    assert all(gap >= 0.1 for gap in gaps)


def test_a_stream_that_dies_keeps_the_partial_text_and_does_not_retry(
    fake_openai: FakeOpenAIServer,
) -> None:
    fake_openai.script(
        "flaky", answer="abcdefghijklmnopqrstuvwxyz", chunk_chars=4, die_after_chunks=3
    )
    pushed: list[str] = []

    result = stream_answer(
        endpoint(fake_openai, "flaky"), MESSAGES, on_text=pushed.append, sleep=_no_sleep
    )

    assert not result.ok
    assert result.failure is not None
    assert result.failure.kind in {FailureKind.CONNECTION, FailureKind.INTERRUPTED}
    assert result.text == "abcdefghijkl"
    assert pushed[-1] == "abcdefghijkl"
    assert result.provenance["failure"]["kind"] == result.failure.kind
    assert result.provenance["finish_reason"] is None
    assert len(fake_openai.chat_requests("flaky")) == 1, (
        "a half answer is never silently re-asked"
    )


def test_a_stream_closed_cleanly_without_finish_reason_is_interrupted(
    fake_openai: FakeOpenAIServer,
) -> None:
    fake_openai.script("cut", answer="partial", finish_reason="")
    result = stream_answer(endpoint(fake_openai, "cut"), MESSAGES)
    assert result.failure is not None and result.failure.kind == FailureKind.INTERRUPTED
    assert result.text == "partial"


def test_429_is_retried_after_the_retry_after_delay(
    fake_openai: FakeOpenAIServer,
) -> None:
    fake_openai.script(
        "busy", answer="Now I can answer.", status=429, retry_after=2.5, fail_times=2
    )
    waits: list[float] = []
    notes: list[tuple[str, float, int]] = []

    result = stream_answer(
        endpoint(fake_openai, "busy"),
        MESSAGES,
        sleep=waits.append,
        on_retry=lambda failure, wait, attempt: notes.append((failure.kind, wait, attempt)),
    )

    assert notes == [("rate_limited", 2.5, 2), ("rate_limited", 2.5, 3)]
    assert result.ok and result.text == "Now I can answer."
    assert waits == [2.5, 2.5]
    attempts = result.provenance["attempts"]
    assert [a["ok"] for a in attempts] == [False, False, True]
    assert attempts[0]["failure"]["kind"] == "rate_limited"
    assert attempts[0]["failure"]["retry_after"] == 2.5
    assert len(fake_openai.chat_requests("busy")) == 3


def test_429_without_retry_after_backs_off_exponentially_then_gives_up(
    fake_openai: FakeOpenAIServer,
) -> None:
    fake_openai.script("always-busy", status=429)
    waits: list[float] = []

    result = stream_answer(
        endpoint(fake_openai, "always-busy"),
        MESSAGES,
        sleep=waits.append,
        max_attempts=4,
    )

    assert waits == [1.0, 2.0, 4.0]
    assert (
        result.failure is not None and result.failure.kind == FailureKind.RATE_LIMITED
    )
    assert "rate limiting" in result.failure.message and result.text == ""


def test_stopping_during_a_backoff_wait_ends_it(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.script("busy", status=429, retry_after=60)
    started = time.monotonic()
    asked: list[int] = []

    def stop_on_second_look() -> bool:
        asked.append(1)
        return len(asked) >= 2

    result = stream_answer(endpoint(fake_openai, "busy"), MESSAGES, should_stop=stop_on_second_look)

    assert time.monotonic() - started < 30  # not the minute the endpoint asked to wait
    assert result.failure is not None and result.failure.kind == FailureKind.CANCELLED
    assert len(fake_openai.chat_requests("busy")) == 1


def test_server_errors_are_retried(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.script("wobbly", answer="ok", status=500, fail_times=1)
    result = stream_answer(endpoint(fake_openai, "wobbly"), MESSAGES, sleep=_no_sleep)
    assert result.ok and [a["ok"] for a in result.provenance["attempts"]] == [
        False,
        True,
    ]


def test_401_says_to_fix_the_key_and_is_not_retried(
    fake_openai: FakeOpenAIServer,
) -> None:
    fake_openai.api_key = "sk-the-right-one"
    result = stream_answer(endpoint(fake_openai, "gpt-x"), MESSAGES, sleep=_no_sleep)
    assert result.failure is not None and result.failure.kind == FailureKind.AUTH
    assert result.failure.status_code == 401
    assert (
        "API key" in result.failure.message
        and "OPENAI_API_KEY" in result.failure.message
    )
    assert result.failure.detail == "Incorrect API key provided."
    assert len(fake_openai.chat_requests()) == 1


def test_404_names_the_model_to_fix(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.strict_models = True
    result = stream_answer(endpoint(fake_openai, "gpt-typo"), MESSAGES, sleep=_no_sleep)
    assert (
        result.failure is not None
        and result.failure.kind == FailureKind.MODEL_NOT_FOUND
    )
    assert (
        "'gpt-typo'" in result.failure.message and "model id" in result.failure.message
    )
    assert len(fake_openai.chat_requests()) == 1


def test_a_hanging_endpoint_times_out_and_is_retried(
    fake_openai: FakeOpenAIServer,
) -> None:
    fake_openai.script("hangs", hang=120)
    waits: list[float] = []
    started = time.monotonic()

    result = stream_answer(
        endpoint(fake_openai, "hangs", timeout=0.3),
        MESSAGES,
        sleep=waits.append,
        max_attempts=2,
    )

    assert time.monotonic() - started < 60  # two 0.3 s timeouts, not two 2-minute hangs
    assert result.failure is not None and result.failure.kind == FailureKind.TIMEOUT
    assert "0.3 s" in result.failure.message
    assert waits == [1.0]


def test_a_trickling_answer_is_cut_at_the_total_timeout(
    fake_openai: FakeOpenAIServer,
) -> None:
    # 40 s to trickle in whole; cut after 2 s, by which even a busy machine has some of it.
    fake_openai.script("trickle", answer="x" * 2000, chunk_chars=1, delay=0.02)
    result = stream_answer(
        endpoint(fake_openai, "trickle", total_timeout=2), MESSAGES
    )
    assert result.failure is not None and result.failure.kind == FailureKind.TIMEOUT
    assert 5 < len(result.text) < 2000


def test_should_stop_cancels_and_keeps_text(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.script("long", answer="y" * 3000, chunk_chars=3, delay=0.01)  # 10 s to stream whole
    asked: list[float] = []

    def stop_after_a_while() -> bool:
        asked.append(time.monotonic())
        return len(asked) > 2

    result = stream_answer(
        endpoint(fake_openai, "long"),
        MESSAGES,
        should_stop=stop_after_a_while,
        interval=0.1,
    )

    assert result.failure is not None and result.failure.kind == FailureKind.CANCELLED
    assert result.text.startswith("yyy") and len(result.text) < 3000


def test_unreachable_endpoint_says_to_check_the_url() -> None:
    ep = Endpoint(model="m", base_url="http://127.0.0.1:9/v1", api_key="k", timeout=1, egress=LOCAL)
    result = stream_answer(ep, MESSAGES, sleep=_no_sleep, max_attempts=1)
    assert result.failure is not None and result.failure.kind == FailureKind.CONNECTION
    assert "base URL" in result.failure.message


def test_backoff_caps_and_honours_retry_after() -> None:
    from conduct.client import Failure

    assert (
        backoff_seconds(Failure(FailureKind.RATE_LIMITED, "", retry_after=3), 5, 1.0)
        == 3
    )
    assert (
        backoff_seconds(Failure(FailureKind.RATE_LIMITED, "", retry_after=999), 1, 1.0)
        == 60
    )
    assert backoff_seconds(Failure(FailureKind.SERVER_ERROR, ""), 3, 0.5) == 2.0
    assert backoff_seconds(Failure(FailureKind.SERVER_ERROR, ""), 30, 1.0) == 60


def _no_sleep(_: float) -> None:
    pass


def test_an_answer_larger_than_a_model_answer_can_be_is_not_read_to_the_end(fake_openai, settings):
    settings.MODEL_STREAM_MAX_BYTES = 20_000
    fake_openai.script("huge", answer="word " * 20_000, chunk_chars=500)
    result = stream_answer(endpoint(fake_openai, "huge"), [{"role": "user", "content": "hi"}], max_attempts=1)
    assert result.failure is not None and result.failure.kind == FailureKind.INTERRUPTED
    assert result.failure.message == (
        f"The answer from {fake_openai.base_url} was not kept: its event stream went past 0.0190735 MB, more than a "
        "model answer can hold; reading stopped there.")
    assert len(result.text) < 20_000
    assert fake_openai.chat_requests()[0].headers["accept-encoding"] == "identity"


def test_a_whole_json_answer_larger_than_the_limit_is_refused(fake_openai, settings):
    settings.MODEL_JSON_MAX_BYTES = 4_096
    fake_openai.script("whole", answer="x" * 10_000, cannot_stream="json")
    result = stream_answer(endpoint(fake_openai, "whole"), [{"role": "user", "content": "hi"}], max_attempts=1)
    assert result.failure is not None and "its answer went past" in result.failure.message and result.text == ""


def test_a_compressed_answer_is_refused_as_it_could_unpack_to_any_size():
    import gzip
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Gzipping(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - the http.server API
            self.rfile.read(int(self.headers["Content-Length"]))
            body = gzip.compress(b'{"choices": [{"message": {"content": "' + b"a" * 100_000 + b'"}}]}')
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Gzipping)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        ep = Endpoint(model="m", base_url=f"http://127.0.0.1:{server.server_port}/v1", api_key="k", egress=LOCAL)
        result = stream_answer(ep, [{"role": "user", "content": "hi"}], max_attempts=1)
    finally:
        server.shutdown()
    assert result.failure is not None
    assert "it sent a gzip-compressed answer though asked for an uncompressed one" in result.failure.message


def test_a_redirect_is_not_followed_and_says_so(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.script("moved", status=307)
    result = stream_answer(endpoint(fake_openai, "moved"), MESSAGES, sleep=lambda _: None, max_attempts=2)
    assert result.failure is not None and result.failure.kind == FailureKind.BAD_REQUEST
    assert "redirected the request (307)" in result.failure.message and "never followed" in result.failure.message
    assert len(fake_openai.chat_requests("moved")) == 1
