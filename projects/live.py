"""Live updates for open pages: who did what (ids and kinds only) and who is looking at what.

An event names what changed, never its content: `{"kind": "comment", "theme": "<uuid>"}`. Each open
page listens on one server-sent-events stream per project (`projects.views_live.live_stream`) and,
on an event that concerns it, fetches the fragment again through the normal permission-checked view,
so nothing reaches a user that the views would not show them.

Two brokers behind one interface:
- Redis (REDIS_URL set): one Redis stream per project (`XADD` with a bounded length, `XREAD BLOCK`
  to listen). Chosen over plain pub/sub because a stream replays what a reconnecting page missed:
  the browser sends the last id it saw (`Last-Event-ID`) and gets everything after it, so the
  bounded lifetime of each HTTP stream loses nothing. Presence is a Redis hash per project.
- In-process (the laptop default, `manage.py runserver`, one process): a ring buffer per project
  and a condition variable; same ids, same replay.
Publishing never fails the request that changed the data: a broker outage only costs liveness
(pages then fall back to polling). The coding hot path's events go out once its answer has been
sent (`hold_events_until_response_sent`): the coder does not wait for the broker.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
import uuid
from collections import deque
from contextvars import ContextVar
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction

log = logging.getLogger(__name__)

# "board": themes created, renamed, reordered, deleted, or codes placed in them (the board, the meeting agenda).
# "notes": a meeting's notes saved (the meeting page shows them).
KINDS = frozenset({"comment", "decision", "coding", "codebook", "board", "present", "presence", "notes"})
ID_KEYS = frozenset({"theme", "review", "interview", "index", "by"})
_WHERE = re.compile(r"^(theme|interview|review|board):[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_CLIENT = re.compile(r"^[A-Za-z0-9-]{1,64}$")
PRESENCE_SECONDS = 45  # a page not heard from for this long has gone (streams touch it every keepalive)
STREAM_LENGTH = 1000  # events kept per project for pages that reconnect
DAY = 24 * 3600  # a project's events and versions go a day after its last event


@dataclass(frozen=True)
class Batch:
    """What a listener got: events after its cursor, the new cursor, and whether it missed events it cannot replay."""

    events: list[tuple[str, dict]]
    cursor: str
    resync: bool = False


def clean_where(value: str) -> str:
    """`theme:<uuid>`, `interview:<uuid>`, `review:<uuid>` or `board:<project uuid>`; anything else is no place ("")."""
    value = (value or "").strip().lower()
    return value if _WHERE.match(value) else ""


def clean_client(value: str) -> str:
    value = (value or "").strip()
    return value if _CLIENT.match(value) else uuid.uuid4().hex


def publish(project_uuid, kind: str, *, after_response: bool = False, **ids) -> None:
    """Tell the project's open pages that something changed, once the transaction that changed it commits.

    The kind's version (`version`) changes with the event, and inside a transaction also at once: the
    transaction's own reads then see their change, and what a colleague cached between the change and the
    commit is kept under the version in between, which nobody reads afterwards.

    `after_response`: a single-statement change (no transaction around it) whose answer is not streamed and
    reads nothing cached under the version may leave the event, and the version's change, until its answer has
    been sent (`hold_events_until_response_sent`); readers meanwhile see the version before the change.
    """
    if kind not in KINDS or not ids.keys() <= ID_KEYS:
        raise ValueError(f"live event {kind!r} with {sorted(ids)} is not a known kind with ids only")
    event = {"kind": kind, **{k: (v if isinstance(v, int) else str(v)) for k, v in ids.items()}}
    if tab := _request_tab.get():
        event["tab"] = tab
    project = str(project_uuid)
    if transaction.get_connection().in_atomic_block:
        # A version in between exists from here to the commit: the one at commit must come before any answer.
        _change_version_now(project, kind)
        transaction.on_commit(lambda: _publish_now(project, event))
    else:
        send = _publish_after_response if after_response else _publish_now
        transaction.on_commit(lambda: send(project, event))


def version(project_uuid, *kinds: str) -> str | None:
    """A token that changes with every event of these kinds in the project: caches of what those events change are
    keyed by it. None while the broker is unreachable (then nothing can be cached safely)."""
    try:
        return broker().versions(str(project_uuid), kinds)
    except Exception as exc:  # noqa: BLE001 - callers compute afresh
        log.warning("live version for project %s unavailable: %s", project_uuid, exc)
        return None


# The `after_response` events of the request this thread is answering, sent after its answer; None outside one.
_held_events: ContextVar[list[tuple[str, dict]] | None] = ContextVar("rta_live_held_events", default=None)
# The browser tab that sent the request (live.js sends its client id as X-Live-Tab): its events carry it, so that
# tab knows exactly which news its own request's answer already showed, and every other tab (the same person's
# too) takes the news as a change to fetch.
_request_tab: ContextVar[str] = ContextVar("rta_live_request_tab", default="")


def _tab_of(environ: dict | None = None, scope: dict | None = None) -> str:
    value = (environ or {}).get("HTTP_X_LIVE_TAB", "")
    if scope:
        value = next((v.decode("latin-1") for k, v in scope.get("headers", ()) if k == b"x-live-tab"), "")
    value = value.strip()
    return value if _CLIENT.match(value) else ""


def hold_events_until_response_sent(**kwargs) -> None:
    """A request starts (Django's request_started): the events it publishes with `after_response` wait until
    the server has sent its answer and closes the response (request_finished, `send_held_events`). An apply's
    answer then does not wait for the broker's round trip (~0.2 ms of its 1.5); a page the change concerns
    learns it from the stream a moment later."""
    send_held_events()  # an earlier answer on this thread that was never closed: its events are still due
    _held_events.set([])
    _request_tab.set(_tab_of(kwargs.get("environ"), kwargs.get("scope")))


def send_held_events(**kwargs) -> None:
    """Publish what the request held back (Django's request_finished)."""
    held = _held_events.get()
    _held_events.set(None)
    _request_tab.set("")
    for project, event in held or ():
        _publish_now(project, event)


def _publish_after_response(project: str, event: dict) -> None:
    held = _held_events.get()
    if held is None:
        _publish_now(project, event)
    else:
        held.append((project, event))


def _publish_now(project: str, event: dict) -> None:
    try:
        broker().publish(project, event)
    except Exception:  # noqa: BLE001 - liveness is best effort; the change itself is saved
        log.warning("live event %s for project %s not published", event.get("kind"), project, exc_info=True)


def _change_version_now(project: str, kind: str) -> None:
    try:
        broker().change_version(project, kind)
    except Exception:  # noqa: BLE001 - the event at commit changes it again
        log.warning("live version %s for project %s not changed", kind, project, exc_info=True)


def _versions_token(values: list) -> str:
    """One token from the kinds' versions; a kind without one yet (no event in a day) counts as "-"."""
    return ".".join(v.decode() if isinstance(v, bytes) else (v or "-") for v in values)


# ------------------------------------------------------------------ in-process broker

class LocalBroker:
    """One process's events and presence (runserver, tests without Redis)."""

    def __init__(self) -> None:
        self._boot = uuid.uuid4().hex[:8]
        self._seq = 0
        self._events: dict[str, deque[tuple[int, dict]]] = {}
        self._presence: dict[str, dict[str, dict]] = {}
        self._versions: dict[tuple[str, str], str] = {}
        self._changed = threading.Condition()

    def _id(self, seq: int) -> str:
        return f"L{self._boot}.{seq}"

    def _seq_of(self, cursor: str) -> int | None:
        prefix = f"L{self._boot}."
        if cursor.startswith(prefix) and cursor[len(prefix):].isdigit():
            return int(cursor[len(prefix):])
        return None

    def publish(self, project: str, event: dict) -> None:
        with self._changed:
            self._seq += 1
            self._events.setdefault(project, deque(maxlen=STREAM_LENGTH)).append((self._seq, event))
            self._versions[project, event["kind"]] = uuid.uuid4().hex
            self._changed.notify_all()

    def change_version(self, project: str, kind: str) -> None:
        with self._changed:
            self._versions[project, kind] = uuid.uuid4().hex

    def versions(self, project: str, kinds: tuple[str, ...]) -> str:
        with self._changed:
            return _versions_token([self._versions.get((project, kind)) for kind in kinds])

    def cursor(self, project: str) -> str:
        with self._changed:
            return self._id(self._seq)

    def read(self, project: str, after: str, timeout: float) -> Batch:
        seq = self._seq_of(after)
        with self._changed:
            if seq is None or seq > self._seq:  # another process's id (restarted server): start from now, refetch all
                return Batch([], self._id(self._seq), resync=True)
            self._changed.wait_for(lambda: self._newer(project, seq), timeout=timeout)
            kept = self._events.get(project, ())
            events = [(self._id(s), e) for s, e in kept if s > seq]
            missed = bool(kept) and kept[0][0] > seq + 1 and len(kept) == kept.maxlen
            return Batch(events, events[-1][0] if events else after, resync=missed)

    def _newer(self, project: str, seq: int) -> bool:
        kept = self._events.get(project)
        return bool(kept) and kept[-1][0] > seq

    def presence_set(self, project: str, key: str, entry: dict, *, only_stream: str = "") -> dict | None:
        """Store `entry` under `key` (with only_stream: only if that stream still owns it); returns what was there."""
        with self._changed:
            place = self._presence.setdefault(project, {})
            before = place.get(key)
            if not only_stream or (before and before.get("stream") == only_stream):
                place[key] = entry
            return before

    def presence_remove(self, project: str, key: str, *, only_stream: str = "") -> bool:
        with self._changed:
            place = self._presence.get(project, {})
            if key in place and (not only_stream or place[key].get("stream") == only_stream):
                del place[key]
                return True
            return False

    def presence(self, project: str) -> list[dict]:
        with self._changed:
            return list(self._presence.get(project, {}).values())


# ------------------------------------------------------------------ Redis broker

class RedisBroker:
    """Events in a Redis stream per project, presence in a Redis hash per project."""

    def __init__(self, url: str) -> None:
        import redis

        self._url = url
        self._client = redis.Redis.from_url(url, socket_connect_timeout=0.5, socket_timeout=1.0)

    def _events_key(self, project: str) -> str:
        return f"rta:live:{project}"

    def _presence_key(self, project: str) -> str:
        return f"rta:presence:{project}"

    def _versions_key(self, project: str) -> str:
        return f"rta:live-versions:{project}"

    def publish(self, project: str, event: dict) -> None:
        """The event and its kind's new version, in one round trip."""
        key = self._events_key(project)
        with self._client.pipeline(transaction=False) as pipe:
            pipe.xadd(key, {"e": json.dumps(event)}, maxlen=STREAM_LENGTH, approximate=True)
            pipe.expire(key, DAY)  # a project nobody touches for a day keeps no events
            self._change_version(pipe, project, event["kind"])
            pipe.execute()

    def change_version(self, project: str, kind: str) -> None:
        with self._client.pipeline(transaction=False) as pipe:
            self._change_version(pipe, project, kind)
            pipe.execute()

    def _change_version(self, pipe, project: str, kind: str) -> None:
        pipe.hset(self._versions_key(project), kind, uuid.uuid4().hex)
        pipe.expire(self._versions_key(project), DAY)

    def versions(self, project: str, kinds: tuple[str, ...]) -> str:
        return _versions_token(self._client.hmget(self._versions_key(project), list(kinds)))

    def cursor(self, project: str) -> str:
        last = self._client.xrevrange(self._events_key(project), count=1)
        return last[0][0].decode() if last else "0-0"

    def listener(self, timeout: float):
        """A connection of its own for one stream: XREAD BLOCK holds it for up to `timeout` seconds."""
        import redis

        return redis.Redis.from_url(self._url, socket_connect_timeout=0.5, socket_timeout=timeout + 5)

    def read(self, project: str, after: str, timeout: float, *, connection=None) -> Batch:
        if not re.match(r"^\d+-\d+$", after):
            return Batch([], self.cursor(project), resync=True)
        reply = (connection or self._client).xread({self._events_key(project): after}, block=max(1, int(timeout * 1000)),
                                                   count=200)
        events = [(entry_id.decode(), json.loads(fields[b"e"])) for _key, entries in reply or [] for entry_id, fields in entries]
        return Batch(events, events[-1][0] if events else after)

    def presence_set(self, project: str, key: str, entry: dict, *, only_stream: str = "") -> dict | None:
        # Check and write are two round trips: a page taking over its own entry at that instant only costs a touch.
        name = self._presence_key(project)
        raw = self._client.hget(name, key)
        before = json.loads(raw) if raw else None
        if not only_stream or (before and before.get("stream") == only_stream):
            with self._client.pipeline(transaction=False) as pipe:
                pipe.hset(name, key, json.dumps(entry))
                pipe.expire(name, 3600)
                pipe.execute()
        return before

    def presence_remove(self, project: str, key: str, *, only_stream: str = "") -> bool:
        name = self._presence_key(project)
        if only_stream:
            raw = self._client.hget(name, key)
            if not raw or json.loads(raw).get("stream") != only_stream:
                return False
        return bool(self._client.hdel(name, key))

    def presence(self, project: str) -> list[dict]:
        return [json.loads(v) for v in self._client.hvals(self._presence_key(project))]


_broker: LocalBroker | RedisBroker | None = None
_broker_lock = threading.Lock()


def broker() -> LocalBroker | RedisBroker:
    global _broker
    with _broker_lock:
        url = settings.REDIS_URL
        if _broker is None or (isinstance(_broker, RedisBroker) and _broker._url != url) or (
                isinstance(_broker, LocalBroker) and url):
            _broker = RedisBroker(url) if url else LocalBroker()
        return _broker


def cursor(project_uuid) -> str:
    """Where the stream stands now: a page rendered now listens from here and misses nothing after it."""
    try:
        return broker().cursor(str(project_uuid))
    except Exception:  # noqa: BLE001 - without a cursor the page still listens, from whenever it connects
        log.warning("live cursor for project %s unavailable", project_uuid, exc_info=True)
        return ""


# ------------------------------------------------------------------ presence

def presence_enter(project_uuid, *, client: str, user_id: int, where: str, stream: str = "") -> None:
    """Record that a browser tab (`client`) of a user shows `where`, through `stream`; tell the others when that is news.

    A tab keeps its client id from page to page, so the new page's stream takes the entry over at once; the old
    page's stream, which the server notices only at its next write, then touches and removes nothing.
    """
    project = str(project_uuid)
    entry = {"user": user_id, "where": where, "seen": time.time(), "stream": stream}
    before = broker().presence_set(project, f"{user_id}:{client}", entry)
    if before is None or before.get("where") != where:
        _publish_now(project, {"kind": "presence"})


def presence_touch(project_uuid, *, client: str, user_id: int, where: str, stream: str) -> None:
    """Keep a stream's entry fresh, unless a newer page of the same tab took it over."""
    entry = {"user": user_id, "where": where, "seen": time.time(), "stream": stream}
    broker().presence_set(str(project_uuid), f"{user_id}:{client}", entry, only_stream=stream)


def presence_leave(project_uuid, *, client: str, user_id: int, stream: str = "") -> None:
    project = str(project_uuid)
    try:
        if broker().presence_remove(project, f"{user_id}:{client}", only_stream=stream):
            _publish_now(project, {"kind": "presence"})
    except Exception:  # noqa: BLE001 - the entry then simply ages out
        log.warning("presence of a page in project %s not removed", project, exc_info=True)


def present_now(project_uuid) -> list[dict]:
    """Who has a page of the project open, and where ({"user", "where"}), heard from in the last PRESENCE_SECONDS."""
    try:
        entries = broker().presence(str(project_uuid))
    except Exception:  # noqa: BLE001 - no presence rather than a failing page
        return []
    fresh = time.time() - PRESENCE_SECONDS
    return [e for e in entries if e.get("seen", 0) >= fresh]
