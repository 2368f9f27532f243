from __future__ import annotations

import functools
import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

from accounts.models import secret_hash


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


class InvitationQuerySet(models.QuerySet):
    def pending(self) -> InvitationQuerySet:
        """Invitations neither accepted nor revoked (expired ones included: they can be re-sent)."""
        return self.filter(accepted_at__isnull=True, revoked_at__isnull=True)

    def pending_for(self, project: Project) -> InvitationQuerySet:
        """The project's pending invitations with their inviters, newest first."""
        return self.pending().filter(project=project).select_related("created_by").order_by("-created_at", "-id")

    def by_token(self, token: str) -> Invitation | None:
        """The invitation whose link carries `token`, in any state, or None."""
        return self.select_related("project", "created_by").filter(token_hash=Invitation.hash_token(token)).first()


class Invitation(models.Model):
    """An owner's invitation for an email address to join a project with a role.

    Only a hash of the token is stored: the link is shown (and emailed) once, and a
    leaked database does not hand out working links.
    """

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="invitations")
    email = models.EmailField()
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.ANALYST)
    token_hash = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = InvitationQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "email"], condition=models.Q(accepted_at__isnull=True, revoked_at__isnull=True),
                name="unique_pending_invitation",
            )
        ]

    def __str__(self) -> str:
        return f"{self.email} ({self.role}) to {self.project}"

    @staticmethod
    def hash_token(token: str) -> str:
        return secret_hash(token)

    @property
    def is_expired(self) -> bool:
        return self.expires_at <= timezone.now()

    @property
    def unusable_reason(self) -> str:
        """Why the link no longer works, or "" while it does."""
        if self.accepted_at:
            return "This invitation has already been used."
        if self.revoked_at:
            return "This invitation was withdrawn by the project's owners."
        if self.is_expired:
            return "This invitation has expired."
        return ""


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

    # Indexed with created_at (Meta.indexes); each apply of a code writes an event.
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="audit_events", db_index=False)
    # Indexed with target_id (Meta.indexes): a coder's undo stack in one interview is their latest events on it.
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
                              db_index=False)
    action = models.CharField(max_length=16, choices=Action.choices)
    target_type = models.CharField(max_length=40)
    target_id = models.CharField(max_length=64, blank=True)
    summary = models.CharField(max_length=500)
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = AuditEventQuerySet.as_manager()

    class Meta:
        indexes = [
            models.Index(fields=["project", "-created_at"], name="audit_project_time"),
            models.Index(fields=["actor", "target_id", "id"], name="audit_actor_target"),
        ]

    def __str__(self) -> str:
        return f"{self.actor} {self.action} {self.target_type}: {self.summary}"

    @property
    def target_label(self) -> str:
        return audit_target_label(self.target_type)


def audit_target_label(target_type: str) -> str:
    """What an audit event is about, in words: a model's name ("endpoint key", not "endpointkey"), else as recorded."""
    return _model_names().get(target_type, target_type.replace("_", " "))


@functools.cache
def _model_names() -> dict[str, str]:
    from django.apps import apps

    return {m._meta.model_name: str(m._meta.verbose_name) for m in apps.get_models()}



class StoredBlob(models.Model):
    """A file a job needs (an upload waiting to be imported, a finished export), kept in PostgreSQL as chunks so
    that any web process and any worker can read it: no job depends on a file on one machine's disk.

    Written and read through projects/blobs.py, a chunk at a time; removed when its job is done with it, or by
    the hourly sweep once `expires_at` has passed (an upload abandoned half way, an old export)."""

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    name = models.CharField(max_length=255, help_text="The file's name as the user knows it; never used as a path.")
    size = models.BigIntegerField(default=0)
    sha256 = models.CharField(max_length=64, blank=True)
    chunk_bytes = models.PositiveIntegerField(help_text="Every chunk but the last holds exactly this many bytes.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["expires_at"], name="storedblob_expiry")]

    def __str__(self) -> str:
        return f"{self.name} ({self.size} bytes, {self.uuid})"


class BlobChunk(models.Model):
    """One piece of a StoredBlob, in order."""

    blob = models.ForeignKey(StoredBlob, on_delete=models.CASCADE, related_name="chunks", db_index=False)
    index = models.PositiveIntegerField()
    data = models.BinaryField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["blob", "index"], name="blobchunk_position")]

    def __str__(self) -> str:
        return f"chunk {self.index} of blob {self.blob_id}"
