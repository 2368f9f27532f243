"""The project trash: interviews, codes, themes, memos and probes deleted by their apps' services
(which set `deleted_at`) are listed, restored and purged here.

projects is the lowest app and may not import the others, so each app registers its
trashable models in its AppConfig.ready():

    from projects.trash import trash_register
    trash_register("code", "coding.Code", title_field="name", unique_field="name")

Trashing never deletes what hangs off an object (codings, theme codes, memos, turns):
restoring clears `deleted_at` and everything attached is visible again. Objects trashed
in the same operation (a theme and its sub-themes) share one `deleted_at` and are
restored together.

Some rows have `deleted_at` set without being trash: a theme merged into another stays
so that old links lead to its target. `not_trash` names them; they are never listed,
restored or purged here.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from django.apps import apps
from django.core.exceptions import ValidationError
from django.db import IntegrityError, models, transaction
from django.utils import timezone

from projects import live
from projects.audit import audit_record
from projects.models import AuditEvent, Project


@dataclass(frozen=True)
class TrashKind:
    name: str  # "code": the form value and audit target type
    model_label: str  # "coding.Code"
    title_field: str
    # A field unique among live rows (a code's name): restoring renames on a clash.
    unique_field: str = ""
    # Lookups matching rows that have deleted_at set but are not trash ({"merged_into__isnull": False}).
    not_trash: tuple[tuple[str, Any], ...] = ()
    # Live event kinds (projects.live) that open pages showing these objects follow: a restore or purge tells them.
    live_kinds: tuple[str, ...] = ()

    @property
    def model(self) -> type[models.Model]:
        return apps.get_model(self.model_label)

    def title(self, obj: models.Model) -> str:
        return str(getattr(obj, self.title_field) or f"untitled {self.name}")

    def trashed(self, project: Project) -> models.QuerySet:
        rows = self.model._default_manager.filter(project=project, deleted_at__isnull=False)
        return rows.exclude(**dict(self.not_trash)) if self.not_trash else rows


_registry: dict[str, TrashKind] = {}


def trash_register(name: str, model_label: str, *, title_field: str, unique_field: str = "",
                   not_trash: dict[str, Any] | None = None, live_kinds: tuple[str, ...] = ()) -> None:
    """Make a model with `project` and `deleted_at` fields restorable from the project trash."""
    _registry[name] = TrashKind(name=name, model_label=model_label, title_field=title_field, unique_field=unique_field,
                                not_trash=tuple((not_trash or {}).items()), live_kinds=live_kinds)


def _announce(project: Project, items: list[TrashItem]) -> None:
    """Tell open pages that follow what came back from (or left) the trash: a board, a codebook."""
    for kind in sorted({k for item in items for k in item.kind.live_kinds}):
        live.publish(project.uuid, kind)


def trash_kinds() -> list[TrashKind]:
    return list(_registry.values())


def trash_kind(name: str) -> TrashKind:
    try:
        return _registry[name]
    except KeyError:
        raise ValidationError({"kind": f"“{name}” is not something the trash holds."}) from None


@dataclass
class TrashItem:
    kind: TrashKind
    obj: Any
    deleted_by: Any = None

    @property
    def title(self) -> str:
        return self.kind.title(self.obj)

    @property
    def deleted_at(self) -> dt.datetime:
        return self.obj.deleted_at


def trash_items(project: Project) -> list[TrashItem]:
    """Everything in the project's trash, most recently deleted first, with who deleted it."""
    return TrashList(project)[:]


class TrashList:
    """The project's trash (of some kinds), most recently deleted first, read a slice at a time.

    It counts and slices like a QuerySet, for the pages' paginate() and the API's paginator.
    A slice reads each kind's newest `stop` rows: whatever the mix of kinds, they hold it.
    """

    def __init__(self, project: Project, kinds: list[TrashKind] | None = None) -> None:
        self.project, self.kinds = project, trash_kinds() if kinds is None else kinds

    def count(self) -> int:
        return sum(kind.trashed(self.project).count() for kind in self.kinds)

    def __len__(self) -> int:
        return self.count()

    def __getitem__(self, bounds: slice) -> list[TrashItem]:
        items = [TrashItem(kind, obj) for kind in self.kinds
                 for obj in kind.trashed(self.project).order_by("-deleted_at", "-pk")[:bounds.stop]]
        items = sorted(items, key=lambda item: item.deleted_at, reverse=True)[bounds]
        _attach_deleters(self.project, items)
        return items


def _attach_deleters(project: Project, items: list[TrashItem]) -> None:
    # One query for all items: the latest "deleted" audit event of each target.
    ids = [str(getattr(i.obj, "uuid", i.obj.pk)) for i in items]
    events = (
        AuditEvent.objects.filter(project=project, action=AuditEvent.Action.DELETED, target_id__in=ids)
        .select_related("actor").order_by("target_id", "-created_at")
    )
    latest: dict[str, Any] = {}
    for event in events:
        latest.setdefault(event.target_id, event.actor)
    for item in items:
        item.deleted_by = latest.get(str(getattr(item.obj, "uuid", item.obj.pk)))


def _get_trashed(kind: TrashKind, project: Project, uuid: UUID | str) -> models.Model:
    try:
        return kind.trashed(project).get(uuid=uuid)
    except (kind.model.DoesNotExist, ValidationError, ValueError):
        raise ValidationError({"uuid": f"That {kind.name} is not in this project's trash (restored or purged already?)."}) from None


def _kind_of(obj: models.Model) -> TrashKind:
    for kind in trash_kinds():
        if kind.model_label == obj._meta.label:
            return kind
    raise ValueError(f"{obj._meta.label} is not registered with the trash (trash_register in its AppConfig.ready)")


@transaction.atomic
def trash_move(*, obj: models.Model, actor: Any) -> models.Model:
    """Move one object to the trash (for apps without their own delete service); nothing attached is deleted."""
    kind = _kind_of(obj)
    obj.deleted_at = timezone.now()
    obj.save(update_fields=["deleted_at"])
    audit_record(project=obj.project, actor=actor, action=AuditEvent.Action.DELETED, target=obj, target_type=kind.name,
                 summary=f"{kind.name.capitalize()} “{kind.title(obj)}” moved to the trash")
    _announce(obj.project, [TrashItem(kind, obj)])
    return obj


@transaction.atomic
def trash_restore(*, project: Project, actor: Any, kind: str, uuid: UUID | str) -> list[TrashItem]:
    """Restore one trashed object and whatever was trashed in the same operation; returns all restored."""
    trash_kind_ = trash_kind(kind)
    obj = _get_trashed(trash_kind_, project, uuid)
    moment = obj.deleted_at
    batch = [TrashItem(k, o) for k in trash_kinds() for o in k.trashed(project).filter(deleted_at=moment)]
    for item in batch:
        renamed = _undelete(item)
        note = f" (renamed “{renamed}”: the name was taken)" if renamed else ""
        audit_record(project=project, actor=actor, action=AuditEvent.Action.RESTORED, target=item.obj,
                     target_type=item.kind.name, summary=f"{item.kind.name.capitalize()} “{item.title}” restored from the trash{note}")
    _announce(project, batch)
    return batch


def _undelete(item: TrashItem) -> str:
    """Clear deleted_at; if a live object took the unique name meanwhile, add “(restored)”."""
    obj, field = item.obj, item.kind.unique_field
    obj.deleted_at = None
    try:
        with transaction.atomic():
            obj.save(update_fields=["deleted_at"])
        return ""
    except IntegrityError:
        if not field:
            raise
    base = getattr(obj, field)
    max_length = obj._meta.get_field(field).max_length or 200
    for n in range(1, 100):
        suffix = " (restored)" if n == 1 else f" (restored {n})"
        candidate = base[: max_length - len(suffix)] + suffix
        # Case-insensitively: a unique name may be one whatever its case (themes), and the services check names so.
        if not item.kind.model._default_manager.filter(project_id=obj.project_id, deleted_at__isnull=True,
                                                       **{f"{field}__iexact": candidate}).exists():
            setattr(obj, field, candidate)
            obj.save(update_fields=["deleted_at", field])
            return candidate
    raise ValidationError(f"Could not find a free name to restore “{base}”; rename the live one first.")


@transaction.atomic
def trash_purge(*, project: Project, actor: Any, kind: str, uuid: UUID | str) -> None:
    """Delete one trashed object for good, with everything attached to it."""
    trash_kind_ = trash_kind(kind)
    item = TrashItem(trash_kind_, _get_trashed(trash_kind_, project, uuid))
    _purge(project, actor, item)
    _announce(project, [item])


@transaction.atomic
def trash_empty(*, project: Project, actor: Any) -> int:
    """Delete everything in the project's trash for good; returns how many items went."""
    items = trash_items(project)
    # Memos and other leaves first, so cascades from their parents do not remove them unaudited.
    order = {name: i for i, name in enumerate(["memo", "theme", "code", "interview"])}
    for item in sorted(items, key=lambda i: order.get(i.kind.name, -1)):
        _purge(project, actor, item)
    _announce(project, items)
    return len(items)


def _purge(project: Project, actor: Any, item: TrashItem) -> None:
    title = item.title
    try:
        item.obj.delete()
    except (models.ProtectedError, models.RestrictedError) as exc:
        raise ValidationError(f"{item.kind.name.capitalize()} “{title}” is still used elsewhere and cannot be purged: {exc.args[0]}") from None
    # The deleted instance keeps its uuid, which the audit event names as its target.
    audit_record(project=project, actor=actor, action=AuditEvent.Action.PURGED, target=item.obj, target_type=item.kind.name,
                 summary=f"{item.kind.name.capitalize()} “{title}” deleted permanently from the trash")
