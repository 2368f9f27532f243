"""Edits of interviews and participants after they came in (imports live in services_import.py).

Keyword-only, atomic, audited. Views and the API call these and nothing else to write.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import ProhibitNullCharactersValidator
from django.db import transaction
from django.utils.dateparse import parse_datetime

from interviews.models import Interview, Participant, Segment, Turn
from interviews.parsers.base import ParsedConversation, ParsedTurn
from interviews.segment_store import segments_for_turns
from projects.audit import audit_record
from projects.models import AuditEvent, Project
from projects.names import name_kept_unique, normalised_name

LABEL_TAKEN = "Another participant in this project is already called “{label}”; participant labels must be unique."


def _shown(value: Any) -> str:
    """A field value as the audit summary shows it."""
    if value is None or value == "":
        return "(empty)"
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


def _recorded(value: Any) -> Any:
    """A field value as the audit event's data keeps it (JSON)."""
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, Participant):
        return {"uuid": str(value.uuid), "label": value.label}
    return value


def _apply(obj: Any, values: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """Set the values that differ on obj; {field: (old, new)} for each one changed."""
    changes = {}
    for field, new in values.items():
        old = getattr(obj, field)
        if old != new:
            changes[field] = (old, new)
            setattr(obj, field, new)
    return changes


@transaction.atomic
def interview_update(*, interview: Interview, actor: Any, title: str, conducted_at: dt.datetime | None, depth: str,
                     notes: str, participant: Participant) -> Interview:
    """Correct an interview's details (title, date, depth, notes, participant) and record what changed."""
    title = (title or "").strip()
    errors = {}
    if not title:
        errors["title"] = "Give the interview a title."
    if depth not in Interview.Depth.values:
        errors["depth"] = f"“{depth}” is not a depth; choose one of {', '.join(Interview.Depth.values)}."
    if participant.project_id != interview.project_id:
        errors["participant"] = "Choose a participant of this project."
    if errors:
        raise ValidationError(errors)
    changes = _apply(interview, {"title": title, "conducted_at": conducted_at, "depth": depth, "notes": notes,
                                 "participant": participant})
    if not changes:
        return interview
    interview.full_clean(exclude=["guide_version", "rerun_of", "created_by"], validate_constraints=False)
    interview.save(update_fields=[*changes, "updated_at"])
    said = [f"notes {'edited' if old else 'added'}" if field == "notes" else
            f"{field.replace('_', ' ')} {_shown(old)} → {_shown(new)}" for field, (old, new) in changes.items()]
    audit_record(project=interview.project, actor=actor, action=AuditEvent.Action.CHANGED, target=interview,
                 summary=f"Interview “{interview.title}”: {'; '.join(said)}",
                 data={"changes": {field: [_recorded(old), _recorded(new)] for field, (old, new) in changes.items()}})
    return interview


PARTICIPANT_FIELDS = ("label", "provider", "model_id", "interface", "snapshot_date", "attributes")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def check_storable_text(text: str) -> None:
    """Refuse text PostgreSQL cannot store, in the words the forms and the API's text fields use: a NUL
    (their ProhibitNullCharactersValidator) or a lone surrogate (DRF's check; a JSON "\\ud800" reaches a JSON field)."""
    ProhibitNullCharactersValidator()(text)
    if found := _SURROGATE.search(text):
        raise ValidationError(f"Surrogate characters are not allowed: U+{ord(found.group()):X}.")


def _attributes_problem(attributes: Any, kind: str = "Case") -> str:
    """Why `attributes` cannot be a participant's case attributes (or an interview's, kind="Interview"), or ""."""
    if not isinstance(attributes, dict) or not all(isinstance(k, str) and k.strip() for k in attributes):
        return f"{kind} attributes must be a mapping from non-empty names to values."
    for name, value in attributes.items():
        for text in (name, *_texts_in(value)):
            try:
                check_storable_text(text)
            except ValidationError as exc:
                return f"{kind} attribute “{_printable(name)}”: {exc.messages[0]}"
    return ""


def _texts_in(value: Any) -> list[str]:
    """Every string inside a JSON value (keys too)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [*value, *_texts_in(list(value.values()))]
    if isinstance(value, list):
        return [text for item in value for text in _texts_in(item)]
    return []


def _printable(text: str) -> str:
    return _SURROGATE.sub("\N{REPLACEMENT CHARACTER}", text.replace("\x00", "\N{SYMBOL FOR NULL}"))[:60]


def _participant_checked(*, project_id: int, exclude: int | None, label: str, interface: str, attributes: Any) -> str:
    """The label as it will be saved; raises ValidationError naming each field that cannot be (create and edit alike)."""
    label = normalised_name(label)
    errors = {}
    if not label:
        errors["label"] = "Give the participant a label."
    elif taken := participant_label_taken(project_id, label, exclude=exclude):
        errors["label"] = taken
    if interface not in Participant.Interface.values:
        errors["interface"] = f"“{interface}” is not an interface; choose one of {', '.join(Participant.Interface.values)}."
    if problem := _attributes_problem(attributes):
        errors["attributes"] = problem
    if errors:
        raise ValidationError(errors)
    return label


def participant_label_taken(project_id: int, label: str, *, exclude: int | None = None) -> str:
    """Why a (normalised) label cannot be used, naming the participant that has it whatever its case; "" if free."""
    other = Participant.objects.filter(project_id=project_id, label__iexact=label).exclude(pk=exclude).first()
    return LABEL_TAKEN.format(label=other.label) if other else ""


def participant_save(participant: Participant, **kwargs: Any) -> None:
    """Save, turning a label taken meanwhile (between the check and the save) into the same refusal."""

    def recheck() -> None:
        if taken := participant_label_taken(participant.project_id, participant.label, exclude=participant.pk):
            raise ValidationError({"label": taken})

    with name_kept_unique("unique_participant_label",
                          ValidationError({"label": LABEL_TAKEN.format(label=participant.label)}), recheck):
        participant.save(**kwargs)


@transaction.atomic
def participant_create(*, project: Project, actor: Any, label: str, provider: str = "", model_id: str = "",
                       interface: str = Participant.Interface.WEB, snapshot_date: dt.date | None = None,
                       attributes: dict[str, Any] | None = None) -> Participant:
    """Add a participant (an interviewed chatbot) described by hand, with the checks an edit has."""
    attributes = {} if attributes is None else attributes
    label = _participant_checked(project_id=project.pk, exclude=None, label=label, interface=interface, attributes=attributes)
    participant = Participant(project=project, label=label, provider=(provider or "").strip(), model_id=(model_id or "").strip(),
                              interface=interface, snapshot_date=snapshot_date, attributes=attributes)
    participant.full_clean(exclude=["project"], validate_constraints=False)
    participant_save(participant)
    audit_record(project=project, actor=actor, action=AuditEvent.Action.CREATED, target=participant,
                 summary=f"Participant “{participant.label}” added",
                 data={"fields": {field: _recorded(getattr(participant, field)) for field in PARTICIPANT_FIELDS}})
    return participant


@transaction.atomic
def participant_update(*, participant: Participant, actor: Any, label: str, provider: str, model_id: str,
                       interface: str, snapshot_date: dt.date | None, attributes: dict[str, Any]) -> Participant:
    """Correct how a participant is described (label, provider, model, interface, snapshot, case attributes)."""
    label = _participant_checked(project_id=participant.project_id, exclude=participant.pk, label=label, interface=interface,
                                 attributes=attributes)
    changes = _apply(participant, {"label": label, "provider": (provider or "").strip(), "model_id": (model_id or "").strip(),
                                   "interface": interface, "snapshot_date": snapshot_date, "attributes": attributes})
    if not changes:
        return participant
    participant.full_clean(exclude=["project"], validate_constraints=False)
    participant_save(participant, update_fields=[*changes, "updated_at"])
    said = [_attributes_said(old, new) if field == "attributes" else
            f"{field.replace('_', ' ')} {_shown(old)} → {_shown(new)}" for field, (old, new) in changes.items()]
    audit_record(project=participant.project, actor=actor, action=AuditEvent.Action.CHANGED, target=participant,
                 summary=f"Participant “{participant.label}”: {'; '.join(said)}",
                 data={"changes": {field: [_recorded(old), _recorded(new)] for field, (old, new) in changes.items()}})
    return participant


def _attributes_said(old: dict[str, Any], new: dict[str, Any]) -> str:
    old = old if isinstance(old, dict) else {}
    parts = [f"+{k}" for k in new if k not in old] + [f"-{k}" for k in old if k not in new]
    parts += [f"{k} changed" for k in new if k in old and old[k] != new[k]]
    return f"attributes {', '.join(parts)}"


@transaction.atomic
def participant_attributes_set(*, actor: Any, attributes: dict[Participant, dict[str, Any]]) -> int:
    """Set the case variables of many participants at once (a sheet or the table); all land or none. Returns how many changed."""
    changed = 0
    for participant, new in attributes.items():
        before = participant.attributes
        participant_update(participant=participant, actor=actor, label=participant.label, provider=participant.provider,
                           model_id=participant.model_id, interface=participant.interface,
                           snapshot_date=participant.snapshot_date, attributes=new)
        changed += before != participant.attributes
    return changed


@transaction.atomic
def interview_import_branch(*, interview: Interview, index: int, actor: Any) -> tuple[Interview, bool]:
    """Import alternative branch ``index`` of an imported conversation as its own interview.

    The new interview has the turns the branch shares with this one, then the branch's own;
    returns (interview, created): a branch imported before is returned, not imported twice.
    """
    branches = interview.alternative_branches()
    if not 0 <= index < len(branches):
        raise ValidationError(f"“{interview.title}” has no alternative branch {index + 1}.")
    branch = branches[index]
    existing = (Interview.objects.alive().filter(project_id=interview.project_id, metadata__branch_of=str(interview.uuid),
                                                 metadata__branch_leaf=branch["leaf"]).first())
    if existing is not None:
        return existing, False
    shared = list(interview.turns.order_by("position")[: branch["diverges_at"]])
    own = [Turn(speaker=t["speaker"], text=t["text"], model_slug=str(_dict(t.get("metadata")).get("model") or "")[:200],
                timestamp=_when(_dict(t.get("metadata")).get("created_at")), metadata=_dict(t.get("metadata")))
           for t in branch["turns"]]
    turns = [Turn(speaker=t.speaker, text=t.text, model_slug=t.model_slug, timestamp=t.timestamp, metadata=t.metadata)
             for t in shared] + own
    content = ParsedConversation(external_id="", title="", started_at=None, source_format="", source_name="", index=0,
                                 turns=[ParsedTurn(speaker=t.speaker, text=t.text) for t in turns])
    new = Interview(
        project_id=interview.project_id, participant_id=interview.participant_id, conducted_at=interview.conducted_at,
        title=f"{interview.title} (branch {index + 1})"[:300], origin=interview.origin, depth=interview.depth,
        source_format=interview.source_format, source_filename=interview.source_filename,
        source_sha256=interview.source_sha256, source_conversation_id=interview.source_conversation_id,
        content_sha256=content.content_sha256(), created_by=actor,
        metadata={"branch_of": str(interview.uuid), "branch_leaf": branch["leaf"], "branch_diverges_at": branch["diverges_at"],
                  "model_slugs": _dict(interview.metadata).get("model_slugs", [])},
    )
    new.full_clean(exclude=["guide_version", "rerun_of", "created_by", "participant", "project"], validate_constraints=False)
    new.save()
    for position, turn in enumerate(turns):
        turn.interview, turn.position = new, position
    Turn.objects.bulk_create(turns)
    Segment.objects.bulk_create(segments_for_turns(new, turns), batch_size=2000)
    audit_record(project=interview.project, actor=actor, action=AuditEvent.Action.CREATED, target=new,
                 summary=f"Interview “{new.title}” imported from branch {index + 1} of “{interview.title}”",
                 data={"branch_of": str(interview.uuid), "leaf": branch["leaf"]})
    return new, True


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _when(value: Any) -> dt.datetime | None:
    try:
        return parse_datetime(value) if isinstance(value, str) and value else None
    except ValueError:
        return None


@transaction.atomic
def interview_attributes_set(*, actor: Any, attributes: dict[Interview, dict[str, Any]]) -> int:
    """Set attributes of many interviews (ground truth, condition, wave...) from a sheet, in their metadata; all land or none."""
    for interview, new in attributes.items():
        if problem := _attributes_problem(new, "Interview"):
            raise ValidationError(problem)
        old = interview.metadata if isinstance(interview.metadata, dict) else {}
        interview.metadata = new
        interview.save(update_fields=["metadata", "updated_at"])
        audit_record(project=interview.project, actor=actor, action=AuditEvent.Action.CHANGED, target=interview,
                     summary=f"Interview “{interview.title}”: {_attributes_said(old, new)}",
                     data={"changes": {k: [old.get(k), new.get(k)] for k in old.keys() | new.keys()
                                       if old.get(k) != new.get(k)}})
    return len(attributes)
