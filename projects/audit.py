"""Recording the project's audit trail. Services call audit_record inside their transaction."""

from __future__ import annotations

from typing import Any

from projects.models import AuditEvent, Project


def audit_record(
    *,
    project: Project,
    actor: Any,
    action: str,
    target: Any = None,
    target_type: str = "",
    target_id: str = "",
    summary: str,
    data: dict | None = None,
) -> AuditEvent:
    """Record one audit event; target may be a model instance (type and uuid/pk are taken from it)."""
    if target is not None:
        target_type = target_type or target._meta.model_name
        target_id = str(getattr(target, "uuid", None) or target.pk)
    return AuditEvent.objects.create(
        project=project,
        actor=actor if getattr(actor, "is_authenticated", False) else None,
        action=action,
        target_type=target_type,
        target_id=target_id,
        summary=summary[:500],
        data=data or {},
    )


def audit_record_many(*, project: Project, actor: Any, action: str, target_type: str, targets: list[tuple[str, str]]) -> None:
    """Record one event per (target_id, summary) in one INSERT: bulk imports stay one round trip."""
    actor = actor if getattr(actor, "is_authenticated", False) else None
    AuditEvent.objects.bulk_create([
        AuditEvent(project=project, actor=actor, action=action, target_type=target_type, target_id=str(target_id), summary=summary[:500])
        for target_id, summary in targets
    ], batch_size=1000)
