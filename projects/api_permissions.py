"""DRF access rules matching the pages: outsiders 404, viewers 403 on writes.

API views nested under /api/projects/<project_uuid>/ inherit ProjectScopedMixin and
read `self.membership` / `self.project`.
"""

from __future__ import annotations

from django.http import Http404
from rest_framework import permissions
from rest_framework.exceptions import PermissionDenied

from projects.models import Membership, Project, Role
from projects.permissions import get_membership


class IsProjectMember(permissions.BasePermission):
    """Any member may read (owners only where the view sets `read_level`); analysts and owners may write."""

    def has_permission(self, request, view) -> bool:
        membership = view.get_membership()
        if request.method in permissions.SAFE_METHODS:
            if not membership.has_level(getattr(view, "read_level", Role.VIEWER)):
                raise PermissionDenied("Only the project's owners can see this.")
            return True
        if not membership.has_level(getattr(view, "write_level", Role.ANALYST)):
            raise PermissionDenied("Your role in this project does not allow this change.")
        return True


class ProjectScopedMixin:
    permission_classes = [permissions.IsAuthenticated, IsProjectMember]
    project_url_kwarg = "project_uuid"

    def get_membership(self):
        if getattr(self, "swagger_fake_view", False):
            # drf-spectacular builds the schema without a request's kwargs: an unsaved stand-in
            # lets get_queryset() run, so path parameters get their model field types.
            return Membership(project=Project(pk=0), role=Role.VIEWER)
        if not hasattr(self, "_membership"):
            membership = get_membership(self.request.user, self.kwargs[self.project_url_kwarg])
            if membership is None:
                raise Http404("No such project.")
            self._membership = membership
        return self._membership

    @property
    def membership(self):
        return self.get_membership()

    @property
    def project(self):
        return self.get_membership().project
