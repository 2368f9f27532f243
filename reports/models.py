from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

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
    file = models.FileField(upload_to="exports/%Y/%m/", blank=True)
    filename = models.CharField(max_length=200, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["project", "-created_at"], name="exportjob_project_recent")]

    def __str__(self) -> str:
        return f"{self.kind} export {self.uuid} ({self.status})"

    @property
    def is_active(self) -> bool:
        return self.status in (self.Status.QUEUED, self.Status.RUNNING)

    @property
    def percent(self) -> int:
        if self.status == self.Status.DONE:
            return 100
        return min(100, round(100 * self.progress_done / self.progress_total)) if self.progress_total else 0
