from __future__ import annotations

import datetime as dt
import hashlib

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.utils import timezone

from projects import services
from projects.models import AuditEvent, Invitation, Membership, Role

pytestmark = pytest.mark.django_db
User = get_user_model()


def _invite(project, owner, email="newcomer@example.org", role=Role.ANALYST) -> services.IssuedInvitation:
    return services.invitation_create(project=project, actor=owner, email=email, role=role)


def test_inviting_an_unknown_email_stores_only_the_tokens_hash(project, owner):
    issued = _invite(project, owner, email="  NewComer@Example.org ")
    invitation = Invitation.objects.get()
    assert invitation.email == "newcomer@example.org"
    assert invitation.role == Role.ANALYST and invitation.created_by == owner
    assert len(issued.token) >= 43  # 32 random bytes, base64
    assert invitation.token_hash == hashlib.sha256(issued.token.encode()).hexdigest() != issued.token
    assert dt.timedelta(days=13, hours=23) < invitation.expires_at - timezone.now() <= dt.timedelta(days=14)
    assert Invitation.objects.by_token(issued.token) == invitation
    event = AuditEvent.objects.get(project=project, target_type="invitation")
    assert (event.action, event.actor, event.summary) == ("created", owner, "newcomer@example.org invited as analyst")


def test_every_invitation_gets_its_own_token(project, owner):
    tokens = {_invite(project, owner, email=f"person{i}@example.org").token for i in range(5)}
    assert len(tokens) == 5


def test_inviting_an_existing_users_email_adds_them_directly(project, owner, outsider):
    result = services.membership_invite(project=project, actor=owner, username_or_email="OSCAR@example.org", role=Role.VIEWER)
    assert isinstance(result, Membership)
    assert result.user == outsider and result.role == Role.VIEWER
    assert not Invitation.objects.exists()


def test_an_unknown_username_is_not_invited(project, owner):
    with pytest.raises(ValidationError) as exc:
        services.membership_invite(project=project, actor=owner, username_or_email="nobody", role=Role.VIEWER)
    assert "To invite someone new, enter their email address" in exc.value.message_dict["user"][0]
    assert not Invitation.objects.exists()


def test_an_unknown_email_is_invited_as_an_owner_too(project, owner):
    result = services.membership_invite(project=project, actor=owner, username_or_email="co-lead@example.org", role=Role.OWNER)
    assert isinstance(result, services.IssuedInvitation)
    assert result.invitation.role == Role.OWNER


@pytest.mark.parametrize(("email", "role", "field", "message"), [
    ("not an email@", Role.VIEWER, "user", "“not an email@” is not a valid email address."),
    ("x@example.org", "admin", "role", "“admin” is not a role (owner, analyst, viewer)."),
])
def test_bad_invitations_say_what_is_wrong(project, owner, email, role, field, message):
    with pytest.raises(ValidationError) as exc:
        _invite(project, owner, email=email, role=role)
    assert exc.value.message_dict[field] == [message]
    assert not Invitation.objects.exists() and not AuditEvent.objects.filter(target_type="invitation").exists()


def test_an_email_has_one_pending_invitation_per_project(project, owner):
    _invite(project, owner)
    with pytest.raises(ValidationError) as exc:
        _invite(project, owner, email="NEWCOMER@example.org", role=Role.VIEWER)
    assert "already has a pending invitation (as analyst)" in exc.value.message_dict["user"][0]
    services.invitation_revoke(invitation=Invitation.objects.get(), actor=owner)
    _invite(project, owner, role=Role.VIEWER)
    assert Invitation.objects.pending().get().role == Role.VIEWER


def test_regenerating_replaces_the_link_and_extends_it(project, owner):
    issued = _invite(project, owner)
    Invitation.objects.update(expires_at=timezone.now() - dt.timedelta(days=1))
    renewed = services.invitation_regenerate(invitation=issued.invitation, actor=owner)
    assert renewed.token != issued.token
    assert Invitation.objects.by_token(issued.token) is None
    invitation = Invitation.objects.by_token(renewed.token)
    assert not invitation.is_expired and invitation.unusable_reason == ""
    assert AuditEvent.objects.filter(target_type="invitation", action="changed", summary="New invitation link for newcomer@example.org").exists()


def test_revoking_stops_the_link_and_is_audited(project, owner):
    issued = _invite(project, owner)
    services.invitation_revoke(invitation=issued.invitation, actor=owner)
    invitation = Invitation.objects.by_token(issued.token)
    assert invitation.unusable_reason == "This invitation was withdrawn by the project's owners."
    assert AuditEvent.objects.filter(target_type="invitation", action="deleted", actor=owner).exists()
    with pytest.raises(ValidationError, match="already withdrawn"):
        services.invitation_revoke(invitation=invitation, actor=owner)
    with pytest.raises(ValidationError, match="already withdrawn"):
        services.invitation_regenerate(invitation=invitation, actor=owner)


def test_accepting_makes_a_member_with_the_role_once(project, owner, outsider, make_user):
    issued = _invite(project, owner, role=Role.VIEWER)
    membership = services.invitation_accept(invitation=issued.invitation, user=outsider)
    assert (membership.project, membership.user, membership.role) == (project, outsider, Role.VIEWER)
    invitation = Invitation.objects.get()
    assert invitation.accepted_by == outsider and invitation.accepted_at is not None
    event = AuditEvent.objects.get(project=project, target_type="membership", action="created")
    assert event.actor == outsider and event.data == {"invitation": str(invitation.uuid)}
    with pytest.raises(ValidationError) as exc:
        services.invitation_accept(invitation=invitation, user=make_user("latecomer"))
    assert exc.value.message_dict["invitation"] == ["This invitation has already been used."]
    assert not Membership.objects.filter(user__username="latecomer").exists()


def test_an_expired_invitation_cannot_be_accepted(project, owner, outsider):
    issued = _invite(project, owner)
    Invitation.objects.update(expires_at=timezone.now() - dt.timedelta(seconds=1))
    with pytest.raises(ValidationError, match="This invitation has expired."):
        services.invitation_accept(invitation=issued.invitation, user=outsider)
    assert not Membership.objects.filter(user=outsider).exists()


def test_a_member_accepting_keeps_their_role_and_the_invitation(project, owner, viewer):
    issued = _invite(project, owner, role=Role.OWNER)
    with pytest.raises(ValidationError, match=r"You are already a member of “Chatbots and identity” \(viewer\)."):
        services.invitation_accept(invitation=issued.invitation, user=viewer)
    assert Membership.objects.get(project=project, user=viewer).role == Role.VIEWER
    assert Invitation.objects.pending().count() == 1


def test_accepting_with_a_new_account_creates_user_and_membership(project, owner):
    issued = _invite(project, owner)
    membership = services.invitation_accept_new_user(invitation=issued.invitation, username="nadia", password="a-long-unusual-passphrase")
    user = User.objects.get(username="nadia")
    assert membership.user == user and membership.role == Role.ANALYST
    assert user.email == "newcomer@example.org" and user.check_password("a-long-unusual-passphrase")


@pytest.mark.parametrize(("username", "password", "field", "message"), [
    ("nadia", "short", "password", "This password is too short. It must contain at least 8 characters."),
    ("nadia", "password123", "password", "This password is too common."),
    ("nadia", "newcomer1", "password", "The password is too similar to the email address."),
    ("olivia", "a-long-unusual-passphrase", "username", "A user with that username already exists."),
    ("no spaces", "a-long-unusual-passphrase", "username", "Enter a valid username."),
])
def test_a_refused_new_account_leaves_nothing_behind(project, owner, username, password, field, message):
    issued = _invite(project, owner)
    users_before = User.objects.count()
    with pytest.raises(ValidationError) as exc:
        services.invitation_accept_new_user(invitation=issued.invitation, username=username, password=password)
    assert any(m.startswith(message) for m in exc.value.message_dict[field]), exc.value.message_dict
    assert User.objects.count() == users_before
    assert Membership.objects.filter(project=project).count() == 3
    assert Invitation.objects.pending().count() == 1


def test_a_used_link_creates_no_account(project, owner, outsider):
    issued = _invite(project, owner)
    services.invitation_accept(invitation=issued.invitation, user=outsider)
    with pytest.raises(ValidationError, match="already been used"):
        services.invitation_accept_new_user(invitation=issued.invitation, username="nadia", password="a-long-unusual-passphrase")
    # The account was created before the invitation was found used: the transaction took it back.
    assert not User.objects.filter(username="nadia").exists()
