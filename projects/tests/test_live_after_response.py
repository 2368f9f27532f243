"""The coding hot path's live events go out once its answer has been sent, not while the coder waits for it.

Transactional: these changes commit outside any transaction (autocommit), as an apply does.
"""

from __future__ import annotations

import uuid
from unittest import mock

import pytest
from django.core.signals import request_started
from django.db import connections, transaction
from django.http import HttpResponse
from django.test import RequestFactory

from projects import live

pytestmark = pytest.mark.django_db(transaction=True)


def events_after(project, cursor: str) -> list[dict]:
    assert isinstance(live.broker(), live.RedisBroker)  # the suite's real Redis
    return [event for _id, event in live.broker().read(str(project), cursor, timeout=0.001).events]


def server_sent(response) -> None:
    """What the server does once the answer is out: close it (request_finished), keeping the test's connection."""
    with mock.patch.object(connections["default"], "close_if_unusable_or_obsolete"):
        response.close()


def answer(view):
    """What Django's handler does around a view: request_started, then the view's answer."""
    request_started.send(sender=None)
    return view(RequestFactory().post("/"))


def test_an_event_marked_after_response_goes_out_once_the_answer_is_sent():
    project, interview = uuid.uuid4(), uuid.uuid4()
    cursor = live.cursor(project)
    version = live.version(project, "coding")

    def view(request):
        live.publish(project, "coding", interview=interview, after_response=True)
        return HttpResponse("applied")

    response = answer(view)
    assert events_after(project, cursor) == []  # the answer is still on its way
    assert live.version(project, "coding") == version
    server_sent(response)
    assert events_after(project, cursor) == [{"kind": "coding", "interview": str(interview)}]
    assert live.version(project, "coding") != version
    live.publish(project, "codebook", after_response=True)  # outside a request (a task, a command): at once
    assert [e["kind"] for e in events_after(project, cursor)] == ["coding", "codebook"]


def test_other_events_and_those_of_a_transaction_go_out_before_the_answer():
    """An answer may read what is cached under the version (a theme's thread after resolving it), and a
    transaction's change leaves a version in between that nothing may read once it has committed."""
    project = uuid.uuid4()
    cursor = live.cursor(project)

    def view(request):
        live.publish(project, "comment", theme=uuid.uuid4())
        with transaction.atomic():
            live.publish(project, "coding", interview=uuid.uuid4(), after_response=True)
        return HttpResponse("resolved")

    response = answer(view)
    assert [e["kind"] for e in events_after(project, cursor)] == ["comment", "coding"]
    server_sent(response)


def test_events_of_an_answer_never_closed_go_out_with_the_next_request():
    project = uuid.uuid4()
    cursor = live.cursor(project)

    def view(request):
        live.publish(project, "codebook", after_response=True)
        return HttpResponse("saved")

    answer(view)  # its server never closed it
    assert events_after(project, cursor) == []
    server_sent(answer(view))
    assert [e["kind"] for e in events_after(project, cursor)] == ["codebook", "codebook"]


def test_events_name_the_browser_tab_whose_request_caused_them():
    """The board that made a change knows its own news exactly; every other tab (the same person's too) fetches it."""
    project = uuid.uuid4()
    cursor = live.cursor(project)

    def view(request):
        live.publish(project, "board", by=7)
        live.publish(project, "coding", interview=uuid.uuid4(), after_response=True)
        return HttpResponse("moved")

    request_started.send(sender=None, environ={"HTTP_X_LIVE_TAB": "4b1c0e6e-tab"})
    server_sent(view(RequestFactory().post("/")))
    request_started.send(sender=None, environ={"HTTP_X_LIVE_TAB": "not a tab; id"})
    server_sent(view(RequestFactory().post("/")))
    live.publish(project, "board", by=7)  # outside a request: a task, a command
    tabs = [event.get("tab") for event in events_after(project, cursor)]
    assert tabs == ["4b1c0e6e-tab", "4b1c0e6e-tab", None, None, None]
