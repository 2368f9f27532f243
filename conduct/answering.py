"""Run one model answer in the worker: claim it, stream it into the Turn, record provenance.

Not one transaction: partial text must be committed as it arrives so the page
can show it and so a killed worker loses nothing already received.
"""

from __future__ import annotations

import logging
import threading
import uuid
from typing import Any

from django.conf import settings
from django.db import connections, transaction
from django.utils import timezone

from conduct import throttle
from conduct.client import DEFAULT_BASE_URL, Endpoint, Failure, FailureKind, stream_answer
from conduct.crypto import KeyUnreadable
from conduct.egress import EgressPolicy, endpoint_of, normalized_url
from conduct.models import AnswerJob, LiveEndpoint, heartbeat_seconds
from interviews.models import Participant, Speaker, Turn

log = logging.getLogger(__name__)

# Failures where nothing useful arrived and the model was never really asked.
_FAILED_KINDS = {FailureKind.AUTH, FailureKind.MODEL_NOT_FOUND, FailureKind.BAD_REQUEST, FailureKind.REFUSED,
                 FailureKind.BUSY}


def answer_run(turn_id: int) -> str:
    """Answer the participant turn `turn_id`; safe to call twice (a second call finds it claimed)."""
    token = _claim(turn_id)
    if token is None:
        return "skipped"
    turn = Turn.objects.select_related("interview__participant", "interview__guide_version").get(pk=turn_id)
    try:
        endpoint = endpoint_for(turn.interview.participant)
    except EndpointUnavailable as exc:
        _finish(turn, token, "", {"failure": exc.failure.as_dict()}, Turn.Status.FAILED)
        return "failed"
    messages = conversation(turn)
    stop = threading.Event()
    beat = threading.Thread(target=_heartbeat, args=(turn_id, token, stop), daemon=True)
    beat.start()
    try:
        result = stream_answer(
            endpoint,
            messages,
            on_text=lambda text: _save_partial(turn_id, token, text),
            should_stop=lambda: _stop_requested(turn_id, token),
            on_retry=lambda failure, wait, attempt: _note_retry(turn_id, token, failure, wait, attempt),
            on_slot_wait=lambda limit: _note(turn_id, token, "waiting_for_slot", {"limit": limit} if limit else None),
            interval=float(getattr(settings, "CONDUCT_SAVE_INTERVAL", 0.15)),
            max_attempts=int(getattr(settings, "CONDUCT_MAX_ATTEMPTS", 4)),
            backoff_base=float(getattr(settings, "CONDUCT_BACKOFF_BASE", 1.0)),
        )
    finally:
        stop.set()
        beat.join(timeout=2)
    if result.learned:
        _remember(turn.interview.participant, result.learned)
    status = _status_for(result.failure, result.text)
    _finish(turn, token, result.text, {"provenance": result.provenance, **_failure_meta(result.failure)}, status)
    if status == Turn.Status.COMPLETE:
        from conduct.services import replay_next

        replay_next(interview=turn.interview)
    return str(status)


def _remember(participant: Participant, learned: dict[str, Any]) -> None:
    """Keep what this answer found out about the endpoint, so the next one asks in a way it takes."""
    LiveEndpoint.objects.update_or_create(participant=participant, defaults=learned)


def _status_for(failure: Failure | None, text: str) -> Turn.Status:
    if failure is None:
        return Turn.Status.COMPLETE
    if failure.kind == FailureKind.CANCELLED:
        return Turn.Status.INTERRUPTED  # the interviewer chose to stop it, even before any word
    if failure.kind in _FAILED_KINDS or not text:
        return Turn.Status.FAILED
    return Turn.Status.INTERRUPTED


def _failure_meta(failure: Failure | None) -> dict[str, Any]:
    return {"failure": failure.as_dict()} if failure else {}


def _claim(turn_id: int) -> str | None:
    """Take the job if it is still queued; returns our token.

    A job whose worker died stays RUNNING until the page marks it interrupted
    (keeping its text); only the researcher's retry queues it again, so a
    re-delivered task never overwrites text that already arrived.
    """
    token = str(uuid.uuid4())
    now = timezone.now()
    with transaction.atomic():
        claimed = AnswerJob.objects.filter(
            turn_id=turn_id, state=AnswerJob.State.QUEUED, stop_requested=False
        ).update(state=AnswerJob.State.RUNNING, worker_token=token, heartbeat_at=now)
        if not claimed:
            return None
        Turn.objects.filter(pk=turn_id).update(status=Turn.Status.STREAMING, text="", timestamp=now)
    return token


def _save_partial(turn_id: int, token: str, text: str) -> None:
    # Only the holder of the job writes; a stopped or re-claimed answer is left alone.
    if AnswerJob.objects.filter(turn_id=turn_id, worker_token=token, state=AnswerJob.State.RUNNING).exists():
        Turn.objects.filter(pk=turn_id, status=Turn.Status.STREAMING).update(text=text)


def _note_retry(turn_id: int, token: str, failure: Failure, wait: float, attempt: int) -> None:
    note = {"message": failure.message, "kind": str(failure.kind), "wait_seconds": wait, "attempt": attempt}
    _note(turn_id, token, "retrying", note)


def _note(turn_id: int, token: str, key: str, note: dict[str, Any] | None) -> None:
    """Show on the page why nothing arrives yet (None takes the note away); _finish replaces every note."""
    if AnswerJob.objects.filter(turn_id=turn_id, worker_token=token).exists():
        metadata = Turn.objects.get(pk=turn_id).metadata
        metadata = {**metadata, key: note} if note else {k: v for k, v in metadata.items() if k != key}
        Turn.objects.filter(pk=turn_id).update(metadata=metadata)


def _stop_requested(turn_id: int, token: str) -> bool:
    return not AnswerJob.objects.filter(turn_id=turn_id, worker_token=token, stop_requested=False).exists()


def _heartbeat(turn_id: int, token: str, stop: threading.Event) -> None:
    """Tell the web app this worker is alive, even while the model is silent."""
    try:
        while not stop.wait(heartbeat_seconds()):
            AnswerJob.objects.filter(turn_id=turn_id, worker_token=token).update(heartbeat_at=timezone.now())
    except Exception:  # a heartbeat must never kill the answer
        log.exception("conduct heartbeat failed for turn %s", turn_id)
    finally:
        connections.close_all()  # this thread's own connections only


def _finish(turn: Turn, token: str, text: str, metadata: dict[str, Any], status: Turn.Status) -> None:
    with transaction.atomic():
        job = AnswerJob.objects.select_for_update().get(turn_id=turn.pk)
        if job.worker_token != token:
            return  # another worker took over; its result wins
        previous = Turn.objects.get(pk=turn.pk).metadata
        keep = {k: previous[k] for k in ("previous_attempts",) if k in previous}
        Turn.objects.filter(pk=turn.pk).update(
            text=text,
            status=status,
            metadata={**keep, **metadata},
            model_slug=(metadata.get("provenance") or {}).get("model_returned") or turn.model_slug,
            timestamp=timezone.now(),
        )
        job.state = AnswerJob.State.DONE
        job.save(update_fields=["state"])


class EndpointUnavailable(Exception):
    """Nothing can be sent for this participant (no key, or a key bound elsewhere); `failure` says why."""

    def __init__(self, failure: Failure) -> None:
        self.failure = failure


def deployment_base_url() -> str:
    """The endpoint the deployment's administrator chose; the only one OPENAI_API_KEY is sent to."""
    return settings.OPENAI_BASE_URL or DEFAULT_BASE_URL


def egress_policy() -> EgressPolicy:
    trusted = endpoint_of(deployment_base_url())
    return EgressPolicy(
        allow_private_networks=settings.ENDPOINTS_ALLOW_PRIVATE_NETWORKS, trusted_endpoints=frozenset({trusted} if trusted else ())
    )


def key_binding_refusal(*, base_url: str, bound_to: str, whose: str) -> str | None:
    """Why a key bound to `bound_to` may not go to `base_url` (empty: the bound URL itself), or None."""
    if not bound_to:
        return f"{whose} is bound to no endpoint yet; the project owner stores it again with its endpoint's URL."
    if base_url and normalized_url(base_url) != normalized_url(bound_to):
        return f"{whose} is only ever sent to {bound_to}, not to {base_url}."
    return None


def endpoint_for(participant: Participant) -> Endpoint:
    """The participant's endpoint with the key chosen for it, sent only where that key is bound.

    The deployment's key goes only to the deployment's endpoint; a stored key only to the URL
    its owner bound it to. Checked here, just before sending, whatever the forms allowed.
    """
    # Without stored settings, an unsaved LiveEndpoint gives the model's defaults (no key).
    live = LiveEndpoint.objects.select_related("api_key").filter(participant=participant).first() or LiveEndpoint()
    source = LiveEndpoint.KeySource
    if live.key_source == source.PROJECT:
        key = live.api_key
        if key is None:
            raise EndpointUnavailable(Failure(FailureKind.AUTH, "The stored key chosen for this participant was deleted; "
                                                   "choose another key in its endpoint settings."))
        refusal = key_binding_refusal(base_url=participant.base_url, bound_to=key.base_url,
                                      whose=f"The stored key “{key.label}”")
        base_url = key.base_url
        try:
            api_key = key.reveal()
        except KeyUnreadable as exc:
            raise EndpointUnavailable(Failure(FailureKind.AUTH, str(exc))) from exc
    elif live.key_source == source.DEPLOYMENT:
        base_url = deployment_base_url()
        refusal = key_binding_refusal(base_url=participant.base_url, bound_to=base_url,
                                      whose="The deployment's key (OPENAI_API_KEY)")
        api_key = settings.OPENAI_API_KEY
        if not api_key:
            raise EndpointUnavailable(Failure(FailureKind.AUTH, "This participant uses the deployment's key, but OPENAI_API_KEY "
                                                   "is not set: ask the administrator, or store a project key."))
    else:
        base_url, refusal, api_key = participant.base_url or deployment_base_url(), None, ""
    if refusal:
        raise EndpointUnavailable(Failure(FailureKind.REFUSED, f"Nothing was sent: {refusal}"))
    return Endpoint(
        model=participant.model_id,
        base_url=base_url,
        api_key=api_key,
        temperature=participant.temperature,
        top_p=participant.top_p,
        seed=participant.seed,
        max_tokens=participant.max_tokens,
        timeout=live.timeout_seconds,
        stream_answers=live.stream_answers,
        can_stream=live.can_stream,
        send_stream_options=live.send_stream_options,
        max_tokens_param=live.max_tokens_param,
        egress=egress_policy(),
        max_in_flight=live.max_in_flight,
        throttle_key=throttle.endpoint_key(participant.pk),
    )


def conversation(turn: Turn) -> list[dict[str, str]]:
    """The messages sent for `turn`: the guide's system prompt, then every earlier turn with text."""
    messages: list[dict[str, str]] = []
    version = turn.interview.guide_version
    if version and version.system_prompt:
        messages.append({"role": "system", "content": version.system_prompt})
    earlier = Turn.objects.filter(interview_id=turn.interview_id, position__lt=turn.position).order_by("position")
    roles = {Speaker.INTERVIEWER: "user", Speaker.PARTICIPANT: "assistant", Speaker.SYSTEM: "system"}
    for previous in earlier.only("speaker", "text"):
        if previous.text:
            messages.append({"role": roles[Speaker(previous.speaker)], "content": previous.text})
    return messages
