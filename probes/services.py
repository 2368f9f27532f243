"""Writes for probe studies: setting up a probe, importing items, conditions, runs, re-parsing."""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass
from typing import Any, BinaryIO

import jsonschema
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from interviews.models import Interview, Participant
from probes import items as item_files
from probes.models import Answer, Condition, ConditionVersion, Item, OutputFormat, Probe
from probes.prompting import ParseError, agent_steps, item_fields, parse, placeholders
from projects.audit import audit_record, audit_record_many
from projects.models import AuditEvent, Project
from projects.names import name_kept_unique, normalised_name
from projects.text import shortened
from projects.trash import trash_move

# -- the probe ----------------------------------------------------------------


@transaction.atomic
def probe_create(*, project: Project, user: Any, name: str, description: str = "") -> Probe:
    """A new, empty probe."""
    probe = Probe(project=project, name=normalised_name(name), description=description.strip(), created_by=user)
    _check_probe(probe)
    _save_probe(probe)
    return probe


def _check_probe(probe: Probe) -> None:
    """Field checks, and the name free among the project's live probes whatever its case (unique_live_probe_name)."""
    probe.full_clean(validate_constraints=False)
    taken = Probe.objects.live().filter(project_id=probe.project_id, name__iexact=probe.name).exclude(pk=probe.pk).first()
    if taken is not None:
        raise ValidationError({"name": f"There is already a probe named “{taken.name}” in this project."})


def _save_probe(probe: Probe, **kwargs: Any) -> None:
    taken = ValidationError({"name": f"There is already a probe named “{probe.name}” in this project."})
    with name_kept_unique("unique_live_probe_name", taken, lambda: _check_probe(probe)):
        probe.save(**kwargs)


@transaction.atomic
def probe_edit(*, probe: Probe, user: Any, name: str, description: str = "") -> Probe:
    """Rename the probe or change its description."""
    old_name = probe.name
    probe.name, probe.description = normalised_name(name), description.strip()
    _check_probe(probe)
    _save_probe(probe, update_fields=["name", "description"])
    renamed = f" (was “{old_name}”)" if old_name != probe.name else ""
    audit_record(project=probe.project, actor=user, action=AuditEvent.Action.CHANGED, target=probe, target_type="probe",
                 summary=f"Probe “{probe.name}” edited{renamed}")
    return probe


@transaction.atomic
def probe_trash(*, probe: Probe, user: Any) -> Probe:
    """Move the probe, with its items, conditions and answers, to the project's trash; a running probe is refused."""
    probe = Probe.objects.select_for_update().get(pk=probe.pk)
    if probe.run_state == Probe.RunState.RUNNING:
        raise ValidationError(f"“{probe.name}” is running: cancel the run before moving the probe to the trash.")
    return trash_move(obj=probe, actor=user)


@transaction.atomic
def probe_configure(
    *, probe: Probe, participants: list[Participant], repetitions: int, concurrency: int
) -> Probe:
    """Choose the models (the project's live participants), repetitions and answers in flight."""
    foreign = [p.label for p in participants if p.project_id != probe.project_id or not p.is_live]
    if foreign:
        raise ValidationError({"participants": f"Not a live participant of this project: {', '.join(foreign)}."})
    if repetitions < 1 or concurrency < 1:
        raise ValidationError("Repetitions and concurrency must be at least 1.")
    probe.repetitions, probe.concurrency = repetitions, concurrency
    probe.full_clean()
    probe.save(update_fields=["repetitions", "concurrency"])
    probe.participants.set(participants)
    return probe


# -- items --------------------------------------------------------------------


@dataclass
class ItemImport:
    filename: str
    data: BinaryIO
    text_column: str
    label_columns: list[str]
    filters: item_files.ItemFilters
    per_label: int | None = None
    seed: int | None = None


@transaction.atomic
def items_import(*, probe: Probe, spec: ItemImport) -> int:
    """Replace the probe's items with the file's rows that pass the filters (and the sample); all or nothing.

    Raises ItemImportError naming the file, row and column of the first problem.
    """
    if Answer.objects.filter(item__probe=probe).exists():
        raise item_files.ItemImportError("This probe already has answers; create a new probe for other items.")
    if not spec.text_column or not spec.label_columns:
        raise item_files.ItemImportError("Name the text column and at least one ground-truth label column.")
    limit = min(int(getattr(settings, "RTA_MAX_UPLOAD_BYTES", 200 * 1024 * 1024)), item_files.MAX_FILE_BYTES)
    raw = spec.data.read(limit + 1)
    if len(raw) > limit:
        raise item_files.ItemImportError(item_files.too_large(spec.filename, limit))
    records = item_files.read_records(spec.filename, io.BytesIO(raw))
    rows = item_files.item_rows(spec.filename, records, text_column=spec.text_column, label_columns=spec.label_columns)
    kept, dropped = item_files.filtered(rows, spec.filters)
    sample: dict[str, Any] = {}
    if spec.per_label:
        seed = spec.seed if spec.seed is not None else _new_seed()
        kept = item_files.balanced_sample(kept, column=spec.label_columns[0], per_label=spec.per_label, seed=seed)
        sample = {"per_label": spec.per_label, "seed": seed, "column": spec.label_columns[0]}
    if not kept:
        raise item_files.ItemImportError(f"{spec.filename}: the filters leave no rows ({_said(dropped)}).")
    Item.objects.filter(probe=probe).delete()
    Item.objects.bulk_create(
        [Item(probe=probe, position=r.line, text=r.text, labels=r.labels, attributes=r.attributes) for r in kept],
        batch_size=2000,
    )
    probe.label_columns = spec.label_columns
    probe.import_report = {
        "source": spec.filename, "sha256": hashlib.sha256(raw).hexdigest(), "text_column": spec.text_column,
        "label_columns": spec.label_columns, "filters": spec.filters.as_dict(), "rows_read": len(rows),
        "dropped": dropped, "sample": sample, "items": len(kept), "imported_at": timezone.now().isoformat(),
    }
    probe.save(update_fields=["label_columns", "import_report"])
    return len(kept)


def _new_seed() -> int:
    import secrets

    return secrets.randbelow(2**31)


def _said(dropped: dict[str, int]) -> str:
    return ", ".join(f"{n} dropped as {why}" for why, n in dropped.items() if n) or "none dropped"


# -- conditions -----------------------------------------------------------------

VERSION_FIELDS = (
    "template", "system_prompt", "temperature", "seed", "max_tokens", "output_format", "json_schema",
    "label_key", "categories_key", "rationale_key", "labels", "categories", "pipeline",
)


@transaction.atomic
def condition_save(*, probe: Probe, condition: Condition | None, user: Any, name: str, **fields: Any) -> ConditionVersion:
    """Create a condition or save an edit as a new version; unchanged content adds none."""
    unknown = set(fields) - set(VERSION_FIELDS)
    if unknown:
        raise TypeError(f"Unknown condition fields: {', '.join(sorted(unknown))}")
    condition = condition or Condition(probe=probe)
    condition.name = name.strip()
    condition.full_clean()
    taken = ValidationError({"name": f"There is already a condition named “{condition.name}” in this probe."})
    with name_kept_unique("unique_condition_name", taken):
        condition.save()
    latest = condition.versions.order_by("-number").first()
    if latest and all(getattr(latest, key) == value for key, value in fields.items()):
        return latest
    version = ConditionVersion(condition=condition, number=(latest.number if latest else 0) + 1, created_by=user, **fields)
    version.full_clean()
    _check_version(probe, version)
    version.save()
    return version


@transaction.atomic
def condition_delete(*, condition: Condition, user: Any) -> None:
    """Delete a condition that has no answers yet, with its versions; one with answers is refused.

    Answers are the probe's data: a condition that has them stays, so results and exports never
    lose a condition quietly. The whole probe can go to the trash instead.
    """
    # The probe's lock orders this with run_start, which creates answers for every condition.
    probe = Probe.objects.select_for_update().get(pk=condition.probe_id)
    answered = condition.answers.count()
    if answered:
        raise ValidationError(
            f"“{condition.name}” has {answered} answer{'s' if answered != 1 else ''}: a condition with answers stays "
            f"with the probe's data. Move the whole probe to the trash instead, or keep the condition.")
    name, target_id = condition.name, str(condition.uuid)
    condition.delete()
    audit_record(project=probe.project, actor=user, action=AuditEvent.Action.DELETED, target_type="condition",
                 target_id=target_id, summary=f"Condition “{name}” of probe “{probe.name}” deleted (it had no answers)")


def _check_version(probe: Probe, version: ConditionVersion) -> None:
    if not version.labels:
        raise ValidationError({"labels": "List the labels the model may answer with, e.g. “woman, man”."})
    # An answer keeps the label it gives in a column of this size: a longer one would fail every answer giving it.
    limit = Answer._meta.get_field("label").max_length
    if too_long := next((label for label in version.labels if len(label) > limit), None):
        raise ValidationError({"labels": f"“{shortened(too_long, 41)}” is {len(too_long)} characters long; a label may "
                                         f"have at most {limit}."})
    _check_keys(version)
    first = probe.items.order_by("position").first()
    known = set(item_fields(first)) if first else {"text"}
    _check_pipeline(version)
    allowed = known | {"previous"} if version.pipeline else known
    for index, agent in enumerate(agent_steps(version)):
        for where in ("template", "system_prompt"):
            unknown = [name for name in placeholders(agent.get(where) or "") if name not in allowed]
            if unknown and first is not None:
                field = where if index == 0 else "pipeline"
                raise ValidationError({field: f"{{{unknown[0]}}} is not a field of the items; they have: "
                                              f"{', '.join(sorted(allowed))}."})
    if version.output_format == OutputFormat.JSON_SCHEMA and version.json_schema:
        _check_schema(version)


def _check_keys(version: ConditionVersion) -> None:
    # One answer field cannot be the label and the categories (or the rationale) at once: nothing would parse.
    # Compared without case, as labelled lines are read.
    seen: dict[str, str] = {}
    for field, name in (("label_key", "label"), ("categories_key", "categories"), ("rationale_key", "rationale")):
        key = getattr(version, field).strip().lower()
        if key and key in seen:
            raise ValidationError({field: f"The label, categories and rationale keys must differ: “{getattr(version, field)}” "
                                          f"is the {seen[key]} key too."})
        seen.setdefault(key, name)


def _check_pipeline(version: ConditionVersion) -> None:
    if not version.pipeline:
        return
    if version.output_format != OutputFormat.JSON_SCHEMA:
        raise ValidationError({"pipeline": "Agents pass strict JSON to each other: choose the JSON schema output."})
    if not isinstance(version.pipeline, list) or not all(
        isinstance(a, dict) and isinstance(a.get("name"), str) and a["name"].strip() and isinstance(a.get("template"), str)
        for a in version.pipeline
    ):
        raise ValidationError({"pipeline": "Give a list of agents, each {\"name\": …, \"template\": …} with an optional "
                                           "\"system_prompt\"."})


def _check_schema(version: ConditionVersion) -> None:
    try:
        jsonschema.Draft202012Validator.check_schema(version.json_schema)
    except jsonschema.SchemaError as exc:
        raise ValidationError({"json_schema": f"Not a valid JSON schema: {exc.message}"})
    properties = version.json_schema.get("properties") or {}
    missing = [k for k in (version.label_key, version.categories_key, version.rationale_key) if k and k not in properties]
    if missing:
        raise ValidationError({"json_schema": f"The schema has no property “{missing[0]}” (named in the keys)."})


# -- runs -----------------------------------------------------------------------


class RunNotReady(ValueError):
    """The probe lacks items, conditions or models; the message says which."""


@dataclass(frozen=True)
class RunStarted:
    created: int  # answers the design needed and did not have yet
    to_ask: int  # answers this run asks: the new ones, pending ones, lost ones put back, failed ones when retried

    @property
    def message(self) -> str:
        if not self.to_ask:
            return "Nothing to ask: every answer the probe needs is finished."
        new = f" ({self.created} new)" if self.created and self.created != self.to_ask else ""
        return f"Run started: {self.to_ask} answer{'s' if self.to_ask != 1 else ''} to ask{new}."


@transaction.atomic
def run_start(*, probe: Probe, retry_failed: bool = False) -> RunStarted:
    """Create the missing answers and start or resume the run.

    Answers already done are never asked again; answers a lost worker held are asked again, and
    failed ones too when `retry_failed` (their last failure stays in the provenance until then).
    One rule for versions: every answer this run asks (new, pending, lost or retried) is asked with
    its condition's latest version, so an edit made before "Run the rest" is never silently ignored.
    """
    probe = Probe.objects.select_for_update().get(pk=probe.pk)
    participants = list(probe.participants.filter(is_live=True))
    conditions = list(probe.conditions.prefetch_related("versions"))
    missing = [what for what, have in (("items", probe.items.exists()), ("conditions", conditions),
                                       ("models", participants)) if not have]
    if missing:
        raise RunNotReady(f"Add {' and '.join(missing)} before running the probe.")
    item_ids = list(probe.items.values_list("pk", flat=True))
    latest = {c.pk: max(c.versions.all(), key=lambda v: v.number) for c in conditions}
    rows = [
        Answer(item_id=item_id, condition=c, condition_version=latest[c.pk], participant=p, repetition=r)
        for c in conditions for p in participants for item_id in item_ids for r in range(1, probe.repetitions + 1)
    ]
    answers = Answer.objects.filter(item__probe=probe)
    before = answers.count()
    Answer.objects.bulk_create(rows, batch_size=2000, ignore_conflicts=True)
    created = answers.count() - before
    if retry_failed:
        answers.filter(status=Answer.Status.FAILED).update(status=Answer.Status.PENDING, reason="", parsed_with_version=None)
    from probes.running import answers_requeue_lost, probe_pump  # running.py imports this module

    answers_requeue_lost(probe=probe)
    for c in conditions:
        answers.filter(status=Answer.Status.PENDING, condition=c).exclude(condition_version=latest[c.pk]).update(
            condition_version=latest[c.pk], parsed_with_version=None)
    probe.run_state, probe.run_started_at = Probe.RunState.RUNNING, timezone.now()
    probe.save(update_fields=["run_state", "run_started_at"])
    transaction.on_commit(lambda: probe_pump(probe.pk))
    to_ask = answers.exclude(status__in=Answer.FINISHED).count()
    return RunStarted(created=created, to_ask=to_ask)


@transaction.atomic
def run_cancel(*, probe: Probe) -> int:
    """Stop handing out answers; queued ones go back to pending, running ones stop at once. Returns answers put back.

    A probe that is not running (finished, say) keeps its state."""
    Probe.objects.filter(pk=probe.pk, run_state=Probe.RunState.RUNNING).update(run_state=Probe.RunState.CANCELLED)
    return Answer.objects.filter(item__probe=probe, status=Answer.Status.QUEUED).update(
        status=Answer.Status.PENDING, queued_at=None
    )


@transaction.atomic
def answers_reparse(*, condition: Condition) -> dict[str, int]:
    """Parse the condition's answers again with its latest version's parser (after a fix); failed answers stay.

    An answer whose pipeline stopped at an agent that did not parse is not the pipeline's answer: re-parsing it would
    score an earlier agent's words as the last one's. It becomes failed, to be asked again whole ("stopped").
    """
    version = condition.versions.order_by("-number").first()
    counts = {"done": 0, "unparsed": 0, "stopped": 0}
    answers = list(Answer.objects.select_for_update(of=("self",)).select_related("condition_version").filter(
        condition=condition, status__in=(Answer.Status.DONE, Answer.Status.UNPARSED)))
    for answer in answers:
        answer.parsed_with_version = version.number
        if _pipeline_stopped(answer):
            answer.status = Answer.Status.FAILED
            answer.reason = ("The pipeline stopped before its last agent, whose answer re-parsing cannot make; "
                             "ask it again (“Ask the failed again”).")
            counts["stopped"] += 1
            continue
        for key, value in parsed_fields(version, answer.text).items():
            setattr(answer, key, value)
        counts[str(answer.status)] += 1
    Answer.objects.bulk_update(answers, ["status", "reason", "label", "categories", "rationale", "parsed",
                                         "parsed_with_version"], batch_size=500)
    return counts


def _pipeline_stopped(answer: Answer) -> bool:
    """The answer's pipeline ended before its last agent (an earlier agent's answer did not parse)."""
    agents = len(agent_steps(answer.condition_version))
    return agents > 1 and len(answer.provenance.get("pipeline") or []) < agents


def parsed_fields(version: ConditionVersion, text: str, *, step: str = "") -> dict[str, Any]:
    """The Answer fields that parsing `text` gives: done with label, categories, rationale, or unparsed with a reason.

    `step` names the pipeline agent whose answer did not parse, so the later agents were not asked.
    """
    try:
        parsed = parse(version, text)
    except ParseError as exc:
        reason = f"The {step} agent's answer: {exc} The later agents were not asked." if step else str(exc)
        return {"status": Answer.Status.UNPARSED, "reason": reason, "label": "", "categories": [], "rationale": "",
                "parsed": {}}
    return {"status": Answer.Status.DONE, "reason": "", "label": parsed.label, "categories": parsed.categories,
            "rationale": parsed.rationale, "parsed": parsed.fields}



# -- rationales as interviews -----------------------------------------------------

PROBE_SOURCE_FORMAT = Interview.PROBE_SOURCE_FORMAT


@transaction.atomic
def condition_to_interviews(*, condition: Condition, user: Any) -> int:
    """One interview per parsed answer of the condition: the prompt, then the rationale as the model's turn.

    The item's ground truth and attributes, the condition and the predicted label become the
    interview's attributes (metadata["attributes"]), so tables can group by them. Answers made
    into interviews before are skipped; returns the number of interviews created.
    """
    from interviews.models import Segment, Speaker, Turn
    from interviews.segment_store import segments_for_turns
    from probes.prompting import messages_for

    probe = condition.probe
    answers = Answer.objects.for_probe(probe).filter(condition=condition, status=Answer.Status.DONE).exclude(rationale="")
    done_before = set(Interview.objects.alive().filter(project=probe.project, source_format=PROBE_SOURCE_FORMAT)
                      .values_list("source_conversation_id", flat=True))
    made: list[tuple[str, str]] = []
    for answer in answers:
        key = f"probe-answer:{answer.uuid}"
        if key in done_before:
            continue
        interview = Interview.objects.create(
            project=probe.project, participant=answer.participant, origin=Interview.Origin.IMPORTED,
            title=f"{probe.name} · {condition.name} · item {answer.item.position} · #{answer.repetition}"[:300],
            conducted_at=answer.finished_at, source_format=PROBE_SOURCE_FORMAT, source_conversation_id=key,
            source_filename=str(probe.import_report.get("source", ""))[:500], created_by=user,
            metadata={"attributes": _interview_attributes(answer), "probe": _probe_provenance(answer)},
        )
        prompt = messages_for(answer.condition_version, answer.item)[-1]["content"]
        turns = Turn.objects.bulk_create([
            Turn(interview=interview, position=0, speaker=Speaker.INTERVIEWER, text=prompt),
            Turn(interview=interview, position=1, speaker=Speaker.PARTICIPANT, text=answer.rationale,
                 model_slug=(answer.provenance.get("model_returned") or answer.asked_model_id or answer.participant.model_id)[:200],
                 timestamp=answer.finished_at, metadata={"provenance": answer.provenance}),
        ])
        Segment.objects.bulk_create(segments_for_turns(interview, turns))
        made.append((str(interview.uuid), f"Interview “{interview.title}” made from a probe answer's rationale"))
    audit_record_many(project=probe.project, actor=user, action=AuditEvent.Action.CREATED, target_type="interview",
                      targets=made)
    return len(made)


def _interview_attributes(answer: Answer) -> dict[str, Any]:
    item = answer.item
    return {**item.attributes, **item.labels, "condition": answer.condition.name, "predicted": answer.label,
            "categories": "; ".join(answer.categories)}


def _probe_provenance(answer: Answer) -> dict[str, Any]:
    return {"probe": str(answer.item.probe.uuid), "answer": str(answer.uuid), "item": answer.item.position,
            "condition": answer.condition.name, "condition_version": answer.condition_version.number,
            "repetition": answer.repetition}
