"""The live stream: server-sent events telling a member's open page what changed in the project (projects/live.py).

Each stream is one long response, so it holds a web thread (gunicorn gthread) for its lifetime:
streams end after LIVE_STREAM_SECONDS and the browser reconnects with Last-Event-ID (nothing is lost),
and at most LIVE_STREAMS_PER_PROCESS run at once so ordinary requests always find a thread; a page
turned away (204, which makes EventSource stop) keeps polling as before.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections.abc import Iterator

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.db import connection
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.views.decorators.http import require_GET

from projects import live
from projects.permissions import member_or_404

_CURSOR = re.compile(r"^[A-Za-z0-9.-]{1,64}$")  # a Redis stream id or an in-process one
_slots_lock = threading.Lock()
_slots_used = 0


def _take_slot() -> bool:
    global _slots_used
    with _slots_lock:
        if _slots_used >= settings.LIVE_STREAMS_PER_PROCESS:
            return False
        _slots_used += 1
        return True


def _give_slot() -> None:
    global _slots_used
    with _slots_lock:
        _slots_used = max(0, _slots_used - 1)


class _Stream:
    """The event stream as an iterable whose close() (called by the server, also when the page went away) frees its slot."""

    def __init__(self, events: Iterator[bytes]) -> None:
        self._events = events
        self._closed = False

    def __iter__(self) -> Iterator[bytes]:
        return self._events

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._events.close()
            _give_slot()


@login_required
@require_GET
def live_stream(request: HttpRequest, project_uuid) -> HttpResponse:
    """text/event-stream of the project's events after the page's cursor (Last-Event-ID, else ?since=)."""
    membership = member_or_404(request, project_uuid)
    if not _take_slot():
        return HttpResponse(status=204)  # EventSource gives up on 204: the page keeps polling
    project = str(membership.project.uuid)
    try:
        after = request.headers.get("Last-Event-ID") or request.GET.get("since", "") or live.broker().cursor(project)
    except Exception:  # noqa: BLE001 - broker down: the page polls and tries a stream again later
        live.log.warning("live stream for project %s refused: broker unavailable", project, exc_info=True)
        _give_slot()
        return HttpResponse(status=204)
    if not _CURSOR.match(after):
        after = "unreadable"  # echoed into the stream: never let a header or parameter add lines; the broker asks for a resync
    events = _events(project, after=after, user_id=request.user.pk,
                     client=live.clean_client(request.GET.get("client", "")), where=live.clean_where(request.GET.get("where", "")))
    response = StreamingHttpResponse(_Stream(events), content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # a buffering proxy in front would hold events back
    return response


def _events(project: str, *, after: str, user_id: int, client: str, where: str) -> Iterator[bytes]:
    # The membership check is done: this thread needs no database connection while it waits.
    if not connection.in_atomic_block:
        connection.close()
    deadline = time.monotonic() + settings.LIVE_STREAM_SECONDS
    broker = live.broker()
    listener = broker.listener(settings.LIVE_KEEPALIVE_SECONDS) if isinstance(broker, live.RedisBroker) else None
    left_early = True
    stream = uuid.uuid4().hex
    try:
        cursor = after
        try:
            live.presence_enter(project, client=client, user_id=user_id, where=where, stream=stream)
        except Exception:  # noqa: BLE001 - broker down: end now, the page falls back to polling and retries
            live.log.warning("live stream for project %s could not start", project, exc_info=True)
            left_early = False
            return
        # retry: reconnect one second after the stream ends; id: where to resume even if no event comes.
        yield f"retry: 1000\nid: {cursor}\n\n".encode()
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                kwargs = {"connection": listener} if listener is not None else {}
                batch = broker.read(project, cursor, min(remaining, settings.LIVE_KEEPALIVE_SECONDS), **kwargs)
                live.presence_touch(project, client=client, user_id=user_id, where=where, stream=stream)
            except Exception:  # noqa: BLE001 - as above
                live.log.warning("live stream for project %s interrupted", project, exc_info=True)
                break
            if batch.resync:
                yield f"id: {batch.cursor}\ndata: {json.dumps({'kind': 'resync'})}\n\n".encode()
            for event_id, event in batch.events:
                yield f"id: {event_id}\ndata: {json.dumps(event)}\n\n".encode()
            cursor = batch.cursor
            if not batch.events and not batch.resync:
                yield b": keepalive\n\n"  # also how a page that went away is noticed (the write fails)
        left_early = False
    finally:
        if listener is not None:
            listener.close()
        if left_early:  # closed before its lifetime: the page went away (a reconnect re-enters at once)
            live.presence_leave(project, client=client, user_id=user_id, stream=stream)
