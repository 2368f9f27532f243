"""The AI second reader: a coder agent proposes codes from the codebook, a critic checks them.

In reflexive TA the researcher's interpretation is the analysis, so nothing here codes: a run
leaves Suggestions (and ideas for new codes) that a person accepts or rejects one by one
(coding.services.suggestion_accept / suggestion_reject).

A run is cut into windows of a few dozen participant segments, each with the question it
answers. Each window is one idempotent task (`window_run`): the coder's and the critic's
request and raw answer are kept as ReaderSteps before anything is parsed, so a worker killed
mid-window repeats at most the call it was making, and a redelivered task reuses what is kept.
Both agents answer in strict JSON schemas; a proposal for a segment outside the window or a
code outside the codebook is dropped and counted, never applied.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connection, connections, transaction
from django.db.models import Count, Q, Sum
from django.db.models.functions import Length
from django.utils import timezone

from coding.agreement import cohen_kappa, gwet_ac1, kappa_chance_p_value, span_iou
from coding.models import Code, CodeIdea, Coding, ReaderSettings, ReaderStep, Suggestion, SuggestionRun
from conduct.answering import EndpointUnavailable, endpoint_for
from conduct.client import Endpoint, stream_answer
from conduct.egress import normalized_url, stays_local
from conduct.tasks import endpoint_queue
from interviews.models import Interview, Participant, Segment, Speaker, Turn
from projects import safejson
from projects.audit import audit_record
from projects.jobs import enqueue, job_lock
from projects.models import AuditEvent, Project
from projects.text import shortened

PROMPT_VERSION = "second-reader/2026-11-27"
WINDOW_SEGMENTS = 40
# Sentences already coded with the code that "find more like this" shows the model.
FOCUS_EXAMPLES = 12
# Characters kept of a rationale, evidence, critic's reason or idea: a model may answer at any length.
TEXT_LIMIT = 2_000
CHARS_PER_TOKEN = 4
# Output per sentence read: a proposal (ids, rationale, quoted evidence) for about half of them, or a verdict.
OUTPUT_TOKENS_PER_SENTENCE = 30  # a rough English average, for the estimate shown before a run starts

CODER_SYSTEM = (
    "You are a second reader in a reflexive thematic analysis of interviews with AI chatbots. "
    "You propose codes for the participant's sentences, from the codebook given, so the researcher "
    "can reflect on them; the researcher decides. Propose a code only where its definition and "
    "include rules fit and its exclude rules do not. Quote the exact words of the sentence that are "
    "your evidence. Use only segment ids and code ids that appear in the message. "
    "Proposing nothing for a sentence is fine."
)
CODER_IDEAS = (
    " Where something important is not captured by any code, you may propose a new code idea "
    "with a name, a definition and the segment ids it fits."
)
CRITIC_SYSTEM = (
    "You check another reader's code proposals for interview sentences against the codebook. "
    "For each proposal decide: keep it (the code's definition fits the sentence), change it to "
    "another code id from the codebook that fits better (new_code_id), or reject it. Give your reason in one or "
    "two sentences. Judge each proposal by the definition and the sentence alone. Each verdict repeats its "
    "proposal's number, segment_id and code_id as listed."
)

CODER_SCHEMA = {
    "type": "json_schema",
    "json_schema": {
        "name": "code_proposals",
        "strict": True,
        "schema": {
            "type": "object",
            "additionalProperties": False,
            "required": ["proposals", "new_code_ideas"],
            "properties": {
                "proposals": {"type": "array", "items": {
                    "type": "object", "additionalProperties": False,
                    "required": ["segment_id", "code_id", "rationale", "evidence"],
                    "properties": {"segment_id": {"type": "integer"}, "code_id": {"type": "integer"},
                                   "rationale": {"type": "string"}, "evidence": {"type": "string"}},
                }},
                "new_code_ideas": {"type": "array", "items": {
                    "type": "object", "additionalProperties": False,
                    "required": ["name", "definition", "segment_ids", "rationale"],
                    "properties": {"name": {"type": "string"}, "definition": {"type": "string"},
                                   "segment_ids": {"type": "array", "items": {"type": "integer"}},
                                   "rationale": {"type": "string"}},
                }},
            },
        },
    },
}
CRITIC_SCHEMA = {
    "type": "json_schema",
    "json_schema": {
        "name": "proposal_verdicts",
        "strict": True,
        "schema": {
            "type": "object",
            "additionalProperties": False,
            "required": ["verdicts"],
            "properties": {"verdicts": {"type": "array", "items": {
                "type": "object", "additionalProperties": False,
                "required": ["proposal", "segment_id", "code_id", "verdict", "new_code_id", "reason"],
                "properties": {"proposal": {"type": "integer"}, "segment_id": {"type": "integer"},
                               "code_id": {"type": "integer"},
                               "verdict": {"type": "string", "enum": ["keep", "change", "reject"]},
                               "new_code_id": {"type": ["integer", "null"]}, "reason": {"type": "string"}},
            }}},
        },
    },
}


# -- settings and starting a run -------------------------------------------------------


def reader_settings(project: Project) -> ReaderSettings:
    return ReaderSettings.objects.select_related("endpoint").filter(project=project).first() or ReaderSettings(
        project=project
    )


@transaction.atomic
def reader_settings_save(*, project: Project, user: Any, enabled: bool, endpoint: Participant | None,
                         local_only: bool, price_input_per_million: Decimal | None = None,
                         price_output_per_million: Decimal | None = None) -> ReaderSettings:
    """An owner turns the second reader on or off and chooses the endpoint that receives transcript text."""
    if endpoint is not None and (endpoint.project_id != project.pk or not endpoint.is_live):
        raise ValidationError({"endpoint": "Choose one of this project's live participants."})
    if enabled and endpoint is None:
        raise ValidationError({"endpoint": "Choose the endpoint that reads the transcripts."})
    current = reader_settings(project)
    current.enabled, current.endpoint, current.local_only, current.updated_by = enabled, endpoint, local_only, user
    current.price_input_per_million, current.price_output_per_million = price_input_per_million, price_output_per_million
    if enabled:
        _check_local(current)
    current.approved_url = _sends_to(endpoint) if enabled and endpoint else ""
    current.save()
    where = f" ({endpoint.label}, {endpoint_url(endpoint)})" if enabled and endpoint else ""
    audit_record(project=project, actor=user, action=AuditEvent.Action.CHANGED, target_type="second reader",
                 summary=f"AI second reader {'enabled' if enabled else 'disabled'}{where}")
    return current


def endpoint_url(endpoint: Participant) -> str:
    try:
        return endpoint_for(endpoint).base_url
    except EndpointUnavailable as exc:
        return exc.failure.message


def _sends_to(endpoint: Participant) -> str:
    """The URL the participant's requests go to, or "" when nothing can be sent (no key, a key bound elsewhere)."""
    try:
        return endpoint_for(endpoint).base_url
    except EndpointUnavailable:
        return ""


def endpoint_shown(current: ReaderSettings) -> tuple[str, str | None]:
    """What the reader's page says of its endpoint: where transcript text would go (or why nothing can be sent), and
    why a run would be refused because the endpoint moved since an owner approved it (or None)."""
    if not (current.enabled and current.endpoint):
        return "", None
    try:
        endpoint = endpoint_for(current.endpoint)
    except EndpointUnavailable as exc:
        return exc.failure.message, None  # the run start refuses with the same reason
    return endpoint.base_url, _moved_from_approved(current.approved_url, endpoint)


def _moved_from_approved(approved_url: str, endpoint: Endpoint) -> str | None:
    """Why `endpoint` is not the one an owner approved, or None when it is."""
    if approved_url and normalized_url(endpoint.base_url) == normalized_url(approved_url):
        return None
    was = f"not to {approved_url}, which an owner approved" if approved_url else "and no owner has approved it yet"
    return (f"The second reader's endpoint now sends to {endpoint.base_url}, {was}. Nothing was sent: an owner "
            "saves the second reader's settings to approve where transcript text goes.")


def _check_local(current: ReaderSettings) -> None:
    if current.local_only and current.endpoint and not stays_local(endpoint_url(current.endpoint)):
        raise ValidationError({"endpoint": "This project sends transcript text only to local endpoints, and "
                                           f"{endpoint_url(current.endpoint)} is not on this machine or network."})


def codebook_for_prompt(project: Project, focus: Code | None = None) -> list[dict[str, Any]]:
    """The live, unarchived codes with everything a reader needs to apply them; or only `focus`, with
    sentences researchers already coded with it as examples ("find more like this")."""
    codes = Code.objects.for_project(project).filter(archived=False).select_related("parent").order_by("position", "name")
    if focus is not None:
        codes = codes.filter(pk=focus.pk)
    entries = [
        {"id": code.pk, "name": code.name, "kind": code.kind, "parent": code.parent.name if code.parent else None,
         "definition": code.definition, "include_when": code.include_when, "exclude_when": code.exclude_when,
         "example": code.example}
        for code in codes
    ]
    if focus is not None and entries:
        entries[0]["coded_examples"] = list(
            Segment.objects.filter(codings__code=focus, interview__deleted_at__isnull=True)
            .order_by("-codings__created_at").values_list("text", flat=True).distinct()[:FOCUS_EXAMPLES])
    return entries


def plan_windows(interviews: Iterable[Interview], size: int = WINDOW_SEGMENTS) -> list[list[int]]:
    """Participant segments in reading order, cut into windows that never span two interviews."""
    windows: list[list[int]] = []
    for interview in interviews:
        ids = list(Segment.objects.filter(interview=interview, speaker=Speaker.PARTICIPANT)
                   .order_by("position").values_list("pk", flat=True))
        windows.extend(ids[i:i + size] for i in range(0, len(ids), size))
    return windows


def estimate(project: Project, interviews: Sequence[Interview], *, with_critic: bool = True,
             focus: Code | None = None) -> dict[str, Any]:
    """Requests, tokens in and out, and (with the endpoint's prices set) the cost of a run, before anything is sent."""
    windows = plan_windows(interviews)
    text = Segment.objects.filter(interview__in=interviews, speaker=Speaker.PARTICIPANT).aggregate(
        chars=Sum(Length("text")))["chars"] or 0
    codebook = len(json.dumps(codebook_for_prompt(project, focus)))
    per_request = codebook + len(CODER_SYSTEM) + 200
    agents = 2 if with_critic else 1
    tokens = (per_request * len(windows) * agents + text * agents) // CHARS_PER_TOKEN
    sentences = sum(len(window) for window in windows)
    output = sentences * OUTPUT_TOKENS_PER_SENTENCE * agents
    result = {"windows": len(windows), "requests": len(windows) * agents, "input_tokens": tokens,
              "output_tokens": output, "cost": None}
    prices = reader_settings(project)
    if prices.price_input_per_million is not None or prices.price_output_per_million is not None:
        per_million = Decimal(1_000_000)
        result["cost"] = ((prices.price_input_per_million or 0) * tokens / per_million
                          + (prices.price_output_per_million or 0) * output / per_million).quantize(Decimal("0.01"))
    return result


@transaction.atomic
def run_start(*, project: Project, user: Any, interviews: Sequence[Interview], with_critic: bool = True,
              new_code_ideas: bool = False, focus: Code | None = None) -> SuggestionRun:
    """Start a run over `interviews` with the codebook as it is now; asking again later makes a new run."""
    current = reader_settings(project)
    if not current.enabled or current.endpoint is None:
        raise ValidationError("The AI second reader is off for this project: an owner enables it first.")
    _check_local(current)
    try:
        endpoint = endpoint_for(current.endpoint)
    except EndpointUnavailable as exc:
        raise ValidationError(exc.failure.message) from exc
    moved = _moved_from_approved(current.approved_url, endpoint)
    if moved:
        raise ValidationError(moved)
    codebook = codebook_for_prompt(project, focus)
    if not codebook:
        raise ValidationError(f"“{focus.name}” is archived: the second reader proposes only live codes." if focus
                              else "The codebook is empty: the second reader proposes codes from it.")
    windows = plan_windows(interviews)
    if not windows:
        raise ValidationError("These interviews have no participant sentences to read.")
    run = SuggestionRun.objects.create(
        project=project, created_by=user, endpoint=current.endpoint, model=endpoint.model,
        endpoint_url=endpoint.base_url, prompt_version=PROMPT_VERSION, with_critic=with_critic,
        new_code_ideas=new_code_ideas, codebook=codebook, windows=windows, focus_code=focus,
    )
    run.interviews.set(interviews)
    audit_record(project=project, actor=user, action=AuditEvent.Action.CREATED, target=run,
                 summary=f"AI suggestions{f' like “{focus.name}”' if focus else ''} asked of {endpoint.model} "
                         f"for {len(interviews)} interview{'s' if len(interviews) != 1 else ''}, "
                         f"{len(windows)} window{'s' if len(windows) != 1 else ''}, text sent to {endpoint.base_url}")
    transaction.on_commit(lambda: enqueue_windows(run.pk, list(range(len(windows)))))
    return run


def enqueue_windows(run_id: int, windows: list[int]) -> None:
    """Each window to the worker; without a broker (laptop mode) in one thread, so the page shows progress."""
    from config.celery import app

    if app.conf.task_always_eager and getattr(settings, "READER_EAGER_IN_THREAD", True):
        threading.Thread(target=_windows_in_thread, args=(run_id, windows), name=laptop_thread_name(run_id),
                         daemon=True).start()
        return
    for window in windows:
        if app.conf.task_always_eager:
            window_run(run_id, window)
        else:
            _send_window(run_id, window)


def reader_runs_resume() -> int:
    """At a worker's start: send again every window of a running run not kept yet; returns how many.

    Windows a dead worker held would otherwise wait for the broker's visibility timeout. A window
    still running on another worker, or sent twice, is asked once (window_run's lock and kept steps).
    """
    sent = 0
    for run in SuggestionRun.objects.filter(status=SuggestionRun.Status.RUNNING):
        kept = kept_windows(run)
        missing = [window for window in range(len(run.windows)) if window not in kept]
        if not missing:
            _finish_if_complete(run)
        for window in missing:
            _send_window(run.pk, window)
        sent += len(missing)
    return sent


def _send_window(run_id: int, window: int) -> None:
    from coding.tasks import reader_window_task

    with transaction.atomic():
        enqueue(reader_window_task, run_id, window, queue=endpoint_queue())


def laptop_thread_name(run_id: int) -> str:
    """The name of the thread that asks a run's windows in laptop mode (a test waits for it by name)."""
    return f"rta-reader-run-{run_id}"


def _windows_in_thread(run_id: int, windows: list[int]) -> None:
    """Laptop mode: a few windows at a time, as a worker's thread pool would send them."""
    def one(window: int) -> None:
        try:
            window_run(run_id, window)
        finally:
            connections.close_all()  # this thread's own connections only

    with ThreadPoolExecutor(max_workers=getattr(settings, "READER_CONCURRENCY", 4)) as pool:
        list(pool.map(one, windows))


@transaction.atomic
def run_cancel(*, run: SuggestionRun, user: Any) -> bool:
    """Stop asking: windows not yet sent are skipped; suggestions already made stay for review.

    False when the run had already finished (or was cancelled): nothing changes."""
    cancelled = SuggestionRun.objects.filter(pk=run.pk, status=SuggestionRun.Status.RUNNING).update(
        status=SuggestionRun.Status.CANCELLED, finished_at=timezone.now())
    if cancelled:
        audit_record(project=run.project, actor=user, action=AuditEvent.Action.CHANGED, target=run,
                     summary="AI suggestion run cancelled")
    return bool(cancelled)


@transaction.atomic
def run_retry_failed(*, run: SuggestionRun, user: Any) -> list[int]:
    """Ask again the windows of a finished run whose coder or critic request failed; returns them.

    A failed coder's sentences got no suggestions, which is not the model finding none: the window is asked again.
    A failed critic's suggestions were kept unchecked: the critic is asked again (the coder's answer is kept), and
    the window's unchecked suggestions nobody decided yet are made again with its verdicts. Asked again within the
    same run (its codebook, its endpoint), nothing already suggested or decided is proposed twice, as a new run would.
    """
    run = SuggestionRun.objects.select_for_update().get(pk=run.pk)
    if run.status != SuggestionRun.Status.DONE:
        raise ValidationError("Only a finished run asks its failed windows again: wait for this one to finish"
                              if run.status == SuggestionRun.Status.RUNNING else
                              "A cancelled run is not resumed: start a new run for its interviews.")
    failed_steps = run.steps.filter(ok=False)
    failed = sorted(set(failed_steps.values_list("window", flat=True)))
    if not failed:
        raise ValidationError("No window of this run failed: nothing to ask again.")
    critic_only = sorted(set(failed_steps.filter(agent=ReaderStep.Agent.CRITIC).values_list("window", flat=True)))
    for window in critic_only:
        run.suggestions.filter(segment_id__in=run.windows[window], status=Suggestion.Status.PENDING,
                               critic_verdict=Suggestion.Verdict.NONE).delete()
        CodeIdea.objects.filter(run=run, window=window).delete()
        coder = ReaderStep.objects.get(run=run, window=window, agent=ReaderStep.Agent.CODER)
        coder.provenance.pop("dropped", None)  # the window is kept again, with the critic's verdicts
        coder.save(update_fields=["provenance"])
    failed_steps.delete()
    SuggestionRun.objects.filter(pk=run.pk).update(status=SuggestionRun.Status.RUNNING, finished_at=None)
    audit_record(project=run.project, actor=user, action=AuditEvent.Action.CHANGED, target=run,
                 summary=f"AI suggestion run: {len(failed)} failed window{'s' if len(failed) != 1 else ''} asked again")
    transaction.on_commit(lambda: enqueue_windows(run.pk, failed))
    return failed


def progress(run: SuggestionRun) -> dict[str, int]:
    """Requests answered of the requests the run makes; a kept window the coder proposed nothing for asks no critic."""
    agents = 2 if run.with_critic else 1
    counted = run.steps.aggregate(steps=Count("pk"), failed=Count("pk", filter=Q(ok=False)))
    steps, failed = counted["steps"], counted["failed"]
    kept = kept_windows(run)
    without_critic = len(kept) - run.steps.filter(agent=ReaderStep.Agent.CRITIC, window__in=kept).count()
    total = len(run.windows) * agents - (without_critic if run.with_critic else 0)
    # A failed request (the endpoint's error, a timeout, an unreadable answer) is kept like an answer: say so, and why.
    errors, failed_by_agent, failed_windows = [], {}, 0
    if failed:
        failed_steps = run.steps.filter(ok=False)
        errors = list(failed_steps.exclude(error="").order_by("error").values_list("error", flat=True).distinct()[:3])
        failed_by_agent = dict(failed_steps.values_list("agent").annotate(n=Count("pk")).order_by())
        failed_windows = failed_steps.values("window").distinct().count()
    return {"windows": len(run.windows), "kept": len(kept), "steps": steps, "total_steps": total, "failed": failed,
            "failed_coder": failed_by_agent.get(ReaderStep.Agent.CODER, 0),
            "failed_critic": failed_by_agent.get(ReaderStep.Agent.CRITIC, 0),
            "failed_windows": failed_windows, "errors": errors, "percent": round(100 * steps / max(1, total))}


# -- one window ----------------------------------------------------------------------


def window_run(run_id: int, window: int) -> str:
    """Ask the coder (then the critic) about one window and keep what survives; safe to run twice.

    Two deliveries of one window never run at once (a worker restart sends unfinished windows again
    while the first delivery may still be running elsewhere): the second finds the window's lock
    held and leaves it to the first. A worker that dies releases the lock with its connection.
    """
    with job_lock(f"reader-window:{window}", run_id) as held:
        if not held:
            return "running elsewhere"
        return _window_run(run_id, window)


def _window_run(run_id: int, window: int) -> str:
    run = SuggestionRun.objects.select_related("endpoint").get(pk=run_id)
    if run.status == SuggestionRun.Status.CANCELLED:
        return "cancelled"
    if window in kept_windows(run):
        _finish_if_complete(run)
        return "done"
    segments = _window_segments(run, window)
    code_ids = {code["id"] for code in run.codebook}
    coder = _step(run, window, ReaderStep.Agent.CODER, lambda: _coder_messages(run, segments), CODER_SCHEMA)
    proposals, ideas, dropped = parse_coder(coder, segment_ids={s.pk for s in segments}, code_ids=code_ids)
    verdicts: dict[int, dict[str, Any]] = {}
    critic = None
    if run.with_critic and proposals and coder.ok:
        if SuggestionRun.objects.filter(pk=run.pk, status=SuggestionRun.Status.CANCELLED).exists():
            return "cancelled"  # while the coder answered: the critic is not asked, nothing more is sent
        critic = _step(run, window, ReaderStep.Agent.CRITIC,
                       lambda: _critic_messages(run, segments, proposals), CRITIC_SCHEMA)
        verdicts, judged_dropped = parse_critic(critic, proposals=proposals, code_ids=code_ids)
        dropped.update(judged_dropped)
    _keep(run, window, segments, proposals, verdicts, ideas, dropped, critic)
    _finish_if_complete(run)
    return "done"


def _window_segments(run: SuggestionRun, window: int) -> list[Segment]:
    ids = run.windows[window]
    segments = {s.pk: s for s in Segment.objects.filter(pk__in=ids, interview__project=run.project)}
    return [segments[pk] for pk in ids if pk in segments]


def _step(run: SuggestionRun, window: int, agent: str, messages_for, response_format: dict) -> ReaderStep:
    """The kept step, or a new request whose answer is kept before it is used."""
    kept = ReaderStep.objects.filter(run=run, window=window, agent=agent).first()
    if kept is not None:
        return kept
    messages = messages_for()
    endpoint, error = _run_endpoint(run)
    if endpoint is None:
        result_text, provenance, ok = "", {}, False
    else:
        result = stream_answer(endpoint, messages, response_format=response_format)
        result_text, provenance = result.text, result.provenance
        ok = result.failure is None
        error = result.failure.message if result.failure else ""
        if ok and not _in_schema(agent, result_text):
            # Read as failed, not as an answer proposing nothing: its sentences were not read, and it can be asked again.
            ok, error = False, f"The {agent}'s answer was not JSON in the schema it was asked for."
    step, _ = ReaderStep.objects.get_or_create(
        run=run, window=window, agent=agent,
        defaults={"ok": ok, "request": {"messages": messages, "response_format": response_format},
                  "raw_answer": result_text, "provenance": provenance, "error": error},
    )
    return step


def _run_endpoint(run: SuggestionRun) -> tuple[Endpoint | None, str]:
    """The endpoint a window is sent to, or None and why not.

    Only the URL the run started with: a participant edited meanwhile does not take the rest of the run elsewhere.
    With "local only", every connection is checked to stay on this machine or network, whatever the name resolves to.
    """
    if run.endpoint is None:
        return None, "The run's endpoint was deleted."
    try:
        endpoint = endpoint_for(run.endpoint)
    except EndpointUnavailable as exc:
        return None, exc.failure.message
    if normalized_url(endpoint.base_url) != normalized_url(run.endpoint_url):
        return None, (f"The endpoint now sends to {endpoint.base_url}, not to {run.endpoint_url} where this run "
                      "started; nothing more is sent. Start a new run to use the new endpoint.")
    if ReaderSettings.objects.filter(project_id=run.project_id, local_only=True).exists():
        endpoint = replace(endpoint, egress=replace(endpoint.egress, local_only=True))
    return endpoint, ""


def _segment_lines(segments: Sequence[Segment]) -> str:
    """Each sentence with its id, under the question its answer replied to."""
    questions = _questions_for({s.turn_id for s in segments})
    lines, last_turn = [], None
    for segment in segments:
        if segment.turn_id != last_turn:
            question = questions.get(segment.turn_id)
            lines.append(f"\nQuestion: {question}" if question else "\n(Answer)")
            last_turn = segment.turn_id
        lines.append(f"[{segment.pk}] {segment.text}")
    return "\n".join(lines).strip()


def _questions_for(turn_ids: set[int]) -> dict[int, str]:
    """The interviewer's turn just before each answer turn."""
    turns = Turn.objects.filter(pk__in=turn_ids).values_list("pk", "interview_id", "position")
    questions = {}
    for pk, interview_id, position in turns:
        question = (Turn.objects.filter(interview_id=interview_id, position__lt=position, speaker=Speaker.INTERVIEWER)
                    .order_by("-position").values_list("text", flat=True).first())
        if question:
            questions[pk] = question
    return questions


def _coder_messages(run: SuggestionRun, segments: Sequence[Segment]) -> list[dict[str, str]]:
    system = CODER_SYSTEM + (CODER_IDEAS if run.new_code_ideas else " Leave new_code_ideas empty.")
    user = (f"Codebook (JSON):\n{json.dumps(run.codebook, ensure_ascii=False)}\n\n"
            f"Participant sentences, each with its segment id:\n{_segment_lines(segments)}")
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def _critic_messages(run: SuggestionRun, segments: Sequence[Segment], proposals: list[dict]) -> list[dict[str, str]]:
    texts = {s.pk: s.text for s in segments}
    listed = [{"proposal": i, "segment_id": p["segment_id"], "sentence": texts[p["segment_id"]],
               "code_id": p["code_id"], "rationale": p["rationale"]} for i, p in enumerate(proposals)]
    user = (f"Codebook (JSON):\n{json.dumps(run.codebook, ensure_ascii=False)}\n\n"
            f"Proposals (JSON):\n{json.dumps(listed, ensure_ascii=False)}")
    return [{"role": "system", "content": CRITIC_SYSTEM}, {"role": "user", "content": user}]


ANSWER_LISTS = {ReaderStep.Agent.CODER: "proposals", ReaderStep.Agent.CRITIC: "verdicts"}


def _in_schema(agent: str, text: str) -> bool:
    """Whether an answer is a JSON object with the agent's list; its items are checked one by one when it is read."""
    try:
        data = safejson.loads(text)
    except safejson.JSONInputError:
        return False
    return isinstance(data, dict) and isinstance(data.get(ANSWER_LISTS[agent]), list)


def _loads(step: ReaderStep) -> Any:
    try:
        return safejson.loads(step.raw_answer)
    except safejson.JSONInputError:
        return None


def parse_coder(step: ReaderStep, *, segment_ids: set[int], code_ids: set[int]
                ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Counter[str]]:
    """Valid proposals (one per segment and code) and ideas; what was dropped, counted by reason."""
    dropped: Counter[str] = Counter()
    if not step.ok:
        return [], [], dropped
    data = _loads(step)
    if not isinstance(data, dict) or not isinstance(data.get("proposals"), list):
        dropped["answer not in the schema"] += 1
        return [], [], dropped
    proposals, seen = [], set()
    for item in data["proposals"]:
        if not isinstance(item, dict) or not _is_id(item.get("segment_id")) or not _is_id(item.get("code_id")):
            dropped["proposal not in the schema"] += 1
        elif item["segment_id"] not in segment_ids:
            dropped["segment not in the window"] += 1
        elif item["code_id"] not in code_ids:
            dropped["code not in the codebook"] += 1
        elif (item["segment_id"], item["code_id"]) in seen:
            dropped["repeated proposal"] += 1
        else:
            seen.add((item["segment_id"], item["code_id"]))
            proposals.append({"segment_id": item["segment_id"], "code_id": item["code_id"],
                              "rationale": _capped(item.get("rationale"), "rationale", dropped),
                              "evidence": _capped(item.get("evidence"), "evidence", dropped)})
    ideas = []
    for idea in data.get("new_code_ideas") or []:
        if isinstance(idea, dict) and str(idea.get("name") or "").strip():
            ids = [i for i in idea.get("segment_ids") or [] if _is_id(i) and i in segment_ids]
            ideas.append({"name": str(idea["name"]).strip()[:200],
                          "definition": _capped(idea.get("definition"), "idea's definition", dropped),
                          "rationale": _capped(idea.get("rationale"), "idea's rationale", dropped), "segment_ids": ids})
    return proposals, ideas, dropped


def _capped(value: Any, what: str, dropped: Counter[str]) -> str:
    """The model's text, cut to TEXT_LIMIT characters with an ellipsis when longer, and counted so."""
    text = str(value or "")
    if len(text) <= TEXT_LIMIT:
        return text
    dropped[f"{what} cut to {TEXT_LIMIT:,} characters"] += 1
    return shortened(text, TEXT_LIMIT)


def _is_id(value: Any) -> bool:
    """A whole number as JSON gives it; JSON's true is a bool, which Python would take for 1."""
    return isinstance(value, int) and not isinstance(value, bool)


def parse_critic(step: ReaderStep, *, proposals: list[dict[str, Any]], code_ids: set[int]
                 ) -> tuple[dict[int, dict[str, Any]], Counter[str]]:
    """The critic's verdict per proposal index, and what was dropped, counted by reason.

    A verdict names its proposal by number, sentence and code: one naming another sentence or code than the
    numbered proposal is dropped, and so are all verdicts of a proposal judged more than once. A proposal left
    without a verdict stays unchecked.
    """
    dropped: Counter[str] = Counter()
    data = _loads(step) if step.ok else None
    items = data.get("verdicts") if isinstance(data, dict) else None
    named = _verdicts_name_their_proposal(step)
    judged: dict[int, list[dict[str, Any]]] = {}
    for item in items if isinstance(items, list) else []:
        index = item.get("proposal") if isinstance(item, dict) else None
        if not isinstance(item, dict) or item.get("verdict") not in VERDICTS:
            dropped["critic's verdict not in the schema"] += 1
        elif not _is_id(index) or not 0 <= index < len(proposals):
            dropped["critic's verdict for no listed proposal"] += 1
        elif named and not all(_is_id(item.get(key)) and item[key] == proposals[index][key]
                               for key in ("segment_id", "code_id")):
            dropped["critic's verdict naming another sentence or code than its proposal"] += 1
        else:
            judged.setdefault(index, []).append(item)
    verdicts: dict[int, dict[str, Any]] = {}
    for index, (item, *more) in judged.items():
        if more:
            dropped["critic's verdicts for a proposal judged more than once"] += 1 + len(more)
            continue
        verdict, new_code = item["verdict"], item.get("new_code_id" if named else "code_id")
        if verdict == "change" and not (_is_id(new_code) and new_code in code_ids):
            verdict = "reject"  # a change to a code outside the codebook cannot stand
        verdicts[index] = {"verdict": verdict, "code_id": new_code, "reason": _capped(item.get("reason"), "critic's reason", dropped)}
    return verdicts, dropped


def _verdicts_name_their_proposal(step: ReaderStep) -> bool:
    """Whether the critic was asked to repeat each proposal's sentence and code; an answer kept from before
    (prompt second-reader/2026-11-24) is read as it was then, by the proposal's number alone."""
    try:
        verdict = step.request["response_format"]["json_schema"]["schema"]["properties"]["verdicts"]["items"]
    except (KeyError, TypeError):
        return True
    return "segment_id" in verdict["required"]


VERDICTS = {"keep": Suggestion.Verdict.KEPT, "change": Suggestion.Verdict.CHANGED, "reject": Suggestion.Verdict.REJECTED}


@transaction.atomic
def _keep(run: SuggestionRun, window: int, segments: Sequence[Segment], proposals: list[dict], verdicts: dict,
          ideas: list[dict], dropped: Counter[str], critic: ReaderStep | None) -> None:
    """Proposals that survive become suggestions (rejected ones too, marked, when the critic ran)."""
    coder = ReaderStep.objects.select_for_update().get(run=run, window=window, agent=ReaderStep.Agent.CODER)
    if "dropped" in coder.provenance:
        return  # this window was kept by an earlier delivery of the task
    rows, interview_of = [], {segment.pk: segment.interview_id for segment in segments}
    if run.focus_code_id:
        # Finding more like a code: sentences a researcher already coded with it are not "more".
        coded = set(Coding.objects.filter(segment__in=segments, code_id=run.focus_code_id).values_list("segment_id", flat=True))
        dropped["sentence already coded with the code"] += sum(1 for p in proposals if p["segment_id"] in coded)
        proposals = [p if p["segment_id"] not in coded else None for p in proposals]
    suggested_as = _suggested_codes(run.project_id)
    # A sentence and code the run has already (decided before its critic was asked again) is not suggested twice.
    taken = set(run.suggestions.filter(segment__in=segments).values_list("segment_id", "code_id"))
    judged = [(proposal, verdicts.get(index)) for index, proposal in enumerate(proposals) if proposal is not None]
    # Proposals that end on one sentence and code (the critic changed one to another's code, or their codes were
    # merged) make one suggestion: first one the critic did not reject, then one it did not change.
    judged.sort(key=lambda judged_one: ((judged_one[1] or {}).get("verdict") == "reject",
                                        (judged_one[1] or {}).get("verdict") == "change"))
    for proposal, verdict in judged:
        code_id, proposed = proposal["code_id"], None
        if verdict and verdict["verdict"] == "change":
            # The coder's own code, as it proposed it (gone if purged: proposed_code is then empty).
            code_id, proposed = verdict["code_id"], proposal["code_id"] if proposal["code_id"] in suggested_as else None
        if code_id not in suggested_as:
            dropped["code deleted since the run started"] += 1
            continue
        code_id = suggested_as[code_id]
        if (proposal["segment_id"], code_id) in taken:
            dropped["same sentence and code as another suggestion"] += 1
            continue
        taken.add((proposal["segment_id"], code_id))
        rows.append(Suggestion(
            run=run, segment_id=proposal["segment_id"], interview_id=interview_of[proposal["segment_id"]], code_id=code_id, proposed_code_id=proposed,
            rationale=proposal["rationale"], evidence=proposal["evidence"],
            critic_verdict=VERDICTS[verdict["verdict"]] if verdict else Suggestion.Verdict.NONE,
            critic_reason=verdict["reason"] if verdict else "", model=run.model, prompt_version=run.prompt_version,
        ))
    Suggestion.objects.bulk_create(rows)
    for idea in ideas:
        made = CodeIdea.objects.create(run=run, window=window, name=idea["name"], definition=idea["definition"],
                                       rationale=idea["rationale"])
        made.segments.set(idea["segment_ids"])
    coder.provenance = {**coder.provenance, "dropped": dict(dropped)}
    coder.save(update_fields=["provenance"])


def _suggested_codes(project_id: int) -> dict[int, int]:
    """Each code of the project to the code its suggestions go to: itself, or the code it was merged into (to the
    end of a chain of merges). A code purged from the trash since the run started is not there.

    On PostgreSQL the codes stay locked against purging until the window is kept: a code purged between this look
    and the insert would fail the suggestions' foreign key, and the window with it.
    """
    lock = " FOR KEY SHARE" if connection.vendor == "postgresql" else ""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id, merged_into_id FROM coding_code WHERE project_id = %s{lock}", [project_id])
        merged_into = dict(cursor.fetchall())
    suggested_as = {}
    for code_id in merged_into:
        target, seen = code_id, {code_id}
        while merged_into.get(target) and merged_into[target] not in seen:
            target = merged_into[target]
            seen.add(target)
        suggested_as[code_id] = target
    return suggested_as


def kept_windows(run: SuggestionRun) -> set[int]:
    """Windows whose proposals were kept as suggestions (their coder step carries the dropped counts from _keep).

    A coder step alone is not enough: a worker may die between keeping the coder's answer and the suggestions.
    """
    kept = ReaderStep.objects.filter(run=run, agent=ReaderStep.Agent.CODER, provenance__has_key="dropped")
    return set(kept.values_list("window", flat=True))


def read_windows(run: SuggestionRun) -> set[int]:
    """Windows the coder read: kept with an answer in the schema (a failed request or an unreadable answer read nothing).

    Steps kept before unreadable answers were marked failed count them among the dropped instead.
    """
    kept = run.steps.filter(agent=ReaderStep.Agent.CODER, ok=True, provenance__has_key="dropped")
    return {window for window, provenance in kept.values_list("window", "provenance")
            if "answer not in the schema" not in provenance["dropped"]}


def _finish_if_complete(run: SuggestionRun) -> None:
    if len(kept_windows(run)) >= len(run.windows):
        SuggestionRun.objects.filter(pk=run.pk, status=SuggestionRun.Status.RUNNING).update(
            status=SuggestionRun.Status.DONE, finished_at=timezone.now())


def dropped_counts(run: SuggestionRun) -> dict[str, int]:
    total: Counter[str] = Counter()
    for provenance in run.steps.filter(agent=ReaderStep.Agent.CODER).values_list("provenance", flat=True):
        total.update(provenance.get("dropped") or {})
    return dict(total)


# -- where the AI and the researchers differ -------------------------------------------------


def differences(run: SuggestionRun) -> dict[str, Any]:
    """Per code and researcher: κ, AC1, span IoU and the chance check on the segments both read.

    The AI read the segments of the windows its coder answered (a window whose request failed, or not asked yet,
    is left out: its sentences are not the AI deciding "no code"); a researcher read the run's interviews they coded
    anything in. Only their own (human-origin) codings count, so accepted suggestions do not
    make the AI agree with itself. Figures for reflexive discussion, not a score of truth.
    """
    units = [pk for window in run.windows for pk in window]
    segments = {pk: (interview_id, end - start, text) for pk, interview_id, start, end, text in
                Segment.objects.filter(pk__in=units, interview__project=run.project_id)
                .values_list("pk", "interview_id", "start", "end", "text")}
    read = {pk for window in read_windows(run) for pk in run.windows[window]}
    unread = sum(1 for pk in units if pk in segments and pk not in read)
    units = [pk for pk in units if pk in segments and pk in read]
    ai: dict[int, set[int]] = {}
    rationale: dict[tuple[int, int], str] = {}
    for segment_id, code_id, why in (run.suggestions.exclude(critic_verdict=Suggestion.Verdict.REJECTED)
                                     .values_list("segment_id", "code_id", "rationale")):
        ai.setdefault(code_id, set()).add(segment_id)
        rationale[(segment_id, code_id)] = why
    human: dict[tuple[int, int], set[int]] = {}
    read_by: dict[int, set[int]] = {}
    coders = {}
    for segment_id, code_id, coder_id, username in (
        Coding.objects.filter(segment_id__in=units, origin=Coding.Origin.HUMAN)
        .values_list("segment_id", "code_id", "coder_id", "coder__username")
    ):
        human.setdefault((code_id, coder_id), set()).add(segment_id)
        read_by.setdefault(coder_id, set()).add(segments[segment_id][0])
        coders[coder_id] = username
    rows, disagreements = [], []
    for code in run.codebook:
        for coder_id, username in sorted(coders.items(), key=lambda item: item[1]):
            seen = [pk for pk in units if segments.get(pk, (None,))[0] in read_by[coder_id]]
            mine, theirs = human.get((code["id"], coder_id), set()), ai.get(code["id"], set())
            a = [1 if pk in mine else 0 for pk in seen]
            b = [1 if pk in theirs else 0 for pk in seen]
            if not any(a) and not any(b):
                continue
            p_value = kappa_chance_p_value(b, a)
            rows.append({
                "code": code["name"], "code_id": code["id"], "researcher": username, "units": len(seen),
                "both": sum(1 for x, y in zip(a, b, strict=True) if x and y),
                "researcher_only": sum(1 for x, y in zip(a, b, strict=True) if x and not y),
                "ai_only": sum(1 for x, y in zip(a, b, strict=True) if y and not x),
                "kappa": cohen_kappa(a, b), "ac1": gwet_ac1(a, b),
                "iou": span_iou({pk: segments[pk][1] for pk in seen if pk in mine},
                                {pk: segments[pk][1] for pk in seen if pk in theirs}),
                "p_value": p_value, "like_chance": p_value is not None and p_value >= 0.05,
            })
            for pk in seen:
                if (pk in mine) != (pk in theirs):
                    disagreements.append({"code": code["name"], "researcher": username, "text": segments[pk][2],
                                          "who": username if pk in mine else "AI",
                                          "rationale": rationale.get((pk, code["id"]), "")})
    judged = run.suggestions.exclude(critic_verdict=Suggestion.Verdict.NONE)
    overturned = judged.exclude(critic_verdict=Suggestion.Verdict.KEPT).count()
    total = judged.count()
    return {"rows": rows, "disagreements": disagreements, "unread": unread, "critic_judged": total,
            "critic_overturned": overturned, "critic_share": overturned / total if total else None}
