"""Stream one interview answer from an OpenAI-compatible endpoint, with provenance.

`stream_answer()` wraps the official `openai` client. It owns the retry policy
(the client's own retries are off) so every attempt is visible in provenance,
and it never retries once text has arrived: a half answer is kept and marked,
and the researcher decides whether to retry.

Compatible servers differ from OpenAI's: some reject `stream_options`, some
cannot stream, and newer OpenAI models want `max_completion_tokens`. When a
400 says so, the request is adapted once and asked again; the adaptation is
recorded in provenance and returned in `AnswerResult.learned` so the caller
can remember it for the endpoint's next answers.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from enum import StrEnum
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from conduct import throttle
from conduct.crypto import masked_hint
from conduct.egress import EgressPolicy, EgressRefused, ResponseTooLarge
from projects import safejson

# openai (with httpx and pydantic, ~40 MB per process) is imported where it is used: web processes import this
# module for its types, and only processes that call a model need the client.
if TYPE_CHECKING:
    import openai
    from openai import OpenAI

DEFAULT_BASE_URL = "https://api.openai.com/v1"
MAX_BACKOFF_SECONDS = 60.0


class FailureKind(StrEnum):
    TIMEOUT = "timeout"
    RATE_LIMITED = "rate_limited"
    AUTH = "auth"
    MODEL_NOT_FOUND = "model_not_found"
    BAD_REQUEST = "bad_request"
    SERVER_ERROR = "server_error"
    CONNECTION = "connection"
    INTERRUPTED = "interrupted"  # the stream stopped before the model finished
    CANCELLED = "cancelled"  # the researcher stopped it
    REFUSED = "refused"  # not sent: the endpoint's address or key binding is not allowed
    BUSY = "busy"  # not sent: every one of the endpoint's "requests at once" stayed taken (conduct.throttle)


class Fallback(StrEnum):
    """A change to the request after the endpoint refused (or ignored) part of it."""

    OMIT_STREAM_OPTIONS = "omit_stream_options"
    MAX_COMPLETION_TOKENS = "max_completion_tokens"
    NON_STREAMING = "non_streaming"


# What each fallback teaches about the endpoint, as Endpoint field values.
LEARNED = {
    Fallback.OMIT_STREAM_OPTIONS: {"send_stream_options": False},
    Fallback.MAX_COMPLETION_TOKENS: {"max_tokens_param": "max_completion_tokens"},
    Fallback.NON_STREAMING: {"can_stream": False},
}

# Request parameters a 400 may name, longest first so "max_tokens" is not found inside
# "max_completion_tokens".
REQUEST_PARAMETERS = (
    "max_completion_tokens", "stream_options", "max_tokens", "temperature", "messages", "top_p", "stream", "model",
    "seed",
)

RETRYABLE = {
    FailureKind.TIMEOUT,
    FailureKind.RATE_LIMITED,
    FailureKind.SERVER_ERROR,
    FailureKind.CONNECTION,
}


@dataclass(frozen=True)
class Endpoint:
    """Where and how to ask one live participant. The key never leaves this object."""

    model: str
    base_url: str = DEFAULT_BASE_URL
    api_key: str = field(default="", repr=False)
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    max_tokens: int | None = None
    timeout: float = 60.0  # seconds to connect and between streamed chunks
    total_timeout: float = 600.0  # a whole answer may not take longer than this
    stream_answers: bool = True  # the participant's setting
    # What earlier answers learned about this endpoint (see Fallback).
    can_stream: bool = True
    send_stream_options: bool = True
    max_tokens_param: str = "max_tokens"
    egress: EgressPolicy = field(default_factory=EgressPolicy)
    # Requests at once to this endpoint over all workers (conduct.throttle), counted under throttle_key; 0: no limit.
    max_in_flight: int = 0
    throttle_key: str = ""
    slot_wait: float | None = None  # longest wait for a free slot, s; None: CONDUCT_THROTTLE_WAIT_SECONDS

    @property
    def streams(self) -> bool:
        return self.stream_answers and self.can_stream

    def parameters(self) -> dict[str, Any]:
        """The sampling parameters that are set, as sent in the request."""
        params = {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "seed": self.seed,
            self.max_tokens_param: self.max_tokens,
        }
        return {key: value for key, value in params.items() if value is not None}

    def adjustments(self) -> list[str]:
        """How the request differs from OpenAI's usual one before anything is sent, and why."""
        notes = []
        if not self.stream_answers:
            notes.append("non-streaming: the participant's “Stream answers” setting is off")
        elif not self.can_stream:
            notes.append("non-streaming: the endpoint could not stream on an earlier answer")
        if self.streams and not self.send_stream_options:
            notes.append("stream_options omitted: the endpoint rejected it on an earlier answer")
        if self.max_tokens is not None and self.max_tokens_param != "max_tokens":
            notes.append(f"{self.max_tokens_param} sent instead of max_tokens: the endpoint asked for it earlier")
        return notes


@dataclass
class Failure:
    kind: FailureKind
    message: str  # says what happened and what to fix, for the researcher
    status_code: int | None = None
    retry_after: float | None = None
    detail: str = ""  # the endpoint's own words
    param: str | None = None  # the request parameter the endpoint complained about, when known

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": str(self.kind),
            "message": self.message,
            "status_code": self.status_code,
            "retry_after": self.retry_after,
            "detail": self.detail,
            "param": self.param,
        }


@dataclass
class AnswerResult:
    text: str
    provenance: dict[str, Any]
    failure: Failure | None = None
    # Endpoint field values this answer found out (e.g. {"can_stream": False}); remember them.
    learned: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.failure is None


class _Interrupted(Exception):
    def __init__(self, failure: Failure) -> None:
        self.failure = failure


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _retry_after(exc: openai.APIStatusError) -> float | None:
    raw = exc.response.headers.get("retry-after-ms")
    if raw:
        try:
            return float(raw) / 1000
        except ValueError:
            pass
    raw = exc.response.headers.get("retry-after")
    try:
        value = float(raw) if raw else None
    except ValueError:
        return None  # an HTTP date; rare on these APIs, fall back to backoff
    return value if value is not None and math.isfinite(value) and value >= 0 else None


def _error_param(exc: openai.APIStatusError) -> str | None:
    body = exc.body
    error = body.get("error", body) if isinstance(body, dict) else None
    param = error.get("param") if isinstance(error, dict) else None
    return str(param) if param else None


def _endpoint_words(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
    return str(exc.message)


def classify(exc: BaseException, endpoint: Endpoint) -> Failure:
    """Turn an exception from the client into a Failure a researcher can act on, without the key in it.

    An endpoint's error may quote the key it was sent whole; the failure is shown to every member and
    kept in provenance, where a key appears only as its hint.
    """
    failure = _classified(exc, endpoint)
    key = endpoint.api_key
    if len(key) < 8 or (key not in failure.message and key not in failure.detail):
        return failure
    hint = masked_hint(key)
    return replace(failure, message=failure.message.replace(key, hint), detail=failure.detail.replace(key, hint))


def _classified(exc: BaseException, endpoint: Endpoint) -> Failure:
    import openai

    where = endpoint.base_url
    refused = _in_chain(exc, EgressRefused)
    if refused is not None:
        return Failure(FailureKind.REFUSED, f"Nothing was sent to {where}: {refused}")
    too_large = _in_chain(exc, ResponseTooLarge)
    if too_large is not None:
        return Failure(FailureKind.INTERRUPTED, f"The answer from {where} was not kept: {too_large}.")
    if isinstance(exc, openai.APITimeoutError):
        return Failure(
            FailureKind.TIMEOUT,
            f"No reply from {where} within {endpoint.timeout:g} s. The endpoint may be overloaded "
            "or the model is slow; retry, or raise the timeout for this participant.",
        )
    if isinstance(exc, openai.APIStatusError):
        return _classify_status(exc, endpoint)
    if isinstance(exc, openai.APIConnectionError):
        return Failure(
            FailureKind.CONNECTION,
            f"Could not reach {where} or the connection dropped: {exc.__cause__ or exc}. "
            "Check the base URL and that the server is running.",
        )
    return Failure(
        FailureKind.INTERRUPTED,
        f"The answer stream from {where} broke off ({type(exc).__name__}: {exc}). "
        "The text received so far is kept; retry to ask again.",
    )


def _in_chain[E: BaseException](exc: BaseException | None, kind: type[E]) -> E | None:
    """The exception of `kind` that caused `exc` (the client wraps what its transport raised), or None."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, kind):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def _classify_status(exc: openai.APIStatusError, endpoint: Endpoint) -> Failure:
    status, words, param = exc.status_code, _endpoint_words(exc), _error_param(exc)
    if status == 401 or status == 403:
        kind = FailureKind.AUTH
        message = (
            f"{endpoint.base_url} rejected the API key ({status}). Set a valid key for this "
            "participant's endpoint, or OPENAI_API_KEY for the deployment."
        )
    elif status == 404:
        kind = FailureKind.MODEL_NOT_FOUND
        message = (
            f"Model '{endpoint.model}' was not found at {endpoint.base_url} (404). Check the "
            "model id in the participant's endpoint settings, and that your key has access to it."
        )
    elif status == 429:
        kind = FailureKind.RATE_LIMITED
        message = (
            f"{endpoint.base_url} is rate limiting requests (429). Wait and retry, or lower "
            "the number of models asked at once."
        )
    elif status >= 500:
        kind = FailureKind.SERVER_ERROR
        message = f"{endpoint.base_url} had an internal error ({status}). Retry later."
    elif 300 <= status < 400:
        # Never followed: a key goes only to the URL its owner chose, not to wherever an answer points.
        kind = FailureKind.BAD_REQUEST
        where = exc.response.headers.get("location", "") if exc.response is not None else ""
        message = (f"{endpoint.base_url} redirected the request ({status}){f' to {where}' if where else ''}. "
                   "Redirects are never followed, so nothing was sent there: set the endpoint's base URL to the "
                   "final address (for example https:// instead of http://).")
    else:
        kind = FailureKind.BAD_REQUEST
        param = param or _parameter_named_in(words)
        message = _bad_request_message(endpoint, status, words, param)
    return Failure(
        kind, message, status_code=status, retry_after=_retry_after(exc), detail=words, param=param
    )


def _parameter_named_in(words: str) -> str | None:
    """The request parameter an error message mentions, for servers that leave the error's `param` empty."""
    for name in REQUEST_PARAMETERS:
        if re.search(rf"(?<![\w-]){name}(?![\w-])", words):
            return name
    return None


def _bad_request_message(endpoint: Endpoint, status: int, words: str, param: str | None) -> str:
    said = f"“{words}”" if words else "(no reason given)"
    if param is None:
        return (
            f"{endpoint.base_url} refused the request ({status}) and said: {said}. Compare the participant's "
            "endpoint settings with what this server accepts."
        )
    if param in {"stream", "stream_options"}:
        fix = "Turn off “Stream answers” in the participant's endpoint settings."
    elif param in {"temperature", "top_p", "seed", "max_tokens", "max_completion_tokens"}:
        fix = "Change or clear it in the participant's endpoint settings."
    else:
        fix = "Check the participant's endpoint settings."
    return f"{endpoint.base_url} refused the parameter '{param}' ({status}) and said: {said}. {fix}"


def backoff_seconds(failure: Failure, attempt: int, base: float) -> float:
    """Honour Retry-After when given, otherwise exponential backoff from `base`."""
    if failure.retry_after is not None:
        return min(failure.retry_after, MAX_BACKOFF_SECONDS)
    return min(base * (2 ** (attempt - 1)), MAX_BACKOFF_SECONDS)


@dataclass
class _Stream:
    """What arrived over one attempt: streamed chunks, or one whole response body."""

    text: str = ""
    chunk_count: int = 0
    response_id: str | None = None
    model: str | None = None
    system_fingerprint: str | None = None
    created: int | None = None
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    first_token_at: float | None = None
    first_chunk: dict[str, Any] | None = None
    last_chunk: dict[str, Any] | None = None
    whole: dict[str, Any] | None = None  # the response body, when the answer came in one piece

    def take(self, chunk: Any, now: float) -> bool:
        """Fold one chunk in; returns True when it added text."""
        self.chunk_count += 1
        dumped = chunk.model_dump(exclude_none=True)
        self.first_chunk = self.first_chunk or dumped
        self.last_chunk = dumped
        self.response_id = chunk.id or self.response_id
        self.model = chunk.model or self.model
        self.system_fingerprint = (
            getattr(chunk, "system_fingerprint", None) or self.system_fingerprint
        )
        self.created = chunk.created or self.created
        if chunk.usage is not None:
            self.usage = chunk.usage.model_dump(exclude_none=True)
        added = False
        for choice in chunk.choices or []:
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason
            if choice.delta and choice.delta.content:
                if self.first_token_at is None:
                    self.first_token_at = now
                self.text += choice.delta.content
                added = True
        return added

    def take_whole(self, body: Any) -> None:
        """Fold in a non-streamed chat.completion body, kept as it came for provenance."""
        if not isinstance(body, dict) or not isinstance(body.get("choices"), list):
            raise ValueError("the response body is not a chat completion")
        self.whole = body
        self.response_id = body.get("id")
        self.model = body.get("model")
        self.system_fingerprint = body.get("system_fingerprint")
        self.created = body.get("created")
        self.usage = body.get("usage")
        choice = body["choices"][0] if body["choices"] else {}
        self.finish_reason = choice.get("finish_reason")
        self.text = (choice.get("message") or {}).get("content") or ""

    def assembled(self) -> dict[str, Any]:
        """The response as received, or the stream folded back into that shape."""
        if self.whole is not None:
            return self.whole
        return {
            "id": self.response_id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": self.system_fingerprint,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": self.text},
                    "finish_reason": self.finish_reason,
                }
            ],
            "usage": self.usage,
            "chunk_count": self.chunk_count,
            "first_chunk": self.first_chunk,
            "last_chunk": self.last_chunk,
        }


@lru_cache(maxsize=32)
def _client(base_url: str, api_key: str, timeout: float, egress: EgressPolicy) -> OpenAI:
    """One client per endpoint: building one costs ~0.25 s of CPU, and clients are thread-safe.

    Retries are off: stream_answer owns the policy and records every attempt. Connections
    go through the egress policy (conduct.egress), redirects are not followed, and each request
    carries this key and no header the client took from the process environment (conduct.guarded_http).
    """
    from openai import OpenAI

    from conduct.guarded_http import http_client

    return OpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=0,
                  http_client=http_client(egress, timeout, base_url=base_url, api_key=api_key))


def _request(
    endpoint: Endpoint, messages: list[dict[str, str]], response_format: dict[str, Any] | None = None
) -> dict[str, Any]:
    request = {"model": endpoint.model, "messages": messages, **endpoint.parameters()}
    if response_format is not None:
        request["response_format"] = response_format
    if endpoint.streams:
        request["stream"] = True
        if endpoint.send_stream_options:
            request["stream_options"] = {"include_usage": True}
    return request


# "Streaming is not supported", "'stream' is unsupported", "this model does not support streaming".
_STREAMING_REFUSED = re.compile(
    r"(?<![\w-])stream(ing)?(?![\w-]).{0,60}(not supported|unsupported|not available|not allowed|not enabled)"
    r"|(does not|doesn't|cannot|can't|not) support(s)? stream(ing)?(?![\w-])"
)


def _fallback_for(failure: Failure, request: dict[str, Any]) -> Fallback | None:
    """The change to the request that answers this refusal, if the endpoint said what it refused."""
    if failure.kind != FailureKind.BAD_REQUEST:
        return None
    words = failure.detail.lower()
    if "stream_options" in request and (failure.param == "stream_options" or "stream_options" in words):
        return Fallback.OMIT_STREAM_OPTIONS
    if "max_tokens" in request and "max_completion_tokens" in words:
        return Fallback.MAX_COMPLETION_TOKENS
    if request.get("stream") and (failure.param == "stream" or _STREAMING_REFUSED.search(words)):
        return Fallback.NON_STREAMING
    return None


def _adapted(request: dict[str, Any], fallback: Fallback) -> dict[str, Any]:
    changed = dict(request)
    if fallback == Fallback.OMIT_STREAM_OPTIONS:
        del changed["stream_options"]
    elif fallback == Fallback.MAX_COMPLETION_TOKENS:
        changed["max_completion_tokens"] = changed.pop("max_tokens")
    else:
        changed.pop("stream", None)
        changed.pop("stream_options", None)  # OpenAI refuses stream_options without stream
    return changed


def stream_answer(
    endpoint: Endpoint,
    messages: list[dict[str, str]],
    *,
    on_text: Callable[[str], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    on_retry: Callable[[Failure, float, int], None] | None = None,
    on_slot_wait: Callable[[int | None], None] | None = None,
    interval: float = 0.15,
    max_attempts: int = 4,
    backoff_base: float = 1.0,
    sleep: Callable[[float], None] = time.sleep,
    response_format: dict[str, Any] | None = None,
) -> AnswerResult:
    """Ask for one answer, streaming unless the endpoint cannot; calls on_text(accumulated) at most every `interval` s.

    `response_format` asks for structured output (OpenAI's `{"type": "json_schema", ...}`); it is
    sent as given and kept in the provenance's request like every other parameter.

    on_retry(failure, wait_seconds, next_attempt) is called before each backoff wait,
    so a person can see why nothing arrives yet. on_slot_wait(limit) is called when every one of the
    endpoint's `limit` requests at once is taken (conduct.throttle), and on_slot_wait(None) once a slot is free.

    Retries timeouts, 429 and 5xx with backoff, but only while no text has
    arrived. A 400 that names a part of the request this endpoint does not take
    (stream_options, max_tokens, streaming) is asked again at once without it,
    once per kind; those retries do not count against `max_attempts`. Never
    raises for endpoint trouble: the result carries a Failure.
    """
    import openai

    request = _request(endpoint, messages, response_format)
    # Without a key the client still sends a bearer token: a placeholder that is no secret.
    client = _client(endpoint.base_url, endpoint.api_key or "no-key", endpoint.timeout, endpoint.egress)
    attempts: list[dict[str, Any]] = []
    fallbacks: list[dict[str, Any]] = []
    started_at, started = _now(), time.monotonic()
    stream, failure = _Stream(), None
    counted = 0  # attempts that count against max_attempts
    while True:
        counted += 1
        record: dict[str, Any] = {"attempt": len(attempts) + 1, "started_at": _now()}
        attempt_started = time.monotonic()
        stream, failure = _attempt_in_a_slot(client, endpoint, request, on_text, should_stop, interval, record,
                                             on_slot_wait)
        record["ok"] = failure is None
        attempts.append(record)
        if request.get("stream") and stream.whole is not None:
            record["fallback"] = str(Fallback.NON_STREAMING)
            fallbacks.append(_fallback_note(Fallback.NON_STREAMING, record, _PLAIN_JSON_REPLY))
        if failure is None:
            break
        record["failure"] = failure.as_dict()
        record["seconds"] = round(time.monotonic() - attempt_started, 3)
        fallback = None if stream.text else _fallback_for(failure, request)
        if fallback is not None and fallback not in {note["fallback"] for note in fallbacks}:
            record["fallback"] = str(fallback)
            fallbacks.append(_fallback_note(fallback, record, failure.detail))
            request = _adapted(request, fallback)
            counted -= 1
            continue
        if stream.text or failure.kind not in RETRYABLE or counted >= max_attempts:
            break
        wait = backoff_seconds(failure, counted, backoff_base)
        if time.monotonic() - started + wait > endpoint.total_timeout:
            break
        record["waited_before_retry"] = wait
        if on_retry is not None:
            on_retry(failure, wait, len(attempts) + 1)
        if not _wait_unless_stopped(wait, sleep, should_stop):
            failure = Failure(FailureKind.CANCELLED, "Stopped by the interviewer while waiting to retry.")
            record["stopped_while_waiting"] = True
            break
    finished = time.monotonic()
    slot_wait = sum(record.get("waited_for_slot_seconds", 0.0) for record in attempts)
    streamed = bool(request.get("stream")) and stream.whole is None
    provenance = {
        "provider": "openai-compatible",
        "base_url": endpoint.base_url,
        "request": request,
        "model_requested": endpoint.model,
        "model_returned": stream.model,
        "response_id": stream.response_id,
        "system_fingerprint": stream.system_fingerprint,
        "usage": stream.usage,
        "usage_note": _usage_note(request, stream, streamed),
        "finish_reason": stream.finish_reason,
        "mode": "streaming" if streamed else "non-streaming",
        "adjustments": endpoint.adjustments(),
        "fallbacks": fallbacks,
        "started_at": started_at,
        "finished_at": _now(),
        # The endpoint's latency: time spent waiting for a free request slot (conduct.throttle) is not the model's.
        "latency_ms": round((finished - started - slot_wait) * 1000),
        "time_to_first_token_ms": (
            round((stream.first_token_at - started - slot_wait) * 1000)
            if stream.first_token_at
            else None
        ),
        "waited_for_slot_ms": round(slot_wait * 1000),
        "attempts": attempts,
        "raw_response": stream.assembled(),
        "client": f"openai-python {openai.__version__}",
    }
    if failure is not None:
        provenance["failure"] = failure.as_dict()
    learned = {key: value for note in fallbacks for key, value in LEARNED[Fallback(note["fallback"])].items()}
    return AnswerResult(text=stream.text, provenance=provenance, failure=failure, learned=learned)


_PLAIN_JSON_REPLY = "The endpoint answered the streaming request with one plain JSON body; that body is the answer."


def _fallback_note(fallback: Fallback, record: dict[str, Any], because: str) -> dict[str, Any]:
    return {"fallback": str(fallback), "after_attempt": record["attempt"], "because": because}


def _usage_note(request: dict[str, Any], stream: _Stream, streamed: bool) -> str | None:
    """Why usage may be missing: without stream_options, a stream need not report it."""
    if not streamed or "stream_options" in request:
        return None
    if stream.usage:
        return "stream_options was not sent (this endpoint rejects it); usage is what the final chunk carried."
    return "stream_options was not sent (this endpoint rejects it) and no chunk carried usage, so it is not known."


def _wait_unless_stopped(seconds: float, sleep: Callable[[float], None], should_stop: Callable[[], bool] | None) -> bool:
    """Sleep through a backoff, in short steps when someone may stop it; False when stopped."""
    if should_stop is None:
        sleep(seconds)
        return True
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        if should_stop():
            return False
        sleep(min(0.5, left))
    return not should_stop()


def _attempt_in_a_slot(
    client: OpenAI,
    endpoint: Endpoint,
    request: dict[str, Any],
    on_text: Callable[[str], None] | None,
    should_stop: Callable[[], bool] | None,
    interval: float,
    record: dict[str, Any],
    on_slot_wait: Callable[[int | None], None] | None,
) -> tuple[_Stream, Failure | None]:
    """One attempt, sent once the endpoint has a free slot; the wait is noted in the attempt's record."""
    if not endpoint.max_in_flight or not endpoint.throttle_key:
        return _one_attempt(client, endpoint, request, on_text, should_stop, interval)
    began_waiting = (lambda: on_slot_wait(endpoint.max_in_flight)) if on_slot_wait else None
    try:
        with throttle.slot(endpoint.throttle_key, endpoint.max_in_flight, should_stop=should_stop,
                           wait=endpoint.slot_wait, on_wait=began_waiting) as held:
            if held.waited >= 0.001:
                record["waited_for_slot_seconds"] = round(held.waited, 3)
            if held.queued and on_slot_wait is not None:
                on_slot_wait(None)
            return _one_attempt(client, endpoint, request, on_text, should_stop, interval)
    except throttle.SlotUnavailable as busy:
        record["waited_for_slot_seconds"] = round(busy.waited, 3)
        if busy.stopped:
            return _Stream(), Failure(FailureKind.CANCELLED, "Stopped while waiting for a free request slot; nothing was sent.")
        return _Stream(), Failure(
            FailureKind.BUSY,
            f"Nothing was sent to {endpoint.base_url}: its {endpoint.max_in_flight} requests at once stayed taken for "
            f"{busy.waited:.0f} s. Raise “Requests at once” in the endpoint settings, or run fewer things at once.",
        )


def _one_attempt(
    client: OpenAI,
    endpoint: Endpoint,
    request: dict[str, Any],
    on_text: Callable[[str], None] | None,
    should_stop: Callable[[], bool] | None,
    interval: float,
) -> tuple[_Stream, Failure | None]:
    if not request.get("stream"):
        return _ask_whole(client, endpoint, request, on_text, should_stop, interval)
    stream = _Stream()
    started = time.monotonic()
    last_push = last_check = 0.0
    try:
        response = client.chat.completions.create(**request)
        with response:
            if _is_plain_json(response.response.headers.get("content-type", "")):
                stream.take_whole(safejson.loads(response.response.read()))
                return _finish(stream, on_text), None
            for chunk in response:
                now = time.monotonic()
                if stream.take(chunk, now) and on_text and now - last_push >= interval:
                    on_text(stream.text)
                    last_push = now
                # should_stop may hit the database; ask it at the push cadence only.
                stop = (
                    should_stop
                    if should_stop and now - last_check >= interval
                    else None
                )
                last_check = now if stop else last_check
                _check_limits(endpoint, started, now, stop)
    except _Interrupted as stop:
        return _finish(stream, on_text), stop.failure
    except Exception as exc:  # noqa: BLE001 - every endpoint failure becomes a Failure
        return _finish(stream, on_text), classify(exc, endpoint)
    if stream.finish_reason is None:
        failure = Failure(
            FailureKind.INTERRUPTED,
            f"The stream from {endpoint.base_url} ended before the model finished its answer. "
            "The text received so far is kept; retry to ask again.",
        )
        return _finish(stream, on_text), failure
    return _finish(stream, on_text), None


def _is_plain_json(content_type: str) -> bool:
    return "json" in content_type.lower() and "event-stream" not in content_type.lower()


def _ask_whole(
    client: OpenAI,
    endpoint: Endpoint,
    request: dict[str, Any],
    on_text: Callable[[str], None] | None,
    should_stop: Callable[[], bool] | None,
    interval: float,
) -> tuple[_Stream, Failure | None]:
    """One non-streamed request, waited for in a thread so the interviewer can still stop it."""
    import openai

    # Nothing arrives until the last word does, so the whole answer gets the total timeout.
    waits = replace(endpoint, timeout=endpoint.total_timeout)
    outcome: dict[str, Any] = {}

    def ask() -> None:
        try:
            raw = client.chat.completions.with_raw_response.create(
                **request, timeout=openai.Timeout(endpoint.total_timeout, connect=endpoint.timeout)
            )
            outcome["body"] = safejson.loads(raw.text)
        except Exception as exc:  # noqa: BLE001 - handed to the waiting thread
            outcome["error"] = exc

    asking = threading.Thread(target=ask, daemon=True)
    asking.start()
    while asking.is_alive():
        asking.join(interval)
        if asking.is_alive() and should_stop is not None and should_stop():
            # The abandoned request ends when the server answers or its timeout passes.
            return _Stream(), Failure(
                FailureKind.CANCELLED, "Stopped by the interviewer before the whole answer arrived."
            )
    stream = _Stream()
    try:
        if "error" in outcome:
            raise outcome["error"]
        stream.take_whole(outcome["body"])
    except Exception as exc:  # noqa: BLE001 - every endpoint failure becomes a Failure
        return stream, classify(exc, waits)
    return _finish(stream, on_text), None


def _check_limits(
    endpoint: Endpoint,
    started: float,
    now: float,
    should_stop: Callable[[], bool] | None,
) -> None:
    if should_stop is not None and should_stop():
        raise _Interrupted(
            Failure(
                FailureKind.CANCELLED,
                "Stopped by the interviewer; the text so far is kept.",
            )
        )
    if now - started > endpoint.total_timeout:
        raise _Interrupted(
            Failure(
                FailureKind.TIMEOUT,
                f"The answer took longer than {endpoint.total_timeout:g} s and was cut off; the text "
                "so far is kept. Retry, or raise the participant's total timeout.",
            )
        )


def _finish(stream: _Stream, on_text: Callable[[str], None] | None) -> _Stream:
    if on_text and stream.text:
        on_text(stream.text)  # the last words always reach the caller
    return stream
