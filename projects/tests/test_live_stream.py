"""The live stream (server-sent events) against the real Redis: who may listen, what a listener gets, how a stream ends."""

from __future__ import annotations

import json
import uuid
from unittest import mock

import pytest
from django.db import connections
from django.test import override_settings

from projects import live

pytestmark = pytest.mark.django_db


def stream_url(project, **params) -> str:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return f"/p/{project.uuid}/live/" + (f"?{query}" if query else "")


def events_in(chunks: list[bytes]) -> list[dict]:
    return [json.loads(line[len("data: "):]) for chunk in chunks for line in chunk.decode().splitlines() if line.startswith("data: ")]


def read_until_event(response, *, limit: int = 20) -> list[bytes]:
    """Chunks of the stream up to and including the first one that carries an event (keepalives in between)."""
    chunks = []
    for chunk in response.streaming_content:
        chunks.append(chunk)
        if b"data: " in chunk or len(chunks) >= limit:
            break
    return chunks


def close(response) -> None:
    """Close a stream as the server does when the page goes away, keeping the test's database connection
    (closing a response ends its request, which would otherwise close the connection the test runs in)."""
    with mock.patch.object(connections["default"], "close_if_unusable_or_obsolete"):
        response.close()


@pytest.fixture
def publish_now(project):
    """Publish as a committed change would (the test's transaction never commits, so on_commit would not fire)."""
    return lambda kind, **ids: live._publish_now(str(project.uuid), {"kind": kind, **{k: str(v) for k, v in ids.items()}})


def test_it_redirects_anonymous_visitors_to_login(client, project):
    response = client.get(stream_url(project))
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_it_is_404_for_outsiders(client_for, outsider, project):
    assert client_for(outsider).get(stream_url(project)).status_code == 404


def test_it_is_404_for_a_project_that_does_not_exist(client_for, owner):
    assert client_for(owner).get(f"/p/{uuid.uuid4()}/live/").status_code == 404


def test_a_member_gets_the_events_after_the_page_cursor_as_ids_only(client_for, viewer, project, publish_now):
    assert isinstance(live.broker(), live.RedisBroker)  # these tests run on the real Redis
    since = live.cursor(project.uuid)
    theme = uuid.uuid4()
    publish_now("comment", theme=theme)  # after the page rendered, before its stream connected: not lost
    response = client_for(viewer).get(stream_url(project, since=since))
    try:
        assert response.status_code == 200
        assert response["Content-Type"] == "text/event-stream"
        assert response["Cache-Control"] == "no-cache"
        chunks = read_until_event(response)
        assert chunks[0].startswith(b"retry: 1000\nid: ")
        assert events_in(chunks) == [{"kind": "comment", "theme": str(theme)}]
    finally:
        close(response)


def test_last_event_id_resumes_after_the_last_event_the_page_saw(client_for, analyst, project, publish_now):
    publish_now("decision", review=uuid.uuid4())
    seen = live.cursor(project.uuid)
    publish_now("coding", interview=(interview := uuid.uuid4()))
    response = client_for(analyst).get(stream_url(project, since="0-0"), headers={"Last-Event-ID": seen})
    try:
        assert events_in(read_until_event(response)) == [{"kind": "coding", "interview": str(interview)}]
    finally:
        close(response)


def test_events_of_other_projects_never_reach_the_stream(client_for, owner, project):
    since = live.cursor(project.uuid)
    live._publish_now(str(uuid.uuid4()), {"kind": "comment", "theme": str(uuid.uuid4())})
    with override_settings(LIVE_STREAM_SECONDS=1, LIVE_KEEPALIVE_SECONDS=1):
        response = client_for(owner).get(stream_url(project, since=since))
        chunks = list(response.streaming_content)  # the whole (one-second) stream
    assert [e for e in events_in(chunks) if e["kind"] != "presence"] == []  # (its own arrival is presence)


def test_a_stream_ends_after_its_lifetime_and_tells_the_browser_to_come_back(client_for, owner, project):
    with override_settings(LIVE_STREAM_SECONDS=1, LIVE_KEEPALIVE_SECONDS=1):
        response = client_for(owner).get(stream_url(project))
        chunks = list(response.streaming_content)  # ends by itself: a stream never holds a thread for long
    assert chunks[0].startswith(b"retry: 1000\n")
    assert b": keepalive\n\n" in chunks


def test_an_unreadable_last_event_id_asks_the_page_to_refetch_everything(client_for, owner, project):
    response = client_for(owner).get(stream_url(project), headers={"Last-Event-ID": "not-an-id"})
    try:
        assert events_in(read_until_event(response)) == [{"kind": "resync"}]
    finally:
        close(response)


def test_when_every_stream_slot_is_taken_the_page_is_told_to_keep_polling(client_for, owner, project):
    with override_settings(LIVE_STREAMS_PER_PROCESS=0):
        response = client_for(owner).get(stream_url(project))
    assert response.status_code == 204  # EventSource stops on 204; the page's polling carries on


def test_a_stream_slot_is_freed_when_the_stream_closes(client_for, owner, project):
    with override_settings(LIVE_STREAMS_PER_PROCESS=1):
        first = client_for(owner).get(stream_url(project))
        next(iter(first.streaming_content))
        assert client_for(owner).get(stream_url(project)).status_code == 204
        close(first)
        second = client_for(owner).get(stream_url(project))
        assert second.status_code == 200
        close(second)


def test_an_open_stream_is_presence_and_closing_it_leaves(client_for, analyst, project):
    place = f"theme:{uuid.uuid4()}"
    response = client_for(analyst).get(stream_url(project, where=place, client="tab-1"))
    next(iter(response.streaming_content))
    assert [(e["user"], e["where"]) for e in live.present_now(project.uuid)] == [(analyst.pk, place)]
    close(response)  # the page went away before the stream's lifetime ended
    assert live.present_now(project.uuid) == []


def test_a_place_that_is_not_a_theme_interview_or_meeting_is_recorded_as_none(client_for, analyst, project):
    response = client_for(analyst).get(stream_url(project, where="<script>", client="tab-1"))
    next(iter(response.streaming_content))
    try:
        assert [e["where"] for e in live.present_now(project.uuid)] == [""]
    finally:
        close(response)


def test_events_name_ids_only():
    with pytest.raises(ValueError, match="ids only"):
        live.publish(uuid.uuid4(), "comment", body="the text of a comment")
    with pytest.raises(ValueError, match="not a known kind"):
        live.publish(uuid.uuid4(), "gossip", theme=uuid.uuid4())


@override_settings(REDIS_URL="")
def test_without_redis_one_process_replays_and_asks_strangers_to_resync():
    broker = live.broker()
    assert isinstance(broker, live.LocalBroker)
    project = str(uuid.uuid4())
    start = broker.cursor(project)
    broker.publish(project, {"kind": "comment", "theme": "a"})
    broker.publish(str(uuid.uuid4()), {"kind": "comment", "theme": "elsewhere"})
    broker.publish(project, {"kind": "decision", "review": "b"})
    batch = broker.read(project, start, timeout=0)
    assert [e for _id, e in batch.events] == [{"kind": "comment", "theme": "a"}, {"kind": "decision", "review": "b"}]
    assert broker.read(project, batch.cursor, timeout=0).events == []
    assert broker.read(project, "1795620341644-0", timeout=0).resync  # an id from another process or broker


def test_while_redis_is_down_the_page_is_told_to_keep_polling(client_for, owner, project):
    with override_settings(REDIS_URL="redis://127.0.0.1:1/0"):  # nothing listens there
        response = client_for(owner).get(stream_url(project))
    assert response.status_code == 204


def test_the_next_page_of_a_tab_takes_over_its_presence_and_the_old_stream_removes_nothing(client_for, analyst, project):
    first_place, next_place = f"theme:{uuid.uuid4()}", f"interview:{uuid.uuid4()}"
    old = client_for(analyst).get(stream_url(project, where=first_place, client="tab-1"))
    next(iter(old.streaming_content))
    new = client_for(analyst).get(stream_url(project, where=next_place, client="tab-1"))
    next(iter(new.streaming_content))
    assert [e["where"] for e in live.present_now(project.uuid)] == [next_place]
    close(old)  # the server notices the old page's stream is gone only now
    assert [e["where"] for e in live.present_now(project.uuid)] == [next_place]
    close(new)
    assert live.present_now(project.uuid) == []


def test_a_cursor_cannot_add_lines_to_the_stream(client_for, owner, project):
    response = client_for(owner).get(stream_url(project, since="1-0%0Adata:%20%7B%22kind%22%3A%22present%22%7D"))
    try:
        chunks = read_until_event(response)
        assert b"present" not in b"".join(chunks)
        assert events_in(chunks) == [{"kind": "resync"}]
    finally:
        close(response)
