from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction

from projects.audit import audit_record
from projects.models import AuditEvent, Membership, Project, Role

User = get_user_model()


@transaction.atomic
def project_create(*, owner, name: str, description: str = "", research_question: str = "") -> Project:
    """Create a project with its creator as owner."""
    project = Project(name=name.strip(), description=description, research_question=research_question, created_by=owner)
    project.full_clean()
    project.save()
    Membership.objects.create(project=project, user=owner, role=Role.OWNER)
    audit_record(project=project, actor=owner, action=AuditEvent.Action.CREATED, target=project, summary=f"Project “{project.name}” created")
    return project


@transaction.atomic
def membership_add(*, project: Project, actor, username_or_email: str, role: str) -> Membership:
    """Add an existing user to the project with a role."""
    ident = username_or_email.strip()
    user = User.objects.filter(username__iexact=ident).first() or User.objects.filter(email__iexact=ident).first()
    if user is None:
        raise ValidationError({"user": f"No account with the username or email “{ident}”. Ask them to sign up first."})
    if Membership.objects.filter(project=project, user=user).exists():
        raise ValidationError({"user": f"{user.username} is already a member of this project."})
    membership = Membership(project=project, user=user, role=role)
    membership.full_clean()
    membership.save()
    audit_record(project=project, actor=actor, action=AuditEvent.Action.CREATED, target=membership, target_type="membership", summary=f"{user.username} added as {role}")
    return membership


def _ensure_another_owner(membership: Membership) -> None:
    others = Membership.objects.filter(project=membership.project, role=Role.OWNER).exclude(pk=membership.pk)
    if membership.role == Role.OWNER and not others.exists():
        raise ValidationError({"role": "A project needs at least one owner. Make someone else owner first."})


@transaction.atomic
def membership_change_role(*, membership: Membership, actor, role: str) -> Membership:
    """Change a member's role; the last owner cannot be demoted."""
    if role not in Role.values:
        raise ValidationError({"role": f"“{role}” is not a role (owner, analyst, viewer)."})
    if role != Role.OWNER:
        _ensure_another_owner(membership)
    old = membership.role
    membership.role = role
    membership.save(update_fields=["role", "updated_at"])
    audit_record(project=membership.project, actor=actor, action=AuditEvent.Action.CHANGED, target=membership, target_type="membership", summary=f"{membership.user.username}: {old} → {role}")
    return membership


@transaction.atomic
def membership_remove(*, membership: Membership, actor) -> None:
    """Remove a member; the last owner cannot be removed."""
    _ensure_another_owner(membership)
    audit_record(project=membership.project, actor=actor, action=AuditEvent.Action.DELETED, target=membership, target_type="membership", summary=f"{membership.user.username} removed")
    membership.delete()


@transaction.atomic
def membership_update_positionality(*, membership: Membership, positionality: str) -> Membership:
    membership.positionality = positionality
    membership.save(update_fields=["positionality", "updated_at"])
    return membership
