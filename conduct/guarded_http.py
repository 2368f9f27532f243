"""The HTTP client for model endpoints: the egress policy (conduct.egress) checked on every connection, and each
client bound to one endpoint and its key.

Apart from conduct.egress because httpx is heavy: web processes check URLs against the policy when
a form is saved, and only processes that call a model import this module.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable

import httpcore2
import httpx2
from django.conf import settings

from conduct.egress import EgressPolicy, EgressRefused, ResponseTooLarge


class _GuardedBackend(httpcore2.SyncBackend):
    """Connects only to addresses the policy allows, and to exactly the address it checked."""

    def __init__(self, policy: EgressPolicy) -> None:
        self.policy = policy

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[tuple] | None = None) -> httpcore2.NetworkStream:
        try:
            addresses = self.policy.check_host(host, port)
        except EgressRefused as exc:
            raise httpcore2.ConnectError(f"Refused to connect: {exc}") from exc
        last_error: Exception | None = None
        for address in addresses:
            try:
                return super().connect_tcp(str(address), port, timeout, local_address, socket_options)
            except httpcore2.ConnectError as exc:
                last_error = exc
        raise last_error or httpcore2.ConnectError(f"{host} has no address")


class _CappedStream(httpx2.SyncByteStream):
    """The response body, read until `limit` bytes and no further."""

    def __init__(self, stream: httpx2.SyncByteStream, limit: int, what: str) -> None:
        self.stream, self.limit, self.what = stream, limit, what

    def __iter__(self):
        seen = 0
        for chunk in self.stream:
            seen += len(chunk)
            if seen > self.limit:
                raise ResponseTooLarge(f"its {self.what} went past {self.limit / 1024 / 1024:g} MB, more than a model "
                                       "answer can hold; reading stopped there")
            yield chunk

    def close(self) -> None:
        self.stream.close()


# What a chat-completions request carries. The openai client also adds headers it reads from the process
# environment (OPENAI_CUSTOM_HEADERS, which may hold an Authorization; OPENAI_ORG_ID; OPENAI_PROJECT_ID) to every
# request, whichever endpoint a member chose: those are the deployment's, so none of them is sent. Host is
# the URL's own.
_SENT_HEADERS = frozenset({"accept", "content-type", "content-length", "user-agent", "connection"})


class _GuardedTransport(httpx2.HTTPTransport):
    def __init__(self, policy: EgressPolicy, base_url: str, api_key: str) -> None:
        super().__init__(trust_env=False)
        self.base_url, self.api_key = httpx2.URL(base_url), api_key
        # TLS still verifies the certificate against the host name of the URL, not the address.
        self._pool = httpcore2.ConnectionPool(
            ssl_context=ssl.create_default_context(), network_backend=_GuardedBackend(policy),
        )

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        if not _under(request.url, self.base_url):
            raise EgressRefused(f"a request to {request.url} is not under {self.base_url}, the only endpoint this "
                                "client's key goes to")
        headers = {name: value for name, value in request.headers.items() if name.lower() in _SENT_HEADERS}
        headers["Host"] = request.url.netloc.decode("ascii")
        headers["Authorization"] = f"Bearer {self.api_key}"
        # Uncompressed only: the cap below counts what is read, and a compressed answer could unpack to any size.
        headers["Accept-Encoding"] = "identity"
        # A copy goes out: the client reads its own markers back from the request it made (response.request).
        sent = httpx2.Request(request.method, request.url, headers=headers, stream=request.stream,
                              extensions=request.extensions)
        response = super().handle_request(sent)
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            response.close()
            raise ResponseTooLarge(f"it sent a {encoding}-compressed answer though asked for an uncompressed one, "
                                   "and a compressed answer could unpack to any size")
        streamed = "event-stream" in response.headers.get("content-type", "").lower()
        limit = settings.MODEL_STREAM_MAX_BYTES if streamed else settings.MODEL_JSON_MAX_BYTES
        response.stream = _CappedStream(response.stream, limit, "event stream" if streamed else "answer")
        return response


def _under(url: httpx2.URL, base: httpx2.URL) -> bool:
    """True when `url` is on `base`'s origin and below its path."""
    return ((url.scheme, url.host, url.port) == (base.scheme, base.host, base.port)
            and url.path.startswith(base.path.rstrip("/") + "/"))


def http_client(policy: EgressPolicy, timeout: float, *, base_url: str, api_key: str) -> httpx2.Client:
    """The HTTP client for one model endpoint: the policy on every connection, no redirects, no proxy from the
    environment, and requests only below `base_url`, each with `api_key` and nothing else the process holds.

    A redirect would send the request, key included, to a URL nobody chose.
    """
    return httpx2.Client(transport=_GuardedTransport(policy, base_url, api_key), follow_redirects=False,
                         trust_env=False, timeout=timeout)
