"""Writes to the codebook, codings and familiarisation notes.

Every codebook change is recorded twice: as a CodeEvent (the codebook's own history, part of
the analysis) and in the project's audit trail.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.db.models import Exists, F, OuterRef
from django.utils import timezone

from coding.models import CaseCoding, Code, CodeEvent, Coding, Note, Suggestion, SuggestionRun
from interviews.models import Interview, Turn
from projects import live
from projects.audit import audit_record
from projects.models import AuditEvent, Project
from projects.names import name_kept_unique, normalised_name
from projects.prepared import PreparedStatement

COLOUR_RE = re.compile(r"^#[0-9a-fA-F]{6}$")
# Calm, distinguishable colours handed out to new codes in turn.
PALETTE = [
    "#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2",
    "#ff9da6", "#9d755d", "#bab0ac", "#eeca3b", "#2f5d8a", "#8c6d31",
]
EDITABLE_FIELDS = ("name", "definition", "include_when", "exclude_when", "example", "kind", "colour")


class CodeConflict(Exception):
    """Someone else changed the code since the editor loaded it; carries the newer code."""

    def __init__(self, current: Code) -> None:
        self.current = current
        super().__init__(f"“{current.name}” was changed by someone else (now version {current.version}).")


def _event(code: Code | None, *, project: Project, actor: Any, action: str, reason: str = "", data: dict | None = None,
           summary: str, audit_action: str = AuditEvent.Action.CHANGED) -> CodeEvent:
    event = CodeEvent.objects.create(project=project, code=code, actor=actor, action=action, reason=reason, data=data or {})
    audit_record(project=project, actor=actor, action=audit_action, target=code, target_type="code",
                 summary=summary, data={"code_event": event.pk, "reason": reason, **(data or {})})
    # Open coding pages refresh their codes and chips; a merge or split moves codings, so cached counts go too.
    live.publish(project.uuid, "codebook")
    return event


# The picker's input and the codebook's form take at most this many characters, like the database column.
NAME_MAX_LENGTH = Code._meta.get_field("name").max_length


def _clean_name(name: str) -> str:
    name = normalised_name(name)
    if not name:
        raise ValidationError({"name": "A code needs a name."})
    if len(name) > NAME_MAX_LENGTH:
        raise ValidationError({"name": f"A code's name can have at most {NAME_MAX_LENGTH} characters; "
                                       f"this one has {len(name)}."})
    return name


class NameTaken(ValidationError):
    """A code of the project already has the name; `taken` is that code, so a page can offer it (or bring it back)."""

    def __init__(self, taken: Code) -> None:
        self.taken = taken
        super().__init__({"name": name_taken_message(taken)})


def name_taken_message(taken: Code) -> str:
    """Why a name can't be used again, and what to do instead: an archived code hides from the codebook and the
    picker, so "already a code named …" alone sent people looking for a code they could not see."""
    name = f"There is already a code named “{taken.name}” in this project"
    if taken.merged_into_id is not None:
        return (f"{name}: it was merged into “{taken.merged_into.name}” and stays archived. "
                f"Use “{taken.merged_into.name}”, or choose another name.")
    if taken.archived:
        return (f"{name}, archived. Bring it back into use instead of creating it again: on its page in the codebook "
                f"(tick Show archived), or by choosing it in the coding picker.")
    return f"{name}."


def _check_unique_name(project: Project, name: str, *, exclude: int | None = None) -> None:
    qs = Code.objects.for_project(project).filter(name__iexact=name).select_related("merged_into")
    if exclude:
        qs = qs.exclude(pk=exclude)
    taken = qs.first()
    if taken is not None:
        raise NameTaken(taken)


def _name_kept_unique(project: Project, name: str, *, exclude: int | None = None):
    """Around a code's write: a colleague who took the name between the check and the save gets the same refusal,
    naming their code."""
    return name_kept_unique("unique_live_code_name",
                            ValidationError({"name": f"There is already a code named “{name}” in this project."}),
                            lambda: _check_unique_name(project, name, exclude=exclude))


def next_colour(project: Project) -> str:
    """The palette's first colour no code of the project has, else its least used: a new code stands apart.

    Handed out by the count of codes, a new code took a colour that a code still had once any was deleted
    or recoloured."""
    used = Counter(c.lower() for c in Code.objects.filter(project=project, deleted_at__isnull=True)
                   .values_list("colour", flat=True))
    return min(PALETTE, key=lambda colour: (used[colour], PALETTE.index(colour)))


def checked_colour(colour: str) -> str:
    """A #rrggbb colour, lower-cased; anything else refused (codes and themes alike)."""
    if not isinstance(colour, str) or not COLOUR_RE.match(colour):
        raise ValidationError({"colour": f"“{colour}” is not a colour like #4c78a8."})
    return colour.lower()


def _clean_colour(colour: str | None, project: Project) -> str:
    return checked_colour(colour) if colour else next_colour(project)


def listed(values: Sequence[Any], shown: int = 10) -> str:
    """The first `shown` values, comma-separated, then how many more (for a message naming what was refused)."""
    rest = len(values) - shown
    return ", ".join(map(str, values[:shown])) + (f" and {rest} more" if rest > 0 else "")


def _clean_kind(kind: str | None) -> str:
    kind = (kind or Code.Kind.SEMANTIC).strip().lower()
    if kind not in Code.Kind.values:
        raise ValidationError({"kind": f"Kind must be semantic or latent, not “{kind}”."})
    return kind


@transaction.atomic
def code_create(*, project: Project, actor: Any, name: str, kind: str = Code.Kind.SEMANTIC, definition: str = "",
                include_when: str = "", exclude_when: str = "", example: str = "", colour: str = "",
                parent: Code | None = None, reason: str = "", action: str = CodeEvent.Action.CREATED) -> Code:
    """Create a code (from the codebook, inline from the picker, or an import)."""
    name = _clean_name(name)
    _check_unique_name(project, name)
    if parent is not None and parent.project_id != project.pk:
        raise ValidationError({"parent": "The parent code belongs to another project."})
    code = Code(project=project, name=name, kind=_clean_kind(kind), definition=definition.strip(),
                include_when=include_when.strip(), exclude_when=exclude_when.strip(), example=example.strip(),
                colour=_clean_colour(colour, project), parent=parent, created_by=actor if getattr(actor, "pk", None) else None)
    code.full_clean(exclude=["project", "parent", "created_by", "merged_into"])
    with _name_kept_unique(project, name):
        code.save()
    _event(code, project=project, actor=actor, action=action, reason=reason, data={"name": name, "kind": code.kind},
           summary=f"Code “{name}” {'imported' if action == CodeEvent.Action.IMPORTED else 'created'}",
           audit_action=AuditEvent.Action.CREATED)
    return code


@transaction.atomic
def code_update(*, code: Code, actor: Any, version: int, reason: str = "", **changes: Any) -> Code:
    """Rename / redefine / recolour a code, refusing an edit based on an older version (optimistic lock)."""
    unknown = set(changes) - set(EDITABLE_FIELDS)
    if unknown:
        raise TypeError(f"not editable: {sorted(unknown)}")
    project = code.project
    values: dict[str, Any] = {}
    for field, value in changes.items():
        if value is None:
            continue
        if field == "name":
            value = _clean_name(value)
            _check_unique_name(project, value, exclude=code.pk)
        elif field == "kind":
            value = _clean_kind(value)
        elif field == "colour":
            value = _clean_colour(value, project)
        else:
            value = value.strip()
        values[field] = value
    before = {f: getattr(code, f) for f in values}
    changed = {f: v for f, v in values.items() if before[f] != v}
    # The version check and the write are one statement: two editors can never both win.
    with _name_kept_unique(project, changed.get("name", code.name), exclude=code.pk):
        updated = Code.objects.filter(pk=code.pk, version=version).update(
            version=F("version") + 1, updated_at=timezone.now(), **changed
        )
    if not updated:
        raise CodeConflict(Code.objects.get(pk=code.pk))
    code.refresh_from_db()
    if not changed:
        return code
    if "name" in changed:
        _event(code, project=project, actor=actor, action=CodeEvent.Action.RENAMED, reason=reason,
               data={"from": before["name"], "to": changed["name"]},
               summary=f"Code “{before['name']}” renamed to “{changed['name']}”")
    definition_fields = {f: changed[f] for f in ("definition", "include_when", "exclude_when", "example", "kind") if f in changed}
    if definition_fields:
        _event(code, project=project, actor=actor, action=CodeEvent.Action.REDEFINED, reason=reason,
               data={"before": {f: before[f] for f in definition_fields}, "after": definition_fields},
               summary=f"Code “{code.name}” redefined ({', '.join(sorted(definition_fields))})")
    if "colour" in changed:
        _event(code, project=project, actor=actor, action=CodeEvent.Action.RECOLOURED, reason=reason,
               data={"from": before["colour"], "to": changed["colour"]}, summary=f"Code “{code.name}” recoloured")
    return code


def _bump(code: Code) -> None:
    Code.objects.filter(pk=code.pk).update(version=F("version") + 1, updated_at=timezone.now())


@transaction.atomic
def code_move(*, code: Code, actor: Any, parent: Code | None, reason: str = "") -> Code:
    """Give a code a new parent (or make it top-level); a code can't sit under itself."""
    if parent is not None:
        if parent.project_id != code.project_id:
            raise ValidationError({"parent": "The parent code belongs to another project."})
        ancestor: Code | None = parent
        seen = set()
        while ancestor is not None and ancestor.pk not in seen:
            if ancestor.pk == code.pk:
                raise ValidationError({"parent": f"“{parent.name}” is inside “{code.name}”; a code cannot be moved under itself."})
            seen.add(ancestor.pk)
            ancestor = ancestor.parent
    old = code.parent
    code.parent = parent
    code.save(update_fields=["parent", "updated_at"])
    _bump(code)
    _event(code, project=code.project, actor=actor, action=CodeEvent.Action.MOVED, reason=reason,
           data={"from": old.name if old else None, "to": parent.name if parent else None},
           summary=f"Code “{code.name}” moved under {('“' + parent.name + '”') if parent else 'the top level'}")
    return code


@transaction.atomic
def code_archive(*, code: Code, actor: Any, archived: bool = True, reason: str = "") -> Code:
    """Archive (hide from the picker, keep codings) or bring back a code; a merged code stays archived."""
    if code.archived == archived:
        return code
    if not archived and code.merged_into_id is not None:
        # Its codings are the target's now; back in use it would count nothing, and it could be merged into
        # in turn (a cycle of merges).
        raise ValidationError(f"“{code.name}” was merged into “{code.merged_into.name}”, which holds its codings; "
                              f"a merged code stays archived. Code with “{code.merged_into.name}” instead; to give its "
                              f"name to a new code, rename “{code.name}” first.")
    code.archived = archived
    code.save(update_fields=["archived", "updated_at"])
    _bump(code)
    action = CodeEvent.Action.ARCHIVED if archived else CodeEvent.Action.UNARCHIVED
    _event(code, project=code.project, actor=actor, action=action, reason=reason,
           summary=f"Code “{code.name}” {'archived' if archived else 'brought back from the archive'}")
    return code


BRING_BACK_REASON = "Brought back from the archive while coding"
UNDO_BRING_BACK_REASON = "Brought back while coding and undone at once"


@transaction.atomic
def code_bring_back(*, code: Code, actor: Any) -> dict[str, Any]:
    """Bring an archived code back into use to apply it from the coding picker (a merged code is refused).

    Returns what the apply's audit event carries so that undoing it archives the code again, unless someone
    edited or applied it meanwhile: its version and its uses before; {} when it was not archived.
    """
    if not code.archived:
        return {}
    uses = code.codings.count()
    code_archive(code=code, actor=actor, archived=False, reason=BRING_BACK_REASON)
    code.refresh_from_db(fields=["archived", "version", "updated_at"])
    return {"brought_back_code": True, "brought_back_version": code.version, "brought_back_uses": uses}


@transaction.atomic
def code_edit(*, code: Code, actor: Any, version: int, reason: str = "", **changes: Any) -> Code:
    """One edit of a code as the API sends it: its parent, whether it is archived and its fields (code_update's),
    all or nothing, and refused whole (CodeConflict) if the code changed since `version` was read."""
    current = Code.objects.select_for_update().get(pk=code.pk)
    if current.version != version:
        raise CodeConflict(current)
    if "parent" in changes:
        code_move(code=current, actor=actor, parent=changes.pop("parent"), reason=reason)
    archived = changes.pop("archived", None)
    if archived is not None:
        code_archive(code=current, actor=actor, archived=archived, reason=reason)
    current.refresh_from_db()
    return code_update(code=current, actor=actor, version=current.version, reason=reason, **changes)


@transaction.atomic
def code_merge(*, source: Code, target: Code, actor: Any, reason: str = "") -> Code:
    """Merge `source` into `target`: codings and sub-codes move over, the source is archived with a pointer."""
    if source.pk == target.pk:
        raise ValidationError({"target": "Choose a different code to merge into."})
    if source.project_id != target.project_id:
        raise ValidationError({"target": "Both codes must belong to the same project."})
    # Both locked, in id order (merging A into B and B into A at once: one waits, no deadlock), then read again: a
    # page loaded before a colleague merged, archived or trashed either code must not merge on what it showed.
    list(Code.objects.select_for_update().filter(pk__in=[source.pk, target.pk]).order_by("pk").values_list("pk"))
    for code in (source, target):
        code.refresh_from_db(fields=["archived", "deleted_at", "merged_into", "parent"])
    _check_mergeable(source, target)
    ancestor = target.parent
    while ancestor is not None:
        if ancestor.pk == source.pk:
            raise ValidationError({"target": f"“{target.name}” is inside “{source.name}”; merge it the other way round."})
        ancestor = ancestor.parent
    if connection.vendor != "postgresql":
        total, moved = _merge_codings_portable(source, target)
    else:
        total, moved = _merge_codings(source, target)
    Code.objects.filter(parent=source).update(parent=target)
    suggestions = _merge_suggestions(source, target)
    source.archived = True
    source.merged_into = target
    source.save(update_fields=["archived", "merged_into", "updated_at"])
    _bump(source)
    _bump(target)
    data = {"source": source.name, "source_uuid": str(source.uuid), "target": target.name, "target_uuid": str(target.uuid),
            "codings": total, "codings_added": moved, "suggestions_moved": suggestions}
    _event(source, project=source.project, actor=actor, action=CodeEvent.Action.MERGED, reason=reason, data=data,
           summary=f"Code “{source.name}” merged into “{target.name}” ({total} codings)")
    CodeEvent.objects.create(project=source.project, code=target, actor=actor, action=CodeEvent.Action.MERGED,
                             reason=reason, data=data)
    target.refresh_from_db()
    return target


def _check_mergeable(source: Code, target: Code) -> None:
    """Refuse a merge of a code merged or trashed since, or into one merged, archived or trashed, saying so."""
    if source.merged_into_id is not None:
        raise ValidationError(f"“{source.name}” was merged into “{source.merged_into.name}”{_merged_by(source)}; "
                              f"nothing to merge.")
    if source.deleted_at is not None:
        raise ValidationError(f"“{source.name}” is in the trash; nothing to merge.")
    if target.merged_into_id is not None:
        into = target.merged_into
        then = "nothing to merge" if into.pk == source.pk else f"merge into “{into.name}” instead"
        raise ValidationError({"target": f"“{target.name}” was merged into “{into.name}”{_merged_by(target)}; {then}."})
    if target.deleted_at is not None:
        raise ValidationError({"target": f"“{target.name}” is in the trash; restore it before merging into it."})
    if target.archived:
        raise ValidationError({"target": f"“{target.name}” is archived; bring it back before merging into it."})


def _merged_by(code: Code) -> str:
    """Who merged a merged code, and when: " (by rita at 20:29)", with the date when it was not today."""
    event = (CodeEvent.objects.filter(code=code, action=CodeEvent.Action.MERGED, data__source_uuid=str(code.uuid))
             .select_related("actor").first())
    if event is None:
        return ""
    when = timezone.localtime(event.created_at)
    at = f"at {when:%H:%M}" if when.date() == timezone.localdate() else f"on {when:%Y-%m-%d} at {when:%H:%M}"
    return f" (by {event.actor.username} {at})" if event.actor else f" ({at})"


def _merge_suggestions(source: Code, target: Code) -> int:
    return pending_suggestions_moved(Suggestion, source_id=source.pk, target_id=target.pk)


def pending_suggestions_moved(suggestion_model: type[Suggestion], *, source_id: int, target_id: int) -> int:
    """The source code's pending AI suggestions become the target's, to be decided there; returns how many moved.

    One whose run already suggests the target for the same sentence is the same suggestion now: it goes, the
    target's stays. Decided ones stay as they were decided, with the code they named. The model is a parameter
    because coding 0010 moves suggestions left by merges made before this did, with the historical model.
    """
    pending = suggestion_model.objects.filter(code_id=source_id, status=Suggestion.Status.PENDING)
    pending.filter(Exists(suggestion_model.objects.filter(
        run=OuterRef("run"), segment=OuterRef("segment"), code_id=target_id))).delete()
    return pending.update(code_id=target_id)


def _merge_codings(source: Code, target: Code) -> tuple[int, int]:
    """Move the source's codings to the target; (codings moved, of which new to the target)."""
    with connection.cursor() as cur:
        # ONE statement: a coding someone adds meanwhile is either moved or stays on the
        # (archived) source, never deleted unmoved. Codings the target already has (same segment
        # and coder) are kept once, not duplicated.
        cur.execute(
            """WITH moved AS (DELETE FROM coding_coding WHERE code_id = %s
                              RETURNING segment_id, coder_id, interview_id, origin, note, created_at),
                    added AS (INSERT INTO coding_coding (segment_id, code_id, coder_id, interview_id, origin, note, created_at)
                              SELECT segment_id, %s, coder_id, interview_id, origin, note, created_at FROM moved
                              ON CONFLICT (segment_id, code_id, coder_id) DO NOTHING RETURNING 1)
               SELECT (SELECT count(*) FROM moved), (SELECT count(*) FROM added)""",
            [source.pk, target.pk],
        )
        return cur.fetchone()


def _merge_codings_portable(source: Code, target: Code) -> tuple[int, int]:
    """The same on SQLite (the laptop quick start), which has no data-modifying CTEs and one writer at a time."""
    with connection.cursor() as cur:
        cur.execute(
            """INSERT INTO coding_coding (segment_id, code_id, coder_id, interview_id, origin, note, created_at)
               SELECT segment_id, %s, coder_id, interview_id, origin, note, created_at FROM coding_coding WHERE code_id = %s
               ON CONFLICT (segment_id, code_id, coder_id) DO NOTHING""",
            [target.pk, source.pk],
        )
        moved = cur.rowcount
    total, _ = Coding.objects.filter(code=source).delete()
    return total, moved


@transaction.atomic
def code_split(*, code: Code, actor: Any, names: Sequence[str], reason: str = "",
               assignments: dict[int, int] | None = None, archive_original: bool = False) -> list[Code]:
    """Split a code into new sibling codes; `assignments` moves segments (segment id → index in names) to them."""
    clean = [_clean_name(n) for n in names if n and n.strip()]
    if len(clean) < 2:
        raise ValidationError({"names": "Name at least two new codes to split into."})
    if len({n.lower() for n in clean}) != len(clean):
        raise ValidationError({"names": "The new codes need different names."})
    assignments = assignments or {}
    carrying = set(Coding.objects.filter(code=code, segment_id__in=list(assignments)).values_list("segment_id", flat=True))
    if not_coded := sorted(set(assignments) - carrying):
        raise ValidationError({"assignments": f"Not coded with “{code.name}”, so there is nothing to move: "
                                              f"segment {listed(not_coded)}."})
    new_codes = [
        code_create(project=code.project, actor=actor, name=n, kind=code.kind, parent=code.parent,
                    definition=code.definition, reason=f"Split from “{code.name}”" + (f": {reason}" if reason else ""))
        for n in clean
    ]
    moved = 0
    for segment_id, index in assignments.items():
        if not 0 <= index < len(new_codes):
            raise ValidationError({"assignments": f"Segment {segment_id} is assigned to a code that does not exist."})
        moved += Coding.objects.filter(code=code, segment_id=segment_id).update(code=new_codes[index])
    if archive_original:
        code.archived = True
        code.save(update_fields=["archived", "updated_at"])
    _bump(code)
    _event(code, project=code.project, actor=actor, action=CodeEvent.Action.SPLIT, reason=reason,
           data={"into": [c.name for c in new_codes], "into_uuids": [str(c.uuid) for c in new_codes],
                 "codings_moved": moved, "archived": archive_original},
           summary=f"Code “{code.name}” split into {', '.join('“' + c.name + '”' for c in new_codes)}")
    return new_codes


# --- codings: the hot path ---------------------------------------------------------------

# What both statements start from: the caller's membership, the interview in that project, and
# the selected segments found by primary key (left to itself, the planner may walk the interview's
# index instead: fine for a small interview, 1 ms more for a 4,000-segment one).
_SCOPE_SQL = """
WITH m AS (
    SELECT mm.role, mm.project_id FROM projects_membership mm JOIN projects_project p ON p.id = mm.project_id
    WHERE mm.user_id = %(user)s AND p.uuid = %(project)s
), iv AS (
    SELECT i.id FROM interviews_interview i JOIN m ON m.project_id = i.project_id
    WHERE i.uuid = %(interview)s AND i.deleted_at IS NULL
), picked AS MATERIALIZED (
    SELECT s.id, s.interview_id, s.speaker FROM interviews_segment s WHERE s.id = ANY(%(segments)s::bigint[])
)"""

# The touched segments' chips (a `chips` CTE of segment, code, coder), in the order the page shows them.
_CHIPS_JSON_SQL = """
       (SELECT coalesce(json_agg(json_build_array(ch.segment_id, ch.code_id, ch.coder_id, c.name, c.colour, c.kind,
                                                  u.username, u.first_name, u.last_name)
                                 ORDER BY ch.segment_id, c.position, c.name, ch.coder_id), '[]')
          FROM chips ch JOIN coding_code c ON c.id = ch.code_id JOIN auth_user u ON u.id = ch.coder_id),"""

# An undo (its audit data carries "undoes": the event it takes back) is recorded even when it changed nothing,
# e.g. a colleague merged the code meanwhile: the user's undo stack then moves on to the action before.
_UNDONE_PREFIX = "CASE WHEN %(extra)s ? 'undoes' THEN 'Undone: ' ELSE '' END"
_UNDO_ALWAYS_RECORDED = "(%(extra)s ? 'undoes' AND m.role IN ('owner', 'analyst') AND EXISTS (SELECT 1 FROM iv))"

# One statement: membership check, the insert (a duplicate is ignored), the chips of the
# touched segments and the code's count in this interview. The main query does not see rows the
# INSERT adds (one snapshot), so `ins` is unioned in. Its work grows with the segments touched,
# not with the interview: the page counts its coded segments itself (static/js/coding.js), as it
# does for colleagues' codings it polls for.
_APPLY_SQL = _SCOPE_SQL + """, seg AS (
    SELECT picked.id, picked.interview_id FROM picked JOIN iv ON iv.id = picked.interview_id
    WHERE picked.speaker = 'participant' OR %(any_speaker)s
), cd AS (
    SELECT c.id FROM coding_code c JOIN m ON m.project_id = c.project_id
    WHERE c.id = %(code)s AND c.deleted_at IS NULL AND NOT c.archived
), ins AS (
    INSERT INTO coding_coding (segment_id, code_id, coder_id, interview_id, origin, note, created_at)
    SELECT seg.id, cd.id, %(user)s, seg.interview_id, 'human', '', now() FROM seg, cd
    WHERE EXISTS (SELECT 1 FROM m WHERE m.role IN ('owner', 'analyst'))
    ON CONFLICT (segment_id, code_id, coder_id) DO NOTHING
    RETURNING segment_id, code_id, coder_id
), aud AS (
    -- The audit trail, in the same statement (a data-modifying CTE runs even unreferenced).
    INSERT INTO projects_auditevent (project_id, actor_id, action, target_type, target_id, summary, data, created_at)
    SELECT m.project_id, %(user)s, 'created', 'coding', %(interview)s,
           left(""" + _UNDONE_PREFIX + """ || format('Code “%%s” applied to %%s segment%%s',
                (SELECT name FROM coding_code WHERE id = %(code)s), (SELECT count(*) FROM ins),
                CASE WHEN (SELECT count(*) FROM ins) = 1 THEN '' ELSE 's' END), 500),
           jsonb_build_object('code', %(code)s, 'segments', coalesce((SELECT jsonb_agg(segment_id) FROM ins), '[]'))
             || %(extra)s, now()
    FROM m WHERE EXISTS (SELECT 1 FROM ins) OR """ + _UNDO_ALWAYS_RECORDED + """
), chips AS (
    SELECT segment_id, code_id, coder_id FROM coding_coding WHERE segment_id IN (SELECT id FROM seg)
    UNION ALL SELECT segment_id, code_id, coder_id FROM ins
)
SELECT (SELECT role FROM m), (SELECT id FROM iv), (SELECT count(*) FROM seg), (SELECT count(*) FROM cd),
       (SELECT coalesce(array_agg(segment_id), '{}') FROM ins),""" + _CHIPS_JSON_SQL + """
       (SELECT count(*) FROM coding_coding WHERE code_id = (SELECT id FROM cd) AND interview_id = (SELECT id FROM iv))
         + (SELECT count(*) FROM ins)
"""

# The same shape for removal: only the requesting coder's own codings are removed.
_REMOVE_SQL = _SCOPE_SQL + """, seg AS (
    SELECT picked.id FROM picked JOIN iv ON iv.id = picked.interview_id
), cd AS (
    SELECT c.id FROM coding_code c JOIN m ON m.project_id = c.project_id WHERE c.id = %(code)s AND c.deleted_at IS NULL
), del AS (
    DELETE FROM coding_coding WHERE segment_id IN (SELECT id FROM seg) AND code_id = (SELECT id FROM cd)
        AND coder_id = %(user)s AND EXISTS (SELECT 1 FROM m WHERE m.role IN ('owner', 'analyst'))
    RETURNING id, segment_id
), aud AS (
    INSERT INTO projects_auditevent (project_id, actor_id, action, target_type, target_id, summary, data, created_at)
    SELECT m.project_id, %(user)s, 'deleted', 'coding', %(interview)s,
           left(""" + _UNDONE_PREFIX + """ || format('Code “%%s” removed from %%s segment%%s',
                (SELECT name FROM coding_code WHERE id = %(code)s), (SELECT count(*) FROM del),
                CASE WHEN (SELECT count(*) FROM del) = 1 THEN '' ELSE 's' END), 500),
           jsonb_build_object('code', %(code)s, 'segments', coalesce((SELECT jsonb_agg(segment_id) FROM del), '[]'))
             || %(extra)s, now()
    FROM m WHERE EXISTS (SELECT 1 FROM del) OR """ + _UNDO_ALWAYS_RECORDED + """
), chips AS (
    SELECT segment_id, code_id, coder_id FROM coding_coding
    WHERE segment_id IN (SELECT id FROM seg) AND id NOT IN (SELECT id FROM del)
)
SELECT (SELECT role FROM m), (SELECT id FROM iv), (SELECT count(*) FROM seg), (SELECT count(*) FROM cd),
       (SELECT coalesce(array_agg(segment_id), '{}') FROM del),""" + _CHIPS_JSON_SQL + """
       (SELECT count(*) FROM coding_coding WHERE code_id = (SELECT id FROM cd) AND interview_id = (SELECT id FROM iv))
         - (SELECT count(*) FROM del)
"""


class CodingResult:
    """What one apply/remove did: the caller's role (None: not a member), the chips of the touched segments, and
    code_count, the code's uses in this interview."""

    __slots__ = ("role", "interview_id", "segments_found", "code_found", "changed", "chips", "code_count")

    def __init__(self, row: Sequence[Any]) -> None:
        (self.role, self.interview_id, self.segments_found, self.code_found, changed, chips, self.code_count) = row
        self.changed: list[int] = list(changed or [])
        # [segment id, code id, coder id, code name, colour, kind, username, first name, last name]
        self.chips: list[list[Any]] = json.loads(chips) if isinstance(chips, str) else chips

    @property
    def is_member(self) -> bool:
        return self.role is not None and self.interview_id is not None

    @property
    def can_write(self) -> bool:
        return self.role in ("owner", "analyst")


_APPLY = PreparedStatement("rta_coding_apply", _APPLY_SQL, [
    ("project", "uuid"), ("interview", "uuid"), ("user", "integer"), ("code", "bigint"), ("segments", "bigint[]"),
    ("any_speaker", "boolean"), ("extra", "jsonb")])
_REMOVE = PreparedStatement("rta_coding_remove", _REMOVE_SQL, [
    ("project", "uuid"), ("interview", "uuid"), ("user", "integer"), ("code", "bigint"), ("segments", "bigint[]"),
    ("extra", "jsonb")])


def _run(statement: PreparedStatement, params: dict[str, Any]) -> CodingResult:
    # The ids travel as an array literal: psycopg's list adaptation builds a dumper and a
    # transformer per call, about 0.3 ms of the hot path.
    return CodingResult(statement.fetchone({**params, "segments": "{" + ",".join(map(str, params["segments"])) + "}",
                                            "extra": json.dumps(params["extra"])}))


def _params(*, project_uuid: Any, interview_uuid: Any, user_id: int, code_id: int, segment_ids: Iterable[int],
            any_speaker: bool, audit_extra: dict[str, Any] | None) -> dict[str, Any]:
    return {"project": str(project_uuid), "interview": str(interview_uuid), "user": user_id, "code": code_id,
            "segments": [int(s) for s in segment_ids], "any_speaker": bool(any_speaker), "extra": audit_extra or {}}


def coding_apply(*, project_uuid: Any, interview_uuid: Any, user_id: int, code_id: int, segment_ids: Iterable[int],
                 any_speaker: bool = False, audit_extra: dict[str, Any] | None = None) -> CodingResult:
    """Apply a code to segments in ONE round trip (membership check + insert + chips + counts); duplicates are ignored.

    Interviewer/system segments are codable only with `any_speaker`. On PostgreSQL this is a
    single statement; on SQLite (laptop) it falls back to the ORM. `audit_extra` joins the audit
    event's data (the undo stack reads it).
    """
    params = _params(project_uuid=project_uuid, interview_uuid=interview_uuid, user_id=user_id, code_id=code_id,
                     segment_ids=segment_ids, any_speaker=any_speaker, audit_extra=audit_extra)
    result = _run(_APPLY, params) if connection.vendor == "postgresql" else _orm_change(params, remove=False)
    return _announce(result, project_uuid=project_uuid, interview_uuid=interview_uuid)


def coding_remove(*, project_uuid: Any, interview_uuid: Any, user_id: int, code_id: int,
                  segment_ids: Iterable[int], audit_extra: dict[str, Any] | None = None) -> CodingResult:
    """Remove the user's own coding of a code from segments, in one round trip; others' codings are never touched."""
    params = _params(project_uuid=project_uuid, interview_uuid=interview_uuid, user_id=user_id, code_id=code_id,
                     segment_ids=segment_ids, any_speaker=True, audit_extra=audit_extra)
    result = _run(_REMOVE, params) if connection.vendor == "postgresql" else _orm_change(params, remove=True)
    return _announce(result, project_uuid=project_uuid, interview_uuid=interview_uuid)


def _announce(result: CodingResult, *, project_uuid: Any, interview_uuid: Any) -> CodingResult:
    # Only a change by a member is news; the ids were checked by the statement that made it. No caller's
    # answer reads the counts cached under the coding version, so the event can wait for the answer.
    if result.changed:
        live.publish(project_uuid, "coding", interview=interview_uuid, after_response=True)
    return result


UNDO_CREATE_REASON = "Created while coding and undone at once"
# How far back `u` reaches: a user's latest applies and removes in one interview.
UNDO_DEPTH = 50
# Why one's own codings change without one doing it: colleagues reorganise the codebook or the transcript.
_WHY_CHANGED = "the code merged or split, or the answer re-segmented"


def _segments(n: int) -> str:
    return f"{n} segment{'s' if n != 1 else ''}"


@dataclass
class UndoOutcome:
    """What undoing one of the user's own applies or removes did, and the sentence that tells them."""

    result: CodingResult
    # The action taken back ("apply" or "remove"), its code and the segments it had changed.
    undid: str
    code_id: int
    code_name: str
    segment_ids: list[int]
    # A code created (or brought back from the archive) inline with the apply: archived again, or why it stays.
    created_code_archived: bool = False
    created_code_kept_because: str = ""
    brought_back: bool = False

    @property
    def message(self) -> str:
        done, wanted, name = len(self.result.changed), len(self.segment_ids), f"“{self.code_name}”"
        if self.undid == "apply":
            if not self.result.code_found:
                return f"Could not undo applying {name}: the code was deleted since."
            if done == 0:
                return f"Nothing to take back: your {name} is no longer on those {_segments(wanted)} (changed since: {_WHY_CHANGED})."
            text = f"Undone: removed {name} from {done if done == wanted else f'{done} of {wanted}'} " \
                   f"segment{'s' if wanted != 1 else ''}"
        else:
            if not self.result.code_found:
                return f"Could not undo removing {name}: the code was archived or deleted since."
            if done == 0:
                return f"Nothing to put back: {name} can no longer go on those {_segments(wanted)} (changed since: {_WHY_CHANGED})."
            text = f"Undone: applied {name} again to {done if done == wanted else f'{done} of {wanted}'} " \
                   f"segment{'s' if wanted != 1 else ''}"
        if done < wanted:
            text += f"; the other {wanted - done} had changed since ({_WHY_CHANGED})"
        if self.brought_back and self.created_code_archived:
            text += f", and archived {name} again (you had brought it back for this)"
        elif self.brought_back and self.created_code_kept_because:
            text += f"; {name} stays in use because {self.created_code_kept_because}"
        elif self.created_code_archived:
            text += f", and archived the new code {name} (nobody had used it)"
        elif self.created_code_kept_because:
            text += f"; the new code {name} stays in the codebook because {self.created_code_kept_because}"
        return text + "."


# The user's latest DEPTH applies and removes here (undos themselves aside), less those an undo took back: the
# newest left is what `u` undoes. A current member's only; the code's name comes along for the message.
_LAST_UNDOABLE_SQL = """
WITH scope AS (
    SELECT p.id FROM projects_project p JOIN projects_membership mb ON mb.project_id = p.id AND mb.user_id = %(user)s
    WHERE p.uuid = %(project)s
), done AS MATERIALIZED (
    SELECT e.id, e.action, e.data FROM projects_auditevent e
    WHERE e.actor_id = %(user)s AND e.target_id = %(interview)s AND e.target_type = 'coding'
      AND e.project_id = (SELECT id FROM scope) AND NOT e.data ? 'undoes'
    ORDER BY e.id DESC LIMIT %(depth)s
), undone AS (
    SELECT (e.data ->> 'undoes')::bigint AS id FROM projects_auditevent e
    WHERE e.actor_id = %(user)s AND e.target_id = %(interview)s AND e.target_type = 'coding'
      AND e.id > (SELECT min(id) FROM done) AND e.data ? 'undoes'
)
SELECT d.id, d.action, d.data, c.name FROM done d LEFT JOIN coding_code c ON c.id = (d.data ->> 'code')::bigint
WHERE d.id NOT IN (SELECT id FROM undone) ORDER BY d.id DESC LIMIT 1
"""
_LAST_UNDOABLE = PreparedStatement("rta_coding_last_undoable", _LAST_UNDOABLE_SQL, [
    ("user", "integer"), ("project", "uuid"), ("interview", "text"), ("depth", "integer")])

UndoableEvent = tuple[int, str, dict, str | None]  # audit event id, action, data, the code's name


def last_undoable(*, project_uuid: Any, interview_uuid: Any, user_id: int) -> UndoableEvent | None:
    """The user's newest apply or remove in the interview not undone yet, among their latest UNDO_DEPTH; one query."""
    params = {"user": user_id, "project": str(project_uuid), "interview": str(interview_uuid), "depth": UNDO_DEPTH}
    if connection.vendor == "postgresql":
        row = _LAST_UNDOABLE.fetchone(params)
        return None if row is None else (row[0], row[1], json.loads(row[2]) if isinstance(row[2], str) else row[2], row[3])
    return _last_undoable_portable(params)


def _last_undoable_portable(p: dict[str, Any]) -> UndoableEvent | None:
    """The same on SQLite (the laptop quick start), in a few ORM queries."""
    mine = AuditEvent.objects.filter(actor_id=p["user"], target_type="coding", target_id=p["interview"],
                                     project__uuid=p["project"], project__memberships__user_id=p["user"])
    done = list(mine.exclude(data__has_key="undoes").order_by("-id").values_list("id", "action", "data")[:p["depth"]])
    if not done:
        return None
    undone = {data["undoes"] for data in mine.filter(data__has_key="undoes", id__gt=done[-1][0]).values_list("data", flat=True)}
    event = next((e for e in done if e[0] not in undone), None)
    if event is None:
        return None
    return (*event, Code.objects.filter(pk=event[2]["code"]).values_list("name", flat=True).first())


def coding_undo(*, project_uuid: Any, interview_uuid: Any, user: Any) -> UndoOutcome | None:
    """Take back the user's own last apply or remove in the interview; None when there is nothing to undo.

    Two queries: the action to undo, then the reverse apply/remove, a single statement that
    also records the undo (so the next undo reaches the action before). Only the user's own codings
    change; what others changed since is left alone and the outcome says so.
    """
    event = last_undoable(project_uuid=project_uuid, interview_uuid=interview_uuid, user_id=user.pk)
    if event is None:
        return None
    event_id, action, data, code_name = event
    code_id, segment_ids = int(data["code"]), [int(s) for s in data.get("segments") or []]
    scope = {"project_uuid": project_uuid, "interview_uuid": interview_uuid, "user_id": user.pk, "code_id": code_id,
             "segment_ids": segment_ids, "audit_extra": {"undoes": event_id}}
    if action == AuditEvent.Action.DELETED:
        # Put back exactly what was removed, interviewer turns included if they had been coded.
        result = coding_apply(**scope, any_speaker=True)
        return UndoOutcome(result, "remove", code_id, code_name or "(deleted code)", segment_ids)
    if data.get("created_code"):
        return _undo_inline_create(scope, code_name or "(deleted code)", user)
    if data.get("brought_back_code"):
        return _undo_bring_back(scope, code_name or "(deleted code)", user, data)
    return UndoOutcome(coding_remove(**scope), "apply", code_id, code_name or "(deleted code)", segment_ids)


@transaction.atomic
def _undo_inline_create(scope: dict[str, Any], code_name: str, user: Any) -> UndoOutcome:
    """Undo "create a code and apply it": the codings go, then the code too unless something uses it."""
    result = coding_remove(**scope)
    outcome = UndoOutcome(result, "apply", scope["code_id"], code_name, scope["segment_ids"])
    code = Code.objects.filter(pk=scope["code_id"], deleted_at__isnull=True).select_related("project").first()
    if code is None or not result.can_write:
        return outcome
    outcome.created_code_kept_because = code_in_use_reason(code, actor=user)
    if not outcome.created_code_kept_because:
        code_archive(code=code, actor=user, reason=UNDO_CREATE_REASON)
        outcome.created_code_archived = True
    return outcome


@transaction.atomic
def _undo_bring_back(scope: dict[str, Any], code_name: str, user: Any, data: dict[str, Any]) -> UndoOutcome:
    """Undo "bring an archived code back and apply it": the codings go, and the code back to the archive if it is
    as the user left it (not edited, not applied or removed by anyone since)."""
    result = coding_remove(**scope)
    outcome = UndoOutcome(result, "apply", scope["code_id"], code_name, scope["segment_ids"], brought_back=True)
    code = Code.objects.filter(pk=scope["code_id"], deleted_at__isnull=True).select_related("project").first()
    if code is None or not result.can_write:
        return outcome
    if code.archived:
        outcome.created_code_kept_because = "it is already archived"
    elif code.version != data.get("brought_back_version"):
        outcome.created_code_kept_because = "it was edited after you brought it back"
    elif code.codings.count() != data.get("brought_back_uses"):
        outcome.created_code_kept_because = "it was applied or removed elsewhere after you brought it back"
    else:
        code_archive(code=code, actor=user, reason=UNDO_BRING_BACK_REASON)
        outcome.created_code_archived = True
    return outcome


def code_in_use_reason(code: Code, *, actor: Any) -> str:
    """Why `code` must outlive undoing its creation by `actor` ("" when nobody has used it)."""
    code.refresh_from_db(fields=["archived", "version", "created_by"])
    if code.archived:
        return "it is already archived"
    if code.created_by_id != actor.pk:
        return "someone else created it"
    uses = code.codings.count()
    if uses:
        return f"it is still applied to {uses} segment{'s' if uses != 1 else ''}"
    if code.version > 1:
        return "it was edited after it was created"
    if code.children.exists() or code.merged_from.exists():
        return "other codes sit under it or were merged into it"
    if code.theme_codes.exists() or code.memos.exists():
        return "a theme or a memo uses it"
    return ""


@transaction.atomic
def _orm_change(p: dict[str, Any], *, remove: bool) -> CodingResult:
    from interviews.models import Segment, Speaker
    from projects.models import Membership

    membership = Membership.objects.filter(user_id=p["user"], project__uuid=p["project"]).first()
    role = membership.role if membership else None
    interview = Interview.objects.alive().filter(uuid=p["interview"], project_id=getattr(membership, "project_id", None)).first()
    iv = interview.pk if interview else None
    segs = Segment.objects.filter(interview_id=iv, pk__in=p["segments"])
    if not remove and not p["any_speaker"]:
        segs = segs.filter(speaker=Speaker.PARTICIPANT)
    seg_ids = list(segs.values_list("pk", flat=True))
    codes = Code.objects.filter(pk=p["code"], project_id=getattr(membership, "project_id", None), deleted_at__isnull=True)
    if not remove:
        codes = codes.filter(archived=False)
    code_found = codes.count()
    changed: list[int] = []
    if role in ("owner", "analyst") and code_found and seg_ids:
        if remove:
            mine = Coding.objects.filter(segment_id__in=seg_ids, code_id=p["code"], coder_id=p["user"])
            changed = list(mine.values_list("segment_id", flat=True))
            mine.delete()
        else:
            have = set(Coding.objects.filter(segment_id__in=seg_ids, code_id=p["code"], coder_id=p["user"])
                       .values_list("segment_id", flat=True))
            changed = [s for s in seg_ids if s not in have]
            Coding.objects.bulk_create([Coding(segment_id=s, code_id=p["code"], coder_id=p["user"], interview_id=iv)
                                        for s in changed], ignore_conflicts=True)
    undo = "undoes" in p["extra"] and role in ("owner", "analyst") and iv is not None
    if changed or undo:
        name = Code.objects.filter(pk=p["code"]).values_list("name", flat=True).first()
        verb = "removed from" if remove else "applied to"
        audit_record(project=membership.project, actor=membership.user, action=AuditEvent.Action.DELETED if remove else AuditEvent.Action.CREATED,
                     target_type="coding", target_id=p["interview"],
                     summary=f"{'Undone: ' if undo else ''}Code “{name}” {verb} {len(changed)} segment{'s' if len(changed) != 1 else ''}",
                     data={"code": p["code"], "segments": changed, **p["extra"]})
    chips = [list(r) for r in Coding.objects.filter(segment_id__in=seg_ids)
             .order_by("segment_id", "code__position", "code__name", "coder_id")
             .values_list("segment_id", "code_id", "coder_id", "code__name", "code__colour", "code__kind",
                          "coder__username", "coder__first_name", "coder__last_name")]
    code_count = Coding.objects.filter(code_id=p["code"], interview_id=iv).count()
    return CodingResult((role, iv, len(seg_ids), code_found, changed, chips, code_count))


# --- familiarisation notes ------------------------------------------------------------------

@transaction.atomic
def note_save(*, interview: Interview, author: Any, text: str, turn: Turn | None = None) -> Note | None:
    """Create, replace or (with empty text) delete the author's note on an interview or a turn."""
    if turn is not None and turn.interview_id != interview.pk:
        raise ValidationError({"turn": "That turn belongs to another interview."})
    text = (text or "").strip()
    if len(text) > 20000:
        raise ValidationError({"text": "Keep a note under 20,000 characters."})
    existing = Note.objects.filter(interview=interview, turn=turn, author=author).first()
    where = f"turn {turn.number} of “{interview.title}”" if turn else f"“{interview.title}”"
    if not text:
        if existing:
            existing.delete()
            audit_record(project=interview.project, actor=author, action=AuditEvent.Action.DELETED,
                         target_type="note", summary=f"Familiarisation note on {where} deleted")
        return None
    if existing is None:
        try:
            with transaction.atomic():
                note = Note.objects.create(interview=interview, turn=turn, author=author, text=text)
        except IntegrityError:  # the same author's other tab or request created it a moment ago
            existing = Note.objects.get(interview=interview, turn=turn, author=author)
    if existing is not None:
        existing.text = text
        existing.save(update_fields=["text", "updated_at"])
        note = existing
    audit_record(project=interview.project, actor=author, action=AuditEvent.Action.CHANGED if existing else AuditEvent.Action.CREATED,
                 target=note, target_type="note", summary=f"Familiarisation note on {where}")
    return note


# --- the AI second reader's suggestions -----------------------------------------------------------


# Deciding a suggestion is one statement, like applying a code: membership and role, the claim of a
# pending suggestion (an accepted one needs its code neither archived nor in the trash), the reviewer's
# coding (origin "suggestion", linked) and the audit event.
_DECIDE_SQL = """
WITH m AS (
    SELECT mb.project_id, mb.role FROM projects_membership mb JOIN projects_project p ON p.id = mb.project_id
    WHERE p.uuid = %(project)s AND mb.user_id = %(user)s
), s AS (
    SELECT sg.id, sg.uuid, sg.segment_id, sg.code_id, sg.interview_id, sg.status, c.name,
           (c.archived OR c.deleted_at IS NOT NULL) AS code_gone, mt.name AS merged_into
    FROM coding_suggestion sg JOIN interviews_interview iv ON iv.id = sg.interview_id
    JOIN m ON m.project_id = iv.project_id JOIN coding_code c ON c.id = sg.code_id
    LEFT JOIN coding_code mt ON mt.id = c.merged_into_id WHERE sg.uuid = %(suggestion)s
), upd AS (
    UPDATE coding_suggestion SET status = %(status)s, decided_by_id = %(user)s, decided_at = now(),
           reject_reason = %(reason)s
    WHERE id = (SELECT id FROM s) AND status = 'pending' AND EXISTS (SELECT 1 FROM m WHERE role IN ('owner', 'analyst'))
      AND (%(status)s = 'rejected' OR NOT (SELECT code_gone FROM s))
    RETURNING id
), ins AS (
    INSERT INTO coding_coding (segment_id, code_id, coder_id, interview_id, origin, suggestion_id, note, created_at)
    SELECT s.segment_id, s.code_id, %(user)s, s.interview_id, 'suggestion', s.id, '', now() FROM s
    WHERE %(status)s = 'accepted' AND EXISTS (SELECT 1 FROM upd)
    ON CONFLICT (segment_id, code_id, coder_id) DO NOTHING
    RETURNING id
), aud AS (
    INSERT INTO projects_auditevent (project_id, actor_id, action, target_type, target_id, summary, data, created_at)
    SELECT m.project_id, %(user)s, CASE WHEN %(status)s = 'accepted' THEN 'created' ELSE 'changed' END, 'suggestion',
           (SELECT uuid::text FROM s),
           left(format('AI suggestion “%%s” %%s', (SELECT name FROM s), %(status)s)
                || CASE WHEN %(reason)s <> '' THEN ': ' || %(reason)s ELSE '' END, 500),
           jsonb_build_object('code', (SELECT code_id FROM s), 'segment', (SELECT segment_id FROM s)), now()
    FROM m WHERE EXISTS (SELECT 1 FROM upd)
)
SELECT (SELECT role FROM m), (SELECT status FROM s), (SELECT code_gone FROM s), (SELECT name FROM s),
       (SELECT count(*) FROM upd), (SELECT count(*) FROM ins),
       (SELECT iv.uuid FROM interviews_interview iv WHERE iv.id = (SELECT interview_id FROM s)), (SELECT merged_into FROM s)
"""
_DECIDE = PreparedStatement("rta_suggestion_decide", _DECIDE_SQL, [
    ("project", "uuid"), ("suggestion", "uuid"), ("user", "integer"), ("status", "text"), ("reason", "text")])


class SuggestionDecision:
    """What deciding did: the reviewer's role (None: not a member), whether the suggestion was found and decided."""

    def __init__(self, row: Sequence[Any], status: str) -> None:
        self.role, self.previous_status, code_gone, self.code_name, decided, coded, self.interview_uuid, merged_into = row
        self.coded = bool(coded)  # accepting made a coding (the reviewer had not coded it so already)
        self.found = self.previous_status is not None
        self.decided = bool(decided)
        self.status = status if self.decided else self.previous_status
        self.error = ""
        if self.found and not self.decided and self.role in ("owner", "analyst"):
            self.error = self._refusal(code_gone, merged_into)

    def _refusal(self, code_gone: bool, merged_into: str | None) -> str:
        if self.previous_status != Suggestion.Status.PENDING or not code_gone:
            return f"This suggestion was already {Suggestion.Status(self.previous_status).label.lower()}."
        if merged_into:  # merging moves pending suggestions to the target: one left from before it did
            return (f"The code “{self.code_name}” was merged into “{merged_into}”; it cannot be applied. Code the sentence "
                    f"with “{merged_into}”, or reject this suggestion.")
        return f"The code “{self.code_name}” is archived or in the trash; it cannot be applied."


def suggestion_decide(*, project_uuid: Any, suggestion_uuid: Any, user_id: int, accept: bool,
                      reason: str = "") -> SuggestionDecision:
    """Accept (the reviewer's own coding, origin "suggestion") or reject (with an optional reason) a pending suggestion.

    Never raises for a member's mistakes: the result says what happened, for the caller to answer with.
    """
    status = Suggestion.Status.ACCEPTED if accept else Suggestion.Status.REJECTED
    params = {"project": str(project_uuid), "suggestion": str(suggestion_uuid), "user": user_id, "status": status,
              "reason": "" if accept else reason.strip()[:2000]}
    with transaction.atomic():
        row = _DECIDE.fetchone(params) if connection.vendor == "postgresql" else _orm_decide(params)
        decision = SuggestionDecision(row, status)
        if decision.coded:
            live.publish(project_uuid, "coding", interview=decision.interview_uuid)
    return decision


def _orm_decide(p: dict[str, Any]) -> tuple:
    """_DECIDE_SQL's row, by the ORM: SQLite, the laptop default, has no such statement."""
    from projects.models import Membership

    membership = Membership.objects.filter(user_id=p["user"], project__uuid=p["project"]).select_related("project").first()
    role = membership.role if membership else None
    suggestion = (Suggestion.objects.select_related("code", "interview")
                  .filter(uuid=p["suggestion"], interview__project_id=getattr(membership, "project_id", None)).first())
    if suggestion is None:
        return role, None, None, None, 0, 0, None, None
    code = suggestion.code
    code_gone = code.archived or code.deleted_at is not None
    decided = coded = 0
    if role in ("owner", "analyst") and (p["status"] == Suggestion.Status.REJECTED or not code_gone):
        decided = Suggestion.objects.filter(pk=suggestion.pk, status=Suggestion.Status.PENDING).update(
            status=p["status"], decided_by_id=p["user"], decided_at=timezone.now(), reject_reason=p["reason"])
    if decided and p["status"] == Suggestion.Status.ACCEPTED:
        _, coded = Coding.objects.get_or_create(
            segment_id=suggestion.segment_id, code_id=code.pk, coder_id=p["user"],
            defaults={"interview_id": suggestion.interview_id, "origin": Coding.Origin.SUGGESTION, "suggestion": suggestion})
    if decided:
        said = f": {p['reason']}" if p["reason"] else ""
        audit_record(project=membership.project, actor=membership.user,
                     action=AuditEvent.Action.CREATED if p["status"] == Suggestion.Status.ACCEPTED else AuditEvent.Action.CHANGED,
                     target_type="suggestion", target_id=str(suggestion.uuid),
                     summary=f"AI suggestion “{code.name}” {p['status']}{said}"[:500],
                     data={"code": code.pk, "segment": suggestion.segment_id})
    merged_into = code.merged_into.name if code.merged_into_id else None
    return role, suggestion.status, code_gone, code.name, decided, int(coded), suggestion.interview.uuid, merged_into


ACCEPT_ALL_AFTER = 3  # suggestions of a code a reviewer decides one by one before accepting the rest at once


@transaction.atomic
def suggestions_accept_rest(*, run: SuggestionRun, code: Code, user: Any) -> int:
    """Accept a code's remaining pending suggestions of a run, once a sample of them was reviewed one by one.

    Those the critic rejected are not among them, nor, in a run with a critic, those it did not check (its request
    failed, or it gave them no verdict): they stay pending, for the reviewer to decide one by one.
    """
    of_code = Suggestion.objects.filter(run=run, code=code)
    reviewed = of_code.exclude(status=Suggestion.Status.PENDING).count()
    if reviewed < ACCEPT_ALL_AFTER:
        raise ValidationError(f"Review at least {ACCEPT_ALL_AFTER} of “{code.name}”’s suggestions one by one first "
                              f"({reviewed} so far).")
    held_back = [Suggestion.Verdict.REJECTED] + ([Suggestion.Verdict.NONE] if run.with_critic else [])
    pending = list(of_code.filter(status=Suggestion.Status.PENDING).exclude(critic_verdict__in=held_back)
                   .values_list("uuid", flat=True))
    decided = [suggestion_decide(project_uuid=run.project.uuid, suggestion_uuid=uuid, user_id=user.pk, accept=True)
               for uuid in pending]
    return sum(1 for decision in decided if decision.decided)


@transaction.atomic
def case_coding_set(*, interview: Interview, code: Code, coder: Any, on: bool) -> bool:
    """Apply `code` to the whole interview for `coder` (or take it off); safe to repeat. Returns whether it is on."""
    if code.project_id != interview.project_id or code.deleted_at is not None:
        raise ValidationError({"code": "Choose a code of this project's codebook."})
    if on:
        CaseCoding.objects.get_or_create(interview=interview, code=code, coder=coder)
    else:
        CaseCoding.objects.filter(interview=interview, code=code, coder=coder).delete()
    return on
