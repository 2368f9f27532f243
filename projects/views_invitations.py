"""Invitations: owners invite an email address; whoever holds the link joins the project,
creating an account on the way if they have none."""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from projects import services
from projects.forms import InvitationSignupForm, add_service_errors
from projects.models import Invitation
from projects.permissions import owner_or_403
from projects.ratelimit import client_address, count_in_window

# The newest invitation link, kept in the owner's session until the members page has shown it once.
NEW_LINK_SESSION_KEY = "rta_new_invitation_link"
INVALID_LINK = ("This invitation link is not valid. Check that you copied the whole link, "
                "or ask the person who invited you for a new one.")
TOO_MANY_MISSES = "Too many invalid invitation links were opened from your network. Try again in an hour."


def invitation_link_share(request: HttpRequest, issued: services.IssuedInvitation) -> None:
    """Email the new link and keep it for the members page to show once."""
    link = request.build_absolute_uri(reverse("projects:invitation_accept", args=[issued.token]))
    sent = services.invitation_send_email(invitation=issued.invitation, link=link)
    no_mail_server = not services.mail_server_configured()
    request.session[NEW_LINK_SESSION_KEY] = {"email": issued.invitation.email, "url": link,
                                             "sent": sent and not no_mail_server, "no_mail_server": no_mail_server}
    if no_mail_server:
        messages.warning(request, f"No mail server is set up here, so no email went to {issued.invitation.email}: "
                                  "copy the link below and pass it on yourself.")
    elif sent:
        messages.success(request, f"Invitation sent to {issued.invitation.email}.")
    else:
        messages.warning(request, f"The email to {issued.invitation.email} could not be sent: copy the link below and pass it on yourself.")


def invitation_link_pop(request: HttpRequest) -> dict | None:
    return request.session.pop(NEW_LINK_SESSION_KEY, None)


@login_required
@require_POST
def invitation_regenerate(request: HttpRequest, project_uuid, invitation_uuid) -> HttpResponse:
    """A new link (the old one stops working), valid for another two weeks, sent again."""
    membership = owner_or_403(request, project_uuid)
    invitation = get_object_or_404(Invitation, project=membership.project, uuid=invitation_uuid)
    try:
        issued = services.invitation_regenerate(invitation=invitation, actor=request.user)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        invitation_link_share(request, issued)
    return redirect("projects:members", project_uuid=project_uuid)


@login_required
@require_POST
def invitation_revoke(request: HttpRequest, project_uuid, invitation_uuid) -> HttpResponse:
    membership = owner_or_403(request, project_uuid)
    invitation = get_object_or_404(Invitation, project=membership.project, uuid=invitation_uuid)
    try:
        services.invitation_revoke(invitation=invitation, actor=request.user)
        messages.success(request, f"Invitation to {invitation.email} withdrawn: its link no longer works.")
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    return redirect("projects:members", project_uuid=project_uuid)


@require_http_methods(["GET", "POST"])
def invitation_accept(request: HttpRequest, token: str) -> HttpResponse:
    """Public by token: the link alone admits its holder, so unknown tokens reveal nothing and are rate-limited.

    Only unknown tokens are limited: behind a shared address (an office, a proxy) someone
    opening bad links must not block colleagues' valid ones, and a 256-bit token cannot be
    guessed anyway; the limit slows and logs probing.
    """
    invitation = Invitation.objects.by_token(token)
    if invitation is None:
        address = client_address(request)
        if invitation_link_misses(address) >= _max_misses():
            return _render_accept(request, error=TOO_MANY_MISSES, status=429)
        invitation_link_miss_record(address)
        return _render_accept(request, error=INVALID_LINK, status=404)
    if invitation.accepted_by_id is not None and invitation.accepted_by_id == request.user.pk:
        return redirect("project_home", project_uuid=invitation.project.uuid)
    if reason := invitation.unusable_reason:
        # The project is not named: a stale link need not tell its holder what it was for.
        return _render_accept(request, error=f"{reason} Ask the person who invited you for a new link.", status=410)
    if request.user.is_authenticated:
        return _accept_as_user(request, invitation)
    return _accept_with_new_account(request, invitation)


def _accept_as_user(request: HttpRequest, invitation: Invitation) -> HttpResponse:
    if request.method != "POST":
        return _render_accept(request, invitation=invitation)
    try:
        services.invitation_accept(invitation=invitation, user=request.user)
    except ValidationError as exc:
        return _render_accept(request, invitation=invitation, error=" ".join(exc.messages), status=409)
    messages.success(request, f"Welcome to “{invitation.project.name}”.")
    return redirect("project_home", project_uuid=invitation.project.uuid)


def _accept_with_new_account(request: HttpRequest, invitation: Invitation) -> HttpResponse:
    form = InvitationSignupForm(request.POST or None)
    if request.method != "POST" or not form.is_valid():
        return _render_accept(request, invitation=invitation, form=form, status=400 if form.is_bound else 200)
    try:
        # Account, membership and login stand or fall together.
        with transaction.atomic():
            membership = services.invitation_accept_new_user(
                invitation=invitation, username=form.cleaned_data["username"], password=form.cleaned_data["password1"])
            login(request, membership.user, backend=settings.AUTHENTICATION_BACKENDS[0])
    except ValidationError as exc:
        add_service_errors(form, exc, renamed={"password": "password1"})
        return _render_accept(request, invitation=invitation, form=form, status=400)
    messages.success(request, f"Welcome to “{invitation.project.name}”, {membership.user.username}.")
    return redirect("project_home", project_uuid=invitation.project.uuid)


def _render_accept(request: HttpRequest, *, invitation: Invitation | None = None, form: InvitationSignupForm | None = None,
                   error: str = "", status: int = 200) -> HttpResponse:
    context = {"invitation": invitation, "form": form, "error": error}
    return render(request, "projects/invitation_accept.html", context, status=status)


def _max_misses() -> int:
    return settings.RTA_INVITATION_MAX_MISSES


def _misses_key(address: str) -> str:
    return "rta:invitation-misses:" + hashlib.sha256(address.encode()).hexdigest()[:32]


def invitation_link_misses(address: str) -> int:
    return int(cache.get(_misses_key(address), 0))


def invitation_link_miss_record(address: str) -> None:
    count_in_window(_misses_key(address), 60 * 60)


def invitation_link_misses_clear(address: str) -> None:
    cache.delete(_misses_key(address))
