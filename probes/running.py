"""Running a probe in the worker: hand out answers a few at a time, ask, parse, record provenance.

Each answer is one idempotent task: it claims its row (queued → running, with a token) and
only the holder of the token may finish it, so a message delivered twice asks once. The
pump keeps at most `probe.concurrency` answers queued or running; every finished answer
pumps the next. A restarted worker puts back the answers its previous life held
(same node name) and the pump hands them out again: nothing is lost or asked twice.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from conduct.answering import EndpointUnavailable, endpoint_for
from conduct.answering import _remember as remember_endpoint
from conduct.client import Endpoint, Failure, FailureKind, stream_answer
from probes.models import Answer, ConditionVersion, Item, Probe, lease_seconds
from probes.prompting import ParseError, agent_steps, messages_for, parse, response_format
from probes.services import parsed_fields

log = logging.getLogger(__name__)


def answer_run(answer_id: int, *, worker: str = "") -> str:
    """Ask for answer `answer_id` and store the parsed result; safe to call twice (a second call finds it claimed)."""
    token = _claim(answer_id, worker)
    if token is None:
        return "skipped"
    answer = Answer.objects.select_related("item", "condition_version__condition", "participant").get(pk=answer_id)
    probe_id = answer.item.probe_id
    try:
        endpoint = probe_endpoint(answer.condition_version, endpoint_for(answer.participant))
    except EndpointUnavailable as exc:  # no key, or a key bound to another endpoint: nothing is sent
        _finish(answer_id, token, {"status": Answer.Status.FAILED, "reason": exc.failure.message})
        probe_pump(probe_id)
        return "failed"
    try:
        asked = ask(answer.condition_version, endpoint, answer.item, should_stop=lambda: _cancelled(probe_id))
        if asked.learned:
            remember_endpoint(answer.participant, asked.learned)
        fields = _fields_for(answer.condition_version, asked)
    except Exception as exc:
        # Never leave the answer claimed forever: it fails with the reason and the run goes on.
        log.exception("probe answer %s failed", answer_id)
        fields = {"status": Answer.Status.FAILED, "reason": f"Internal error ({type(exc).__name__}); ask it again."}
        _finish(answer_id, token, fields)
        probe_pump(probe_id)
        raise
    _finish(answer_id, token, fields)
    probe_pump(probe_id)
    return str(fields["status"])


def _fields_for(version: ConditionVersion, asked: Asked) -> dict[str, Any]:
    fields: dict[str, Any] = {"text": asked.text, "provenance": asked.provenance}
    if asked.failure is not None and asked.failure.kind == FailureKind.CANCELLED:
        return fields | {"status": Answer.Status.PENDING, "reason": "", "queued_at": None}  # asked again on resume
    if asked.failure is not None:
        return fields | {"status": Answer.Status.FAILED, "reason": asked.failure.message}
    return fields | parsed_fields(version, asked.text, step=asked.step)


@dataclass
class Asked:
    text: str
    provenance: dict[str, Any]
    failure: Failure | None = None
    step: str = ""  # the agent whose answer `text` is, in a pipeline that stopped early
    # What the endpoint taught (conduct.client.Fallback), remembered for the participant's next requests.
    learned: dict[str, Any] = field(default_factory=dict)


def ask(version: ConditionVersion, endpoint: Endpoint, item: Item, *, should_stop=None, max_attempts: int | None = None) -> Asked:
    """One answer: one request, or each agent of the pipeline in turn, every step in the provenance."""
    attempts = max_attempts or int(getattr(settings, "PROBES_MAX_ATTEMPTS", 4))
    backoff = float(getattr(settings, "PROBES_BACKOFF_BASE", 1.0))
    fmt = response_format(version)

    def one(messages: list[dict[str, str]]):
        return stream_answer(endpoint, messages, response_format=fmt, should_stop=should_stop, max_attempts=attempts,
                             backoff_base=backoff)

    if not version.pipeline:
        result = one(messages_for(version, item))
        return Asked(result.text, result.provenance, result.failure, learned=result.learned)
    steps, earlier, learned = [], [], {}
    for agent in agent_steps(version):
        result = one(messages_for(version, item, agent=agent, previous=earlier))
        steps.append({"agent": agent["name"], **result.provenance})
        learned |= result.learned
        if result.failure is not None:
            return Asked(result.text, _pipeline_provenance(steps), result.failure, agent["name"], learned)
        try:
            earlier.append({"agent": agent["name"], **parse(version, result.text).fields})
        except ParseError:
            return Asked(result.text, _pipeline_provenance(steps), None, agent["name"], learned)
    return Asked(result.text, _pipeline_provenance(steps), learned=learned)


def _pipeline_provenance(steps: list[dict[str, Any]]) -> dict[str, Any]:
    """The last agent's provenance at the top (model, fingerprint...), usage and latency summed, every step kept."""
    usage: dict[str, int] = {}
    for step in steps:
        for key, value in (step.get("usage") or {}).items():
            if isinstance(value, int):
                usage[key] = usage.get(key, 0) + value
    last = {k: v for k, v in steps[-1].items() if k != "agent"}
    return last | {"usage": usage or None, "latency_ms": sum(s.get("latency_ms") or 0 for s in steps),
                   "request": steps[0].get("request"), "pipeline": steps}


def probe_endpoint(version: ConditionVersion, endpoint: Endpoint) -> Endpoint:
    """The participant's endpoint with the condition's sampling parameters where it sets them."""
    overrides = {k: getattr(version, k) for k in ("temperature", "seed", "max_tokens") if getattr(version, k) is not None}
    return replace(endpoint, **overrides)


def _claim(answer_id: int, worker: str) -> str | None:
    token = str(uuid.uuid4())
    claimed = Answer.objects.filter(pk=answer_id, status=Answer.Status.QUEUED).update(
        status=Answer.Status.RUNNING, worker_token=token, worker=worker[:200], claimed_at=timezone.now()
    )
    return token if claimed else None


def _cancelled(probe_id: int) -> bool:
    return not Probe.objects.filter(pk=probe_id, run_state=Probe.RunState.RUNNING).exists()


def _finish(answer_id: int, token: str, fields: dict[str, Any]) -> None:
    # Only the holder of the claim writes: a worker that lost its lease leaves the answer to its successor.
    done = fields["status"] != Answer.Status.PENDING
    Answer.objects.filter(pk=answer_id, worker_token=token, status=Answer.Status.RUNNING).update(
        **fields, worker_token="", finished_at=timezone.now() if done else None
    )


# -- handing out answers ----------------------------------------------------------


def probe_pump(probe_id: int) -> list[int]:
    """Queue pending answers up to the probe's concurrency and send them to the worker; returns the ids sent."""
    with transaction.atomic():
        probe = Probe.objects.select_for_update().filter(pk=probe_id).first()
        if probe is None or probe.run_state != Probe.RunState.RUNNING:
            return []
        answers = Answer.objects.filter(item__probe=probe)
        in_flight = answers.filter(status__in=(Answer.Status.QUEUED, Answer.Status.RUNNING)).count()
        pending = answers.filter(status=Answer.Status.PENDING).order_by("pk").values_list("pk", flat=True)
        ids = list(pending[: max(0, probe.concurrency - in_flight)])
        if ids:
            Answer.objects.filter(pk__in=ids).update(status=Answer.Status.QUEUED, queued_at=timezone.now())
        elif in_flight == 0 and not pending.exists():
            probe.run_state = Probe.RunState.FINISHED
            probe.save(update_fields=["run_state"])
    from probes.tasks import enqueue_answers

    enqueue_answers(ids)
    return ids


def answers_requeue_lost(*, probe: Probe, worker: str = "") -> int:
    """Put back answers whose worker is gone: past the lease, or held by an earlier life of `worker`.

    Queued answers are put back too when a worker restarts: their messages may sit unacknowledged
    with the dead worker until the broker's visibility timeout.
    """
    cutoff = timezone.now() - timedelta(seconds=lease_seconds())
    lost = Q(status=Answer.Status.RUNNING, claimed_at__lt=cutoff) | Q(status=Answer.Status.QUEUED, queued_at__lt=cutoff)
    if worker:
        lost |= Q(status=Answer.Status.RUNNING, worker=worker) | Q(status=Answer.Status.QUEUED)
    return Answer.objects.filter(lost, item__probe=probe).update(
        status=Answer.Status.PENDING, worker_token="", queued_at=None, claimed_at=None
    )


def probes_resume(*, worker: str) -> list[int]:
    """At a worker's start: put back what its previous life held and pump every running probe."""
    sent: list[int] = []
    for probe in Probe.objects.filter(run_state=Probe.RunState.RUNNING):
        answers_requeue_lost(probe=probe, worker=worker)
        sent += probe_pump(probe.pk)
    return sent


def progress(probe: Probe) -> dict[str, Any]:
    """Answers done, unparsed, failed, remaining, and an ETA in seconds from this run's pace.

    Remaining counts the answers the probe's current design (items × conditions × live models ×
    repetitions) needs and does not have yet, so a condition, model or repetition added after a run
    shows as work left for "Run the rest".
    """
    live = probe.participants.filter(is_live=True)
    counts = Answer.objects.filter(item__probe=probe).aggregate(
        answers=Count("pk"),
        **{status: Count("pk", filter=Q(status=status)) for status in Answer.Status.values},
        this_run=Count("pk", filter=Q(finished_at__gte=probe.run_started_at or timezone.now())),
        in_design=Count("pk", filter=Q(participant__in=live.values("pk"), repetition__lte=probe.repetitions)),
    )
    needed = probe.items.count() * probe.conditions.count() * live.count() * probe.repetitions
    missing = max(0, needed - counts.pop("in_design"))
    total = counts["answers"] + missing
    finished = counts["done"] + counts["unparsed"] + counts["failed"]
    remaining = total - finished
    eta = None
    if probe.run_state == Probe.RunState.RUNNING and counts["this_run"] and remaining:
        elapsed = (timezone.now() - probe.run_started_at).total_seconds()
        eta = round(elapsed / counts["this_run"] * remaining)
    percent = round(100 * finished / total) if total else 0
    return {**counts, "total": total, "missing": missing, "finished": finished, "remaining": remaining,
            "eta_seconds": eta, "percent": percent, "lost": _lost_count(probe)}


def _lost_count(probe: Probe) -> int:
    cutoff = timezone.now() - timedelta(seconds=lease_seconds())
    return Answer.objects.filter(
        Q(status=Answer.Status.RUNNING, claimed_at__lt=cutoff) | Q(status=Answer.Status.QUEUED, queued_at__lt=cutoff),
        item__probe=probe,
    ).count()


# -- before spending anything -------------------------------------------------------

DRY_RUN_ITEMS = 3
# The dry run answers inside the web request: behind a busy endpoint's full slots it says so instead of waiting long.
DRY_RUN_SLOT_WAIT_SECONDS = 10.0


def probe_dry_run(*, probe: Probe, items: int = DRY_RUN_ITEMS) -> list[dict[str, Any]]:
    """Ask the first model about the first few items under every condition; nothing is stored.

    Shows the exact request each answer sends and what the parser makes of the reply.
    """
    participant = probe.participants.filter(is_live=True).order_by("label").first()
    if participant is None:
        return []
    results = []
    for condition in probe.conditions.order_by("name"):
        version = condition.versions.order_by("-number").first()
        for item in probe.items.order_by("position")[:items]:
            results.append(_dry_answer(participant, version, item))
    return results


def _dry_answer(participant, version: ConditionVersion, item) -> dict[str, Any]:
    row: dict[str, Any] = {"condition": version.condition.name, "version": version.number, "item": item.position,
                           "model": participant.label}
    try:
        endpoint = replace(probe_endpoint(version, endpoint_for(participant)), slot_wait=DRY_RUN_SLOT_WAIT_SECONDS)
    except EndpointUnavailable as exc:  # no key, or a key bound to another endpoint: nothing is sent
        return row | {"status": "failed", "reason": exc.failure.message, "requests": [], "text": ""}
    asked = ask(version, endpoint, item, max_attempts=1)
    steps = asked.provenance.get("pipeline") or [asked.provenance]
    row |= {"requests": [s.get("request") for s in steps], "text": asked.text, "usage": asked.provenance.get("usage")}
    if asked.failure is not None:
        return row | {"status": "failed", "reason": asked.failure.message}
    return row | parsed_fields(version, asked.text, step=asked.step)


CHARS_PER_TOKEN = 4  # a rough English average; the estimate says so


def token_estimate(probe: Probe) -> dict[str, Any]:
    """Requests and tokens the full run would use: prompts from their length, answers from max tokens or earlier answers."""
    models = probe.participants.filter(is_live=True).count()
    items = list(probe.items.only("text", "labels", "attributes"))
    rows = []
    for condition in probe.conditions.order_by("name"):
        version = condition.versions.order_by("-number").first()
        schema = response_format(version)
        extra = len(str(schema)) if schema else 0
        agents = len(agent_steps(version))
        chars = agents * sum(sum(len(m["content"]) for m in messages_for(version, item)) + extra for item in items)
        requests = len(items) * models * probe.repetitions * agents
        prompt_tokens = round(chars / CHARS_PER_TOKEN) * models * probe.repetitions
        per_answer = _completion_tokens(condition) or version.max_tokens
        rows.append({"condition": condition.name, "requests": requests, "prompt_tokens": prompt_tokens,
                     "completion_tokens": per_answer * requests if per_answer else None,
                     "completion_basis": "earlier answers" if _completion_tokens(condition) else
                     ("max tokens" if version.max_tokens
                      else "unknown until the condition has max tokens or its first answers report their tokens")})
    return {"rows": rows, "requests": sum(r["requests"] for r in rows), "prompt_tokens": sum(r["prompt_tokens"] for r in rows)}


def _completion_tokens(condition) -> int | None:
    """The mean completion tokens of the condition's finished answers, when any reported usage."""
    usages = [u for u in Answer.objects.filter(condition=condition, status=Answer.Status.DONE)
              .values_list("provenance__usage__completion_tokens", flat=True)[:200] if isinstance(u, int)]
    return round(sum(usages) / len(usages)) if usages else None
