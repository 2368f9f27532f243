"""Probe studies: one prompt over many items, conditions and models, with scored answers.

A probe holds items (text, ground truth, attributes), versioned prompt conditions and the
project's live participants as models. Every item × condition × model × repetition is one
Answer row, created before the run and claimed by exactly one worker task at a time.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

from django.conf import settings
from django.db import models
from django.db.models.functions import Lower
from django.utils import timezone

from interviews.models import Participant
from projects.models import Project


def asked_model_id(provenance: dict) -> str:
    """The model id an answer was asked with, as recorded in its provenance ("" when never sent).

    The participant's model id may have been edited since; the recorded one is what the answer is about.
    Reads only `model_requested` and `request`: the answers export passes just those keys.
    """
    request = provenance.get("request") or {}
    return str(provenance.get("model_requested") or request.get("model") or "")


def lease_seconds() -> float:
    """A claimed answer whose worker has not finished it in this long is taken over by the next resume."""
    return float(getattr(settings, "PROBES_LEASE_SECONDS", 15 * 60))


class ProbeQuerySet(models.QuerySet):
    def live(self) -> ProbeQuerySet:
        return self.filter(deleted_at__isnull=True)

    def for_project(self, project: Project) -> ProbeQuerySet:
        """The project's probes not in the trash, newest first."""
        return self.live().filter(project=project).order_by("-created_at")


class Probe(models.Model):
    class RunState(models.TextChoices):
        IDLE = "idle", "Not started"
        RUNNING = "running", "Running"
        CANCELLED = "cancelled", "Cancelled"
        FINISHED = "finished", "Finished"

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="probes")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    participants = models.ManyToManyField(Participant, blank=True, related_name="probes",
                                          help_text="The live participants (models) every condition is asked with.")
    repetitions = models.PositiveIntegerField(default=1)
    # Answers in flight at once for this probe (the worker pool bounds it further).
    concurrency = models.PositiveIntegerField(default=4)
    # What the item import did: {"source", "sha256", "text_column", "label_columns", "filters",
    # "rows_read", "excluded": {...}, "sample": {"per_label", "seed", "counts"}}.
    import_report = models.JSONField(default=dict, blank=True)
    label_columns = models.JSONField(default=list, blank=True)
    run_state = models.CharField(max_length=10, choices=RunState.choices, default=RunState.IDLE)
    run_started_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    deleted_at = models.DateTimeField(null=True, blank=True, help_text="Set when moved to the trash.")

    objects = ProbeQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        # One live probe per name, whatever its case (names are stored normalised, projects/names.py).
        constraints = [models.UniqueConstraint(
            Lower("name"), "project", condition=models.Q(deleted_at__isnull=True), name="unique_live_probe_name",
            violation_error_message="There is already a probe with this name in this project.")]

    def __str__(self) -> str:
        return self.name

    @property
    def truth_column(self) -> str:
        """The ground-truth label scored by default: the first label column."""
        return self.label_columns[0] if self.label_columns else ""


class Item(models.Model):
    probe = models.ForeignKey(Probe, on_delete=models.CASCADE, related_name="items")
    position = models.PositiveIntegerField(help_text="Row number in the imported file (1 = first data row).")
    text = models.TextField()
    labels = models.JSONField(default=dict, blank=True, help_text="Ground truth: {label column: value}.")
    attributes = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["probe", "position"]
        constraints = [models.UniqueConstraint(fields=["probe", "position"], name="unique_item_position")]

    def __str__(self) -> str:
        return f"item {self.position}"


class Condition(models.Model):
    """A prompt condition; edits create ConditionVersions so answers keep the version they were asked with."""

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    probe = models.ForeignKey(Probe, on_delete=models.CASCADE, related_name="conditions")
    name = models.CharField(max_length=100)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["probe", "name"]
        constraints = [models.UniqueConstraint(fields=["probe", "name"], name="unique_condition_name")]

    def __str__(self) -> str:
        return self.name


class OutputFormat(models.TextChoices):
    JSON_SCHEMA = "json_schema", "JSON schema (structured output)"
    LABELLED_LINES = "labelled_lines", "Labelled lines in the text"


class ConditionVersion(models.Model):
    condition = models.ForeignKey(Condition, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    template = models.TextField(help_text="The user message; {text} and any item attribute in braces are filled in.")
    system_prompt = models.TextField(blank=True)
    temperature = models.FloatField(null=True, blank=True)
    seed = models.IntegerField(null=True, blank=True)
    max_tokens = models.PositiveIntegerField(null=True, blank=True)
    output_format = models.CharField(max_length=16, choices=OutputFormat.choices, default=OutputFormat.JSON_SCHEMA)
    # Sent as response_format when output_format is JSON_SCHEMA; built from the keys below when empty.
    json_schema = models.JSONField(default=dict, blank=True)
    # JSON property names, or line labels ("Gender", "Codes Applied", "Rationale").
    label_key = models.CharField(max_length=100, default="label")
    categories_key = models.CharField(max_length=100, blank=True, default="categories")
    rationale_key = models.CharField(max_length=100, blank=True, default="rationale")
    labels = models.JSONField(default=list, help_text="The allowed labels, e.g. [\"woman\", \"man\"].")
    # Agents after the first (which is this version's own prompt): [{"name", "system_prompt", "template"}].
    # Each answers with the same strict JSON schema; {previous} in a template is the earlier agents' answers.
    pipeline = models.JSONField(default=list, blank=True)
    categories = models.JSONField(default=list, blank=True, help_text="The evidence categories offered.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["condition", "-number"]
        constraints = [models.UniqueConstraint(fields=["condition", "number"], name="unique_condition_version")]

    def __str__(self) -> str:
        return f"{self.condition.name} v{self.number}"


class AnswerQuerySet(models.QuerySet):
    def for_probe(self, probe: Probe) -> AnswerQuerySet:
        """The probe's answers with item, condition, version and participant, in a stable order."""
        return (
            self.filter(item__probe=probe)
            .select_related("item", "condition", "condition_version", "participant")
            .order_by("condition__name", "participant__label", "item__position", "repetition")
        )


class Answer(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"
        UNPARSED = "unparsed", "Unparsed"

    FINISHED = (Status.DONE, Status.FAILED, Status.UNPARSED)

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="answers")
    condition = models.ForeignKey(Condition, on_delete=models.CASCADE, related_name="answers")
    # RESTRICT, not PROTECT: a version with answers cannot be deleted on its own, yet purging the probe
    # deletes both (the answers through their item, the versions through their condition).
    condition_version = models.ForeignKey(ConditionVersion, on_delete=models.RESTRICT, related_name="answers")
    participant = models.ForeignKey(Participant, on_delete=models.PROTECT, related_name="probe_answers")
    repetition = models.PositiveIntegerField(default=1)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING, db_index=True)
    reason = models.TextField(blank=True, help_text="Why the answer failed or did not parse.")
    # Parsed fields.
    label = models.CharField(max_length=200, blank=True)
    categories = models.JSONField(default=list, blank=True)
    rationale = models.TextField(blank=True)
    parsed = models.JSONField(default=dict, blank=True)
    # The version whose parser read the answer when it was re-parsed later (None: the version it was asked with).
    parsed_with_version = models.PositiveIntegerField(null=True, blank=True)
    # The model's text as it came, and provenance (request, raw response, model returned,
    # fingerprint, usage, latency, attempts) from conduct.client.
    text = models.TextField(blank=True)
    provenance = models.JSONField(default=dict, blank=True)
    # Worker claim: the token of the task holding it and the worker's node name.
    worker_token = models.CharField(max_length=36, blank=True)
    worker = models.CharField(max_length=200, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    queued_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = AnswerQuerySet.as_manager()

    class Meta:
        ordering = ["condition", "participant", "item", "repetition"]
        constraints = [
            models.UniqueConstraint(fields=["item", "condition", "participant", "repetition"], name="unique_probe_answer"),
        ]
        indexes = [models.Index(fields=["condition", "status"], name="probe_answer_condition_status")]

    def __str__(self) -> str:
        return f"{self.item} × {self.condition} × {self.participant} #{self.repetition}"

    @property
    def asked_model_id(self) -> str:
        return asked_model_id(self.provenance)

    @property
    def parsed_with(self) -> int:
        """The number of the condition version whose labels, keys and schema gave this answer its parsed fields."""
        return self.parsed_with_version or self.condition_version.number

    @property
    def is_lost(self) -> bool:
        """Claimed or queued so long ago that its worker must be gone."""
        since = self.claimed_at if self.status == self.Status.RUNNING else self.queued_at
        return since is not None and timezone.now() - since > timedelta(seconds=lease_seconds())
