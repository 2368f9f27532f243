"""Live interviews: endpoint keys, conduct sessions and the worker state of answers.

Transcript data itself (interviews, turns, segments) lives in the interviews
app; this app keeps only what conducting needs on top of it.
"""

from __future__ import annotations

import os
import uuid
from datetime import timedelta

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils import timezone

from conduct.crypto import decrypt_secret
from conduct.throttle import DEFAULT_MAX_IN_FLIGHT
from interviews.models import GuideVersion, Interview, Participant, Turn
from projects.models import Project


def heartbeat_seconds() -> float:
    # The environment variable lets a test (or an operator) tune a worker process without settings edits.
    return float(getattr(settings, "CONDUCT_HEARTBEAT_SECONDS", None) or os.environ.get("CONDUCT_HEARTBEAT_SECONDS", 5.0))


def stale_after() -> timedelta:
    """A running answer whose worker has not been heard from this long is lost."""
    return timedelta(seconds=float(getattr(settings, "CONDUCT_STALE_SECONDS", 4 * heartbeat_seconds())))


class EndpointKey(models.Model):
    """An API key a project stores, encrypted at rest, shown only as a hint, and bound to one endpoint.

    The project owner who stores a key chooses the base URL it may be sent to; the URL never
    changes afterwards (store the key again for another endpoint), so nobody can re-aim it.
    """

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="endpoint_keys")
    label = models.CharField(max_length=100, help_text="e.g. “OpenRouter (lab account)”")
    encrypted = models.TextField(editable=False)
    hint = models.CharField(max_length=20, editable=False)
    # Empty only for keys stored before keys were bound: they are sent nowhere until stored again.
    base_url = models.URLField(max_length=500, blank=True, help_text="The only endpoint this key is ever sent to.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["label"]
        constraints = [models.UniqueConstraint(fields=["project", "label"], name="unique_endpoint_key_label")]

    def __str__(self) -> str:
        return f"{self.label} ({self.hint})"

    def reveal(self) -> str:
        """The plain key, for the worker's request only; never render or serialise it."""
        return decrypt_secret(self.encrypted)


class LiveEndpoint(models.Model):
    """Settings of a live participant that interviews.Participant does not hold."""

    class KeySource(models.TextChoices):
        DEPLOYMENT = "deployment", "The deployment's key (only for the deployment's endpoint)"
        PROJECT = "project", "A key the project stored (only for the endpoint it is bound to)"
        NONE = "none", "No key"

    participant = models.OneToOneField(Participant, on_delete=models.CASCADE, related_name="live_endpoint")
    key_source = models.CharField(max_length=10, choices=KeySource.choices, default=KeySource.NONE)
    api_key = models.ForeignKey(
        EndpointKey,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="endpoints",
        help_text="The stored key, when key_source is project.",
    )
    timeout_seconds = models.FloatField(default=60.0, help_text="Seconds to wait for the first and each next chunk.")
    stream_answers = models.BooleanField(
        default=True, help_text="Off: ask for each answer whole, for servers that cannot stream."
    )
    # Counted over every worker process and machine (conduct.throttle): probes, the second reader
    # and live interviews together never send this endpoint more requests at once.
    max_in_flight = models.PositiveIntegerField(
        default=DEFAULT_MAX_IN_FLIGHT, validators=[MinValueValidator(1), MaxValueValidator(256)],
        help_text="Requests at once to this endpoint, from probes, the second reader and live interviews together.",
    )
    # Learned from the endpoint's refusals (conduct.client.Fallback), so later answers
    # do not repeat a request it rejects; reset when the base URL or model changes.
    can_stream = models.BooleanField(default=True)
    send_stream_options = models.BooleanField(default=True)
    max_tokens_param = models.CharField(max_length=32, default="max_tokens")

    LEARNED_DEFAULTS = {"can_stream": True, "send_stream_options": True, "max_tokens_param": "max_tokens"}

    def __str__(self) -> str:
        return f"endpoint of {self.participant}"

    @property
    def learned_notes(self) -> list[str]:
        """What earlier answers found this endpoint does not take, in words."""
        notes = []
        if not self.can_stream:
            notes.append("it cannot stream, so answers are asked for whole")
        if not self.send_stream_options:
            notes.append("it rejects stream_options, so token usage may be missing")
        if self.max_tokens_param != "max_tokens":
            notes.append(f"it wants {self.max_tokens_param} instead of max_tokens")
        return notes


class ConductSessionQuerySet(models.QuerySet):
    def for_project(self, project: Project) -> ConductSessionQuerySet:
        """The project's sessions, newest first, with their guide."""
        return (
            self.filter(project=project)
            .select_related("guide_version__guide", "created_by")
            .order_by("-created_at")
        )


class ConductSession(models.Model):
    """Interviews conducted together from one guide version, shown side by side."""

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="conduct_sessions")
    guide_version = models.ForeignKey(GuideVersion, on_delete=models.PROTECT, related_name="conduct_sessions")
    # Indexes into guide_version.planned_questions the interviewer has ticked.
    checked_questions = models.JSONField(default=list, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    objects = ConductSessionQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.guide_version} at {self.created_at:%Y-%m-%d %H:%M}"

    @property
    def is_ended(self) -> bool:
        return self.ended_at is not None


class Seat(models.Model):
    """One interview's place in a session; `replay` holds questions a re-run still has to ask."""

    session = models.ForeignKey(ConductSession, on_delete=models.CASCADE, related_name="seats")
    interview = models.OneToOneField(Interview, on_delete=models.CASCADE, related_name="conduct_seat")
    position = models.PositiveIntegerField()
    replay = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["session", "position"]

    def __str__(self) -> str:
        return f"{self.session_id}#{self.position}"


class AnswerJob(models.Model):
    """Worker-side state of one model answer: who holds it, when it was last alive, stop requests."""

    class State(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"

    turn = models.OneToOneField(Turn, on_delete=models.CASCADE, related_name="answer_job")
    state = models.CharField(max_length=8, choices=State.choices, default=State.QUEUED)
    attempt = models.PositiveIntegerField(default=1)
    worker_token = models.CharField(max_length=36, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    stop_requested = models.BooleanField(default=False)
    queued_at = models.DateTimeField(default=timezone.now)
    # When the task was last handed to the broker (or tried): the row is the outbox (projects/jobs.py).
    sent_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["sent_at"], condition=models.Q(state="queued"), name="answerjob_waiting")]

    def __str__(self) -> str:
        return f"answer job for turn {self.turn_id} ({self.state})"

    @property
    def is_stale(self) -> bool:
        """Running, but its worker went quiet (killed or crashed)."""
        return (
            self.state == self.State.RUNNING
            and self.heartbeat_at is not None
            and timezone.now() - self.heartbeat_at > stale_after()
        )

    @property
    def is_live(self) -> bool:
        """Queued or running with a living worker: the page should keep polling."""
        return self.state == self.State.QUEUED or (self.state == self.State.RUNNING and not self.is_stale)

    @property
    def waiting_long(self) -> bool:
        """Queued for a while with no worker picking it up."""
        return self.state == self.State.QUEUED and timezone.now() - self.queued_at > timedelta(seconds=15)
