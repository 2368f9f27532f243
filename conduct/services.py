"""Writes for conducting live interviews: guides, endpoints, sessions, questions, answers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from conduct.answering import deployment_base_url, egress_policy, key_binding_refusal
from conduct.crypto import encrypt_secret, masked_hint
from conduct.egress import EgressRefused
from conduct.models import AnswerJob, ConductSession, EndpointKey, LiveEndpoint, Seat
from conduct.throttle import DEFAULT_MAX_IN_FLIGHT
from interviews.models import Guide, GuideVersion, Interview, Participant, Speaker, Turn
from interviews.segment_store import interview_segment
from interviews.services import participant_label_taken, participant_save
from projects.audit import audit_record
from projects.models import AuditEvent, Project
from projects.names import name_kept_unique, normalised_name

ACTIVE = (Turn.Status.PENDING, Turn.Status.STREAMING)


# -- guides -------------------------------------------------------------------


def guide_name_checked(project: Project, name: str, *, exclude: Guide | None = None) -> str:
    """The name normalised (projects/names.py), refused if empty or if another guide of the project has it, whatever
    its case. The database holds the same rule (unique_guide_name) against two people saving at once."""
    name = normalised_name(name)
    if not name:
        raise ValidationError({"name": "Give the guide a name."})
    taken = Guide.objects.filter(project=project, name__iexact=name)
    if exclude is not None:
        taken = taken.exclude(pk=exclude.pk)
    if other := taken.first():
        raise ValidationError({"name": f"There is already a guide named “{other.name}” in this project; choose another name."})
    return name


def _save_guide(guide: Guide, **kwargs: Any) -> None:
    taken = ValidationError({"name": f"There is already a guide named “{guide.name}” in this project; choose another name."})
    with name_kept_unique("unique_guide_name", taken,
                          lambda: guide_name_checked(guide.project, guide.name, exclude=guide if guide.pk else None)):
        guide.save(**kwargs)


def _version_fields(
    *, opening_prompt: str, system_prompt: str, planned_questions: list[dict[str, Any]], notes: str
) -> dict[str, Any]:
    return {
        "opening_prompt": opening_prompt.strip(),
        "system_prompt": system_prompt.strip(),
        "planned_questions": planned_questions,
        "notes": notes.strip(),
    }


@transaction.atomic
def guide_create(
    *,
    project: Project,
    user: Any,
    name: str,
    opening_prompt: str,
    system_prompt: str = "",
    planned_questions: list[dict[str, Any]] | None = None,
    notes: str = "",
) -> Guide:
    """A new guide with its first version."""
    guide = Guide(project=project, name=guide_name_checked(project, name), created_by=user)
    guide.full_clean(validate_constraints=False)  # the name was checked above, with a clearer message
    _save_guide(guide)
    fields = _version_fields(
        opening_prompt=opening_prompt,
        system_prompt=system_prompt,
        planned_questions=planned_questions or [],
        notes=notes,
    )
    GuideVersion.objects.create(guide=guide, number=1, created_by=user, **fields)
    return guide


@transaction.atomic
def guide_revise(
    *,
    guide: Guide,
    user: Any,
    name: str,
    opening_prompt: str,
    system_prompt: str = "",
    planned_questions: list[dict[str, Any]] | None = None,
    notes: str = "",
) -> GuideVersion:
    """Save an edit as a new version (interviews keep the one they used); unchanged content adds none."""
    guide = Guide.objects.select_for_update().get(pk=guide.pk)
    if guide.name != normalised_name(name):
        guide.name = guide_name_checked(guide.project, name, exclude=guide)
        guide.full_clean(validate_constraints=False)
        _save_guide(guide, update_fields=["name"])
    latest = guide.versions.order_by("-number").first()
    fields = _version_fields(
        opening_prompt=opening_prompt,
        system_prompt=system_prompt,
        planned_questions=planned_questions or [],
        notes=notes,
    )
    if latest and all(getattr(latest, key) == value for key, value in fields.items()):
        return latest
    number = (latest.number if latest else 0) + 1
    return GuideVersion.objects.create(guide=guide, number=number, created_by=user, **fields)


# -- endpoints ----------------------------------------------------------------


def _checked_endpoint_url(url: str, field: str) -> str:
    """`url` stripped, when requests may go there (conduct/egress.py); ValidationError on `field` otherwise."""
    url = url.strip()
    try:
        egress_policy().check_url(url)
    except EgressRefused as exc:
        raise ValidationError({field: str(exc)}) from exc
    return url


KEY_LABEL_TAKEN = "A key with this label is already stored."


@transaction.atomic
def endpoint_key_store(*, project: Project, user: Any, label: str, plain_key: str, base_url: str) -> EndpointKey:
    """Encrypt and store a project's API key, bound to the one endpoint it may be sent to.

    Only a masked hint is ever shown again; the binding never changes (store the key again
    for another endpoint). Callers let only the project's owners store keys.
    """
    plain_key = plain_key.strip()
    if not plain_key:
        raise ValidationError({"plain_key": "Paste the API key."})
    key = EndpointKey(
        project=project,
        label=label.strip(),
        encrypted=encrypt_secret(plain_key),
        hint=masked_hint(plain_key),
        base_url=_checked_endpoint_url(base_url, "base_url"),
        created_by=user,
    )
    key.full_clean()
    with name_kept_unique("unique_endpoint_key_label", ValidationError({"label": KEY_LABEL_TAKEN})):
        key.save()
    audit_record(project=project, actor=user, action=AuditEvent.Action.CREATED, target=key,
                 summary=f"API key “{key.label}” stored for {key.base_url}")
    return key


def demo_endpoint_key(*, project: Project, user: Any, base_url: str) -> EndpointKey:
    """The demo key for the local fake server at `base_url` (`make fake-llm`), stored once per address."""
    label = f"Local demo server ({base_url})"
    return (EndpointKey.objects.filter(project=project, label=label, base_url=base_url).first()
            or endpoint_key_store(project=project, user=user, label=label, plain_key="sk-local-demo", base_url=base_url))


@transaction.atomic
def endpoint_key_delete(*, key: EndpointKey, user: Any) -> int:
    """Delete a stored key; the participants that used it send no key from now on. Returns how many."""
    affected = LiveEndpoint.objects.filter(api_key=key).update(key_source=LiveEndpoint.KeySource.NONE, api_key=None)
    audit_record(project=key.project, actor=user, action=AuditEvent.Action.DELETED, target=key,
                 summary=f"API key “{key.label}” deleted")
    key.delete()
    return affected


@transaction.atomic
def live_participant_save(
    *,
    project: Project,
    participant: Participant | None,
    label: str,
    provider: str,
    model_id: str,
    base_url: str,
    temperature: float | None,
    top_p: float | None,
    seed: int | None,
    max_tokens: int | None,
    timeout_seconds: float,
    api_key: EndpointKey | None,
    use_deployment_key: bool = False,
    stream_answers: bool = True,
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
) -> Participant:
    """Create or update a live participant and its endpoint settings.

    A key decides the endpoint: a stored key goes only to the URL it is bound to, the
    deployment's key only to the deployment's endpoint, so a participant using either keeps
    that URL; any other URL is for endpoints that need no key. What earlier answers learned
    about the endpoint is forgotten when its base URL or model changes.
    """
    if api_key is not None and api_key.project_id != project.pk:
        raise ValidationError({"api_key": "That key belongs to another project."})
    if api_key is not None and use_deployment_key:
        raise ValidationError({"api_key": "Choose one key: a stored key or the deployment's key."})
    base_url = base_url.strip()
    if api_key is not None:
        key_source = LiveEndpoint.KeySource.PROJECT
        refusal = key_binding_refusal(base_url=base_url, bound_to=api_key.base_url,
                                      whose=f"The stored key “{api_key.label}”")
        base_url = api_key.base_url
    elif use_deployment_key:
        key_source = LiveEndpoint.KeySource.DEPLOYMENT
        refusal = key_binding_refusal(base_url=base_url, bound_to=deployment_base_url(),
                                      whose="The deployment's key (OPENAI_API_KEY)")
        base_url = ""  # the deployment's endpoint, whatever it is set to later
    else:
        key_source, refusal = LiveEndpoint.KeySource.NONE, None
        if base_url:
            _checked_endpoint_url(base_url, "base_url")
    if refusal:
        raise ValidationError({"base_url": f"{refusal} Leave the URL empty, or choose another key."})
    participant = participant or Participant(project=project)
    same_endpoint = (participant.base_url, participant.model_id) == (base_url, model_id.strip())
    for field, value in {
        "label": normalised_name(label),
        "provider": provider.strip(),
        "model_id": model_id.strip(),
        "base_url": base_url,
        "temperature": temperature,
        "top_p": top_p,
        "seed": seed,
        "max_tokens": max_tokens,
    }.items():
        setattr(participant, field, value)
    participant.is_live = True
    participant.interface = Participant.Interface.API
    if taken := participant_label_taken(project.pk, participant.label, exclude=participant.pk):
        raise ValidationError({"label": taken})
    participant.full_clean(validate_constraints=False)  # the label was checked above, with a clearer message
    participant_save(participant)
    endpoint_fields = {"key_source": key_source, "api_key": api_key, "timeout_seconds": timeout_seconds,
                       "stream_answers": stream_answers, "max_in_flight": max_in_flight}
    if not same_endpoint:
        endpoint_fields |= LiveEndpoint.LEARNED_DEFAULTS
    LiveEndpoint.objects.update_or_create(participant=participant, defaults=endpoint_fields)
    return participant


# -- sessions and questions ---------------------------------------------------


@transaction.atomic
def session_start(
    *, project: Project, user: Any, guide_version: GuideVersion, participants: Sequence[Participant]
) -> ConductSession:
    """Open one live interview per participant and send the guide's opening prompt to all."""
    if not participants:
        raise ValidationError({"participants": "Pick at least one live participant."})
    not_live = [p.label for p in participants if not p.is_live or p.project_id != project.pk]
    if not_live:
        raise ValidationError({"participants": f"Not a live participant of this project: {', '.join(not_live)}."})
    session = ConductSession.objects.create(project=project, guide_version=guide_version, created_by=user)
    for position, participant in enumerate(participants):
        _seat_open(session=session, participant=participant, user=user, position=position)
    question_ask(session=session, interviews=list(_session_interviews(session)), text=guide_version.opening_prompt, user=user)
    return session


def _seat_open(
    *, session: ConductSession, participant: Participant, user: Any, position: int, rerun_of: Interview | None = None
) -> Seat:
    guide_version = session.guide_version
    interview = Interview.objects.create(
        project=session.project,
        participant=participant,
        title=f"{guide_version.guide.name} — {participant.label}",
        conducted_at=timezone.now(),
        origin=Interview.Origin.LIVE,
        status=Interview.Status.IN_PROGRESS,
        guide_version=guide_version,
        rerun_of=rerun_of,
        created_by=user,
        metadata={"guide_version": guide_version.number, "conduct_session": str(session.uuid)},
    )
    audit_record(project=session.project, actor=user, action=AuditEvent.Action.CREATED, target=interview,
                 summary=f"Live interview “{interview.title}” started")
    return Seat.objects.create(session=session, interview=interview, position=position)


def _session_interviews(session: ConductSession) -> list[Interview]:
    return [seat.interview for seat in session.seats.select_related("interview__participant").order_by("position")]


@transaction.atomic
def question_ask(
    *,
    session: ConductSession,
    interviews: Sequence[Interview],
    text: str,
    user: Any,
    planned_index: int | None = None,
) -> list[Turn]:
    """Save the interviewer's question in each interview, then queue each model's answer.

    The question is committed before any model is called, so it survives any
    failure of the call; returns the participant turns now waiting for answers.
    """
    text = text.strip()
    if not text:
        raise ValidationError({"text": "Write a question first."})
    session = ConductSession.objects.select_for_update().get(pk=session.pk)
    if session.is_ended:
        raise ValidationError({"text": "This session has ended; start a new one or re-run an interview."})
    # Lock the interviews so two quick clicks cannot take the same turn position.
    list(Interview.objects.select_for_update().filter(pk__in=[i.pk for i in interviews]))
    busy = [iv for iv in interviews if _busy(iv)]
    if busy:
        names = ", ".join(sorted(iv.participant.label for iv in busy))
        raise ValidationError({"text": f"Still answering: {names}. Wait for the answer or stop it first."})
    answers = []
    for interview in interviews:
        answers.append(_ask_one(interview=interview, text=text, user=user, broadcast=len(interviews) > 1, planned_index=planned_index))
    if planned_index is not None:
        question_check(session=session, index=planned_index, checked=True)
    return answers


def _busy(interview: Interview) -> bool:
    jobs = AnswerJob.objects.filter(
        turn__interview=interview,
        turn__status__in=ACTIVE,
        state__in=[AnswerJob.State.QUEUED, AnswerJob.State.RUNNING],
    )
    return any(job.is_live for job in jobs)


def _ask_one(*, interview: Interview, text: str, user: Any, broadcast: bool, planned_index: int | None) -> Turn:
    # Positions start at 0 for live interviews as for imported ones (one numbering: interviews.models.turn_number).
    last = interview.turns.aggregate(last=Max("position"))["last"]
    position = 0 if last is None else last + 1
    now = timezone.now()
    Turn.objects.create(
        interview=interview,
        position=position,
        speaker=Speaker.INTERVIEWER,
        text=text,
        timestamp=now,
        metadata={"asked_by": getattr(user, "username", ""), "broadcast": broadcast, "planned_question": planned_index},
    )
    answer = Turn.objects.create(
        interview=interview,
        position=position + 1,
        speaker=Speaker.PARTICIPANT,
        text="",
        model_slug=interview.participant.model_id,
        status=Turn.Status.PENDING,
    )
    AnswerJob.objects.create(turn=answer)
    _enqueue(answer.pk)
    return answer


def _enqueue(turn_id: int) -> None:
    from conduct.tasks import enqueue_answer

    transaction.on_commit(lambda: enqueue_answer(turn_id))


@transaction.atomic
def question_check(*, session: ConductSession, index: int, checked: bool) -> ConductSession:
    """Tick or untick a planned question on the session's checklist."""
    session = ConductSession.objects.select_for_update().get(pk=session.pk)
    if not 0 <= index < len(session.guide_version.planned_questions):
        raise ValidationError({"index": "No such planned question in this guide version."})
    ticked = set(session.checked_questions)
    ticked.add(index) if checked else ticked.discard(index)
    session.checked_questions = sorted(ticked)
    session.save(update_fields=["checked_questions"])
    return session


# -- answers ------------------------------------------------------------------


@transaction.atomic
def answer_retry(*, turn: Turn) -> Turn:
    """Ask again for a failed, interrupted or lost answer; what arrived before is kept in metadata."""
    turn = Turn.objects.select_for_update().select_related("interview").get(pk=turn.pk)
    job = AnswerJob.objects.select_for_update().get(turn=turn)
    if turn.interview.status == Interview.Status.READY:
        raise ValidationError("This interview has ended and is segmented for coding; re-run it to ask again.")
    if turn.status in ACTIVE and not job.is_stale:
        raise ValidationError("This answer is still arriving; stop it first to retry.")
    if turn.status == Turn.Status.COMPLETE:
        raise ValidationError("This answer is complete; ask a follow-up instead.")
    history = list(turn.metadata.get("previous_attempts", []))
    history.append({"text": turn.text, "status": turn.status, "provenance": turn.metadata.get("provenance")})
    turn.text, turn.status = "", Turn.Status.PENDING
    turn.metadata = {"previous_attempts": history}
    turn.save(update_fields=["text", "status", "metadata"])
    job.state, job.attempt, job.stop_requested = AnswerJob.State.QUEUED, job.attempt + 1, False
    job.worker_token, job.heartbeat_at, job.queued_at = "", None, timezone.now()
    job.sent_at = job.queued_at
    job.save()
    _enqueue(turn.pk)
    return turn


@transaction.atomic
def answer_stop(*, turn: Turn) -> Turn:
    """Ask the worker to stop this answer; one not started yet is marked interrupted at once."""
    job = AnswerJob.objects.select_for_update().get(turn=turn)
    job.stop_requested = True
    job.save(update_fields=["stop_requested"])
    if job.state == AnswerJob.State.QUEUED or job.is_stale:
        job.state = AnswerJob.State.DONE
        job.save(update_fields=["state"])
        Turn.objects.filter(pk=turn.pk).update(
            status=Turn.Status.INTERRUPTED,
            metadata={**turn.metadata, "failure": {"kind": "cancelled", "message": "Stopped by the interviewer."}},
        )
    turn.refresh_from_db()
    return turn


@transaction.atomic
def answers_mark_lost(*, interviews: Sequence[Interview]) -> int:
    """Mark answers whose worker died as interrupted, keeping the text saved so far."""
    lost = 0
    jobs = AnswerJob.objects.select_for_update().select_related("turn").filter(
        turn__interview__in=interviews, state=AnswerJob.State.RUNNING
    )
    for job in jobs:
        if job.is_stale:
            _mark_lost(job)
            lost += 1
    return lost


def _mark_lost(job: AnswerJob) -> None:
    turn = job.turn
    failure = {
        "kind": "interrupted",
        "message": "The worker stopped while this answer was arriving (restart or crash). "
        "The text saved so far is kept; retry to ask again.",
    }
    turn.status = Turn.Status.INTERRUPTED
    turn.metadata = {**turn.metadata, "failure": failure}
    turn.save(update_fields=["status", "metadata"])
    job.state = AnswerJob.State.DONE
    job.save(update_fields=["state"])


# -- ending and re-running ----------------------------------------------------


@transaction.atomic
def session_end(*, session: ConductSession) -> ConductSession:
    """End the session: every interview is segmented and ready to code."""
    session = ConductSession.objects.select_for_update().get(pk=session.pk)
    interviews = _session_interviews(session)
    answers_mark_lost(interviews=interviews)
    if Turn.objects.filter(interview__in=interviews, status__in=ACTIVE).exists():
        raise ValidationError("Some answers are still arriving. Wait for them or stop them, then end the interview.")
    for interview in interviews:
        interview_finish(interview=interview)
    session.ended_at = timezone.now()
    session.save(update_fields=["ended_at"])
    return session


@transaction.atomic
def interview_finish(*, interview: Interview) -> int:
    """Segment the interview exactly like an imported one and mark it ready to code."""
    count = interview_segment(interview=interview)
    interview.status = Interview.Status.READY
    interview.save(update_fields=["status", "updated_at"])
    return count


@transaction.atomic
def interview_rerun(*, interview: Interview, participant: Participant, user: Any) -> ConductSession:
    """Re-run an interview on another participant: same guide version, same questions in order.

    The first question is sent now; each next one when the previous answer
    completes, so the two interviews can be compared question by question.
    """
    if interview.guide_version_id is None:
        raise ValidationError("Only interviews conducted from a guide can be re-run.")
    if not participant.is_live or participant.project_id != interview.project_id:
        raise ValidationError({"participant": "Pick a live participant of this project."})
    questions = list(
        interview.turns.filter(speaker=Speaker.INTERVIEWER).order_by("position").values_list("text", flat=True)
    )
    if not questions:
        raise ValidationError("The original interview has no questions to re-run.")
    session = ConductSession.objects.create(
        project=interview.project, guide_version=interview.guide_version, created_by=user
    )
    seat = _seat_open(session=session, participant=participant, user=user, position=0, rerun_of=interview)
    seat.replay = questions[1:]
    seat.save(update_fields=["replay"])
    question_ask(session=session, interviews=[seat.interview], text=questions[0], user=user)
    return session


@transaction.atomic
def replay_next(*, interview: Interview) -> Turn | None:
    """Ask a re-run's next original question, if any remain and nothing is arriving."""
    seat = Seat.objects.select_for_update().select_related("session__guide_version", "interview__participant").filter(interview=interview).first()
    if seat is None or not seat.replay or seat.session.is_ended:
        return None
    if Turn.objects.filter(interview=interview, status__in=ACTIVE).exists():
        return None
    question, *rest = seat.replay
    seat.replay = rest
    seat.save(update_fields=["replay"])
    [answer] = question_ask(session=seat.session, interviews=[seat.interview], text=question, user=None)
    return answer
