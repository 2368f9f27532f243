"""A local OpenAI-compatible chat-completions server for tests and demos.

The real `openai` client talks to it over real HTTP on 127.0.0.1, so tests
exercise the same code paths (SSE parsing, status handling, timeouts) that a
researcher's endpoint would. Behaviour is scripted per model name.

    with FakeOpenAIServer() as server:
        server.script("gpt-test", answer="Hello there.", delay=0.01)
        client = OpenAI(base_url=server.base_url, api_key="sk-test")

Run it by hand for demos (`make run` starts it too):

    python -m conduct.testing.fake_openai --port 8765
"""

from __future__ import annotations

import argparse
import itertools
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, Self

AnswerSource = str | list[str] | Callable[[dict[str, Any]], str]

DEMO_ANSWER = (
    "Thank you for the question. {echo}\n\n"
    "I would describe my view in three parts:\n\n"
    "- First, I try to be **honest** about what I know and what I do not.\n"
    "- Second, I weigh the interests of everyone the answer affects.\n"
    "- Third, I explain my reasoning so it can be checked.\n\n"
    "That said, I am a language model ({model}), and my answers reflect my training. "
    "Is there a part of this you would like me to expand on?"
)


@dataclass
class Script:
    """How the server answers one model name.

    answer: fixed text, a list consumed one per answered request (the last
      repeats), or a function of the request body.
    chunk_chars: characters per streamed delta.
    delay / first_delay: seconds between chunks / before the first chunk.
    status: return this HTTP error instead of answering (400, 401, 404, 429, 500...).
    error_message / error_param: the error's message and `param` field, instead of
      the usual wording for `status`.
    fail_times: only the first N requests fail with `status`, then answer.
    retry_after: value of the Retry-After header on errors.
    die_after_chunks: close the connection mid-stream after N content chunks.
    hold_after_chunks: pause the stream after N content chunks until the test calls
      `release()`, so it can look at a half-streamed answer without racing it.
    hang: sleep this long before sending any header (for timeout tests).
    model_id: model id reported back (e.g. a dated snapshot); defaults to the name.
    finish_reason: "stop", "length", ...
    usage_in_final_chunk: send usage in the chunk carrying finish_reason even
      without stream_options, as some servers (llama.cpp) do.
    redirect_to: answer 307 with this Location (a server trying to move the
      request, key included, elsewhere).

    Ways compatible servers differ from OpenAI's (each answers with a 400 in
    the server's own words, like the real ones do):
    rejects_stream_options: refuse any request carrying `stream_options`.
    rejects_max_tokens: refuse `max_tokens` and ask for `max_completion_tokens`,
      in OpenAI's wording for its reasoning models.
    cannot_stream: "json" answers a streaming request with one plain JSON body;
      "error" refuses it, saying streaming is not supported.
    """

    answer: AnswerSource | None = None
    chunk_chars: int = 6
    delay: float = 0.0
    first_delay: float = 0.0
    status: int | None = None
    fail_times: int | None = None
    retry_after: float | None = None
    die_after_chunks: int | None = None
    hang: float = 0.0
    model_id: str | None = None
    system_fingerprint: str = "fp_fake_0001"
    finish_reason: str = "stop"
    error_message: str | None = None
    error_param: str | None = None
    usage_in_final_chunk: bool = False
    rejects_stream_options: bool = False
    rejects_max_tokens: bool = False
    cannot_stream: Literal["json", "error"] | None = None
    redirect_to: str | None = None
    hold_after_chunks: int | None = None
    calls: int = field(default=0, init=False)
    answered: int = field(default=0, init=False)
    released: threading.Event = field(default_factory=threading.Event, init=False, repr=False)

    def release(self) -> None:
        """Let streams held by `hold_after_chunks` go on to the end."""
        self.released.set()


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None
    received_at: float

    @property
    def model(self) -> str | None:
        return (self.body or {}).get("model")

    @property
    def api_key(self) -> str | None:
        auth = self.headers.get("authorization", "")
        return auth.removeprefix("Bearer ").strip() or None


def _count_tokens(text: str) -> int:
    # A stand-in tokenizer: stable, cheap, and good enough for usage numbers.
    return len(text.split())


def _chunks(text: str, size: int) -> Iterator[str]:
    for start in range(0, len(text), max(1, size)):
        yield text[start : start + size]


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients hanging up (timeouts, cancelled streams) are expected here, not errors.
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FakeOpenAIServer:
    """Threaded HTTP server speaking /v1/chat/completions and /v1/models."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        api_key: str | None = None,
        strict_models: bool = False,
    ) -> None:
        self.api_key = api_key  # when set, any other bearer token gets 401
        self.strict_models = strict_models  # when set, unscripted models get 404
        self.scripts: dict[str, Script] = {}
        self.requests: list[RecordedRequest] = []
        # Chat requests being answered now, and the most there ever were at once since the last reset.
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._ids = itertools.count(1)
        self._httpd = _QuietServer((host, port), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------
    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> Self:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- scripting ---------------------------------------------------------
    def script(self, model: str, **kwargs: Any) -> Script:
        script = Script(**kwargs)
        with self._lock:
            self.scripts[model] = script
        return script

    def reset(self) -> None:
        with self._lock:
            self.scripts.clear()
            self.requests.clear()
        self.reset_in_flight()

    def reset_in_flight(self) -> None:
        """Start counting the most requests at once afresh (scripts and recorded requests stay)."""
        with self._lock:
            self.max_in_flight = self.in_flight

    def _request_started(self) -> None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _request_ended(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def chat_requests(self, model: str | None = None) -> list[RecordedRequest]:
        with self._lock:
            return [
                r
                for r in self.requests
                if r.path.endswith("/chat/completions")
                and (model is None or r.model == model)
            ]

    # -- internals ---------------------------------------------------------
    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _script_for(self, model: str) -> Script | None:
        with self._lock:
            script = self.scripts.get(model)
            if script is not None:
                script.calls += 1
            return script

    def _answer_text(
        self, script: Script | None, model: str, body: dict[str, Any]
    ) -> str:
        source = script.answer if script else None
        if script is not None:
            with self._lock:
                script.answered += 1
        if callable(source):
            return source(body)
        if isinstance(source, list):
            index = min((script.answered if script else 1) - 1, len(source) - 1)
            return source[index]
        if isinstance(source, str):
            return source
        last_user = next(
            (
                m.get("content", "")
                for m in reversed(body.get("messages", []))
                if m.get("role") == "user"
            ),
            "",
        )
        echo = f'You asked: "{str(last_user)[:200]}".' if last_user else ""
        return DEMO_ANSWER.format(echo=echo, model=model)

    def _sleep(self, seconds: float) -> bool:
        """Sleep, waking early on shutdown; returns False when stopping."""
        return (
            not self._stopping.wait(seconds)
            if seconds > 0
            else not self._stopping.is_set()
        )

    def _hold(self, script: Script) -> bool:
        """Wait until the test releases the script (or the server stops); returns False when stopping."""
        while not script.released.wait(0.1):
            if self._stopping.is_set():
                return False
        return True

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep test output clean

            def do_GET(self) -> None:
                server._record(self._recorded(None))
                if self.path.rstrip("/").endswith("/models"):
                    data = [
                        {
                            "id": name,
                            "object": "model",
                            "created": 0,
                            "owned_by": "fake",
                        }
                        for name in sorted(server.scripts)
                    ]
                    self._json(200, {"object": "list", "data": data})
                else:
                    self._error(404, f"Unknown path {self.path}", "not_found")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    server._record(self._recorded(None))
                    self._error(
                        400, "Request body is not valid JSON.", "invalid_request_error"
                    )
                    return
                server._record(self._recorded(body))
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._error(404, f"Unknown path {self.path}", "not_found")
                    return
                server._request_started()
                self.counted = True
                try:
                    self._chat(body)
                finally:
                    self._answered()

            def _answered(self) -> None:
                """The request stops counting as in flight, once: just before the last bytes of the answer
                go out, so a client that reads them and sends its next request is never counted twice."""
                if getattr(self, "counted", False):
                    self.counted = False
                    server._request_ended()

            # -- helpers ---------------------------------------------------
            def _recorded(self, body: dict[str, Any] | None) -> RecordedRequest:
                headers = {k.lower(): v for k, v in self.headers.items()}
                return RecordedRequest(
                    self.command, self.path, headers, body, time.time()
                )

            def _json(
                self,
                status: int,
                payload: dict[str, Any],
                headers: dict[str, str] | None = None,
            ) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def _error(
                self,
                status: int,
                message: str,
                kind: str,
                headers: dict[str, str] | None = None,
                param: str | None = None,
            ) -> None:
                code = {
                    401: "invalid_api_key",
                    404: "model_not_found",
                    429: "rate_limit_exceeded",
                }.get(status)
                payload = {
                    "error": {
                        "message": message,
                        "type": kind,
                        "param": param,
                        "code": code,
                    }
                }
                self._json(status, payload, headers)

            def _chat(self, body: dict[str, Any]) -> None:
                model = str(body.get("model") or "")
                auth = self.headers.get("Authorization", "")
                if server.api_key is not None and auth != f"Bearer {server.api_key}":
                    self._error(
                        401, "Incorrect API key provided.", "invalid_request_error"
                    )
                    return
                script = server._script_for(model)
                if script is None and server.strict_models:
                    self._model_missing(model)
                    return
                if script and script.hang and not server._sleep(script.hang):
                    return
                if script and script.redirect_to:
                    self.send_response(307)
                    self.send_header("Location", script.redirect_to)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if (
                    script
                    and script.status
                    and (script.fail_times is None or script.calls <= script.fail_times)
                ):
                    self._scripted_error(script, model)
                    return
                if script and self._refused(script, body):
                    return
                text = server._answer_text(script, model, body)
                if body.get("stream") and not (script and script.cannot_stream == "json"):
                    self._stream(body, script or Script(), model, text)
                else:
                    self._complete(body, script or Script(), model, text)

            def _refused(self, script: Script, body: dict[str, Any]) -> bool:
                """Refuse the parts of a request this scripted server does not take, in real servers' words."""
                if "stream_options" in body and not body.get("stream"):
                    # OpenAI's own check, so a non-streaming fallback must drop stream_options too.
                    self._bad_param(
                        "The 'stream_options' parameter is only allowed when 'stream' is enabled.", "stream_options"
                    )
                elif script.rejects_stream_options and "stream_options" in body:
                    # Azure OpenAI's wording on older API versions; it leaves `param` empty.
                    self._bad_param("Unrecognized request argument supplied: stream_options", None)
                elif script.rejects_max_tokens and "max_tokens" in body:
                    self._bad_param(
                        "Unsupported parameter: 'max_tokens' is not supported with this model. "
                        "Use 'max_completion_tokens' instead.",
                        "max_tokens",
                        code="unsupported_parameter",
                    )
                elif script.cannot_stream == "error" and body.get("stream"):
                    self._bad_param("Streaming is not supported by this server.", "stream")
                else:
                    return False
                return True

            def _bad_param(self, message: str, param: str | None, code: str | None = None) -> None:
                payload = {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}
                self._json(400, payload, {"x-should-retry": "false"})

            def _model_missing(self, model: str) -> None:
                message = f"The model `{model}` does not exist or you do not have access to it."
                self._error(404, message, "invalid_request_error")

            def _scripted_error(self, script: Script, model: str) -> None:
                status = script.status or 500
                headers = {}
                if script.retry_after is not None:
                    headers["Retry-After"] = str(script.retry_after)
                # The official client retries some statuses by itself; tell it
                # not to, so the code under test owns the retry policy.
                headers["x-should-retry"] = "false"
                if status == 404:
                    self._model_missing(model)
                    return
                message = script.error_message or {
                    401: "Incorrect API key provided.",
                    429: "Rate limit reached. Please try again later.",
                    500: "The server had an error while processing your request.",
                    503: "The engine is currently overloaded.",
                }.get(status, f"Scripted error {status}.")
                self._error(
                    status,
                    message,
                    "server_error" if status >= 500 else "invalid_request_error",
                    headers,
                    param=script.error_param,
                )

            def _base(self, script: Script, model: str) -> dict[str, Any]:
                return {
                    "id": f"chatcmpl-fake{next(server._ids):06d}",
                    "created": int(time.time()),
                    "model": script.model_id or model,
                    "system_fingerprint": script.system_fingerprint,
                }

            def _usage(self, body: dict[str, Any], text: str) -> dict[str, int]:
                prompt = sum(
                    _count_tokens(str(m.get("content", "")))
                    for m in body.get("messages", [])
                )
                completion = _count_tokens(text)
                return {
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                }

            def _complete(
                self, body: dict[str, Any], script: Script, model: str, text: str
            ) -> None:
                if not server._sleep(script.first_delay):
                    return
                payload = self._base(script, model) | {
                    "object": "chat.completion",
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": text},
                            "finish_reason": script.finish_reason,
                            "logprobs": None,
                        }
                    ],
                    "usage": self._usage(body, text),
                }
                self._answered()
                self._json(200, payload)

            def _stream(
                self, body: dict[str, Any], script: Script, model: str, text: str
            ) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                base = self._base(script, model) | {"object": "chat.completion.chunk"}
                include_usage = bool(
                    (body.get("stream_options") or {}).get("include_usage")
                )
                try:
                    self._stream_events(body, script, base, text, include_usage)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client went away (a cancel or a timeout): nothing to do

            def _stream_events(
                self,
                body: dict[str, Any],
                script: Script,
                base: dict[str, Any],
                text: str,
                include_usage: bool,
            ) -> None:
                def choice(
                    delta: dict[str, Any], finish: str | None = None
                ) -> dict[str, Any]:
                    return base | {
                        "choices": [
                            {
                                "index": 0,
                                "delta": delta,
                                "finish_reason": finish,
                                "logprobs": None,
                            }
                        ]
                    }

                self._event(choice({"role": "assistant", "content": ""}))
                if not server._sleep(script.first_delay):
                    return
                for number, piece in enumerate(
                    _chunks(text, script.chunk_chars), start=1
                ):
                    self._event(choice({"content": piece}))
                    if (
                        script.die_after_chunks is not None
                        and number >= script.die_after_chunks
                    ):
                        self._die()
                        return
                    if number == script.hold_after_chunks and not server._hold(script):
                        return
                    if not server._sleep(script.delay):
                        return
                last = choice({}, script.finish_reason)
                if script.usage_in_final_chunk:
                    last["usage"] = self._usage(body, text)
                self._answered()
                self._event(last)
                if include_usage:
                    self._event(
                        base | {"choices": [], "usage": self._usage(body, text)}
                    )
                self._write_chunk(b"data: [DONE]\n\n")
                self._write_chunk(b"")  # the terminating zero-length chunk

            def _event(self, payload: dict[str, Any]) -> None:
                self._write_chunk(b"data: " + json.dumps(payload).encode() + b"\n\n")

            def _write_chunk(self, data: bytes) -> None:
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            def _die(self) -> None:
                # Drop the TCP connection without finishing the chunked body,
                # the way a crashed upstream or a proxy timeout looks to a client.
                self.close_connection = True
                try:
                    self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

        return Handler


def _demo_classification(body: dict[str, Any]) -> str:
    """A structured answer for any JSON schema of strings, enums and string arrays (probe demos).

    The choice among enum values follows the prompt's words, so the same item always gets the same label.
    """
    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
    prompt = " ".join(str(m.get("content", "")) for m in body.get("messages", []))
    emotional = sum(prompt.count(mark) for mark in ("!", "cried", "felt", "so ", "never"))
    answer: dict[str, Any] = {}
    for name, spec in (schema.get("properties") or {}).items():
        if "enum" in spec:
            answer[name] = spec["enum"][0 if emotional >= 2 else -1]
        elif spec.get("type") == "array":
            answer[name] = ["Emotional Expression"] if emotional >= 2 else ["Declaration"]
        else:
            answer[name] = "The review's tone and wording suggest this. It is a demo answer, not a judgement."
    if not answer:
        return "Label: unknown\nRationale: this demo model only answers JSON-schema requests."
    return json.dumps(answer)


def _demo_server(port: int) -> FakeOpenAIServer:
    server = FakeOpenAIServer(port=port)
    # Unscripted models answer with the demo text; these add realistic pacing
    # and a few ways to see failure handling in the UI.
    server.script("demo-fast", delay=0.02, model_id="demo-fast-2026-11-01")
    server.script("demo-slow", delay=0.12, model_id="demo-slow-2026-10-15")
    server.script("demo-flaky", die_after_chunks=25, delay=0.05)
    server.script(
        "demo-ratelimited", status=429, retry_after=1, fail_times=1, delay=0.03
    )
    # Servers unlike OpenAI's: each first refusal is answered by a fallback in conduct.client.
    server.script("demo-no-stream-options", rejects_stream_options=True, delay=0.02)
    server.script("demo-reasoning", rejects_max_tokens=True, delay=0.02)
    server.script("demo-no-streaming", cannot_stream="error", first_delay=1.0)
    # Probe demos: a classifier answering structured output (see `manage.py probe_demo`).
    server.script("demo-classifier", answer=_demo_classification, first_delay=0.3, model_id="demo-classifier-2026-11-01")
    return server


def main() -> None:
    parser = argparse.ArgumentParser(
        description="Local OpenAI-compatible server for RTA Studio demos."
    )
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()
    server = _demo_server(args.port).start()
    print(
        f"Fake OpenAI endpoint at {server.base_url} (models: any; scripted: {', '.join(server.scripts)})"
    )
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()


__all__ = ["FakeOpenAIServer", "RecordedRequest", "Script"]
