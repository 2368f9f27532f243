"""Probes and the AI second reader sharing one endpoint, in real Celery worker processes.

- The endpoint's "requests at once" holds over every worker process: the local endpoint counts the
  requests it is answering at the same time, and never sees more than the limit.
- A worker SIGKILLed mid-run, then started again (as compose's restart policy does): both runs finish,
  every item is answered once, every suggestion is made once, nothing is lost, the progress is right,
  and the request slots the dead worker held come free when their leases run out.
"""

from __future__ import annotations

import os
import signal
from collections import Counter

import pytest

from coding import reader
from coding.models import ReaderStep, Suggestion, SuggestionRun
from conduct.models import LiveEndpoint
from conduct.tests.conftest import wait_until
from probes.models import Answer, Probe
from probes.running import progress
from tests.shared_endpoint import World, answer, finished, start_world

pytestmark = [pytest.mark.worker, pytest.mark.slow]


def _limited(live, limit: int):
    endpoint = live("Shared", "shared")
    LiveEndpoint.objects.filter(participant=endpoint).update(max_in_flight=limit)
    return endpoint


def _answers(world: World):
    return Answer.objects.filter(item__probe__in=world.probes)


def test_two_probes_and_a_reader_in_two_workers_never_exceed_the_endpoints_limit(
    project, owner, live, fake_openai, start_worker
):
    fake_openai.script("shared", answer=answer, first_delay=0.3)
    endpoint = _limited(live, 2)
    start_worker()
    start_worker()  # two processes, four threads each: up to eight tasks at once, two requests
    world = start_world(project, owner, endpoint, probes=2, items=6, probe_concurrency=3, sentences=160)

    wait_until(lambda: finished(world), timeout=180, message="both probes and the reader run to finish")

    assert fake_openai.max_in_flight == 2  # the limit was reached, and held
    assert Counter(_answers(world).values_list("status", flat=True)) == {"done": 12}
    assert {(s.segment_id, s.code_id) for s in Suggestion.objects.filter(run=world.run)} == world.expected_suggestions()
    waited = [a for step in ReaderStep.objects.filter(run=world.run) for a in step.provenance["attempts"]]
    waited += [a for p in _answers(world).values_list("provenance", flat=True) for a in p["attempts"]]
    assert any(a.get("waited_for_slot_seconds") for a in waited)  # someone did wait for a slot, and it shows


def test_a_worker_killed_mid_run_loses_and_repeats_nothing_of_a_probe_and_a_reader_run(
    project, owner, live, fake_openai, start_worker, monkeypatch
):
    # Slots of the killed worker come free two seconds after its last renewal, not thirty.
    monkeypatch.setenv("CONDUCT_THROTTLE_LEASE_SECONDS", "2")
    fake_openai.script("shared", answer=answer, first_delay=0.5)
    endpoint = _limited(live, 3)
    worker = start_worker()
    world = start_world(project, owner, endpoint, probes=1, items=14, probe_concurrency=3, sentences=240)
    answers, windows = _answers(world), len(world.run.windows)
    assert (answers.count(), windows) == (14, 6)

    def some_done_some_not() -> bool:
        done, kept = answers.filter(status__in=Answer.FINISHED).count(), len(reader.kept_windows(world.run))
        return 0 < done < 14 and 0 < kept < windows

    wait_until(some_done_some_not, timeout=120, message="some answers and windows done, some not")
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait()
    assert answers.exclude(status__in=Answer.FINISHED).exists()
    assert len(reader.kept_windows(world.run)) < windows  # killed mid-run, both of them

    start_worker()
    wait_until(lambda: finished(world), timeout=180, message="both runs to finish after the restart")

    # Every item once, every one answered; every window's coder and critic kept once, every suggestion made once.
    assert Counter(answers.values_list("status", flat=True)) == {"done": 14}
    assert answers.values("item").distinct().count() == 14
    probe = Probe.objects.get(pk=world.probes[0].pk)
    numbers = progress(probe)
    assert (numbers["done"], numbers["finished"], numbers["remaining"], numbers["percent"], numbers["lost"]) == (
        14, 14, 0, 100, 0)
    run = SuggestionRun.objects.get(pk=world.run.pk)
    steps = Counter(ReaderStep.objects.filter(run=run).values_list("window", "agent"))
    assert steps == {(w, agent): 1 for w in range(windows) for agent in ("coder", "critic")}
    made = list(Suggestion.objects.filter(run=run).values_list("segment_id", "code_id"))
    assert len(made) == len(set(made)) and set(made) == world.expected_suggestions()
    assert reader.progress(run)["percent"] == 100 and reader.kept_windows(run) == set(range(windows))
    assert fake_openai.max_in_flight <= 3
