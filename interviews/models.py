from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models.expressions import RawSQL
from django.db.models.functions import Coalesce, Lower
from django.utils import timezone

from projects.jobs import waiting_long
from projects.models import Project


class ParticipantQuerySet(models.QuerySet):
    def with_interview_counts(self) -> ParticipantQuerySet:
        """Each participant with `interview_count`: its interviews not in the trash."""
        alive = models.Q(interviews__deleted_at__isnull=True)
        return self.annotate(interview_count=models.Count("interviews", filter=alive))

    def interviewed(self) -> ParticipantQuerySet:
        """Participants with at least one interview not in the trash: the ones a per-model table has data for."""
        return self.filter(models.Exists(Interview.objects.alive().filter(participant=models.OuterRef("pk"))))


class Participant(models.Model):
    """The interviewed chatbot: a model behind a provider's interface."""

    class Interface(models.TextChoices):
        WEB = "web", "Web chat"
        API = "api", "API"

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="participants")
    label = models.CharField(max_length=100, help_text="How the paper names it, e.g. “GPT-4o”.")
    provider = models.CharField(max_length=100, blank=True, help_text="e.g. OpenAI, Anthropic, Meta, DeepSeek")
    model_id = models.CharField(max_length=200, blank=True, help_text="Exact model id, e.g. gpt-4o-2024-08-06")
    interface = models.CharField(max_length=8, choices=Interface.choices, default=Interface.WEB)
    snapshot_date = models.DateField(null=True, blank=True)
    attributes = models.JSONField(default=dict, blank=True, help_text="Free case variables.")
    # Live participants are reached through an OpenAI-compatible endpoint.
    is_live = models.BooleanField(default=False)
    base_url = models.URLField(blank=True, help_text="OpenAI-compatible base URL; empty means OPENAI_BASE_URL or OpenAI.")
    temperature = models.FloatField(null=True, blank=True)
    top_p = models.FloatField(null=True, blank=True)
    seed = models.IntegerField(null=True, blank=True)
    max_tokens = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = ParticipantQuerySet.as_manager()

    class Meta:
        ordering = ["label"]
        # One participant per label, whatever its case: imports match labels so (labels are stored normalised,
        # projects/names.py), and a paper's tables could not tell two "GPT-4o" apart.
        constraints = [models.UniqueConstraint(
            Lower("label"), "project", name="unique_participant_label",
            violation_error_message="Another participant in this project already has this label.")]

    def __str__(self) -> str:
        return self.label


class Guide(models.Model):
    """An interview protocol; edits create new GuideVersions so interviews keep the version they used."""

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="guides")
    name = models.CharField(max_length=200)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        # One guide per name, whatever its case (names are stored normalised, projects/names.py).
        constraints = [models.UniqueConstraint(
            Lower("name"), "project", name="unique_guide_name",
            violation_error_message="There is already a guide with this name in this project.")]

    def __str__(self) -> str:
        return self.name


class GuideVersion(models.Model):
    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    guide = models.ForeignKey(Guide, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    opening_prompt = models.TextField()
    system_prompt = models.TextField(blank=True)
    # [{"text": "...", "probes": ["...", ...]}, ...]
    planned_questions = models.JSONField(default=list, blank=True)
    notes = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["guide", "-number"]
        constraints = [models.UniqueConstraint(fields=["guide", "number"], name="unique_guide_version")]

    def __str__(self) -> str:
        return f"{self.guide.name} v{self.number}"


class InterviewQuerySet(models.QuerySet):
    def alive(self) -> InterviewQuerySet:
        """Interviews not in the trash."""
        return self.filter(deleted_at__isnull=True)

    def for_project(self, project: Project) -> InterviewQuerySet:
        """The project's interviews (trash excluded) with their participant."""
        return self.alive().filter(project=project).select_related("participant")

    def with_turn_count(self) -> InterviewQuerySet:
        """Each interview's number of turns as `turn_count`, counted for the rows fetched only (a page stays a page)."""
        return self.annotate(turn_count=per_interview_count(Turn.objects.all()))

    def rerun_family(self, interview: Interview) -> InterviewQuerySet:
        """The root original of `interview` (rerun_of followed all the way up) and every re-run below it."""
        return self.filter(pk__in=RawSQL(_RERUN_FAMILY_SQL, [interview.pk]))


def per_interview_count(queryset: models.QuerySet) -> Coalesce:
    """A correlated COUNT of `queryset`'s rows of each interview: evaluated for the listed rows only.

    (An aggregate over a join instead counts the rows of every interview of the project before a page is cut.)
    """
    counted = (queryset.filter(interview=models.OuterRef("pk")).order_by().values("interview")
               .annotate(n=models.Count("pk", distinct=True)))
    return Coalesce(models.Subquery(counted.values("n"), output_field=models.IntegerField()), 0)


# One recursive query, however long the chain of re-runs of re-runs. UNION (not UNION ALL)
# stops at rows already seen, so even a cycle of rerun_of links ends.
_RERUN_FAMILY_SQL = """
WITH RECURSIVE up (id, rerun_of_id) AS (
    SELECT id, rerun_of_id FROM interviews_interview WHERE id = %s
    UNION
    SELECT parent.id, parent.rerun_of_id FROM interviews_interview parent JOIN up ON parent.id = up.rerun_of_id
), down (id) AS (
    SELECT id FROM up WHERE rerun_of_id IS NULL
    UNION
    SELECT child.id FROM interviews_interview child JOIN down ON child.rerun_of_id = down.id
)
SELECT id FROM down
"""


class Interview(models.Model):
    # The source_format of interviews made from probe rationales (probes.services.condition_to_interviews): a
    # classifier's answers, not conversations, so the interview statistics leave them out unless asked.
    PROBE_SOURCE_FORMAT = "probe"

    class Origin(models.TextChoices):
        IMPORTED = "imported", "Imported"
        LIVE = "live", "Live"

    class Depth(models.TextChoices):
        BRIEF = "brief", "Brief"
        COMPREHENSIVE = "comprehensive", "Comprehensive"

    class Status(models.TextChoices):
        IN_PROGRESS = "in_progress", "In progress"
        READY = "ready", "Ready to code"

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="interviews")
    participant = models.ForeignKey(Participant, on_delete=models.PROTECT, related_name="interviews")
    title = models.CharField(max_length=300)
    conducted_at = models.DateTimeField(null=True, blank=True)
    origin = models.CharField(max_length=10, choices=Origin.choices, default=Origin.IMPORTED)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.READY)
    depth = models.CharField(max_length=16, choices=Depth.choices, default=Depth.COMPREHENSIVE, db_index=True)
    notes = models.TextField(blank=True)
    source_format = models.CharField(max_length=20, blank=True)
    source_filename = models.CharField(max_length=500, blank=True)
    source_sha256 = models.CharField(max_length=64, blank=True, db_index=True)
    source_conversation_id = models.CharField(max_length=200, blank=True, help_text="Conversation id inside the source file.")
    # Hash of the imported turns as written: finds a conversation imported before even
    # when it arrives in a newer export file with a different source_sha256.
    content_sha256 = models.CharField(max_length=64, blank=True, db_index=True)
    metadata = models.JSONField(default=dict, blank=True)
    guide_version = models.ForeignKey(GuideVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="interviews")
    rerun_of = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="reruns")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    deleted_at = models.DateTimeField(null=True, blank=True, help_text="Set when moved to the trash.")

    objects = InterviewQuerySet.as_manager()

    class Meta:
        ordering = ["-conducted_at", "title"]
        indexes = [models.Index(fields=["project", "deleted_at"], name="interview_project_alive")]

    def __str__(self) -> str:
        return self.title

    def alternative_branches(self) -> list[dict[str, Any]]:
        """The conversation's other branches kept at import (ChatGPT edits and regenerations), well-formed only.

        Each: {"leaf", "diverges_at" (turns shared with this transcript), "turns": [{speaker, text, metadata}]}.
        """
        raw = self.metadata.get("branches") if isinstance(self.metadata, dict) else None
        out = []
        for branch in raw if isinstance(raw, list) else []:
            if not isinstance(branch, dict) or not isinstance(branch.get("diverges_at"), int):
                continue
            turns = [t for t in branch.get("turns") or [] if isinstance(t, dict) and t.get("speaker") in Speaker.values
                     and isinstance(t.get("text"), str) and t["text"].strip()]
            if turns and branch["diverges_at"] >= 0:
                out.append({"leaf": str(branch.get("leaf") or ""), "diverges_at": branch["diverges_at"], "turns": turns})
        return out


class Speaker(models.TextChoices):
    INTERVIEWER = "interviewer", "Interviewer"
    PARTICIPANT = "participant", "Participant"
    SYSTEM = "system", "System"
    TOOL = "tool", "Tool"  # a ChatGPT tool step: code sent to python, its output, a browsing result


class Turn(models.Model):
    class Status(models.TextChoices):
        COMPLETE = "complete", "Complete"
        PENDING = "pending", "Waiting for the model"
        STREAMING = "streaming", "Streaming"
        FAILED = "failed", "Failed"
        INTERRUPTED = "interrupted", "Interrupted"

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    interview = models.ForeignKey(Interview, on_delete=models.CASCADE, related_name="turns")
    position = models.PositiveIntegerField()
    speaker = models.CharField(max_length=12, choices=Speaker.choices)
    # Exactly as written (Markdown kept); segment offsets index into it.
    text = models.TextField(blank=True)
    model_slug = models.CharField(max_length=200, blank=True)
    timestamp = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.COMPLETE)
    # Provenance: source branch info for imports; request, response, usage, latency... for live turns.
    metadata = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["interview", "position"]
        constraints = [models.UniqueConstraint(fields=["interview", "position"], name="unique_turn_position")]

    def __str__(self) -> str:
        return f"{self.interview_id}#{self.position} {self.speaker}"

    @property
    def tool_step(self) -> str:
        """What a tool turn is, for its collapsed summary: "Code sent to python", "Result from browser"."""
        tool = self.metadata.get("tool") if isinstance(self.metadata, dict) else None
        if not isinstance(tool, dict):
            return "Tool step"
        name = str(tool.get("name") or "a tool")
        return f"Result from {name}" if tool.get("step") == "result" else f"Call to {name}"

    @property
    def number(self) -> int:
        """The turn's number as the transcript shows it and citations give it."""
        return turn_number(self.position)


def turn_number(position: int) -> int:
    """Turns are stored from position 0 (imported and live alike) and numbered from 1 for people."""
    return position + 1


class Segment(models.Model):
    """The coding unit: a sentence, heading, list item, table row, code block or quote of a turn.

    `start`/`end` are code-point offsets into turn.text, end exclusive:
    turn.text[start:end] == text.
    """

    class Kind(models.TextChoices):
        SENTENCE = "sentence", "Sentence"
        HEADING = "heading", "Heading"
        LIST_ITEM = "list_item", "List item"
        TABLE_ROW = "table_row", "Table row"
        CODE_BLOCK = "code_block", "Code block"
        BLOCK_QUOTE = "block_quote", "Block quote"

    # No index of its own: unique_segment_position (interview, position) serves lookups by interview.
    # On PostgreSQL one foreign key (turn, interview) -> turn (id, interview) checks both columns and that
    # they agree (migration 0008): one check per inserted segment instead of two.
    interview = models.ForeignKey(Interview, on_delete=models.CASCADE, related_name="segments", db_index=False)
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="segments")
    # Order within the interview (across turns).
    position = models.PositiveIntegerField()
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    text = models.TextField()
    kind = models.CharField(max_length=12, choices=Kind.choices, default=Kind.SENTENCE)
    speaker = models.CharField(max_length=12, choices=Speaker.choices)

    class Meta:
        ordering = ["interview", "position"]
        constraints = [
            models.UniqueConstraint(fields=["interview", "position"], name="unique_segment_position"),
            models.CheckConstraint(condition=models.Q(end__gt=models.F("start")), name="segment_not_empty"),
        ]

    def __str__(self) -> str:
        return self.text[:60]


class ImportJob(models.Model):
    """One upload of transcript files: preview, the user's choices, progress and outcome."""

    class Status(models.TextChoices):
        ANALYSING = "analysing", "Reading the files"
        UPLOADED = "uploaded", "Waiting for your choices"
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Importing"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="import_jobs")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.UPLOADED)
    # [{"name", "sha256", "format", "blob", "size"}]: the uploads, kept in PostgreSQL (projects/blobs.py) until
    # the job finishes, so any worker can read them.
    files = models.JSONField(default=list, blank=True)
    # {"files": [{"name", "sha256", "imported_before", "conversations": [{key, title, ...}]}]}
    preview = models.JSONField(default=dict, blank=True)
    options = models.JSONField(default=dict, blank=True)
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    summary = models.JSONField(default=dict, blank=True)
    errors = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # When the task was last handed to the broker (or tried): the row is the outbox (projects/jobs.py).
    sent_at = models.DateTimeField(default=timezone.now)

    WAITING = (Status.ANALYSING, Status.QUEUED)  # for the worker to pick the task up

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["project", "-created_at"], name="importjob_project_recent"),
            models.Index(fields=["sent_at"], condition=models.Q(status__in=["analysing", "queued"]), name="importjob_waiting"),
        ]

    def __str__(self) -> str:
        return f"import {self.uuid} ({self.status})"

    @property
    def is_active(self) -> bool:
        return self.status in (self.Status.ANALYSING, self.Status.QUEUED, self.Status.RUNNING)

    @property
    def waiting_long(self) -> bool:
        """Still waiting for a worker a minute after it was sent: offer to send it again or discard it."""
        return self.status in self.WAITING and waiting_long(self.sent_at)
