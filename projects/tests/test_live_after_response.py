"""A request's live events go out once its answer has been sent, not while the user waits for it."""

from __future__ import annotations

import uuid
from unittest import mock

import pytest
from django.db import connections
from django.http import HttpResponse, StreamingHttpResponse
from django.test import RequestFactory

from projects import live

pytestmark = pytest.mark.django_db


def events_after(project, cursor: str) -> list[dict]:
    assert isinstance(live.broker(), live.RedisBroker)  # the suite's real Redis
    return [event for _id, event in live.broker().read(str(project), cursor, timeout=0.001).events]


def server_sent(response) -> None:
    """What the server does once the answer is out: close it (request_finished), keeping the test's connection."""
    with mock.patch.object(connections["default"], "close_if_unusable_or_obsolete"):
        response.close()


def test_the_events_of_a_request_go_out_after_its_answer(django_capture_on_commit_callbacks):
    project, interview = uuid.uuid4(), uuid.uuid4()
    cursor = live.cursor(project)

    def view(request):
        with django_capture_on_commit_callbacks(execute=True):  # the change commits
            live.publish(project, "coding", interview=interview)
        return HttpResponse("applied")

    response = live.EventsAfterResponseMiddleware(view)(RequestFactory().post("/"))
    assert events_after(project, cursor) == []  # the answer is still on its way
    server_sent(response)
    assert events_after(project, cursor) == [{"kind": "coding", "interview": str(interview)}]
    live.publish(project, "codebook")  # outside a request (a task, a command): at once
    with django_capture_on_commit_callbacks(execute=True):
        live.publish(project, "codebook")
    assert [e["kind"] for e in events_after(project, cursor)] == ["coding", "codebook"]


def test_a_streaming_answer_sends_its_events_at_once(django_capture_on_commit_callbacks):
    project = uuid.uuid4()
    cursor = live.cursor(project)

    def stream():
        yield b"first"
        with django_capture_on_commit_callbacks(execute=True):
            live.publish(project, "presence")
        yield b"second"

    def view(request):
        with django_capture_on_commit_callbacks(execute=True):
            live.publish(project, "codebook")
        return StreamingHttpResponse(stream())

    response = live.EventsAfterResponseMiddleware(view)(RequestFactory().get("/"))
    assert [e["kind"] for e in events_after(project, cursor)] == ["codebook"]  # before the first chunk
    chunks = iter(response.streaming_content)
    next(chunks), next(chunks)
    assert [e["kind"] for e in events_after(project, cursor)] == ["codebook", "presence"]  # while it streams
    server_sent(response)



def test_events_of_an_answer_never_closed_go_out_with_the_next_request(django_capture_on_commit_callbacks):
    project = uuid.uuid4()
    cursor = live.cursor(project)

    def view(request):
        with django_capture_on_commit_callbacks(execute=True):
            live.publish(project, "codebook")
        return HttpResponse("saved")

    middleware = live.EventsAfterResponseMiddleware(view)
    middleware(RequestFactory().post("/"))  # its server never closed it
    assert events_after(project, cursor) == []
    server_sent(middleware(RequestFactory().post("/")))
    assert [e["kind"] for e in events_after(project, cursor)] == ["codebook", "codebook"]
