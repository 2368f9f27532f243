"""Running answers in-process against the local fake endpoint: retries, failures, cancel, re-parse, dry run."""

from __future__ import annotations

from collections import Counter

import pytest

from probes import services
from probes.models import Answer, Probe
from probes.running import answer_run, probe_dry_run, probe_pump, progress, token_estimate
from probes.tests import scripted


@pytest.fixture
def inline(settings):
    """Answers run inside the test (no thread, no broker) with quick retries."""
    settings.PROBES_EAGER_IN_THREAD = False
    settings.OPENAI_API_KEY = "sk-deployment-test"
    settings.PROBES_BACKOFF_BASE = 0.01


@pytest.fixture
def ready(probe_with_items, conditions, live, fake_openai, inline):
    participant = live("Model A", "model-a")
    services.probe_configure(probe=probe_with_items, participants=[participant], repetitions=1, concurrency=3)
    return probe_with_items


def run_all(probe, django_capture_on_commit_callbacks) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        services.run_start(probe=probe)


def test_a_run_asks_every_answer_once_and_finishes(ready, fake_openai, django_capture_on_commit_callbacks):
    fake_openai.script("model-a", answer=scripted.answer)
    run_all(ready, django_capture_on_commit_callbacks)
    assert Counter(Answer.objects.values_list("status", flat=True)) == {"done": 15, "unparsed": 1}
    assert len(fake_openai.chat_requests()) == 16
    assert Probe.objects.get(pk=ready.pk).run_state == Probe.RunState.FINISHED
    # A second run creates nothing and asks nothing.
    with django_capture_on_commit_callbacks(execute=True):
        assert services.run_start(probe=ready) == services.RunStarted(created=0, to_ask=0)
    assert len(fake_openai.chat_requests()) == 16


def test_what_the_design_gains_after_a_run_is_remaining_and_the_next_run_asks_it(
        ready, fake_openai, owner, django_capture_on_commit_callbacks):
    fake_openai.script("model-a", answer=scripted.answer)
    run_all(ready, django_capture_on_commit_callbacks)
    assert progress(ready)["remaining"] == 0
    # A second repetition and a third condition: 16 + 8 answers the probe now needs and does not have.
    services.probe_configure(probe=ready, participants=list(ready.participants.all()), repetitions=2, concurrency=3)
    services.condition_save(probe=ready, condition=None, user=owner, name="Neutral", template="{text}",
                            output_format="json_schema", json_schema={}, label_key="gender", categories_key="",
                            rationale_key="", labels=["woman", "man"])
    numbers = progress(Probe.objects.get(pk=ready.pk))
    assert (numbers["answers"], numbers["missing"], numbers["total"], numbers["remaining"], numbers["percent"]) == (
        16, 32, 48, 32, 33)
    with django_capture_on_commit_callbacks(execute=True):
        assert services.run_start(probe=ready) == services.RunStarted(created=32, to_ask=32)
    assert len(fake_openai.chat_requests()) == 48
    numbers = progress(Probe.objects.get(pk=ready.pk))
    assert (numbers["answers"], numbers["missing"], numbers["remaining"]) == (48, 0, 0)
    assert Answer.objects.filter(repetition=2).count() == 24 and Answer.objects.filter(condition__name="Neutral").count() == 16


def test_rate_limits_and_server_errors_are_retried_with_backoff(ready, fake_openai, django_capture_on_commit_callbacks):
    fake_openai.script("model-a", answer=scripted.answer, status=429, fail_times=2, retry_after=0)
    run_all(ready, django_capture_on_commit_callbacks)
    first = Answer.objects.order_by("pk").first()
    assert first.status in ("done", "unparsed")
    assert [a["ok"] for a in first.provenance["attempts"]] == [False, False, True]
    assert first.provenance["attempts"][0]["failure"]["kind"] == "rate_limited"
    assert Answer.objects.filter(status="failed").count() == 0


def test_an_answer_the_endpoint_refuses_fails_with_the_reason(ready, fake_openai, django_capture_on_commit_callbacks):
    fake_openai.script("model-a", status=404)
    run_all(ready, django_capture_on_commit_callbacks)
    answer = Answer.objects.first()
    assert answer.status == "failed" and "Model 'model-a' was not found" in answer.reason
    assert len(fake_openai.chat_requests()) == 16  # a 404 is not retried


def test_a_task_delivered_twice_asks_once(ready, fake_openai):
    fake_openai.script("model-a", answer=scripted.answer)
    services.run_start(probe=ready)  # the test transaction holds the on-commit send back
    answer = Answer.objects.order_by("pk").first()
    Answer.objects.exclude(pk=answer.pk).update(status=Answer.Status.DONE)
    Answer.objects.filter(pk=answer.pk).update(status=Answer.Status.QUEUED)
    assert answer_run(answer.pk) in ("done", "unparsed")
    assert answer_run(answer.pk) == "skipped"
    assert len(fake_openai.chat_requests()) == 1
    assert Probe.objects.get(pk=ready.pk).run_state == Probe.RunState.FINISHED


def test_cancel_puts_queued_answers_back_and_stops_handing_out(ready, fake_openai):
    services.run_start(probe=ready)
    Answer.objects.filter(pk__in=Answer.objects.order_by("pk").values("pk")[:3]).update(status=Answer.Status.QUEUED)
    assert services.run_cancel(probe=ready) == 3
    assert probe_pump(ready.pk) == []
    assert set(Answer.objects.values_list("status", flat=True)) == {"pending"}


def test_unparsed_answers_parse_after_the_condition_is_fixed(ready, conditions, fake_openai, owner,
                                                             django_capture_on_commit_callbacks):
    fake_openai.script("model-a", answer=lambda body: scripted.answer(body).replace("Gender:", "Author gender:"))
    run_all(ready, django_capture_on_commit_callbacks)
    _, primed = conditions
    assert Answer.objects.filter(condition=primed, status="unparsed").count() == 8
    version = primed.versions.get()
    fields = {f: getattr(version, f) for f in services.VERSION_FIELDS} | {"label_key": "Author gender"}
    services.condition_save(probe=ready, condition=primed, user=owner, name="Primed", **fields)
    assert services.answers_reparse(condition=primed) == {"done": 7, "unparsed": 1, "stopped": 0}
    assert Answer.objects.get(condition=primed, item__position=4).label == "man"
    assert Answer.objects.filter(condition=primed).values("condition_version__number").distinct().count() == 1


def test_the_dry_run_shows_requests_and_parses_and_stores_nothing(ready, fake_openai):
    fake_openai.script("model-a", answer=scripted.answer)
    results = probe_dry_run(probe=ready)
    assert len(results) == 6  # three items × two conditions
    control = results[0]
    assert control["condition"] == "Control" and control["status"] == "done" and control["label"] == "woman"
    [request] = control["requests"]
    assert request["response_format"]["json_schema"]["schema"]["properties"]["gender"]["enum"] == ["woman", "man"]
    assert request["messages"][-1]["content"].startswith("Review: item-1 ")
    assert results[3]["condition"] == "Primed" and results[3]["categories"] == ["Emotional Expression"]
    assert Answer.objects.count() == 0


def test_the_dry_run_behind_a_busy_endpoint_says_so_instead_of_holding_the_page(ready, fake_openai, monkeypatch):
    from conduct import throttle
    from conduct.models import LiveEndpoint
    from probes import running

    monkeypatch.setattr(running, "DRY_RUN_SLOT_WAIT_SECONDS", 0.2)
    fake_openai.script("model-a", answer=scripted.answer)
    participant = ready.participants.get()
    LiveEndpoint.objects.filter(participant=participant).update(max_in_flight=1)
    key = throttle.endpoint_key(participant.pk)
    assert throttle.counter().try_take(key, "a running probe", 1, 60)
    try:
        results = probe_dry_run(probe=ready, items=1)
    finally:
        throttle.counter().give_back(key, "a running probe")
    assert [r["status"] for r in results] == ["failed", "failed"]
    assert "1 requests at once stayed taken" in results[0]["reason"]
    assert fake_openai.chat_requests() == []


def test_the_token_estimate_counts_requests_and_prompt_length(ready):
    estimate = token_estimate(ready)
    assert estimate["requests"] == 16
    primed = next(r for r in estimate["rows"] if r["condition"] == "Primed")
    assert primed["completion_tokens"] is None and primed["completion_basis"].startswith("unknown")
    assert primed["prompt_tokens"] > 8 * len("Review: item-1") / 4


def test_failed_answers_are_asked_again_only_when_asked_to(ready, fake_openai, django_capture_on_commit_callbacks):
    fake_openai.script("model-a", status=500, error_message="Overloaded.")
    run_all(ready, django_capture_on_commit_callbacks)
    assert set(Answer.objects.values_list("status", flat=True)) == {"failed"}
    assert "internal error (500)" in Answer.objects.first().reason
    fake_openai.script("model-a", answer=scripted.answer)
    run_all(ready, django_capture_on_commit_callbacks)  # "Run the rest": failed answers stay
    assert set(Answer.objects.values_list("status", flat=True)) == {"failed"}
    with django_capture_on_commit_callbacks(execute=True):
        started = services.run_start(probe=ready, retry_failed=True)
    assert started == services.RunStarted(created=0, to_ask=16)
    assert started.message == "Run started: 16 answers to ask."
    assert Counter(Answer.objects.values_list("status", flat=True)) == {"done": 15, "unparsed": 1}


def test_what_the_endpoint_refuses_is_remembered_for_the_next_answers(ready, fake_openai, django_capture_on_commit_callbacks):
    from conduct.models import LiveEndpoint

    fake_openai.script("model-a", answer=scripted.answer, rejects_stream_options=True)
    services.probe_configure(probe=ready, participants=list(ready.participants.all()), repetitions=1, concurrency=1)
    run_all(ready, django_capture_on_commit_callbacks)
    assert LiveEndpoint.objects.get(participant__label="Model A").send_stream_options is False
    # Only the first answer was refused once; the other fifteen asked without stream_options at once.
    assert len(fake_openai.chat_requests()) == 17
