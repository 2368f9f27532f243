"""Writes on themes, exemplars, memos, threads and review meetings.

Keyword-only, atomic, audited. Views and the API call these and nothing else to write.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import IntegrityError, models, transaction
from django.db.models import Exists, F, Max, OuterRef
from django.utils import timezone

from coding.models import Code
from coding.services import checked_colour
from interviews.models import Segment
from interviews.services import check_storable_text
from projects import live
from projects.audit import audit_record
from projects.models import AuditEvent, Project
from projects.names import name_kept_unique, normalised_name
from themes import queries, snapshots
from themes.models import (
    AgendaItem,
    Comment,
    Decision,
    Exemplar,
    Memo,
    MemoRevision,
    MentionsRead,
    Review,
    Snapshot,
    Theme,
    ThemeCode,
    ThemeStatusChange,
    ThreadRead,
)
from themes.rendering import mentioned_usernames

TRIM = "[...]"


# ---------------------------------------------------------------- themes

def _board_changed(project: Project, actor) -> None:
    """Open boards and meeting agendas show theme names, order and codes: tell them to fetch again. `by`: the board
    that made the change already shows it, from its own answer, and need not fetch itself again."""
    if actor is not None and getattr(actor, "pk", None) is not None:
        live.publish(project.uuid, "board", by=actor.pk)
    else:
        live.publish(project.uuid, "board")


def theme_name_checked(project: Project, name: str, *, exclude: Theme | None = None, field: str = "name") -> str:
    """The name normalised (projects/names.py), refused if empty or if another live theme of the project has it,
    whatever its case: two themes of one name cannot be told apart on the board, in Move… or on an agenda.
    The database holds the same rule (unique_live_theme_name) against two people saving at once."""
    name = normalised_name(name)
    if not name:
        raise ValidationError({field: "Give the theme a name."})
    if other := _theme_named(project, name, exclude=exclude):
        raise ValidationError({field: f"There is already a theme named “{other.name}” in this project; choose another name."})
    return name


def _theme_named(project: Project, name: str, *, exclude: Theme | None = None) -> Theme | None:
    """The live theme of the project that has this name, whatever its case or spelling (other than `exclude`)."""
    holders = Theme.objects.for_project(project).filter(name__iexact=normalised_name(name))
    if exclude is not None:
        holders = holders.exclude(pk=exclude.pk)
    return holders.first()


def _save_named(theme: Theme, **kwargs) -> None:
    taken = ValidationError({"name": f"There is already a theme named “{theme.name}” in this project; choose another name."})
    with name_kept_unique("unique_live_theme_name", taken):
        theme.save(**kwargs)


@transaction.atomic
def theme_create(*, project: Project, actor, name: str, definition: str = "", parent: Theme | None = None,
                 colour: str = "") -> Theme:
    """Create a candidate theme at the end of its column (or of its parent's sub-themes)."""
    name = theme_name_checked(project, name)
    if parent is not None and parent.project_id != project.id:
        raise ValidationError({"parent": "The parent theme belongs to another project."})
    last = Theme.objects.for_project(project).filter(parent=parent).aggregate(m=Max("position"))["m"]
    theme = Theme(project=project, name=name, definition=definition, parent=parent, created_by=actor,
                  position=(last + 1) if last is not None else 0)
    if colour:
        theme.colour = checked_colour(colour)
    theme.full_clean(exclude=["codes"], validate_constraints=False)  # the name was checked above, with a clearer message
    _save_named(theme)
    ThemeStatusChange.objects.create(theme=theme, from_status="", to_status=theme.status, actor=actor, reason="created")
    audit_record(project=project, actor=actor, action=AuditEvent.Action.CREATED, target=theme, summary=f"Theme “{theme.name}” created")
    _board_changed(project, actor)
    return theme


class ThemeConflict(Exception):
    """The theme was saved by someone else since the editor loaded it; carries the theme as it is now."""

    def __init__(self, current: Theme):
        super().__init__(f"Theme “{current.name}” was changed by someone else (now version {current.version}).")
        self.current = current


@transaction.atomic
def theme_update(*, theme: Theme, actor, base_version: int | None, name: str | None = None, definition: str | None = None,
                 colour: str | None = None, review: Review | None = None) -> Theme:
    """Rename, redefine or recolour a theme; raises ThemeConflict if someone saved after `base_version`.

    `base_version=None` skips the check; only for changes nobody typed over a text they saw (a meeting decision applied).
    """
    current = Theme.objects.select_for_update().get(pk=theme.pk)
    if base_version is not None and base_version != current.version:
        raise ThemeConflict(current)
    # Compare with what is saved now, not with the caller's copy, which may be older.
    theme.name, theme.definition, theme.colour, theme.version = current.name, current.definition, current.colour, current.version
    changed = []
    if name is not None and normalised_name(name) and normalised_name(name) != theme.name:
        name = theme_name_checked(theme.project, name, exclude=theme)
        changed.append(f"renamed from “{theme.name}” to “{name}”")
        theme.name = name
    if definition is not None and definition != theme.definition:
        changed.append("definition changed")
        theme.definition = definition
    if colour is not None and colour and colour.lower() != theme.colour.lower():
        changed.append("colour changed")
        theme.colour = checked_colour(colour)
    if not changed:
        return theme
    theme.full_clean(exclude=["codes", "parent", "merged_into"], validate_constraints=False)  # name checked above
    theme.version = F("version") + 1
    _save_named(theme, update_fields=["name", "definition", "colour", "version", "updated_at"])
    theme.refresh_from_db(fields=["version"])
    audit_record(project=theme.project, actor=actor, action=AuditEvent.Action.CHANGED, target=theme,
                 summary=f"Theme “{theme.name}”: {', '.join(changed)}",
                 data={"review": str(review.uuid) if review else None, "version": theme.version})
    _board_changed(theme.project, actor)
    return theme


@transaction.atomic
def theme_set_status(*, theme: Theme, actor, status: str, reason: str = "", review: Review | None = None) -> Theme:
    """Move a theme to a new status and record the step in its history."""
    if status not in Theme.Status.values:
        raise ValidationError({"status": f"“{status}” is not a theme status."})
    if status == theme.status:
        return theme
    ThemeStatusChange.objects.create(theme=theme, from_status=theme.status, to_status=status, actor=actor, reason=reason, review=review)
    previous, theme.status = theme.status, status
    theme.save(update_fields=["status", "updated_at"])
    audit_record(project=theme.project, actor=actor, action=AuditEvent.Action.CHANGED, target=theme,
                 summary=f"Theme “{theme.name}” {previous} → {status}")
    _board_changed(theme.project, actor)
    return theme


@transaction.atomic
def theme_set_parent(*, theme: Theme, actor, parent: Theme | None) -> Theme:
    """Make a theme a sub-theme of another (or top-level again); no cycles."""
    node = parent
    while node is not None:
        if node.pk == theme.pk:
            raise ValidationError({"parent": "A theme cannot sit under itself or one of its own sub-themes."})
        node = node.parent
    if parent is not None and parent.project_id != theme.project_id:
        raise ValidationError({"parent": "The parent theme belongs to another project."})
    last = Theme.objects.for_project(theme.project).filter(parent=parent).aggregate(m=Max("position"))["m"]
    theme.parent, theme.position = parent, (last + 1) if last is not None else 0
    theme.save(update_fields=["parent", "position", "updated_at"])
    audit_record(project=theme.project, actor=actor, action=AuditEvent.Action.CHANGED, target=theme,
                 summary=f"Theme “{theme.name}” moved under “{parent.name}”" if parent else f"Theme “{theme.name}” made top-level")
    _board_changed(theme.project, actor)
    return theme


@transaction.atomic
def theme_reorder(*, theme: Theme, actor, offset: int) -> Theme:
    """Move a theme left/right (offset -1/+1) among its siblings."""
    siblings = list(Theme.objects.for_project(theme.project).filter(parent_id=theme.parent_id).select_for_update())
    index = next(i for i, t in enumerate(siblings) if t.pk == theme.pk)
    target = max(0, min(len(siblings) - 1, index + offset))
    siblings.insert(target, siblings.pop(index))
    _renumber(siblings)
    _board_changed(theme.project, actor)
    return theme


@transaction.atomic
def theme_place_before(*, theme: Theme, actor, before: Theme) -> Theme:
    """Drag-reorder: put `theme` just before `before`, becoming its sibling (same parent)."""
    if before.pk == theme.pk:
        return theme
    if before.parent_id != theme.parent_id:
        theme_set_parent(theme=theme, actor=actor, parent=before.parent)
    siblings = [t for t in Theme.objects.for_project(theme.project).filter(parent_id=before.parent_id).select_for_update() if t.pk != theme.pk]
    index = next(i for i, t in enumerate(siblings) if t.pk == before.pk)
    theme.position = -1  # force a save in _renumber
    siblings.insert(index, theme)
    _renumber(siblings)
    _board_changed(theme.project, actor)
    return theme


def _renumber(rows: Sequence) -> None:
    """Positions 0, 1, 2… in the order of `rows` (rows of one model), in one UPDATE."""
    changed = []
    for i, row in enumerate(rows):
        if row.position != i:
            row.position = i
            changed.append(row)
    if changed:
        type(changed[0]).objects.bulk_update(changed, ["position"])


@transaction.atomic
def theme_delete(*, theme: Theme, actor) -> Theme:
    """Move a theme (and its sub-themes) to the trash."""
    now = timezone.now()
    ids = _descendant_ids(theme)
    Theme.objects.filter(id__in=ids).update(deleted_at=now)
    theme.deleted_at = now
    audit_record(project=theme.project, actor=actor, action=AuditEvent.Action.DELETED, target=theme,
                 summary=f"Theme “{theme.name}” moved to the trash")
    _board_changed(theme.project, actor)
    return theme


def _descendant_ids(theme: Theme) -> list[int]:
    ids, frontier = [theme.id], [theme.id]
    while frontier:
        frontier = list(Theme.objects.filter(parent_id__in=frontier, deleted_at__isnull=True).values_list("id", flat=True))
        ids += frontier
    return ids


# ---------------------------------------------------------------- codes in themes

def _placements(*themes: Theme) -> dict[int, list[ThemeCode]]:
    """Each theme's code rows in order (by theme id), the theme rows locked first so two drags into one theme queue up.

    Locked in id order: two moves between the same themes in opposite directions wait for each other rather
    than deadlock.
    """
    ids = sorted({t.pk for t in themes})
    list(Theme.objects.select_for_update().filter(pk__in=ids).order_by("pk").values_list("pk", flat=True))
    rows: dict[int, list[ThemeCode]] = {pk: [] for pk in ids}
    for row in ThemeCode.objects.filter(theme_id__in=ids).select_for_update().order_by("position", "id"):
        rows[row.theme_id].append(row)
    return rows


def _check_placeable(theme: Theme, code: Code) -> None:
    if code.project_id != theme.project_id or code.deleted_at is not None:
        raise ValidationError({"code": "This code is not in the theme's project."})
    if code.merged_into_id is not None:
        raise ValidationError({"code": f"“{code.name}” was merged into “{code.merged_into.name}”, which holds its codings; "
                                       f"place that code instead."})


def _place(theme: Theme, rows: list[ThemeCode], *, actor, code: Code, before: Code | None) -> ThemeCode:
    """Put `code` among the theme's locked `rows`, before `before` or at the end."""
    existing = next((r for r in rows if r.code_id == code.id), None)
    if existing is None:
        existing = ThemeCode.objects.create(theme=theme, code=code, position=len(rows))
    else:
        rows.remove(existing)
    index = next((i for i, r in enumerate(rows) if before is not None and r.code_id == before.id), len(rows))
    rows.insert(index, existing)
    _renumber(rows)
    audit_record(project=theme.project, actor=actor, action=AuditEvent.Action.CHANGED, target=theme,
                 summary=f"Code “{code.name}” placed in theme “{theme.name}”")
    return existing


def _take_out(theme: Theme, rows: list[ThemeCode], *, actor, code: Code) -> None:
    """Take `code` out of the theme's locked `rows` (the callers checked it is there)."""
    row = next(r for r in rows if r.code_id == code.id)
    ThemeCode.objects.filter(pk=row.pk).delete()
    rows.remove(row)
    _renumber(rows)
    audit_record(project=theme.project, actor=actor, action=AuditEvent.Action.CHANGED, target=theme,
                 summary=f"Code “{code.name}” taken out of theme “{theme.name}”")


@transaction.atomic
def theme_add_code(*, theme: Theme, actor, code: Code, before: Code | None = None) -> ThemeCode:
    """Place a code in a theme (kept elsewhere too), before `before` or at the end; re-placing reorders."""
    _check_placeable(theme, code)
    placed = _place(theme, _placements(theme)[theme.pk], actor=actor, code=code, before=before)
    _board_changed(theme.project, actor)
    return placed


@transaction.atomic
def theme_remove_code(*, theme: Theme, actor, code: Code) -> None:
    """Take a code out of a theme (it stays in the codebook and in other themes); refused if it is not in it."""
    rows = _placements(theme)[theme.pk]
    if not any(r.code_id == code.id for r in rows):
        raise ValidationError({"code": f"“{code.name}” is not in theme “{theme.name}”."})
    _take_out(theme, rows, actor=actor, code=code)
    _board_changed(theme.project, actor)


@transaction.atomic
def theme_move_code(*, code: Code, source: Theme, target: Theme, actor, before: Code | None = None) -> ThemeCode:
    """Move a code from one theme to another (one step: out of `source`, into `target`)."""
    if source.pk == target.pk:
        return theme_add_code(theme=target, actor=actor, code=code, before=before)
    _check_placeable(target, code)
    rows = _placements(source, target)
    if not any(r.code_id == code.id for r in rows[source.pk]):  # moved away meanwhile, or never there
        raise ValidationError({"code": f"“{code.name}” is not in theme “{source.name}” (any more); nothing to move."})
    placed = _place(target, rows[target.pk], actor=actor, code=code, before=before)
    _take_out(source, rows[source.pk], actor=actor, code=code)
    _board_changed(target.project, actor)  # once for both themes
    return placed


@transaction.atomic
def theme_shift_code(*, theme: Theme, actor, code: Code, offset: int) -> None:
    """Move a code up/down (offset -1/+1) inside its theme (keyboard reordering)."""
    rows = _placements(theme)[theme.pk]
    index = next((i for i, r in enumerate(rows) if r.code_id == code.id), None)
    if index is None:
        raise ValidationError({"code": f"“{code.name}” is not in theme “{theme.name}”."})
    target = max(0, min(len(rows) - 1, index + offset))
    rows.insert(target, rows.pop(index))
    _renumber(rows)
    _board_changed(theme.project, actor)


# ---------------------------------------------------------------- merge / split

@transaction.atomic
def theme_merge(*, source: Theme, target: Theme, actor, review: Review | None = None) -> Theme:
    """Fold `source` into `target`: codes, sub-themes, exemplars, memos and thread move; source goes to the trash."""
    if source.pk == target.pk:
        raise ValidationError({"into": "A theme cannot be merged into itself."})
    if source.project_id != target.project_id:
        raise ValidationError({"into": "Both themes must belong to the same project."})
    if target.id in _descendant_ids(source):
        raise ValidationError({"into": "A theme cannot be merged into one of its own sub-themes."})
    have = set(ThemeCode.objects.filter(theme=target).values_list("code_id", flat=True))
    start = len(have)
    for offset, tc in enumerate(ThemeCode.objects.filter(theme=source).exclude(code_id__in=have).order_by("position")):
        ThemeCode.objects.create(theme=target, code_id=tc.code_id, position=start + offset)
    ThemeCode.objects.filter(theme=source).delete()
    Theme.objects.filter(parent=source, deleted_at__isnull=True).update(parent=target)
    last_exemplar = Exemplar.objects.filter(theme=target).aggregate(m=Max("position"))["m"] or 0
    # A quote pinned to both themes stays once, where the target has it.
    Exemplar.objects.filter(theme=source).filter(
        Exists(Exemplar.objects.filter(theme=target, turn=OuterRef("turn"), spans=OuterRef("spans")))).delete()
    Exemplar.objects.filter(theme=source).update(theme=target, position=F("position") + last_exemplar + 1)
    Memo.objects.filter(theme=source).update(theme=target)
    Comment.objects.filter(theme=source).update(theme=target)
    source.merged_into, source.deleted_at = target, timezone.now()
    source.save(update_fields=["merged_into", "deleted_at", "updated_at"])
    audit_record(project=target.project, actor=actor, action=AuditEvent.Action.CHANGED, target=target,
                 summary=f"Theme “{source.name}” merged into “{target.name}”",
                 data={"source": str(source.uuid), "review": str(review.uuid) if review else None})
    _board_changed(target.project, actor)
    return target


@transaction.atomic
def theme_split(*, theme: Theme, actor, name: str, codes: Iterable[Code], review: Review | None = None) -> Theme:
    """Split off a new sibling theme carrying the given codes out of `theme`."""
    codes = list(codes)
    inside = set(ThemeCode.objects.filter(theme=theme).values_list("code_id", flat=True))
    missing = [c.name for c in codes if c.id not in inside]
    if not codes or missing:
        raise ValidationError({"codes": f"Choose codes of “{theme.name}” to split off" + (f" (not in it: {', '.join(missing)})." if missing else ".")})
    new = theme_create(project=theme.project, actor=actor, name=name, parent=theme.parent, colour=theme.colour)
    for code in codes:
        theme_move_code(code=code, source=theme, target=new, actor=actor)
    audit_record(project=theme.project, actor=actor, action=AuditEvent.Action.CHANGED, target=theme,
                 summary=f"Theme “{theme.name}” split: “{new.name}” with {len(codes)} code{'s' if len(codes) != 1 else ''}",
                 data={"new": str(new.uuid), "review": str(review.uuid) if review else None})
    return new


# ---------------------------------------------------------------- exemplars

def quote_spans(source: str, offset: int, quote: str) -> list[list[int]]:
    """Offsets of each `[...]`-separated piece of `quote` inside `source`, in order; clear error if one is missing."""
    pieces = [p.strip() for p in quote.split(TRIM)]
    pieces = [p for p in pieces if p]
    if not pieces:
        raise ValidationError({"quote": "The quote is empty."})
    spans, cursor = [], 0
    for number, piece in enumerate(pieces, start=1):
        found = source.find(piece, cursor)
        if found < 0:
            where = "after the previous piece" if number > 1 else "in the excerpt"
            raise ValidationError({"quote": f"Piece {number} (“{piece[:60]}”) is not {where}, word for word. "
                                            f"Trim only with {TRIM}; do not reword."})
        spans.append([offset + found, offset + found + len(piece)])
        cursor = found + len(piece)
    return spans


@transaction.atomic
def exemplar_pin(*, theme: Theme, actor, segment: Segment, end_segment: Segment | None = None, quote: str = "") -> Exemplar:
    """Pin the excerpt starting at `segment` (through `end_segment`) to a theme, optionally trimmed with [...]."""
    if segment.interview.project_id != theme.project_id:
        raise ValidationError({"segment": "This excerpt is from another project."})
    turn = segment.turn
    last = end_segment if end_segment is not None and end_segment.turn_id == segment.turn_id else segment
    start, end = segment.start, max(segment.end, last.end)
    source = turn.text[start:end]
    spans = quote_spans(source, start, quote) if quote.strip() else [[start, end]]
    already = ValidationError({"quote": f"This quote is already pinned to “{theme.name}”."})
    if Exemplar.objects.filter(theme=theme, turn=turn, spans=spans).exists():
        raise already
    position = (Exemplar.objects.filter(theme=theme).aggregate(m=Max("position"))["m"] or 0) + 1
    exemplar = Exemplar(theme=theme, turn=turn, segment=segment, spans=spans, position=position, created_by=actor,
                        quote=" [...] ".join(turn.text[a:b] for a, b in spans))
    try:
        with transaction.atomic():
            exemplar.save()
    except IntegrityError:  # the same pin at the same moment (a double click) got there first
        raise already from None
    audit_record(project=theme.project, actor=actor, action=AuditEvent.Action.CREATED, target=exemplar,
                 summary=f"Exemplar pinned to “{theme.name}”")
    return exemplar


@transaction.atomic
def exemplar_trim(*, exemplar: Exemplar, actor, quote: str, note: str | None = None) -> Exemplar:
    """Re-trim an exemplar: each [...]-separated piece must appear, in order, in the quoted stretch of the turn."""
    start, end = exemplar.spans[0][0], exemplar.spans[-1][1]
    if exemplar.segment_id:
        # Allow widening back to the whole excerpt the exemplar was pinned from.
        start = min(start, exemplar.segment.start)
    source = exemplar.turn.text[start:end]
    exemplar.spans = quote_spans(source, start, quote)
    exemplar.quote = " [...] ".join(exemplar.turn.text[a:b] for a, b in exemplar.spans)
    if note is not None:
        exemplar.note = note
    if Exemplar.objects.filter(theme_id=exemplar.theme_id, turn_id=exemplar.turn_id, spans=exemplar.spans).exclude(pk=exemplar.pk).exists():
        raise ValidationError({"quote": "This trimmed quote is already pinned to this theme."})
    exemplar.save(update_fields=["spans", "quote", "note"])
    audit_record(project=exemplar.theme.project, actor=actor, action=AuditEvent.Action.CHANGED, target=exemplar,
                 summary=f"Exemplar of “{exemplar.theme.name}” trimmed")
    return exemplar


@transaction.atomic
def exemplar_shift(*, exemplar: Exemplar, actor, offset: int) -> None:
    rows = list(Exemplar.objects.filter(theme=exemplar.theme).select_for_update().order_by("position", "id"))
    index = next(i for i, r in enumerate(rows) if r.pk == exemplar.pk)
    rows.insert(max(0, min(len(rows) - 1, index + offset)), rows.pop(index))
    _renumber(rows)


@transaction.atomic
def exemplar_unpin(*, exemplar: Exemplar, actor) -> None:
    audit_record(project=exemplar.theme.project, actor=actor, action=AuditEvent.Action.DELETED, target=exemplar,
                 summary=f"Exemplar unpinned from “{exemplar.theme.name}”")
    exemplar.delete()


# ---------------------------------------------------------------- memos

class MemoConflict(Exception):
    """The memo changed since the editor loaded it; carries the newer revision."""

    def __init__(self, memo: Memo, latest: MemoRevision):
        super().__init__(f"Memo “{memo.title}” was changed by someone else (revision {latest.number}).")
        self.memo = memo
        self.latest = latest


@transaction.atomic
def memo_create(*, project: Project, actor, title: str, body: str, kind: str, interview=None, code=None,
                theme=None) -> Memo:
    """Write a new memo (revision 1) on the project or on one interview, code or theme."""
    targets = [t for t in (interview, code, theme) if t is not None]
    if len(targets) > 1:
        raise ValidationError({"target": "A memo is about one thing: the project, an interview, a code or a theme."})
    if targets and targets[0].project_id != project.id:
        raise ValidationError({"target": "The memo's target belongs to another project."})
    memo = Memo(project=project, title=(title or "").strip(), body=body or "", kind=kind, interview=interview,
                code=code, theme=theme, author=actor, updated_by=actor)
    memo.full_clean()
    memo.save()
    MemoRevision.objects.create(memo=memo, number=1, title=memo.title, body=memo.body, kind=memo.kind, author=actor)
    audit_record(project=project, actor=actor, action=AuditEvent.Action.CREATED, target=memo, summary=f"Memo “{memo.title}” written")
    return memo


@transaction.atomic
def memo_update(*, memo: Memo, actor, base_version: int, title: str, body: str, kind: str) -> Memo:
    """Save an edit as a new revision; raises MemoConflict if someone saved after `base_version`."""
    memo = Memo.objects.select_for_update().get(pk=memo.pk)
    if base_version != memo.version:
        raise MemoConflict(memo, memo.revisions.select_related("author").get(number=memo.version))
    if (title.strip(), body, kind) == (memo.title, memo.body, memo.kind):
        return memo
    memo.title, memo.body, memo.kind = title.strip(), body, kind
    memo.full_clean()
    memo.version += 1
    memo.updated_by = actor
    memo.save(update_fields=["title", "body", "kind", "version", "updated_by", "updated_at"])
    MemoRevision.objects.create(memo=memo, number=memo.version, title=memo.title, body=memo.body, kind=memo.kind, author=actor)
    audit_record(project=memo.project, actor=actor, action=AuditEvent.Action.CHANGED, target=memo,
                 summary=f"Memo “{memo.title}” revised (revision {memo.version})")
    return memo


@transaction.atomic
def memo_delete(*, memo: Memo, actor) -> Memo:
    """Move a memo to the trash (its revisions are kept)."""
    memo.deleted_at = timezone.now()
    memo.save(update_fields=["deleted_at"])
    audit_record(project=memo.project, actor=actor, action=AuditEvent.Action.DELETED, target=memo,
                 summary=f"Memo “{memo.title}” moved to the trash")
    return memo


# ---------------------------------------------------------------- discussion

@transaction.atomic
def comment_post(*, theme: Theme, actor, body: str, parent: Comment | None = None) -> Comment:
    """Post a comment (or a reply to a top-level comment); @mentions of members are recorded."""
    body = (body or "").strip()
    if not body:
        raise ValidationError({"body": "Write something before posting."})
    if parent is not None:
        if parent.theme_id != theme.id:
            raise ValidationError({"parent": "You can only reply within the same theme."})
        parent = parent.parent or parent  # replies stay one level deep
    comment = Comment.objects.create(theme=theme, parent=parent, author=actor, body=body)
    names = mentioned_usernames(body)
    if names:
        users = get_user_model().objects.filter(username__in=names, memberships__project_id=theme.project_id)
        comment.mentions.set(users)
    thread_mark_read(theme=theme, user=actor)
    live.publish(theme.project.uuid, "comment", theme=theme.uuid)
    return comment


@transaction.atomic
def comment_resolve(*, comment: Comment, actor, resolved: bool = True) -> Comment:
    """Resolve (or reopen) a thread; replies resolve with their top-level comment."""
    top = comment.parent or comment
    top.resolved_at = timezone.now() if resolved else None
    top.resolved_by = actor if resolved else None
    top.save(update_fields=["resolved_at", "resolved_by"])
    audit_record(project=top.theme.project, actor=actor, action=AuditEvent.Action.CHANGED, target=top, target_type="comment",
                 summary=f"Thread on “{top.theme.name}” {'resolved' if resolved else 'reopened'}")
    live.publish(top.theme.project.uuid, "comment", theme=top.theme.uuid)
    return top


def thread_mark_read(*, theme: Theme, user) -> None:
    """Remember that `user` has seen the thread up to now (unread markers)."""
    # One upsert rather than update_or_create's transaction, locked read and write: every theme page view runs it.
    ThreadRead.objects.bulk_create([ThreadRead(theme=theme, user=user, last_read_at=timezone.now())],
                                   update_conflicts=True, unique_fields=["theme", "user"], update_fields=["last_read_at"])


def mentions_mark_read(*, project: Project, user) -> datetime.datetime | None:
    """Remember that `user` has seen their mentions in `project` up to now; returns when they last had (None: never)."""
    seen, created = MentionsRead.objects.get_or_create(project=project, user=user, defaults={"last_read_at": timezone.now()})
    if created:
        return None
    previous = seen.last_read_at
    seen.last_read_at = timezone.now()
    seen.save(update_fields=["last_read_at"])
    return previous


# ---------------------------------------------------------------- reviews and snapshots

@transaction.atomic
def snapshot_take(*, project: Project, actor, label: str, review: Review | None = None) -> Snapshot:
    """Freeze the current theme structure."""
    return Snapshot.objects.create(project=project, review=review, label=label[:200], data=snapshots.structure_of(project), taken_by=actor)


@transaction.atomic
def review_create(*, project: Project, actor, title: str, date: datetime.date, attendees: Iterable = (),
                  themes: Iterable[Theme] = ()) -> Review:
    """Schedule a review meeting with its agenda, and snapshot the structure it starts from."""
    review = Review(project=project, title=(title or "").strip(), date=date, created_by=actor)
    review.full_clean()
    review.save()
    review.attendees.set(list(attendees))
    for position, theme in enumerate(dict.fromkeys(themes)):  # a theme is on an agenda once, however often sent
        AgendaItem.objects.create(review=review, theme=theme, theme_name=theme.name, position=position)
    snapshot_take(project=project, actor=actor, label=f"{review.title}: before", review=review)
    audit_record(project=project, actor=actor, action=AuditEvent.Action.CREATED, target=review, summary=f"Review meeting “{review.title}” scheduled")
    return review


@transaction.atomic
def review_update(*, review: Review, actor, title: str, date: datetime.date, attendees: Iterable, themes: Sequence[Theme]) -> Review:
    """Change a meeting's title, date, attendees and agenda (kept decisions stay); ReviewClosed once closed."""
    _open_review(review, "its title, date, attendees and agenda can no longer be changed")
    review.title, review.date = (title or "").strip(), date
    review.full_clean()
    review.save(update_fields=["title", "date"])
    review.attendees.set(list(attendees))
    # The form lists live themes only: items about merged, trashed or deleted themes are meeting history and stay.
    live_items = AgendaItem.objects.filter(review=review, theme__isnull=False, theme__deleted_at__isnull=True)
    live_items.exclude(theme__in=list(themes)).delete()
    existing = {a.theme_id: a for a in AgendaItem.objects.filter(review=review)}
    for position, theme in enumerate(dict.fromkeys(themes)):  # a theme is on an agenda once, however often sent
        item = existing.get(theme.id) or AgendaItem(review=review, theme=theme, theme_name=theme.name)
        item.position = position
        item.save()
    audit_record(project=review.project, actor=actor, action=AuditEvent.Action.CHANGED, target=review,
                 summary=f"Review meeting “{review.title}” agenda or attendees changed")
    return review


class ReviewNotesConflict(Exception):
    """The meeting notes were saved by someone else since the editor loaded them; carries the meeting as it is now."""

    def __init__(self, current: Review):
        super().__init__(f"The notes of “{current.title}” were saved by someone else since you opened them "
                         f"(now version {current.notes_version}). Nothing was overwritten.")
        self.current = current


class ReviewClosed(Exception):
    """The meeting is closed: its record (notes, agenda, attendees, decisions) can no longer change."""

    def __init__(self, review: Review, consequence: str = "its notes can no longer be changed"):
        super().__init__(f"The meeting “{review.title}” is closed; {consequence}.")


def _open_review(review: Review, consequence: str) -> Review:
    """The meeting locked, so closing waits for this write (and the write for closing); ReviewClosed once closed."""
    current = Review.objects.select_for_update().get(pk=review.pk)
    if current.status == Review.Status.CLOSED:
        raise ReviewClosed(current, consequence)
    return current


@transaction.atomic
def review_save_notes(*, review: Review, actor, notes: str, base_version: int) -> Review:
    """Save the meeting notes; raises ReviewNotesConflict if someone saved after `base_version`, ReviewClosed once closed."""
    current = _open_review(review, "its notes can no longer be changed")
    if base_version != current.notes_version:
        raise ReviewNotesConflict(current)
    review.notes, review.notes_version = notes, current.notes_version + 1
    review.notes_saved_at, review.notes_saved_by = timezone.now(), actor
    review.save(update_fields=["notes", "notes_version", "notes_saved_at", "notes_saved_by"])
    live.publish(review.project.uuid, "notes", review=review.uuid, by=actor.pk)
    return review


@transaction.atomic
def review_close(*, review: Review, actor) -> Snapshot:
    """Close the meeting and snapshot the structure it leaves behind; ReviewClosed if it already was."""
    _open_review(review, "closing it again changes nothing")
    _set_aside_unappliable(review, actor)
    review.status, review.closed_at = Review.Status.CLOSED, timezone.now()
    review.save(update_fields=["status", "closed_at"])
    audit_record(project=review.project, actor=actor, action=AuditEvent.Action.CHANGED, target=review, summary=f"Review meeting “{review.title}” closed")
    return snapshot_take(project=review.project, actor=actor, label=f"{review.title}: after", review=review)


def _theme_by_uuid(project: Project, value, field: str) -> Theme:
    try:
        if not isinstance(value, str | uuid.UUID):
            raise ValueError(value)
        return Theme.objects.for_project(project).get(uuid=value)
    except (Theme.DoesNotExist, ValidationError, ValueError):
        raise ValidationError({field: "Choose a theme of this project that is not in the trash."}) from None


def _codes_by_uuid(project: Project, values) -> list[Code]:
    wanted = _uuids(values)
    codes = list(Code.objects.for_project(project).filter(uuid__in=wanted)) if wanted else []
    if not wanted or len(codes) != len(wanted):
        raise ValidationError({"codes": "Choose one or more codes of this project."})
    return codes


def _uuids(values) -> set[uuid.UUID]:
    """The ids in a list of uuid strings; empty if it is not one (a string, a number, a malformed id)."""
    if not isinstance(values, list | tuple):
        return set()
    try:
        return {v if isinstance(v, uuid.UUID) else uuid.UUID(v) for v in values}
    except (AttributeError, TypeError, ValueError):
        return set()


# What each kind of decision reads from its payload; the API answers refusals of these under "payload".
DECISION_PAYLOAD_KEYS = {
    Decision.Kind.RENAME: ("name",), Decision.Kind.MERGE: ("into",), Decision.Kind.SPLIT: ("name", "codes"),
    Decision.Kind.REDEFINE: ("definition",), Decision.Kind.STATUS: ("status",), Decision.Kind.MOVE_CODES: ("to", "codes"),
}
_JSON_TYPES = {bool: "true or false", int: "a number", float: "a number", dict: "an object", list: "a list"}


def _payload_text(payload: dict, key: str, field: str, *, missing: str) -> str:
    """The text a decision puts in the theme's `field`, held now to that field's rules (so applying cannot fail or
    cut it): text, not empty unless the field may be, within its length, nothing PostgreSQL cannot store."""
    value = payload.get(key)
    if value is None:
        raise ValidationError({key: missing})
    if not isinstance(value, str):
        raise ValidationError({key: f"Must be text, not {_JSON_TYPES.get(type(value), type(value).__name__)}."})
    model_field = Theme._meta.get_field(field)
    if isinstance(model_field, models.CharField):  # a name is kept trimmed, a definition as written
        value = value.strip()
    if not value and not model_field.blank:
        raise ValidationError({key: missing})
    try:
        check_storable_text(value)
        model_field.run_validators(value)
    except ValidationError as exc:
        raise ValidationError({key: exc.messages}) from None
    return value


def decision_validate(*, review: Review, theme: Theme, kind: str, payload: dict) -> dict:
    """Check a decision's payload now, so a meeting never records something that cannot be applied as decided."""
    project = review.project
    if not isinstance(payload, dict):
        raise ValidationError({"payload": "Send the decision's details as an object, e.g. {\"name\": \"…\"} for a rename."})
    if kind == Decision.Kind.RENAME:
        name = _payload_text(payload, "name", "name", missing="Give the new name.")
        # Checked now so the meeting hears it while deciding; applying checks again (a theme may take the name meanwhile).
        return {"name": _decided_name(review, name, exclude=theme)}
    if kind == Decision.Kind.MERGE:
        into = _theme_by_uuid(project, payload.get("into"), "into")
        if into.pk == theme.pk:
            raise ValidationError({"into": "A theme cannot be merged into itself."})
        return {"into": str(into.uuid), "into_name": into.name}
    if kind == Decision.Kind.SPLIT:
        name = _decided_name(review, _payload_text(payload, "name", "name", missing="Name the theme that is split off."))
        return {"name": name, "codes": [str(c.uuid) for c in _codes_by_uuid(project, payload.get("codes"))]}
    if kind == Decision.Kind.REDEFINE:
        return {"definition": _payload_text(payload, "definition", "definition",
                                            missing="Give the new definition (an empty text clears it).")}
    if kind == Decision.Kind.STATUS:
        if not isinstance(payload.get("status"), str) or payload["status"] not in Theme.Status.values:
            raise ValidationError({"status": "Choose a status."})
        return {"status": payload["status"]}
    if kind == Decision.Kind.MOVE_CODES:
        to = _theme_by_uuid(project, payload.get("to"), "to")
        return {"to": str(to.uuid), "to_name": to.name, "codes": [str(c.uuid) for c in _codes_by_uuid(project, payload.get("codes"))]}
    raise ValidationError({"kind": f"“{kind}” is not a kind of decision." if kind else "Choose what kind of decision this is."})


def _decided_name(review: Review, name: str, *, exclude: Theme | None = None) -> str:
    """A name for a rename or a split, checked as any theme name, except that it may be one a theme holds now if this
    meeting has decided that theme gives it up (merge "A" into "B", then rename "C" to "A"): applying waits for that."""
    holder = _theme_named(review.project, name, exclude=exclude)
    if holder is not None and _decision_freeing_name(review, holder) is not None:
        return normalised_name(name)
    return theme_name_checked(review.project, name, exclude=exclude)


def _decision_freeing_name(review: Review, theme: Theme) -> Decision | None:
    """This meeting's pending decision that takes the theme's name away (a merge into another theme, a rename), if any."""
    pending = Decision.objects.filter(review=review, theme=theme, applied_at__isnull=True, declined_at__isnull=True)
    for decision in pending.filter(kind__in=(Decision.Kind.MERGE, Decision.Kind.RENAME)).order_by("created_at"):
        if decision.kind == Decision.Kind.MERGE or decision.payload["name"].casefold() != theme.name.casefold():
            return decision
    return None


def _name_still_held(decision: Decision, exclude: Theme | None) -> None:
    """Applying a rename or split to a name another theme still has, which this meeting decided it gives up: say which
    decision to apply first, rather than only that the name is taken."""
    name = decision.payload["name"]
    holder = _theme_named(decision.review.project, name, exclude=exclude)
    if holder and (first := _decision_freeing_name(decision.review, holder)):
        what = (f"merge it into “{first.payload['into_name']}”" if first.kind == Decision.Kind.MERGE
                else f"rename it to “{first.payload['name']}”")
        raise ValidationError({"decision": f"Theme “{holder.name}” still has the name “{name}”: apply the decision to {what} "
                                           "first. Nothing was changed."})


@transaction.atomic
def decision_record(*, review: Review, theme: Theme, actor, kind: str, payload: dict, note: str = "",
                    seen_version: int | str | None = None) -> Decision:
    """Record what the meeting decided about a theme (not yet applied), as of the theme version the person saw.

    `seen_version` is the version on the page where the decision was made (missing: the current one); an older one is
    kept, so applying asks first about the edit made while the page was open.
    """
    if theme.project_id != review.project_id:
        raise ValidationError({"theme": "The theme belongs to another project."})
    _open_review(review, "no more decisions can be recorded in it")
    seen = _seen_version(theme, seen_version)
    clean = decision_validate(review=review, theme=theme, kind=kind, payload=payload)
    decision = Decision.objects.create(review=review, theme=theme, theme_name=theme.name, theme_version=seen, kind=kind,
                                       payload=clean, note=note, created_by=actor)
    live.publish(review.project.uuid, "decision", review=review.uuid, theme=theme.uuid)
    return decision


def _seen_version(theme: Theme, value: int | str | None) -> int:
    """The theme version a decision was made on: a whole number from 1 up to the theme's current version."""
    if value is None or value == "":
        return theme.version
    try:
        seen = value if isinstance(value, int) and not isinstance(value, bool) else int(str(value).strip())
    except ValueError:
        seen = None
    if seen is None or not 1 <= seen <= theme.version:
        raise ValidationError({"theme_version": f"The theme version the decision was made on must be a whole number from 1 to "
                                                f"{theme.version} (the theme's current version), not “{value}”."})
    return seen


def decision_stale_notice(decision: Decision, theme: Theme) -> str:
    """What to tell someone whose decision was made on a theme edited while their page was open, or ""."""
    if decision.theme_version is None or decision.theme_version >= theme.version:
        return ""
    notice = f"The theme changed since you opened this page (now version {theme.version})"
    return notice + ("; applying this decision will show what changed and ask first." if decision.kind in VERSION_CHECKED_KINDS else ".")


# Kinds that write over the theme's name or definition, or fold or split the theme the meeting looked at: if the
# theme was edited after the meeting, applying one asks first. A status change or a code move overwrites no text.
VERSION_CHECKED_KINDS = {Decision.Kind.RENAME, Decision.Kind.REDEFINE, Decision.Kind.MERGE, Decision.Kind.SPLIT}


class DecisionConflict(ThemeConflict):
    """The theme was edited after the meeting recorded the decision; carries the decision and the theme as it is now."""

    def __init__(self, decision: Decision, current: Theme):
        super().__init__(current)
        self.decision = decision
        since = f"since version {decision.theme_version}" if decision.theme_version else "since the meeting"
        self.args = (f"Theme “{current.name}” was edited after this decision was recorded ({since}, now version {current.version}). "
                     "Nothing was changed; apply it anyway or keep the current text.",)


CLOSED_DECISIONS = ("its decisions can no longer be applied or set aside; "
                    "to act on one now, record it again in an open meeting")


@dataclass(frozen=True)
class DecisionOutcome:
    decision: Decision
    message: str  # what applying did, for the person who clicked (a no-op says so)


def _pending_decision(decision: Decision) -> Decision:
    """The decision locked, if it is still pending; otherwise a clear refusal."""
    decision = Decision.objects.select_for_update(of=("self",)).select_related("review__project", "theme__merged_into").get(pk=decision.pk)
    if decision.applied_at is not None:
        raise ValidationError({"decision": "This decision has already been applied."})
    if decision.declined_at is not None:
        raise ValidationError({"decision": f"This decision was not applied: {decision.declined_reason}"})
    return decision


def _applicable_decision(decision: Decision) -> Decision:
    """The decision locked, if it can still be applied; otherwise a clear refusal."""
    decision = _pending_decision(decision)
    theme = decision.theme
    if theme is None:
        raise ValidationError({"decision": f"Theme “{decision.theme_label}” was deleted for good; this decision can no longer be applied."})
    if theme.deleted_at is not None:
        state = "was merged into another theme" if theme.merged_into_id else "is in the trash; restore it first"
        raise ValidationError({"decision": f"Theme “{theme.name}” {state}."})
    if reason := decision.cannot_apply:  # the theme it merges into or moves codes to is gone
        then = "restore it from the trash first, or set the decision aside" if decision.trashed_theme else "set the decision aside"
        raise ValidationError({"decision": f"This decision cannot be applied: {reason}; {then}. Nothing was changed."})
    return decision


def _already_done(decision: Decision, theme: Theme) -> str:
    """Why applying would change nothing (the theme already says what was decided), or ""."""
    data = decision.payload
    if decision.kind == Decision.Kind.RENAME and theme.name == data["name"]:
        return f"Theme is already named “{theme.name}”; nothing to change, marked as applied."
    if decision.kind == Decision.Kind.REDEFINE and theme.definition == data["definition"]:
        return f"Theme “{theme.name}” already has this definition; nothing to change, marked as applied."
    if decision.kind == Decision.Kind.STATUS and theme.status == data["status"]:
        return f"Theme “{theme.name}” is already {theme.get_status_display().lower()}; nothing to change, marked as applied."
    return ""


@transaction.atomic
def decision_apply(*, decision: Decision, actor, confirmed_version: int | None = None) -> DecisionOutcome:
    """Carry out a recorded decision on the themes, all or nothing.

    Raises DecisionConflict if a rename, redefine, merge or split would act on a theme edited since the decision was
    recorded, unless `confirmed_version` is the theme's current version (someone saw the current text and confirmed).
    Raises ReviewClosed once the meeting is closed: the snapshot taken then is what the meeting left behind.
    """
    _open_review(decision.review, CLOSED_DECISIONS)
    decision = _applicable_decision(decision)
    review, project = decision.review, decision.review.project
    theme = Theme.objects.select_for_update().get(pk=decision.theme_id)  # edits queue behind the check, not after it
    message = _already_done(decision, theme)
    if not message and decision.kind in VERSION_CHECKED_KINDS:
        seen = confirmed_version if confirmed_version is not None else decision.theme_version
        if seen != theme.version:
            raise DecisionConflict(decision, theme)
    if not message:
        others = Decision.objects.filter(review=review, applied_at__isnull=True, declined_at__isnull=True).exclude(pk=decision.pk)
        versions_before = dict(Theme.objects.filter(pk__in=others.values("theme_id")).values_list("pk", "version"))
        message = _carry_out(decision, theme, actor)
        _carry_meeting_versions_forward(others, versions_before)
    decision.applied_at, decision.applied_by = timezone.now(), actor
    decision.save(update_fields=["applied_at", "applied_by"])
    audit_record(project=project, actor=actor, action=AuditEvent.Action.CHANGED, target=theme,
                 summary=f"Decision applied to “{theme.name}”: {decision.get_kind_display().lower()}" + (f" ({message})" if message else ""),
                 data={"review": str(review.uuid), "decision": str(decision.uuid)})
    live.publish(project.uuid, "decision", review=review.uuid, theme=theme.uuid)
    return DecisionOutcome(decision=decision, message=message or "Decision applied.")


def _carry_meeting_versions_forward(others, versions_before: dict[int, int]) -> None:
    """A meeting's own decisions are not a colleague's edit: its other pending decisions on a theme this one
    changed (rename, then merge the renamed theme) move to the theme's new version instead of conflicting."""
    versions_after = dict(Theme.objects.filter(pk__in=list(versions_before)).values_list("pk", "version"))
    for theme_id, before in versions_before.items():
        if versions_after.get(theme_id, before) != before:
            others.filter(theme_id=theme_id, theme_version=before).update(theme_version=versions_after[theme_id])


def _carry_out(decision: Decision, theme: Theme, actor) -> str:
    """Make the decided change on the (locked, current) theme; returns a note when only part of it was still to do."""
    review, data, project = decision.review, decision.payload, decision.review.project
    if decision.kind in (Decision.Kind.RENAME, Decision.Kind.SPLIT):
        _name_still_held(decision, exclude=theme if decision.kind == Decision.Kind.RENAME else None)
    if decision.kind == Decision.Kind.RENAME:
        theme_update(theme=theme, actor=actor, base_version=None, name=data["name"], review=review)
    elif decision.kind == Decision.Kind.REDEFINE:
        theme_update(theme=theme, actor=actor, base_version=None, definition=data["definition"], review=review)
    elif decision.kind == Decision.Kind.STATUS:
        theme_set_status(theme=theme, actor=actor, status=data["status"], reason=decision.note or f"decided in {review.title}", review=review)
    elif decision.kind == Decision.Kind.MERGE:
        theme_merge(source=theme, target=_theme_by_uuid(project, data["into"], "into"), actor=actor, review=review)
    elif decision.kind == Decision.Kind.SPLIT:
        theme_split(theme=theme, actor=actor, name=data["name"], codes=_codes_by_uuid(project, data["codes"]), review=review)
    elif decision.kind == Decision.Kind.MOVE_CODES:
        return _move_decided_codes(decision, theme, actor)
    return ""


def _move_decided_codes(decision: Decision, theme: Theme, actor) -> str:
    """Move the decided codes still in the theme; codes moved since are left where they are. Returns a note on those."""
    project = decision.review.project
    target = _theme_by_uuid(project, decision.payload["to"], "to")
    codes = _codes_by_uuid(project, decision.payload["codes"])
    inside = set(ThemeCode.objects.filter(theme=theme).values_list("code_id", flat=True))
    to_move = [c for c in codes if c.id in inside]
    for code in to_move:
        theme_move_code(code=code, source=theme, target=target, actor=actor)
    gone = [c.name for c in codes if c.id not in inside]
    if not gone:
        return ""
    if not to_move:
        return f"The codes are no longer in “{theme.name}” ({', '.join(gone)}); nothing to move."
    return f"Moved {len(to_move)} code{'s' if len(to_move) != 1 else ''}; {', '.join(gone)} had already left “{theme.name}” and stayed where they are."


@transaction.atomic
def decision_decline(*, decision: Decision, actor, reason: str = "") -> Decision:
    """Keep the theme as it is now (or set aside a decision that can no longer be applied): the decision stays on
    the meeting's record, marked not applied, with why."""
    _open_review(decision.review, CLOSED_DECISIONS)
    decision = _pending_decision(decision)
    theme = decision.theme
    default = f"Cannot be applied: {decision.cannot_apply}." if decision.cannot_apply else \
        f"Kept the theme's current text (version {theme.version}) instead."
    decision.declined_reason = (reason or "").strip() or default
    decision.declined_at, decision.declined_by = timezone.now(), actor
    decision.save(update_fields=["declined_at", "declined_by", "declined_reason"])
    audit_record(project=decision.review.project, actor=actor, action=AuditEvent.Action.CHANGED, target=theme or decision.review,
                 summary=f"Decision on “{decision.theme_label}” not applied ({decision.get_kind_display().lower()}): {decision.declined_reason}",
                 data={"review": str(decision.review.uuid), "decision": str(decision.uuid)})
    live.publish(decision.review.project.uuid, "decision", review=decision.review.uuid, **({"theme": theme.uuid} if theme else {}))
    return decision


def _set_aside_unappliable(review: Review, actor) -> None:
    """At closing, a pending decision that can no longer be applied goes on the record as set aside, with why, rather
    than as one the meeting left undone."""
    now = timezone.now()
    pending = Decision.objects.filter(review=review, applied_at__isnull=True, declined_at__isnull=True).select_related("theme__merged_into")
    for decision in queries.with_target_themes(list(pending)):
        if reason := decision.cannot_apply:
            decision.declined_at, decision.declined_by, decision.declined_reason = now, actor, f"Cannot be applied: {reason}."
            decision.save(update_fields=["declined_at", "declined_by", "declined_reason"])
