from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models


class Role(models.TextChoices):
    OWNER = "owner", "Owner"
    ANALYST = "analyst", "Analyst"
    VIEWER = "viewer", "Viewer"


# Higher number = more rights; a required level is met by any role at or above it.
ROLE_LEVEL = {Role.VIEWER: 1, Role.ANALYST: 2, Role.OWNER: 3}


class ProjectQuerySet(models.QuerySet):
    def for_user(self, user) -> ProjectQuerySet:
        """Projects the user is a member of, newest first."""
        if not user.is_authenticated:
            return self.none()
        return self.filter(memberships__user=user).order_by("-created_at")


class Project(models.Model):
    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    research_question = models.TextField(blank=True)
    # Reflexive TA does not use inter-rater reliability; codebook-style teams may switch it on.
    agreement_statistics_enabled = models.BooleanField(default=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = ProjectQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.ANALYST)
    positionality = models.TextField(
        blank=True, help_text="Your standpoint as a researcher: what you bring to this analysis."
    )
    joined_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "user"], name="unique_membership")]
        ordering = ["user__username"]

    def __str__(self) -> str:
        return f"{self.user} ({self.role}) in {self.project}"

    def has_level(self, role: str) -> bool:
        return ROLE_LEVEL[Role(self.role)] >= ROLE_LEVEL[Role(role)]

    @property
    def can_write(self) -> bool:
        return self.has_level(Role.ANALYST)

    @property
    def is_owner(self) -> bool:
        return self.role == Role.OWNER


class AuditEventQuerySet(models.QuerySet):
    def for_project(self, project: Project) -> AuditEventQuerySet:
        return self.filter(project=project).select_related("actor").order_by("-created_at", "-id")


class AuditEvent(models.Model):
    """Who created, changed, deleted or restored what in a project, and when."""

    class Action(models.TextChoices):
        CREATED = "created", "created"
        CHANGED = "changed", "changed"
        DELETED = "deleted", "deleted"
        RESTORED = "restored", "restored"
        PURGED = "purged", "purged"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="audit_events")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    action = models.CharField(max_length=16, choices=Action.choices)
    target_type = models.CharField(max_length=40)
    target_id = models.CharField(max_length=64, blank=True)
    summary = models.CharField(max_length=500)
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    objects = AuditEventQuerySet.as_manager()

    class Meta:
        indexes = [models.Index(fields=["project", "-created_at"], name="audit_project_time")]

    def __str__(self) -> str:
        return f"{self.actor} {self.action} {self.target_type}: {self.summary}"
