from __future__ import annotations

import datetime as dt
import logging
import secrets
from typing import NamedTuple

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.core.validators import validate_email
from django.db import transaction
from django.utils import timezone

from projects.audit import audit_record
from projects.models import AuditEvent, Invitation, Membership, Project, Role
from projects.names import name_kept_unique

User = get_user_model()
logger = logging.getLogger(__name__)

INVITATION_LIFETIME = dt.timedelta(days=14)


class IssuedInvitation(NamedTuple):
    """A new invitation and its token: the only moment the token exists in clear."""

    invitation: Invitation
    token: str


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
        raise ValidationError({"user": f"No account with the username or email “{ident}”. To invite someone new, enter their email address."})
    if Membership.objects.filter(project=project, user=user).exists():
        raise ValidationError({"user": f"{user.username} is already a member of this project."})
    membership = Membership(project=project, user=user, role=role)
    membership.full_clean()
    with name_kept_unique("unique_membership", ValidationError({"user": f"{user.username} is already a member of this project."})):
        membership.save()  # a colleague (or another tab) may have added them since the check
    audit_record(project=project, actor=actor, action=AuditEvent.Action.CREATED, target=membership, target_type="membership", summary=f"{user.username} added as {role}")
    return membership


def _ensure_another_owner(membership: Membership) -> None:
    # Only owners who can log in count: an inactive account (a departed colleague)
    # cannot run the project.
    if membership.role != Role.OWNER or not membership.user.is_active:
        return
    # Owners' changes to one project take turns: two owners stepping down at once must not both
    # see the other as the remaining owner.
    Project.objects.select_for_update().filter(pk=membership.project_id).first()
    others = Membership.objects.filter(project=membership.project, role=Role.OWNER, user__is_active=True).exclude(pk=membership.pk)
    if not others.exists():
        raise ValidationError({"role": "A project needs at least one owner who can log in. Make another active member owner first."})


@transaction.atomic
def membership_change_role(*, membership: Membership, actor, role: str) -> Membership:
    """Change a member's role; the last active owner cannot be demoted."""
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
    """Remove a member; the last active owner cannot be removed."""
    _ensure_another_owner(membership)
    audit_record(project=membership.project, actor=actor, action=AuditEvent.Action.DELETED, target=membership, target_type="membership", summary=f"{membership.user.username} removed")
    membership.delete()


@transaction.atomic
def membership_update_positionality(*, membership: Membership, positionality: str) -> Membership:
    membership.positionality = positionality
    membership.save(update_fields=["positionality", "updated_at"])
    return membership


def _check_role(role: str) -> None:
    if role not in Role.values:
        raise ValidationError({"role": f"“{role}” is not a role (owner, analyst, viewer)."})


@transaction.atomic
def membership_invite(*, project: Project, actor, username_or_email: str, role: str) -> Membership | IssuedInvitation:
    """Add an existing user directly; invite an email address that has no account yet."""
    ident = username_or_email.strip()
    known = User.objects.filter(username__iexact=ident).exists() or User.objects.filter(email__iexact=ident).exists()
    if known or "@" not in ident:
        return membership_add(project=project, actor=actor, username_or_email=ident, role=role)
    return invitation_create(project=project, actor=actor, email=ident, role=role)


@transaction.atomic
def invitation_create(*, project: Project, actor, email: str, role: str) -> IssuedInvitation:
    """Invite an email address to the project; the link stays valid for INVITATION_LIFETIME."""
    email = email.strip().lower()
    try:
        validate_email(email)
    except ValidationError:
        raise ValidationError({"user": f"“{email}” is not a valid email address."}) from None
    _check_role(role)
    pending = Invitation.objects.pending().filter(project=project, email=email).first()
    if pending is not None:
        raise ValidationError({"user": f"{email} already has a pending invitation (as {pending.role}). "
                                       "Re-send or withdraw it in the list of invitations below."})
    token = secrets.token_urlsafe(32)
    invitation = Invitation(project=project, email=email, role=role, token_hash=Invitation.hash_token(token),
                            created_by=actor, expires_at=timezone.now() + INVITATION_LIFETIME)
    invitation.full_clean()
    invitation.save()
    audit_record(project=project, actor=actor, action=AuditEvent.Action.CREATED, target=invitation,
                 summary=f"{email} invited as {role}")
    return IssuedInvitation(invitation, token)


def _ensure_pending(invitation: Invitation) -> None:
    if invitation.accepted_at or invitation.revoked_at:
        raise ValidationError({"invitation": f"The invitation to {invitation.email} was already "
                                             f"{'accepted' if invitation.accepted_at else 'withdrawn'}."})


@transaction.atomic
def invitation_regenerate(*, invitation: Invitation, actor) -> IssuedInvitation:
    """Replace the invitation's link with a new one valid for another INVITATION_LIFETIME; the old link stops working."""
    invitation = Invitation.objects.select_for_update().get(pk=invitation.pk)
    _ensure_pending(invitation)
    token = secrets.token_urlsafe(32)
    invitation.token_hash = Invitation.hash_token(token)
    invitation.expires_at = timezone.now() + INVITATION_LIFETIME
    invitation.save(update_fields=["token_hash", "expires_at"])
    audit_record(project=invitation.project, actor=actor, action=AuditEvent.Action.CHANGED, target=invitation,
                 summary=f"New invitation link for {invitation.email}")
    return IssuedInvitation(invitation, token)


@transaction.atomic
def invitation_revoke(*, invitation: Invitation, actor) -> Invitation:
    """Withdraw a pending invitation: its link stops working."""
    invitation = Invitation.objects.select_for_update().get(pk=invitation.pk)
    _ensure_pending(invitation)
    invitation.revoked_at = timezone.now()
    invitation.save(update_fields=["revoked_at"])
    audit_record(project=invitation.project, actor=actor, action=AuditEvent.Action.DELETED, target=invitation,
                 summary=f"Invitation to {invitation.email} withdrawn")
    return invitation


@transaction.atomic
def invitation_accept(*, invitation: Invitation, user) -> Membership:
    """Make `user` a member with the invitation's role; a link works once, until it expires or is withdrawn."""
    invitation = Invitation.objects.select_for_update().select_related("project").get(pk=invitation.pk)
    if reason := invitation.unusable_reason:
        raise ValidationError({"invitation": reason})
    existing = Membership.objects.filter(project=invitation.project, user=user).first()
    if existing is not None:
        raise ValidationError({"invitation": f"You are already a member of “{invitation.project.name}” ({existing.role})."})
    membership = Membership(project=invitation.project, user=user, role=invitation.role)
    membership.full_clean()
    membership.save()
    invitation.accepted_at = timezone.now()
    invitation.accepted_by = user
    invitation.save(update_fields=["accepted_at", "accepted_by"])
    audit_record(project=invitation.project, actor=user, action=AuditEvent.Action.CREATED, target=membership,
                 target_type="membership", summary=f"{user.username} joined as {invitation.role} (invitation to {invitation.email})",
                 data={"invitation": str(invitation.uuid)})
    return membership


@transaction.atomic
def invitation_accept_new_user(*, invitation: Invitation, username: str, password: str) -> Membership:
    """Create an account for the invited email and accept the invitation with it, or do nothing at all."""
    user = User(username=username.strip(), email=invitation.email)
    errors: dict[str, list[str]] = {}
    try:
        user.full_clean(exclude=["password"])
    except ValidationError as exc:
        errors.update(exc.message_dict)
    try:
        validate_password(password, user)
    except ValidationError as exc:
        errors["password"] = exc.messages
    if errors:
        raise ValidationError(errors)
    user.set_password(password)
    user.save()
    return invitation_accept(invitation=invitation, user=user)


# Mail backends that deliver to nobody: development's default prints emails in the server's console.
UNDELIVERED_MAIL_BACKENDS = {"django.core.mail.backends.console.EmailBackend", "django.core.mail.backends.dummy.EmailBackend"}


def mail_server_configured() -> bool:
    """Whether an email sent here reaches its recipient (False under `make run`'s console backend)."""
    return settings.MAILERS["default"]["BACKEND"] not in UNDELIVERED_MAIL_BACKENDS


def invitation_send_email(*, invitation: Invitation, link: str) -> bool:
    """Email the invitation link; False when the mail server refused (the owner still has the link to pass on)."""
    inviter = "A project owner"
    if invitation.created_by is not None:
        inviter = invitation.created_by.get_full_name() or invitation.created_by.username
    project = invitation.project
    body = (
        f"{inviter} invites you to join the project “{project.name}” on RTA Studio as {invitation.get_role_display().lower()}.\n\n"
        f"Open this link to accept (valid until {invitation.expires_at:%d %B %Y}):\n{link}\n\n"
        "If you did not expect this invitation, you can ignore this email."
    )
    try:
        send_mail(f"Invitation to “{project.name}” on RTA Studio", body, settings.DEFAULT_FROM_EMAIL, [invitation.email])
    except OSError:  # smtplib.SMTPException is an OSError, as are refused connections
        logger.warning("Could not send the invitation email for invitation %s", invitation.uuid, exc_info=True)
        return False
    return True

