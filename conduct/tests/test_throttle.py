"""An endpoint's "requests at once": slots counted in Redis, leases that outlive no dead holder, the form.

(tests/test_endpoint_in_workers.py runs probes and the second reader in several worker processes
against one limited endpoint.)
"""

from __future__ import annotations

import threading
import uuid

import pytest
from django.urls import reverse

from conduct import throttle
from conduct.answering import endpoint_for
from conduct.client import FailureKind, stream_answer
from conduct.models import LiveEndpoint
from conduct.tests.conftest import wait_until

pytestmark = pytest.mark.django_db
MESSAGES = [{"role": "user", "content": "Hello?"}]


@pytest.fixture
def key() -> str:
    """A key of its own per test: Redis outlives the test database."""
    return throttle.endpoint_key(f"test-{uuid.uuid4()}")


def test_the_count_is_in_redis_shared_by_every_process(settings, key):
    assert settings.REDIS_URL and isinstance(throttle.counter(), throttle._RedisCounter)
    with throttle.slot(key, 2), throttle.slot(key, 2):
        assert throttle.in_flight(key) == 2
        assert not throttle.counter().try_take(key, "a third", 2, 30)
    assert throttle.in_flight(key) == 0


def test_a_dead_holders_lease_runs_out_and_its_slot_is_taken(settings, key):
    settings.CONDUCT_THROTTLE_LEASE_SECONDS = 1
    # What a killed process leaves behind: a slot taken, never renewed, never given back.
    assert throttle.counter().try_take(key, "killed-worker", 1, throttle.lease_seconds())
    assert not throttle.counter().try_take(key, "someone", 1, throttle.lease_seconds())
    with throttle.slot(key, 1) as held:
        assert held.waited > 0  # it had to wait for the lease to run out
        assert throttle.in_flight(key) == 1
    assert throttle.in_flight(key) == 0


def test_a_slot_held_longer_than_its_lease_stays_held_while_the_request_runs(settings, key):
    settings.CONDUCT_THROTTLE_LEASE_SECONDS = 0.6
    with throttle.slot(key, 2):
        throttle.counter().try_take(key, "killed-worker", 2, throttle.lease_seconds())
        wait_until(lambda: throttle.in_flight(key) == 1, timeout=10, message="the dead holder's lease to run out")
        # Ours was renewed meanwhile: with one slot left free, a second taker gets it and a third does not.
        assert throttle.counter().try_take(key, "second", 2, 30)
        assert not throttle.counter().try_take(key, "third", 2, 30)


def test_a_request_that_finds_every_slot_taken_for_too_long_is_not_sent_and_says_why(
    settings, project, live, fake_openai
):
    settings.CONDUCT_THROTTLE_WAIT_SECONDS = 0.3
    fake_openai.script("busy", answer="Hi.")
    participant = live("Busy", "busy")
    LiveEndpoint.objects.filter(participant=participant).update(max_in_flight=1)
    endpoint = endpoint_for(participant)
    assert (endpoint.max_in_flight, endpoint.throttle_key) == (1, throttle.endpoint_key(participant.pk))
    throttle.counter().give_back(endpoint.throttle_key, "other")
    throttle.counter().try_take(endpoint.throttle_key, "other", 1, 30)
    try:
        result = stream_answer(endpoint, MESSAGES, max_attempts=1)
    finally:
        throttle.counter().give_back(endpoint.throttle_key, "other")
    assert result.failure.kind == FailureKind.BUSY
    assert "its 1 requests at once stayed taken" in result.failure.message and "Requests at once" in result.failure.message
    assert result.provenance["attempts"][0]["waited_for_slot_seconds"] >= 0.3
    # The wait is the deployment's, not the endpoint's: it is kept apart from the latency.
    assert result.provenance["waited_for_slot_ms"] >= 300 > result.provenance["latency_ms"]
    assert fake_openai.chat_requests() == []


def test_a_request_that_waits_for_a_slot_is_told_when_it_waits_and_when_it_has_one(project, live, fake_openai):
    fake_openai.script("queued", answer="Hi.")
    participant = live("Queued", "queued")
    LiveEndpoint.objects.filter(participant=participant).update(max_in_flight=1)
    endpoint = endpoint_for(participant)
    told, results = [], []
    throttle.counter().try_take(endpoint.throttle_key, "other", 1, 30)
    try:
        asking = threading.Thread(target=lambda: results.append(stream_answer(endpoint, MESSAGES, on_slot_wait=told.append)))
        asking.start()
        wait_until(lambda: told, timeout=30, message="the request to find every slot taken")
        assert told == [1] and fake_openai.chat_requests() == []
    finally:
        throttle.counter().give_back(endpoint.throttle_key, "other")
    asking.join()
    assert told == [1, None] and results[0].ok
    # Free at once: nobody is told anything.
    assert stream_answer(endpoint, MESSAGES, on_slot_wait=told.append).ok and told == [1, None]


@pytest.mark.django_db(transaction=True)
def test_a_live_answer_waiting_for_a_free_slot_says_so_until_it_is_sent(
    settings, project, owner, guide, live, fake_openai, client_for
):
    from conduct import services
    from interviews.models import Turn

    settings.CONDUCT_EAGER_IN_THREAD = True  # the answer runs beside the test, as in a worker
    settings.CONDUCT_HEARTBEAT_SECONDS = 60
    fake_openai.script("shared", answer="Fairness is equal treatment.")
    participant = live("Shared", "shared")
    LiveEndpoint.objects.filter(participant=participant).update(max_in_flight=1)
    key = throttle.endpoint_key(participant.pk)
    client = client_for(owner)
    assert throttle.counter().try_take(key, "a probe", 1, 30)  # a probe's request holds the only slot
    try:
        session = services.session_start(project=project, user=owner, guide_version=guide.versions.get(),
                                         participants=[participant])
        answer = session.seats.get().interview.turns.get(position=1)
        fragment = reverse("conduct:turn", args=[project.uuid, answer.uuid])

        def waiting_note() -> str | None:
            body = client.get(fragment, HTTP_HX_REQUEST="true").content.decode()
            return body if "Waiting for a free request slot" in body else None

        body = wait_until(waiting_note, timeout=30, message="the turn to say it waits for a slot")
        assert "takes 1 request at once" in body and fake_openai.chat_requests() == []
    finally:
        throttle.counter().give_back(key, "a probe")
    wait_until(lambda: Turn.objects.get(pk=answer.pk).status == Turn.Status.COMPLETE, timeout=30,
               message="the answer once the slot is free")
    answer.refresh_from_db()
    assert "waiting_for_slot" not in answer.metadata and answer.metadata["provenance"]["waited_for_slot_ms"] > 0
    body = client.get(fragment, HTTP_HX_REQUEST="true").content.decode()
    assert "Fairness is equal treatment." in body and "Waiting for a free request slot" not in body


def test_threads_of_one_process_share_the_endpoints_slots(project, live, fake_openai):
    fake_openai.script("pair", answer="Hi.", first_delay=0.2)
    participant = live("Pair", "pair")
    LiveEndpoint.objects.filter(participant=participant).update(max_in_flight=2)
    endpoint = endpoint_for(participant)
    results = []
    asking = [threading.Thread(target=lambda: results.append(stream_answer(endpoint, MESSAGES))) for _ in range(6)]
    for thread in asking:
        thread.start()
    for thread in asking:
        thread.join()
    assert [r.ok for r in results] == [True] * 6
    assert fake_openai.max_in_flight == 2


# -- the endpoint form -----------------------------------------------------------------------


def _form(participant, **changes) -> dict[str, str]:
    return {"label": participant.label, "model_id": participant.model_id, "base_url": participant.base_url,
            "timeout_seconds": "60", "key": "none", "stream_answers": "on", **changes}


def test_a_member_sets_requests_at_once_on_the_endpoint_form(project, analyst, live, client_for):
    participant = live("Local", "local")
    edit = reverse("conduct:participant_edit", args=[project.uuid, participant.uuid])
    client = client_for(analyst)
    assert 'name="max_in_flight" value="8"' in client.get(edit).content.decode()  # the default
    assert client.post(edit, _form(participant, max_in_flight="2")).status_code == 302
    assert LiveEndpoint.objects.get(participant=participant).max_in_flight == 2
    assert endpoint_for(participant).max_in_flight == 2
    assert 'name="max_in_flight" value="2"' in client.get(edit).content.decode()


def test_requests_at_once_must_be_at_least_one(project, analyst, live, client_for):
    participant = live("Local", "local")
    edit = reverse("conduct:participant_edit", args=[project.uuid, participant.uuid])
    response = client_for(analyst).post(edit, _form(participant, max_in_flight="0"))
    assert response.status_code == 400
    assert "greater than or equal to 1" in response.content.decode()
    assert LiveEndpoint.objects.get(participant=participant).max_in_flight == 8


def test_outsiders_get_404_and_viewers_403_on_the_endpoint_form(project, outsider, viewer, live, client_for):
    participant = live("Local", "local")
    edit = reverse("conduct:participant_edit", args=[project.uuid, participant.uuid])
    assert client_for(outsider).post(edit, _form(participant, max_in_flight="1")).status_code == 404
    assert client_for(viewer).post(edit, _form(participant, max_in_flight="1")).status_code == 403
    assert LiveEndpoint.objects.get(participant=participant).max_in_flight == 8
