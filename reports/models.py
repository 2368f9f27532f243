from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

from projects.jobs import waiting_long
from projects.models import Project


class ExportJob(models.Model):
    """A large export written by the Celery worker: its choices, progress and the finished file."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Writing"
        DONE = "done", "Ready"
        FAILED = "failed", "Failed"

    class Kind(models.TextChoices):
        EXCERPTS = "excerpts", "Excerpt table"
        QDPX = "qdpx", "REFI-QDA project"
        BACKUP = "backup", "Project backup"

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="export_jobs")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.EXCERPTS)
    format = models.CharField(max_length=8)
    # The builder's GET parameters (UUIDs, usernames), re-read by the worker.
    params = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.QUEUED)
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    # The finished file, in PostgreSQL (projects/blobs.py) so any web process can serve what any worker wrote.
    blob = models.ForeignKey("projects.StoredBlob", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    filename = models.CharField(max_length=200, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # When the task was last handed to the broker (or tried): the row is the outbox (projects/jobs.py).
    sent_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["project", "-created_at"], name="exportjob_project_recent"),
            models.Index(fields=["sent_at"], condition=models.Q(status="queued"), name="exportjob_waiting"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} export {self.uuid} ({self.status})"

    @property
    def is_active(self) -> bool:
        return self.status in (self.Status.QUEUED, self.Status.RUNNING)

    @property
    def waiting_long(self) -> bool:
        """Still waiting for a worker a minute after it was sent: offer to send it again or discard it."""
        return self.status == self.Status.QUEUED and waiting_long(self.sent_at)

    @property
    def percent(self) -> int:
        if self.status == self.Status.DONE:
            return 100
        return min(100, round(100 * self.progress_done / self.progress_total)) if self.progress_total else 0


class PersonName(models.Model):
    """Someone a restored backup or an imported .qdpx names (author, coder, attendee...) who was kept as a name
    only: the name is kept here as text, and the row's user field stays empty, or, where the row needs an account
    (an imported coding's coder), holds the importer. Neither a restore nor an import ever creates accounts.

    A later backup of the project writes the name back into an empty user field, so it travels like a username;
    a .qdpx export writes it as the row's user, so a coder's name survives a round trip.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+", db_index=False)
    model = models.CharField(max_length=60, help_text="The row's model, e.g. themes.memo.")
    row_id = models.BigIntegerField()
    field = models.CharField(max_length=60, help_text="The user field (attname) or many-to-many field the name belongs in.")
    name = models.CharField(max_length=150)

    class Meta:
        indexes = [models.Index(fields=["project", "model", "row_id"], name="personname_row")]

    def __str__(self) -> str:
        return f"{self.name} ({self.model} {self.row_id}.{self.field})"


class ProjectImportJob(models.Model):
    """One project brought in from a file (a backup restore or a .qdpx import), read and imported by the worker:
    the upload, the people the file names (read once), the importer's choices, and the project it became.

    The job is the unit: one job makes at most one project, however often its steps are submitted or its task
    is delivered."""

    class Kind(models.TextChoices):
        RESTORE = "restore", "Restore a backup"
        QDPX = "qdpx", "Import a REFI-QDA project"

    class Status(models.TextChoices):
        READING = "reading", "Reading the file"
        PEOPLE = "people", "Waiting for who is who"
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Importing"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    WAITING = (Status.READING, Status.QUEUED)  # for the worker to pick the task up

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    kind = models.CharField(max_length=8, choices=Kind.choices)
    # The job is its uploader's alone: nobody else may see it, map its people or import it.
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.READING)
    # The upload, in PostgreSQL (projects/blobs.py) so any worker can read it; removed once the job is done with it.
    blob = models.ForeignKey("projects.StoredBlob", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    filename = models.CharField(max_length=255)
    project_name = models.CharField(max_length=200, blank=True)
    # The people the file names (reports.backup.BackupPerson as dicts), read by the worker once.
    people = models.JSONField(default=list, blank=True)
    # What the importer chose in the people step: {"people": {person key: account pk}, "members": "me" | "all"}.
    choices = models.JSONField(default=dict, blank=True)
    project = models.ForeignKey(Project, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    summary = models.TextField(blank=True)
    warnings = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # When the task was last handed to the broker (or tried): the row is the outbox (projects/jobs.py).
    sent_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["created_by", "-created_at"], name="projectimport_user_recent"),
            models.Index(fields=["sent_at"], condition=models.Q(status__in=["reading", "queued"]),
                         name="projectimport_waiting"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.uuid} ({self.status})"

    @property
    def is_active(self) -> bool:
        return self.status in (*self.WAITING, self.Status.RUNNING)

    @property
    def waiting_long(self) -> bool:
        """Still waiting for a worker a minute after it was sent: offer to send it again or discard it."""
        return self.status in self.WAITING and waiting_long(self.sent_at)
