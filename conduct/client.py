"""Stream one interview answer from an OpenAI-compatible endpoint, with provenance.

`stream_answer()` wraps the official `openai` client. It owns the retry policy
(the client's own retries are off) so every attempt is visible in provenance,
and it never retries once text has arrived: a half answer is kept and marked,
and the researcher decides whether to retry.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from functools import lru_cache
from typing import Any

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

    def parameters(self) -> dict[str, Any]:
        """The sampling parameters that are set, as sent in the request."""
        params = {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "seed": self.seed,
            "max_tokens": self.max_tokens,
        }
        return {key: value for key, value in params.items() if value is not None}


@dataclass
class Failure:
    kind: FailureKind
    message: str  # says what happened and what to fix, for the researcher
    status_code: int | None = None
    retry_after: float | None = None
    detail: str = ""  # the endpoint's own words

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": str(self.kind),
            "message": self.message,
            "status_code": self.status_code,
            "retry_after": self.retry_after,
            "detail": self.detail,
        }


@dataclass
class AnswerResult:
    text: str
    provenance: dict[str, Any]
    failure: Failure | None = None

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


def _endpoint_words(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
    return str(exc.message)


def classify(exc: BaseException, endpoint: Endpoint) -> Failure:
    """Turn an exception from the client into a Failure a researcher can act on."""
    where = endpoint.base_url
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


def _classify_status(exc: openai.APIStatusError, endpoint: Endpoint) -> Failure:
    status, words = exc.status_code, _endpoint_words(exc)
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
    else:
        kind = FailureKind.BAD_REQUEST
        message = (
            f"{endpoint.base_url} refused the request ({status}). Check the participant's "
            "parameters (temperature, top_p, seed, max tokens) are supported by this model."
        )
    return Failure(
        kind, message, status_code=status, retry_after=_retry_after(exc), detail=words
    )


def backoff_seconds(failure: Failure, attempt: int, base: float) -> float:
    """Honour Retry-After when given, otherwise exponential backoff from `base`."""
    if failure.retry_after is not None:
        return min(failure.retry_after, MAX_BACKOFF_SECONDS)
    return min(base * (2 ** (attempt - 1)), MAX_BACKOFF_SECONDS)


@dataclass
class _Stream:
    """What arrived over one streamed attempt."""

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

    def assembled(self) -> dict[str, Any]:
        """The stream folded back into the shape of a non-streamed response."""
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
def _client(base_url: str, api_key: str, timeout: float) -> OpenAI:
    """One client per endpoint: building one costs ~0.25 s of CPU, and clients are thread-safe.

    Retries are off: stream_answer owns the policy and records every attempt.
    """
    return OpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=0)


def _request(endpoint: Endpoint, messages: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "model": endpoint.model,
        "messages": messages,
        **endpoint.parameters(),
        "stream": True,
        "stream_options": {"include_usage": True},
    }


def stream_answer(
    endpoint: Endpoint,
    messages: list[dict[str, str]],
    *,
    on_text: Callable[[str], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    on_retry: Callable[[Failure, float, int], None] | None = None,
    interval: float = 0.15,
    max_attempts: int = 4,
    backoff_base: float = 1.0,
    sleep: Callable[[float], None] = time.sleep,
) -> AnswerResult:
    """Ask for one answer, streaming; calls on_text(accumulated) at most every `interval` s.

    on_retry(failure, wait_seconds, next_attempt) is called before each backoff wait,
    so a person can see why nothing arrives yet.

    Retries timeouts, 429 and 5xx with backoff, but only while no text has
    arrived. Never raises for endpoint trouble: the result carries a Failure.
    """
    request = _request(endpoint, messages)
    client = _client(endpoint.base_url, endpoint.api_key or "missing-key", endpoint.timeout)
    attempts: list[dict[str, Any]] = []
    started_at, started = _now(), time.monotonic()
    stream, failure = _Stream(), None
    for attempt in range(1, max_attempts + 1):
        attempt_started = time.monotonic()
        stream, failure = _one_attempt(
            client, endpoint, request, on_text, should_stop, interval
        )
        record: dict[str, Any] = {
            "attempt": attempt,
            "started_at": _now(),
            "ok": failure is None,
        }
        attempts.append(record)
        if failure is None:
            break
        record["failure"] = failure.as_dict()
        record["seconds"] = round(time.monotonic() - attempt_started, 3)
        if stream.text or failure.kind not in RETRYABLE or attempt == max_attempts:
            break
        wait = backoff_seconds(failure, attempt, backoff_base)
        if time.monotonic() - started + wait > endpoint.total_timeout:
            break
        record["waited_before_retry"] = wait
        if on_retry is not None:
            on_retry(failure, wait, attempt + 1)
        if not _wait_unless_stopped(wait, sleep, should_stop):
            failure = Failure(FailureKind.CANCELLED, "Stopped by the interviewer while waiting to retry.")
            record["stopped_while_waiting"] = True
            break
    finished = time.monotonic()
    provenance = {
        "provider": "openai-compatible",
        "base_url": endpoint.base_url,
        "request": request,
        "model_requested": endpoint.model,
        "model_returned": stream.model,
        "response_id": stream.response_id,
        "system_fingerprint": stream.system_fingerprint,
        "usage": stream.usage,
        "finish_reason": stream.finish_reason,
        "started_at": started_at,
        "finished_at": _now(),
        "latency_ms": round((finished - started) * 1000),
        "time_to_first_token_ms": (
            round((stream.first_token_at - started) * 1000)
            if stream.first_token_at
            else None
        ),
        "attempts": attempts,
        "raw_response": stream.assembled(),
        "client": f"openai-python {openai.__version__}",
    }
    if failure is not None:
        provenance["failure"] = failure.as_dict()
    return AnswerResult(text=stream.text, provenance=provenance, failure=failure)


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


def _one_attempt(
    client: OpenAI,
    endpoint: Endpoint,
    request: dict[str, Any],
    on_text: Callable[[str], None] | None,
    should_stop: Callable[[], bool] | None,
    interval: float,
) -> tuple[_Stream, Failure | None]:
    stream = _Stream()
    started = time.monotonic()
    last_push = last_check = 0.0
    try:
        response = client.chat.completions.create(**request)
        with response:
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
