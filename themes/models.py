from __future__ import annotations

import uuid
from functools import cached_property

from django.conf import settings
from django.db import models
from django.db.models.functions import Lower

from coding.models import Code
from projects.models import Project


class ThemeQuerySet(models.QuerySet):
    def alive(self) -> ThemeQuerySet:
        return self.filter(deleted_at__isnull=True)

    def for_project(self, project: Project) -> ThemeQuerySet:
        return self.alive().filter(project=project)

    def merge_destination(self, project: Project, theme_uuid) -> Theme | None:
        """The live theme a merged-away theme became part of (following later merges of its target too), or None."""
        theme = self.filter(project=project, uuid=theme_uuid, merged_into__isnull=False).select_related("merged_into").first()
        seen: set[int] = set()
        while theme is not None and theme.merged_into is not None and theme.pk not in seen:
            seen.add(theme.pk)
            theme = theme.merged_into
            if theme.deleted_at is None:
                return theme
        return None


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
    # A merged theme is not trash: it stays (deleted_at set) so old links redirect to its target, and goes when the target does.
    merged_into = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="+")

    objects = ThemeQuerySet.as_manager()

    class Meta:
        ordering = ["position", "name"]
        constraints = [
            # One live theme per name, whatever its case (as for codes); trashed and merged themes keep theirs.
            models.UniqueConstraint(
                Lower("name"), "project", condition=models.Q(deleted_at__isnull=True), name="unique_live_theme_name",
                violation_error_message="There is already a theme with this name in this project; choose another name.",
            )
        ]

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


class ThemeStatusChange(models.Model):
    """One step in a theme's life: candidate → reviewed → defined → final (or discarded)."""

    theme = models.ForeignKey(Theme, on_delete=models.CASCADE, related_name="status_changes")
    from_status = models.CharField(max_length=10, choices=Theme.Status.choices, blank=True)
    to_status = models.CharField(max_length=10, choices=Theme.Status.choices)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    reason = models.TextField(blank=True)
    review = models.ForeignKey("Review", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]


class Exemplar(models.Model):
    """A quote pinned to a theme for the write-up.

    `spans` holds [start, end) offsets into `turn.text` (code points); the quote shown is
    the spans joined with " [...] ", so every word can be checked against the source.
    """

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    theme = models.ForeignKey(Theme, on_delete=models.CASCADE, related_name="exemplars")
    turn = models.ForeignKey("interviews.Turn", on_delete=models.CASCADE, related_name="+")
    segment = models.ForeignKey("interviews.Segment", null=True, on_delete=models.SET_NULL, related_name="+")
    spans = models.JSONField(default=list)
    quote = models.TextField()
    note = models.TextField(blank=True)
    position = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["position", "id"]
        constraints = [
            # A quote is its turn and spans; pinned once per theme, however often it is clicked.
            models.UniqueConstraint(fields=["theme", "turn", "spans"], name="unique_exemplar_quote",
                                    violation_error_message="This quote is already pinned to this theme."),
        ]

    def verify(self) -> bool:
        """True when the stored quote still matches the source turn text at its spans."""
        pieces = [self.turn.text[start:end] for start, end in self.spans]
        return " [...] ".join(pieces) == self.quote


class MemoQuerySet(models.QuerySet):
    def alive(self) -> MemoQuerySet:
        return self.filter(deleted_at__isnull=True)

    def for_project(self, project: Project) -> MemoQuerySet:
        """Live memos of a project with author and targets loaded (journal, theme page).

        A memo whose interview, code or theme is in the trash is hidden with it and comes back when it is restored.
        """
        return (
            self.alive()
            .filter(project=project)
            .filter(models.Q(interview__isnull=True) | models.Q(interview__deleted_at__isnull=True))
            .filter(models.Q(code__isnull=True) | models.Q(code__deleted_at__isnull=True))
            .filter(models.Q(theme__isnull=True) | models.Q(theme__deleted_at__isnull=True))
            .select_related("author", "updated_by", "interview", "code", "theme")
        )


class Memo(models.Model):
    class Kind(models.TextChoices):
        REFLEXIVE = "reflexive", "Reflexive"
        ANALYTIC = "analytic", "Analytic"
        METHODOLOGICAL = "methodological", "Methodological"
        FAMILIARISATION = "familiarisation", "Familiarisation"

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memos")
    # At most one of these is set; none means a memo on the project as a whole.
    interview = models.ForeignKey("interviews.Interview", null=True, blank=True, on_delete=models.CASCADE, related_name="memos")
    code = models.ForeignKey(Code, null=True, blank=True, on_delete=models.CASCADE, related_name="memos")
    theme = models.ForeignKey(Theme, null=True, blank=True, on_delete=models.CASCADE, related_name="memos")
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.REFLEXIVE)
    title = models.CharField(max_length=200)
    body = models.TextField(blank=True, help_text="Markdown.")
    # The number of the latest revision; an edit based on an older one is a conflict.
    version = models.PositiveIntegerField(default=1)
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    deleted_at = models.DateTimeField(null=True, blank=True, help_text="Set when moved to the trash.")

    objects = MemoQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["project", "-created_at"], name="memo_project_recent")]
        constraints = [
            models.CheckConstraint(
                condition=(
                    models.Q(interview__isnull=True, code__isnull=True)
                    | models.Q(interview__isnull=True, theme__isnull=True)
                    | models.Q(code__isnull=True, theme__isnull=True)
                ),
                name="memo_one_target",
            )
        ]

    def __str__(self) -> str:
        return self.title

    @property
    def target_kind(self) -> str:
        if self.theme_id:
            return "theme"
        if self.code_id:
            return "code"
        if self.interview_id:
            return "interview"
        return "project"

    @property
    def target(self):
        return self.theme or self.code or self.interview or self.project


class MemoRevision(models.Model):
    """The text of a memo as saved at one moment; revisions are never edited."""

    memo = models.ForeignKey(Memo, on_delete=models.CASCADE, related_name="revisions")
    number = models.PositiveIntegerField()
    title = models.CharField(max_length=200)
    body = models.TextField(blank=True)
    kind = models.CharField(max_length=16, choices=Memo.Kind.choices)
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-number"]
        constraints = [models.UniqueConstraint(fields=["memo", "number"], name="unique_memo_revision")]


class Comment(models.Model):
    """A comment in a theme's discussion; replies point at a top-level comment."""

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    theme = models.ForeignKey(Theme, on_delete=models.CASCADE, related_name="comments")
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="replies")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    body = models.TextField()
    mentions = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="theme_mentions")
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["theme", "created_at"], name="comment_theme_time")]


class ThreadRead(models.Model):
    """How far a member has read a theme's thread (unread markers)."""

    theme = models.ForeignKey(Theme, on_delete=models.CASCADE, related_name="reads")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    last_read_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["theme", "user"], name="unique_thread_read")]


class MentionsRead(models.Model):
    """When a member last looked at their Mentions page in a project (the unread-mentions badge)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    last_read_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "user"], name="unique_mentions_read")]


class Snapshot(models.Model):
    """The theme structure (themes, sub-themes, codes) frozen at one moment, as JSON."""

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="theme_snapshots")
    review = models.ForeignKey("Review", null=True, blank=True, on_delete=models.SET_NULL, related_name="snapshots")
    label = models.CharField(max_length=200)
    data = models.JSONField(default=dict)
    taken_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    taken_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-taken_at", "-id"]


class Review(models.Model):
    """A team review meeting: attendees, an agenda of themes, decisions and notes."""

    class Status(models.TextChoices):
        OPEN = "open", "Open"
        CLOSED = "closed", "Closed"

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="reviews")
    title = models.CharField(max_length=200)
    date = models.DateField()
    attendees = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="+")
    notes = models.TextField(blank=True, help_text="Markdown.")
    # Bumped by every notes save: a save based on an older version is refused, never lost (as for themes and memos).
    notes_version = models.PositiveIntegerField(default=1)
    # Who saved the notes last and when: a colleague whose save is refused is told whose version they are looking at.
    notes_saved_at = models.DateTimeField(null=True, blank=True)
    notes_saved_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    status = models.CharField(max_length=6, choices=Status.choices, default=Status.OPEN)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-date", "-id"]

    def __str__(self) -> str:
        return self.title


class ThemeOnRecord:
    """Meeting records outlive their themes: once a theme is deleted for good, the name it had is shown."""

    theme: Theme | None
    theme_name: str

    @property
    def theme_label(self) -> str:
        return self.theme.name if self.theme is not None else (self.theme_name or "a deleted theme")

    @property
    def name_on_record(self) -> str:
        """The theme's name when it went on the record: minutes say what the meeting looked at, not what came of it."""
        return self.theme_name or self.theme_label


class AgendaItem(ThemeOnRecord, models.Model):
    review = models.ForeignKey(Review, on_delete=models.CASCADE, related_name="agenda")
    theme = models.ForeignKey(Theme, null=True, on_delete=models.SET_NULL, related_name="+")
    theme_name = models.CharField(max_length=200, blank=True, help_text="The theme's name when it was put on the agenda.")
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["position", "id"]
        constraints = [models.UniqueConstraint(fields=["review", "theme"], name="unique_agenda_theme")]


class Decision(ThemeOnRecord, models.Model):
    """What the meeting decided about one theme; applied to the themes with one click."""

    class Kind(models.TextChoices):
        RENAME = "rename", "Rename"
        MERGE = "merge", "Merge into another theme"
        SPLIT = "split", "Split off a new theme"
        REDEFINE = "redefine", "Redefine"
        STATUS = "status", "Change status"
        MOVE_CODES = "move_codes", "Move codes"

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    review = models.ForeignKey(Review, on_delete=models.CASCADE, related_name="decisions")
    theme = models.ForeignKey(Theme, null=True, on_delete=models.SET_NULL, related_name="+")
    theme_name = models.CharField(max_length=200, blank=True, help_text="The theme's name when the decision was recorded.")
    kind = models.CharField(max_length=12, choices=Kind.choices)
    # rename {name}; merge {into}; split {name, codes}; redefine {definition}; status {status}; move_codes {codes, to}
    payload = models.JSONField(default=dict)
    note = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    applied_at = models.DateTimeField(null=True, blank=True)
    applied_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # Null for decisions recorded before versions were kept: applying those always asks first.
    theme_version = models.PositiveIntegerField(null=True, blank=True, help_text="The theme's version when the decision was recorded.")
    declined_at = models.DateTimeField(null=True, blank=True, help_text="Set when the team kept the theme as it was instead.")
    declined_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    declined_reason = models.TextField(blank=True)

    class Meta:
        ordering = ["created_at", "id"]

    # Kinds that act on a second theme, named by uuid in the payload (with its name then under "<key>_name").
    TARGET_KEYS = {Kind.MERGE: "into", Kind.MOVE_CODES: "to"}

    @property
    def target_name_on_record(self) -> str:
        key = self.TARGET_KEYS.get(self.kind)
        return self.payload.get(f"{key}_name", "") if key else ""

    @cached_property
    def target_theme(self) -> Theme | None:
        """The theme a merge folds into or codes move to, as it is now (None if deleted for good, or no such kind).
        Pages set this for all their decisions at once (themes.queries.with_target_themes)."""
        key = self.TARGET_KEYS.get(self.kind)
        if key is None:
            return None
        return Theme.objects.select_related("merged_into").filter(uuid=self.payload.get(key)).first()

    @property
    def cannot_apply(self) -> str:
        """Why a pending decision can no longer be applied as it stands (its theme, or the theme it merges into or moves
        codes to, merged away, trashed or deleted), or ""."""
        theme = self.theme
        if theme is None:
            return "theme deleted for good"
        if theme.merged_into_id:
            return f"theme merged into “{theme.merged_into.name}”"
        if theme.deleted_at is not None:
            return "theme in the trash"
        if self.kind not in self.TARGET_KEYS:
            return ""
        target = self.target_theme
        if target is None:
            return f"target theme “{self.target_name_on_record}” deleted for good"
        if target.merged_into_id:
            return f"target theme “{target.name}” merged into “{target.merged_into.name}”"
        if target.deleted_at is not None:
            return f"target theme “{target.name}” in the trash"
        return ""

    @property
    def trashed_theme(self) -> Theme | None:
        """The theme (this decision's or its target) that keeps it from being applied and that restoring would bring back."""
        for theme in (self.theme, self.target_theme if self.kind in self.TARGET_KEYS else None):
            if theme is not None and theme.deleted_at is not None and not theme.merged_into_id:
                return theme
        return None
