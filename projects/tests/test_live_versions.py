"""Each kind of live event has a version per project: caches of what those events change are keyed by it."""

from __future__ import annotations

import uuid

import pytest
from django.conf import settings
from django.test import override_settings

from projects import live

pytestmark = pytest.mark.django_db

BROKERS = [pytest.param("", id="one process"),
           pytest.param("redis", id="redis", marks=pytest.mark.skipif(not settings.REDIS_URL, reason="needs REDIS_URL"))]


@pytest.fixture(params=BROKERS)
def broker_url(request):
    url = settings.REDIS_URL if request.param else ""
    with override_settings(REDIS_URL=url):
        yield url


def test_a_version_changes_with_every_event_of_its_kinds_and_no_other(broker_url):
    project, elsewhere = uuid.uuid4(), uuid.uuid4()
    seen = {live.version(project, "coding", "codebook")}
    for kind in ("coding", "codebook", "coding"):
        live._publish_now(str(project), {"kind": kind})
        seen.add(live.version(project, "coding", "codebook"))
    assert len(seen) == 4 and None not in seen
    before = live.version(project, "coding", "codebook")
    live._publish_now(str(project), {"kind": "presence"})
    live._publish_now(str(project), {"kind": "comment", "theme": str(uuid.uuid4())})
    live._publish_now(str(elsewhere), {"kind": "coding"})
    assert live.version(project, "coding", "codebook") == before


def test_inside_a_transaction_it_changes_at_once_and_again_at_commit(broker_url, django_capture_on_commit_callbacks):
    project = uuid.uuid4()
    before = live.version(project, "coding")
    with django_capture_on_commit_callbacks(execute=True):
        live.publish(project, "coding", interview=uuid.uuid4())
        during = live.version(project, "coding")
        assert during != before
    assert live.version(project, "coding") not in (before, during)


def test_without_a_reachable_broker_there_is_no_version():
    with override_settings(REDIS_URL="redis://127.0.0.1:1/0"):  # nothing listens there
        assert live.version(uuid.uuid4(), "coding") is None
