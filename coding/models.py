from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from interviews.models import Interview, Segment
from projects.models import Project


class CodeQuerySet(models.QuerySet):
    def alive(self) -> CodeQuerySet:
        """Codes not in the trash (archived codes included)."""
        return self.filter(deleted_at__isnull=True)

    def for_project(self, project: Project) -> CodeQuerySet:
        return self.alive().filter(project=project)


class Code(models.Model):
    class Kind(models.TextChoices):
        SEMANTIC = "semantic", "Semantic"
        LATENT = "latent", "Latent"

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="codes")
    name = models.CharField(max_length=200)
    definition = models.TextField(blank=True, help_text="What this code captures.")
    include_when = models.TextField(blank=True, help_text="What counts.")
    exclude_when = models.TextField(blank=True, help_text="What does not count.")
    example = models.TextField(blank=True)
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.SEMANTIC)
    colour = models.CharField(max_length=7, default="#4c78a8")
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children")
    position = models.PositiveIntegerField(default=0)
    archived = models.BooleanField(default=False)
    # Bumped on every edit; an edit based on an older version is refused, not silently applied.
    version = models.PositiveIntegerField(default=1)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    deleted_at = models.DateTimeField(null=True, blank=True, help_text="Set when moved to the trash.")
    # Set when this code was merged into another; the merged code stays (archived) for the history.
    merged_into = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="merged_from")

    objects = CodeQuerySet.as_manager()

    class Meta:
        ordering = ["position", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "name"], condition=models.Q(deleted_at__isnull=True), name="unique_live_code_name"
            )
        ]

    def __str__(self) -> str:
        return self.name


class CodeEvent(models.Model):
    """The codebook's history: every create/rename/redefine/merge/split/move/archive, with who and why."""

    class Action(models.TextChoices):
        CREATED = "created", "created"
        RENAMED = "renamed", "renamed"
        REDEFINED = "redefined", "redefined"
        RECOLOURED = "recoloured", "recoloured"
        MERGED = "merged", "merged"
        SPLIT = "split", "split"
        MOVED = "moved", "moved"
        ARCHIVED = "archived", "archived"
        UNARCHIVED = "unarchived", "unarchived"
        DELETED = "deleted", "deleted"
        RESTORED = "restored", "restored"
        IMPORTED = "imported", "imported"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="code_events")
    code = models.ForeignKey(Code, null=True, blank=True, on_delete=models.SET_NULL, related_name="events")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    action = models.CharField(max_length=12, choices=Action.choices)
    reason = models.TextField(blank=True)
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]


class Coding(models.Model):
    """A code applied to a segment by one coder."""

    class Origin(models.TextChoices):
        HUMAN = "human", "Human"
        SUGGESTION = "suggestion", "Accepted AI suggestion"

    # No single-column indexes on segment, code and interview: the unique constraint and the two
    # indexes below start with them, and every index is written on each apply.
    segment = models.ForeignKey(Segment, on_delete=models.CASCADE, related_name="codings", db_index=False)
    code = models.ForeignKey(Code, on_delete=models.CASCADE, related_name="codings", db_index=False)
    coder = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="codings")
    # Denormalised from segment for per-interview counts and retrieval without a join.
    interview = models.ForeignKey(Interview, on_delete=models.CASCADE, related_name="codings", db_index=False)
    origin = models.CharField(max_length=10, choices=Origin.choices, default=Origin.HUMAN)
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["segment", "code", "coder"], name="unique_coding")]
        indexes = [
            models.Index(fields=["interview", "segment"], name="coding_interview_segment"),
            models.Index(fields=["code", "interview"], name="coding_code_interview"),
        ]

    def __str__(self) -> str:
        return f"{self.code_id} on {self.segment_id} by {self.coder_id}"


class Suggestion(models.Model):
    """An AI-proposed code for a segment; pending until a person accepts or rejects it."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        ACCEPTED = "accepted", "Accepted"
        REJECTED = "rejected", "Rejected"

    segment = models.ForeignKey(Segment, on_delete=models.CASCADE, related_name="suggestions")
    code = models.ForeignKey(Code, on_delete=models.CASCADE, related_name="suggestions")
    rationale = models.TextField(blank=True)
    model = models.CharField(max_length=200, blank=True)
    prompt_version = models.CharField(max_length=40, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    decided_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)


class NoteQuerySet(models.QuerySet):
    def for_interview(self, interview: Interview) -> NoteQuerySet:
        """Familiarisation notes on the interview and its turns, with their authors."""
        return self.filter(interview=interview).select_related("author").order_by("turn_id", "created_at")


class Note(models.Model):
    """A familiarisation note by one researcher on an interview (turn empty) or on one turn."""

    interview = models.ForeignKey(Interview, on_delete=models.CASCADE, related_name="familiarisation_notes")
    turn = models.ForeignKey("interviews.Turn", null=True, blank=True, on_delete=models.CASCADE, related_name="familiarisation_notes")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    text = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = NoteQuerySet.as_manager()

    class Meta:
        ordering = ["created_at"]
        # One note per author and place: each researcher's own familiarisation, never overwritten by another.
        constraints = [
            models.UniqueConstraint(fields=["interview", "turn", "author"], name="unique_turn_note",
                                    condition=models.Q(turn__isnull=False)),
            models.UniqueConstraint(fields=["interview", "author"], name="unique_interview_note",
                                    condition=models.Q(turn__isnull=True)),
        ]

    def __str__(self) -> str:
        return self.text[:60]
