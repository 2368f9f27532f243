from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models.functions import Lower

from interviews.models import Interview, Segment
from interviews.rendering import quote_text
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
            # One live code per name, whatever its case (names are stored normalised: projects/names.py).
            models.UniqueConstraint(
                Lower("name"), "project", condition=models.Q(deleted_at__isnull=True), name="unique_live_code_name",
                violation_error_message="There is already a code with this name in this project.",
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
    # The AI suggestion a researcher accepted to make this coding (origin "suggestion").
    suggestion = models.ForeignKey("coding.Suggestion", null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
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


class ReaderSettings(models.Model):
    """A project's AI second reader: off until an owner enables it and chooses who receives transcript text."""

    project = models.OneToOneField(Project, on_delete=models.CASCADE, related_name="second_reader")
    enabled = models.BooleanField(default=False)
    # A live participant's endpoint (its URL, model and key binding) reads the transcripts.
    endpoint = models.ForeignKey("interviews.Participant", null=True, blank=True, on_delete=models.SET_NULL,
                                 related_name="+")
    local_only = models.BooleanField(
        default=False, help_text="Never send transcript text to an endpoint outside this machine or network."
    )
    # The URL the endpoint sent to when an owner enabled the reader: a run goes nowhere else, so a member who
    # edits that participant's URL afterwards cannot redirect transcript text without an owner approving it.
    approved_url = models.CharField(max_length=500, blank=True)
    # The endpoint's prices, for the cost shown with the estimate before a run (in the provider's currency).
    price_input_per_million = models.DecimalField(max_digits=10, decimal_places=4, null=True, blank=True)
    price_output_per_million = models.DecimalField(max_digits=10, decimal_places=4, null=True, blank=True)
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    updated_at = models.DateTimeField(auto_now=True)


class SuggestionRun(models.Model):
    """One request for suggestions over some interviews, with the codebook as it was sent; never edited after."""

    class Status(models.TextChoices):
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        CANCELLED = "cancelled", "Cancelled"

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="suggestion_runs")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.RUNNING)
    endpoint = models.ForeignKey("interviews.Participant", null=True, on_delete=models.SET_NULL, related_name="+")
    model = models.CharField(max_length=200)
    endpoint_url = models.CharField(max_length=500, help_text="Where the transcript text was sent.")
    prompt_version = models.CharField(max_length=40)
    with_critic = models.BooleanField(default=True)
    new_code_ideas = models.BooleanField(default=False)
    interviews = models.ManyToManyField(Interview, related_name="suggestion_runs")
    codebook = models.JSONField(help_text="The codes as sent to the model.")
    # "Find more like this": the run looks for more sentences of one code, shown its coded sentences.
    focus_code = models.ForeignKey(Code, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # Segment ids per window, fixed when the run starts so a re-run task sees the same windows.
    windows = models.JSONField()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"run {self.uuid} ({self.model})"


class ReaderStep(models.Model):
    """One agent's request and answer for one window of a run: the provenance of every suggestion."""

    class Agent(models.TextChoices):
        CODER = "coder", "Coder"
        CRITIC = "critic", "Critic"

    run = models.ForeignKey(SuggestionRun, on_delete=models.CASCADE, related_name="steps")
    window = models.PositiveIntegerField()
    agent = models.CharField(max_length=10, choices=Agent.choices)
    ok = models.BooleanField()
    request = models.JSONField()
    raw_answer = models.TextField(blank=True)
    provenance = models.JSONField(default=dict)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["window", "agent"]
        constraints = [models.UniqueConstraint(fields=["run", "window", "agent"], name="unique_reader_step")]


class CaseCoding(models.Model):
    """A code applied to a whole interview (a case) by one coder: case features are judged per case, not per sentence."""

    interview = models.ForeignKey(Interview, on_delete=models.CASCADE, related_name="case_codings")
    code = models.ForeignKey(Code, on_delete=models.CASCADE, related_name="case_codings")
    coder = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="case_codings")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["interview", "code", "coder"], name="unique_case_coding")]

    def __str__(self) -> str:
        return f"{self.code_id} on interview {self.interview_id} by {self.coder_id}"


class Suggestion(models.Model):
    """An AI-proposed code for a segment; pending until a person accepts or rejects it.

    Never a coding: accepting one creates a coding by the person who accepted it.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        ACCEPTED = "accepted", "Accepted"
        REJECTED = "rejected", "Rejected"

    class Verdict(models.TextChoices):
        NONE = "", "No critic"
        KEPT = "kept", "Kept by the critic"
        CHANGED = "changed", "Changed by the critic"
        REJECTED = "rejected", "Rejected by the critic"

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    run = models.ForeignKey(SuggestionRun, null=True, blank=True, on_delete=models.CASCADE, related_name="suggestions")
    segment = models.ForeignKey(Segment, on_delete=models.CASCADE, related_name="suggestions")
    # Denormalised from segment, so the coding page finds an interview's pending suggestions by index.
    interview = models.ForeignKey(Interview, on_delete=models.CASCADE, related_name="+", db_index=False)
    code = models.ForeignKey(Code, on_delete=models.CASCADE, related_name="suggestions")
    # The coder's code when the critic changed it.
    proposed_code = models.ForeignKey(Code, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    rationale = models.TextField(blank=True)
    evidence = models.TextField(blank=True, help_text="The words of the segment the coder quoted.")
    critic_verdict = models.CharField(max_length=10, choices=Verdict.choices, blank=True, default=Verdict.NONE)
    critic_reason = models.TextField(blank=True)
    model = models.CharField(max_length=200, blank=True)
    prompt_version = models.CharField(max_length=40, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    decided_at = models.DateTimeField(null=True, blank=True)
    reject_reason = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["segment__interview_id", "segment__position", "code_id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "segment", "code"], name="unique_suggestion_per_run"),
        ]
        indexes = [models.Index(fields=["interview", "status"], name="suggestion_interview_status")]

    @property
    def evidence_is_quote(self) -> bool:
        """Whether the evidence is words of the sentence, spacing aside: a model may paraphrase or invent it.

        The words as written (the model read the Markdown) or as shown (the page shows the sentence rendered,
        "**honest**" as a bold "honest"). Evidence cut at the reader's length limit is checked without its closing
        ellipsis.
        """
        evidence = " ".join(self.evidence.removesuffix("…").split())
        return bool(evidence) and any(evidence in " ".join(text.split())
                                      for text in (self.segment.text, quote_text(self.segment.text)))


class CodeIdea(models.Model):
    """A new code the model proposed (inductive): shown for the codebook, never created by itself."""

    run = models.ForeignKey(SuggestionRun, on_delete=models.CASCADE, related_name="code_ideas")
    window = models.PositiveIntegerField()
    name = models.CharField(max_length=200)
    definition = models.TextField(blank=True)
    rationale = models.TextField(blank=True)
    segments = models.ManyToManyField(Segment, related_name="+")

    class Meta:
        ordering = ["name"]


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
