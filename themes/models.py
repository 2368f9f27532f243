from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from coding.models import Code
from projects.models import Project


class ThemeQuerySet(models.QuerySet):
    def alive(self) -> ThemeQuerySet:
        return self.filter(deleted_at__isnull=True)

    def for_project(self, project: Project) -> ThemeQuerySet:
        return self.alive().filter(project=project)


class Theme(models.Model):
    class Status(models.TextChoices):
        CANDIDATE = "candidate", "Candidate"
        REVIEWED = "reviewed", "Reviewed"
        DEFINED = "defined", "Defined"
        FINAL = "final", "Final"
        DISCARDED = "discarded", "Discarded"

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="themes")
    name = models.CharField(max_length=200)
    definition = models.TextField(blank=True, help_text="Central organising concept, boundaries, what it is not.")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.CANDIDATE)
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="subthemes")
    colour = models.CharField(max_length=7, default="#72b7b2")
    position = models.PositiveIntegerField(default=0)
    codes = models.ManyToManyField(Code, through="ThemeCode", related_name="themes", blank=True)
    version = models.PositiveIntegerField(default=1)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    deleted_at = models.DateTimeField(null=True, blank=True, help_text="Set when moved to the trash.")

    objects = ThemeQuerySet.as_manager()

    class Meta:
        ordering = ["position", "name"]

    def __str__(self) -> str:
        return self.name


class ThemeCode(models.Model):
    """A code placed in a theme, in order; a code may sit in several candidate themes."""

    theme = models.ForeignKey(Theme, on_delete=models.CASCADE, related_name="theme_codes")
    code = models.ForeignKey(Code, on_delete=models.CASCADE, related_name="theme_codes")
    position = models.PositiveIntegerField(default=0)
    added_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["theme", "position"]
        constraints = [models.UniqueConstraint(fields=["theme", "code"], name="unique_theme_code")]
