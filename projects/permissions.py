"""Permission-checked access to projects.

Outsiders get 404 (a private project's existence is never revealed); members whose
role is too low for the action get 403.
"""

from __future__ import annotations

from uuid import UUID

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest

from projects.models import Membership, Role


def get_membership(user, project_uuid: UUID | str) -> Membership | None:
    if not user.is_authenticated:
        return None
    # (project, user) is unique: order_by() drops the default ordering by username, a join on auth_user.
    membership = (Membership.objects.select_related("project").filter(user=user, project__uuid=project_uuid)
                  .order_by().first())
    if membership is not None:
        membership.user = user  # the request's user, already loaded: no join for a second copy
    return membership


def member_or_404(request: HttpRequest, project_uuid: UUID | str, *, level: str = Role.VIEWER) -> Membership:
    """The request user's membership of the project; 404 for outsiders, 403 below `level`."""
    cache = request.__dict__.setdefault("_rta_memberships", {})
    key = str(project_uuid)
    if key not in cache:
        cache[key] = get_membership(request.user, project_uuid)
    membership = cache[key]
    if membership is None:
        raise Http404("No such project.")
    if not membership.has_level(level):
        raise PermissionDenied(_denied_message(level))
    return membership


def writer_or_403(request: HttpRequest, project_uuid: UUID | str) -> Membership:
    """Membership of an analyst or owner; viewers get 403."""
    return member_or_404(request, project_uuid, level=Role.ANALYST)


def owner_or_403(request: HttpRequest, project_uuid: UUID | str) -> Membership:
    return member_or_404(request, project_uuid, level=Role.OWNER)


def _denied_message(level: str) -> str:
    if level == Role.OWNER:
        return "Only the project's owners can do this."
    return "Your role in this project is read-only (viewer)."
