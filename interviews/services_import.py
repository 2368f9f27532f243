"""Importing transcripts: upload → preview → one atomic batch of interviews, turns, segments.

The parsers (interviews/parsers) know formats; this module knows the database. A batch
lands whole or not at all: everything runs in one transaction, rows go in with bulk
inserts (PostgreSQL COPY for turns and segments), and progress is reported through the cache
because rows written inside the open transaction are invisible to the page polling it.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.core.files.uploadedfile import UploadedFile
from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from psycopg.types.json import Jsonb

from interviews.models import ImportJob, Interview, Participant, Segment, Turn
from interviews.parsers import (
    FORMATS,
    LABEL_CHOICES,
    Limits,
    ParsedConversation,
    ParseError,
    SourceFile,
    expand,
    parse_upload,
)
from interviews.parsers.archive import unpacked_size
from interviews.parsers.base import human_size
from interviews.segmentation import segment_text
from interviews.tasks import import_batch_task, import_preview_task
from projects.audit import audit_record_many
from projects.blobs import BlobMissing, blob_create, blob_open, blobs_delete
from projects.copy import copy_into, next_ids
from projects.jobs import enqueue
from projects.models import AuditEvent, Project
from projects.names import name_key, normalised_name

log = logging.getLogger(__name__)

# Turns per bulk insert: large enough for few round trips, small enough to keep memory
# flat on a 1,000-conversation export and the progress bar moving.
CHUNK_TURNS = 5000
PROGRESS_TTL = 24 * 3600

PROVIDERS = (
    (("gpt", "o1", "o3", "o4", "chatgpt", "text-davinci", "dall"), "OpenAI"),
    (("claude",), "Anthropic"),
    (("gemini", "bard", "palm"), "Google"),
    (("llama", "meta"), "Meta"),
    (("deepseek",), "DeepSeek"),
    (("mistral", "mixtral", "codestral"), "Mistral AI"),
    (("grok",), "xAI"),
    (("qwen",), "Alibaba"),
    (("copilot", "phi", "bing"), "Microsoft"),
)
FORMAT_FALLBACK_LABEL = {"chatgpt": "ChatGPT", "claude": "Claude"}
WEB_FORMATS = {"chatgpt", "claude", "markdown"}


class ImportOptionsError(ValueError):
    """Bad import options (not bad files: those raise ParseError)."""


def import_limits() -> Limits:
    """Size caps from settings."""
    max_upload = getattr(settings, "RTA_MAX_UPLOAD_BYTES", 200 * 1024 * 1024)
    return Limits(
        max_file_bytes=max_upload,
        max_text_bytes=min(max_upload, 50 * 1024 * 1024),
        max_archive_total_bytes=getattr(settings, "RTA_MAX_UNCOMPRESSED_BYTES", 1024 * 1024 * 1024),
    )


def chunk_turns() -> int:
    """CHUNK_TURNS, or RTA_IMPORT_CHUNK_TURNS (tests use small chunks to see progress mid-import)."""
    return int(os.environ.get("RTA_IMPORT_CHUNK_TURNS") or CHUNK_TURNS)


def file_sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1024 * 1024), b""):
            h.update(block)
    return h.hexdigest()


# --- Options -----------------------------------------------------------------


@dataclass
class ImportOptions:
    """What the user chose in the preview (or on the command line)."""

    # Conversation keys ("<source name>#<index>") to import; None means all non-duplicates.
    selected: set[str] | None = None
    # source name -> {label -> speaker} for formats with speaker labels.
    label_maps: dict[str, dict[str, str]] = field(default_factory=dict)
    # "auto" (from model slugs), a participant uuid, or "new:<label>".
    participant: str = "auto"
    depth: str = Interview.Depth.COMPREHENSIVE
    allow_duplicates: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "selected": sorted(self.selected) if self.selected is not None else None,
            "label_maps": self.label_maps,
            "participant": self.participant,
            "depth": self.depth,
            "allow_duplicates": self.allow_duplicates,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ImportOptions:
        sel = data.get("selected")
        return cls(
            selected=set(sel) if sel is not None else None,
            label_maps=data.get("label_maps") or {},
            participant=data.get("participant") or "auto",
            depth=data.get("depth") or Interview.Depth.COMPREHENSIVE,
            allow_duplicates=bool(data.get("allow_duplicates")),
        )

    def validate(self) -> None:
        for source, mapping in self.label_maps.items():
            for label, speaker in mapping.items():
                if speaker not in LABEL_CHOICES:
                    raise ImportOptionsError(f"{source}: label {label!r} must map to one of {', '.join(LABEL_CHOICES)}")
        if self.depth not in Interview.Depth.values:
            raise ImportOptionsError(f"depth must be one of {', '.join(Interview.Depth.values)}")


def conversation_key(conv: ParsedConversation) -> str:
    return f"{conv.source_name}#{conv.index}"


@dataclass
class StoredFile:
    """A file to import: an upload kept in PostgreSQL (a StoredBlob, by UUID) until its job finishes, so any
    worker can read it; or, for the command-line import only, a path on the machine running the command."""

    name: str
    sha256: str
    format: str = "auto"
    blob: str = ""
    size: int = 0
    path: str = ""

    def source(self) -> SourceFile:
        if self.path:
            return SourceFile.from_path(self.path, self.name)
        return SourceFile(name=self.name, size=self.size, opener=lambda: blob_open(self.blob))

    def conversations(self, limits: Limits) -> Iterator[ParsedConversation]:
        return parse_upload(self.source(), format=self.format, limits=limits)


# --- Preview -------------------------------------------------------------------


def preview_files(*, project: Project, files: list[StoredFile],
                  progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Summaries of every conversation (title, date, models, turns, duplicate flag).

    Parses everything once, keeping only summaries, so a bad file fails here with its
    message before anything is queued."""
    limits = import_limits()
    out_files = []
    hashes: list[str] = []
    for f in files:
        convs = []
        empty = 0  # conversations with no visible turns (project stubs, hidden system messages): nothing to import
        for conv in f.conversations(limits):
            if not conv.turns:
                empty += 1
                continue
            _drop_nul(conv)
            h = conv.content_sha256()
            hashes.append(h)
            convs.append({
                "key": conversation_key(conv),
                "source_name": conv.source_name,
                "format": conv.source_format,
                "title": conv.title or _fallback_title(conv),
                "started_at": conv.started_at.isoformat() if conv.started_at else None,
                "models": conv.model_slugs,
                "turns": len(conv.turns),
                # The opening question helps tell apart conversations with generic titles.
                "first": next((t.text[:160] for t in conv.turns if t.speaker == "interviewer"), ""),
                "content_sha256": h,
                # Pairs, not an object: jsonb would reorder the labels.
                "labels": [[label, guess] for label, guess in conv.speaker_labels.items()],
            })
            if progress and len(hashes) % 50 == 0:
                progress(len(hashes))
        out_files.append({"name": f.name, "sha256": f.sha256, "conversations": convs, "empty": empty})
    dups = duplicates(project=project, content_hashes=hashes, file_hashes=[f.sha256 for f in files])
    for pf in out_files:
        pf["imported_before"] = dups["files"].get(pf["sha256"])
        for c in pf["conversations"]:
            c["duplicate_of"] = dups["contents"].get(c["content_sha256"])
    return {"files": out_files}


def duplicates(*, project: Project, content_hashes: Iterable[str], file_hashes: Iterable[str]) -> dict[str, dict]:
    """Earlier interviews of the project with the same content or source file (one query)."""
    content_hashes, file_hashes = list(set(content_hashes)), list(set(file_hashes))
    rows = Interview.objects.alive().filter(project=project).filter(
        Q(content_sha256__in=content_hashes) | Q(source_sha256__in=file_hashes)
    ).values("uuid", "title", "content_sha256", "source_sha256", "created_at")
    found: dict[str, dict] = {"contents": {}, "files": {}}
    for r in rows:
        info = {"uuid": str(r["uuid"]), "title": r["title"], "imported_at": r["created_at"].isoformat()}
        if r["content_sha256"] in content_hashes:
            found["contents"].setdefault(r["content_sha256"], info)
        if r["source_sha256"] in file_hashes:
            found["files"].setdefault(r["source_sha256"], info)
    return found


def _fallback_title(conv: ParsedConversation) -> str:
    stem = os.path.splitext(os.path.basename(conv.source_name))[0]
    return f"{stem} #{conv.index + 1}" if conv.index or conv.source_format in ("chatgpt", "claude") else stem


# --- Jobs ----------------------------------------------------------------------


def job_files_delete(job: ImportJob) -> None:
    """Remove the job's stored uploads once the transaction commits (the job is done with them)."""
    blobs = [f.get("blob") for f in job.files]
    transaction.on_commit(lambda: blobs_delete(blobs))


def importjob_create(*, project: Project, user, uploads: list[UploadedFile], format: str = "auto") -> ImportJob:
    """Store the uploads and preview them. Small uploads are read at once, so a bad file raises
    ParseError and leaves nothing; large ones are read by the worker (status "analysing")."""
    if not uploads:
        raise ImportOptionsError("Choose at least one file to import.")
    if format != "auto" and format not in FORMATS:
        raise ImportOptionsError(f"format must be auto or one of {', '.join(FORMATS)}")
    limits = import_limits()
    for up in uploads:
        if up.size > limits.max_file_bytes:
            raise ParseError(up.name, None, f"a file of at most {human_size(limits.max_file_bytes)}", human_size(up.size))
    job = ImportJob(project=project, created_by=user)
    stored: list[StoredFile] = []
    try:
        for i, up in enumerate(uploads):
            stored.append(_store_upload(up, user, i, format))
        # The cheap checks (REFI-QDA files, a ZIP's directory: bombs, traversal) before any preview, also for the
        # uploads the worker reads; what is read then is what the files unpack to, whatever they weigh compressed.
        unpacked = sum(unpacked_size(member) for f in stored for member in expand(f.source(), limits))
        job.files = [vars(s) for s in stored]
        inline = unpacked <= settings.RTA_IMPORT_INLINE_PREVIEW_BYTES
        if inline:
            _set_preview(job, preview_files(project=project, files=stored))
        else:
            job.status = ImportJob.Status.ANALYSING
        job.save()
    except BaseException:
        blobs_delete(f.blob for f in stored)
        raise
    if not inline:
        enqueue(import_preview_task, job.id)
    return job


# A worker past its memory ceiling (config/memory.py) fails the job with this instead of leaving it running.
OUT_OF_MEMORY = ("Reading these files needed more memory than a worker process may use (RTA_MEMORY_LIMIT_MB). "
                 "Nothing was imported; split the upload into smaller files and import them one by one.")
# An error no check foresaw (a bug, a value the database refuses): the job fails saying so, where the sweeper would
# otherwise send it again every minute to fail the same way, and the page show it running for ever.
IMPORT_FAILED = ("The import stopped on an error of ours ({name}). Nothing was imported. Try again; if it keeps "
                 "failing, tell the maintainers.")
FILES_GONE = ("The uploaded files are no longer kept (uploads wait RTA_JOB_FILES_KEEP_DAYS days for their import). "
              "Nothing was imported; upload them again.")


def _set_preview(job: ImportJob, preview: dict[str, Any]) -> None:
    job.preview = preview
    job.progress_total = sum(len(f["conversations"]) for f in preview["files"])
    job.status = ImportJob.Status.UPLOADED


def importjob_preview(*, job_id: int) -> ImportJob | None:
    """Read a large upload in the worker (the task's body); safe to run twice."""
    job = ImportJob.objects.select_related("project").filter(id=job_id).first()
    if job is None or job.status != ImportJob.Status.ANALYSING:
        return job  # discarded, or read already
    files = [StoredFile(**f) for f in job.files]
    try:
        _set_preview(job, preview_files(project=job.project, files=files,
                                        progress=lambda n: set_progress(job.uuid, n, 0)))
    except ParseError as e:
        _finish(job, ImportJob.Status.FAILED, errors=[str(e)])
        job_files_delete(job)
        return job
    except MemoryError:
        _finish(job, ImportJob.Status.FAILED, errors=[OUT_OF_MEMORY])
        job_files_delete(job)
        return job
    except BlobMissing:
        _finish(job, ImportJob.Status.FAILED, errors=[FILES_GONE])
        return job
    except Exception as exc:
        log.exception("import preview %s failed", job.pk)
        _finish(job, ImportJob.Status.FAILED, errors=[IMPORT_FAILED.format(name=type(exc).__name__)])
        job_files_delete(job)
        return job
    # The API may queue the import while the upload is still being read: then the job stays queued
    # (the import task runs next) and only the preview is added.
    if not ImportJob.objects.filter(pk=job.pk, status=ImportJob.Status.ANALYSING).update(
            preview=job.preview, progress_total=job.progress_total, status=job.status):
        if not ImportJob.objects.filter(pk=job.pk).update(preview=job.preview):
            return None  # discarded while it was being read
        job.refresh_from_db()
    return job


DISCARDABLE = (ImportJob.Status.UPLOADED, ImportJob.Status.FAILED, *ImportJob.WAITING)


def importjob_discard(*, job: ImportJob) -> None:
    """Throw away an upload the user does not want to import (its files and the job), also one still
    waiting for the worker; one the worker has started cannot be."""
    # Conditional: the worker moves a queued job to running with one update, so either that or this wins.
    deleted, _ = ImportJob.objects.filter(pk=job.pk, status__in=DISCARDABLE).delete()
    if not deleted:
        raise ImportOptionsError("This import has started; it can no longer be discarded.")
    job_files_delete(job)


def _store_upload(up: UploadedFile, user, i: int, format: str) -> StoredFile:
    # The user's name is only shown, never used as a path.
    name = os.path.basename(up.name or f"upload-{i}") or f"upload-{i}"
    blob = blob_create(source=up, name=name, user=user, keep=timedelta(days=settings.RTA_JOB_FILES_KEEP_DAYS))
    return StoredFile(name=name, sha256=blob.sha256, format=format, blob=str(blob.uuid), size=blob.size)


def stored_file_from_path(path: str, format: str = "auto") -> StoredFile:
    return StoredFile(name=os.path.basename(path), path=path, sha256=file_sha256(path), format=format)


def importjob_queue(*, job: ImportJob, options: ImportOptions) -> ImportJob:
    """Save the user's choices and start the import in the worker after commit."""
    options.validate()
    _check_participant_choice(job.project, options.participant)
    if options.selected is not None:
        known = {c["key"] for f in job.preview.get("files", []) for c in f["conversations"]}
        options.selected &= known
        if not options.selected:
            raise ImportOptionsError("Tick at least one conversation to import.")
    job.options = options.to_json()
    job.progress_total = _count_selected(job.preview, options)
    # Conditional update: of two concurrent submits (a double click) only one queues the job.
    claimed = ImportJob.objects.filter(
        pk=job.pk, status__in=[ImportJob.Status.UPLOADED, ImportJob.Status.ANALYSING]
    ).update(options=job.options, progress_total=job.progress_total, status=ImportJob.Status.QUEUED,
             sent_at=timezone.now())
    if not claimed:
        raise ImportOptionsError("This import has already been started.")
    job.status = ImportJob.Status.QUEUED
    set_progress(job.uuid, 0, job.progress_total)
    enqueue(import_batch_task, job.id)
    return job


def _count_selected(preview: dict[str, Any], options: ImportOptions) -> int:
    # 0 while a large upload is still being read (the API queues at once): the bar then counts up.
    return sum(1 for f in preview.get("files", []) for c in f["conversations"]
               if _wanted(c["key"], c.get("duplicate_of"), options))


def _wanted(key: str, duplicate_of: Any, options: ImportOptions) -> bool:
    if options.selected is not None:
        return key in options.selected
    return options.allow_duplicates or not duplicate_of


def _check_participant_choice(project: Project, choice: str) -> None:
    if choice == "auto" or choice.startswith("new:"):
        label_max = Participant._meta.get_field("label").max_length
        if choice.startswith("new:") and not 0 < len(normalised_name(choice[4:])) <= label_max:
            raise ImportOptionsError(f"Give the new participant a label of 1 to {label_max} characters.")
        return
    if not Participant.objects.filter(project=project, uuid=_uuid_or_none(choice)).exists():
        raise ImportOptionsError("Choose a participant of this project.")


def _uuid_or_none(value: str):
    try:
        return uuid.UUID(value)
    except (ValueError, AttributeError, TypeError):
        return None


def progress_key(job_uuid) -> str:
    return f"rta:import-progress:{job_uuid}"


def set_progress(job_uuid, done: int, total: int) -> None:
    cache.set(progress_key(job_uuid), {"done": done, "total": total}, PROGRESS_TTL)


# Folding a label's lines back into the turn before needs the raw lines, which only text and Markdown keep.
FOLDABLE_FORMATS = ("text", "markdown")


def preview_speaker_labels(job: ImportJob) -> list[tuple[str, dict[str, str], bool]]:
    """Per source file with speaker labels: (file name, {label: guessed speaker}, whether a label can be folded
    into the turn before), from the job's preview, in the order the labels first appear."""
    groups: dict[str, dict[str, str]] = {}
    foldable: set[str] = set()
    for f in job.preview.get("files", []):
        for c in f["conversations"]:
            for label, guess in c.get("labels") or []:
                groups.setdefault(c["source_name"], {}).setdefault(label, guess)
            if c.get("format") in FOLDABLE_FORMATS:
                foldable.add(c["source_name"])
    return [(source, labels, source in foldable) for source, labels in groups.items()]


def get_progress(job: ImportJob) -> dict[str, int]:
    if job.status in (ImportJob.Status.DONE, ImportJob.Status.FAILED):
        return {"done": job.progress_done, "total": job.progress_total}
    return cache.get(progress_key(job.uuid)) or {"done": job.progress_done, "total": job.progress_total}


def importjob_run(*, job_id: int) -> ImportJob | None:
    """Run a queued job (the task's body). Safe to run twice: the job row is locked for the
    whole import and a finished (or discarded) job is left alone."""
    ImportJob.objects.filter(id=job_id, status=ImportJob.Status.QUEUED).update(
        status=ImportJob.Status.RUNNING, started_at=timezone.now())
    with transaction.atomic():
        job = ImportJob.objects.select_for_update(of=("self",)).select_related("project", "created_by").filter(
            id=job_id).first()
        if job is None or job.status not in (ImportJob.Status.QUEUED, ImportJob.Status.RUNNING):
            return job
        files = [StoredFile(**f) for f in job.files]
        options = ImportOptions.from_json(job.options)
        try:
            summary = import_batch(project=job.project, user=job.created_by, files=files, options=options,
                                   total=job.progress_total,
                                   progress=lambda done, total: set_progress(job.uuid, done, total))
        except (ParseError, ImportOptionsError) as e:
            _finish(job, ImportJob.Status.FAILED, errors=[str(e)])
        except MemoryError:  # import_batch's savepoint has rolled back whatever it wrote
            _finish(job, ImportJob.Status.FAILED, errors=[OUT_OF_MEMORY])
        except BlobMissing:
            _finish(job, ImportJob.Status.FAILED, errors=[FILES_GONE])
        except Exception as exc:  # import_batch's savepoint has rolled back whatever it wrote
            log.exception("import %s failed", job.pk)
            _finish(job, ImportJob.Status.FAILED, errors=[IMPORT_FAILED.format(name=type(exc).__name__)])
        else:
            _finish(job, ImportJob.Status.DONE, summary=summary.to_json())
    # Uploads are not kept once the import has landed (or failed for good).
    job_files_delete(job)
    return job


def _finish(job: ImportJob, status: str, *, summary: dict | None = None, errors: list[str] | None = None) -> None:
    job.status = status
    job.summary = summary or {}
    job.errors = errors or []
    job.finished_at = timezone.now()
    job.progress_done = len(job.summary.get("interviews", [])) + len(job.summary.get("skipped", []))
    job.progress_total = max(job.progress_total, job.progress_done)  # unknown (0) when queued while analysing
    job.save(update_fields=["status", "summary", "errors", "finished_at", "progress_done", "progress_total"])
    set_progress(job.uuid, job.progress_done, job.progress_total)


# --- The batch -------------------------------------------------------------------


@dataclass
class BatchSummary:
    interviews: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    participants_created: list[str] = field(default_factory=list)
    turns: int = 0
    segments: int = 0
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return vars(self)


@dataclass
class _TurnRow:
    """A turn to insert; plain attributes, because building 16,000 Turn model instances
    costs more than inserting them."""

    position: int
    speaker: str
    text: str
    model_slug: str
    timestamp: Any
    metadata: dict[str, Any]
    id: int | None = None


@dataclass
class _Pending:
    interview: Interview
    turns: list[_TurnRow]


@transaction.atomic
def import_batch(
    *, project: Project, user, files: list[StoredFile], options: ImportOptions,
    progress: Callable[[int, int], None] | None = None, total: int | None = None,
) -> BatchSummary:
    """Import the chosen conversations of the files as interviews, all or nothing."""
    options.validate()
    started = time.perf_counter()
    limits = import_limits()
    batch = _Batch(project, user, options, progress, total)
    chunk = chunk_turns()
    # Streamed in chunks across files: a 1,000-conversation export never sits in memory
    # whole, and twenty small files still go in with a handful of statements.
    buffer: list[tuple[StoredFile, ParsedConversation]] = []
    buffered_turns = 0
    for f in files:
        for conv in _wanted_conversations(f, limits, options):
            buffer.append((f, conv))
            buffered_turns += len(conv.turns)
            if buffered_turns >= chunk:
                batch.store(buffer)
                buffer, buffered_turns = [], 0
    batch.store(buffer)
    audit_record_many(project=project, actor=user, action=AuditEvent.Action.CREATED, target_type="interview", targets=[
        (i["uuid"], f"Interview “{i['title']}” imported from {i['source'] or 'an upload'}") for i in batch.summary.interviews])
    batch.summary.seconds = round(time.perf_counter() - started, 3)
    return batch.summary


class _Batch:
    def __init__(self, project: Project, user, options: ImportOptions,
                 progress: Callable[[int, int], None] | None, total: int | None) -> None:
        self.project, self.user, self.options = project, user, options
        self.progress, self.total = progress, total
        self.summary = BatchSummary()
        self.participants = _ParticipantPicker(project, options.participant, self.summary)
        self.hashes_seen: set[str] = set()
        self.done = 0

    def store(self, convs: list[tuple[StoredFile, ParsedConversation]]) -> None:
        """Check a chunk for duplicates (one query) and bulk-insert the rest."""
        if not convs:
            return
        hashes = [c.content_sha256() for _, c in convs]
        earlier = duplicates(project=self.project, content_hashes=hashes, file_hashes=[])["contents"]
        pending = []
        for (f, conv), h in zip(convs, hashes, strict=True):
            reason = self._skip_reason(conv, earlier.get(h), h)
            if reason:
                self.summary.skipped.append({"key": conversation_key(conv), "title": conv.title or _fallback_title(conv),
                                             "source": conv.source_name, **reason})
                continue
            self.hashes_seen.add(h)
            pending.append(_build(self.project, self.user, f, conv, h, self.participants.pick(conv), self.options))
        _flush(pending, self.summary)
        self.done += len(convs)
        if self.progress:
            self.progress(self.done, max(self.total or 0, self.done))
        _hold_here_for_tests()

    def _skip_reason(self, conv: ParsedConversation, earlier: dict | None, h: str) -> dict | None:
        if not conv.turns:
            return {"reason": "no visible turns"}
        if self.options.allow_duplicates:
            return None
        if earlier:
            return {"reason": f"already imported as “{earlier['title']}”", "duplicate_of": earlier["uuid"]}
        if h in self.hashes_seen:
            return {"reason": "the same conversation appears twice in this import"}
        return None


def _hold_here_for_tests() -> None:
    """With RTA_IMPORT_HOLD_LOCK set (tests only), wait after each chunk while a test holds that
    PostgreSQL advisory lock: the test then knows the import is in the middle, uncommitted."""
    key = os.environ.get("RTA_IMPORT_HOLD_LOCK")
    if key and connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s)", [int(key)])
            cursor.execute("SELECT pg_advisory_unlock(%s)", [int(key)])


def _wanted_conversations(f: StoredFile, limits: Limits, options: ImportOptions) -> Iterator[ParsedConversation]:
    for conv in f.conversations(limits):
        key = conversation_key(conv)
        if options.selected is not None and key not in options.selected:
            continue
        mapping = options.label_maps.get(conv.source_name)
        if mapping and conv.speaker_labels:
            conv.apply_label_map(mapping)
        _drop_nul(conv)
        yield conv


def _no_nul(value: Any) -> Any:
    """PostgreSQL text and jsonb cannot hold NUL characters; they carry nothing a reader sees."""
    if isinstance(value, str):
        return value.replace("\x00", "") if "\x00" in value else value
    if isinstance(value, list):
        return [_no_nul(v) for v in value]
    if isinstance(value, dict):
        return {_no_nul(k): _no_nul(v) for k, v in value.items()}
    return value


def _drop_nul(conv: ParsedConversation) -> None:
    """Before hashing, segmenting and offsets: the stored text is the text without NULs."""
    conv.title, conv.external_id = _no_nul(conv.title), _no_nul(conv.external_id)
    conv.model_slugs, conv.metadata = _no_nul(conv.model_slugs), _no_nul(conv.metadata)
    conv.speaker_labels = _no_nul(conv.speaker_labels)
    for t in conv.turns:
        t.text, t.metadata = _no_nul(t.text), _no_nul(t.metadata)


def _build(project: Project, user, f: StoredFile, conv: ParsedConversation, content_hash: str,
           participant: Participant, options: ImportOptions) -> _Pending:
    meta = dict(conv.metadata)
    meta["model_slugs"] = conv.model_slugs
    if conv.speaker_labels:
        meta["speaker_labels"] = conv.speaker_labels
    interview = Interview(
        project=project, participant=participant, title=(conv.title or _fallback_title(conv))[:300],
        conducted_at=conv.started_at, origin=Interview.Origin.IMPORTED, status=Interview.Status.READY,
        depth=options.depth, source_format=conv.source_format, source_filename=conv.source_name[:500],
        source_sha256=f.sha256, source_conversation_id=conv.external_id[:200], content_sha256=content_hash,
        metadata=meta, created_by=user,
    )
    turns = [
        _TurnRow(position=i, speaker=t.speaker, text=t.text, model_slug=str(t.metadata.get("model") or "")[:200],
                 timestamp=_dt(t.metadata.get("created_at")), metadata=t.metadata)
        for i, t in enumerate(conv.turns)
    ]
    return _Pending(interview, turns)


def _dt(value: Any):
    return parse_datetime(value) if isinstance(value, str) and value else None


def _flush(chunk: list[_Pending], summary: BatchSummary) -> None:
    if not chunk:
        return
    Interview.objects.bulk_create([p.interview for p in chunk])
    summary.turns += _insert_turns(chunk)
    summary.segments += _insert_segments(chunk)
    for p in chunk:
        summary.interviews.append({
            "uuid": str(p.interview.uuid), "title": p.interview.title, "turns": len(p.turns),
            "participant": p.interview.participant.label, "source": p.interview.source_filename,
            "format": p.interview.source_format,
        })


TURN_COLUMNS = ("id", "uuid", "interview_id", "position", "speaker", "text", "model_slug", "timestamp", "status", "metadata")


def _insert_turns(chunk: list[_Pending]) -> int:
    """Turns of the chunk; on PostgreSQL ids come from the sequence and rows go in by COPY."""
    rows = [(p.interview.id, t) for p in chunk for t in p.turns]
    if connection.vendor != "postgresql":
        objs = [Turn(interview_id=iid, position=t.position, speaker=t.speaker, text=t.text, model_slug=t.model_slug,
                     timestamp=t.timestamp, metadata=t.metadata) for iid, t in rows]
        Turn.objects.bulk_create(objs, batch_size=2000)
        for (_, t), obj in zip(rows, objs, strict=True):
            t.id = obj.id
        return len(rows)
    ids = next_ids(Turn._meta.db_table, len(rows))
    with copy_into(Turn._meta.db_table, TURN_COLUMNS) as write:
        for (iid, t), tid in zip(rows, ids, strict=True):
            t.id = tid
            write((tid, uuid.uuid4(), iid, t.position, t.speaker, t.text, t.model_slug, t.timestamp,
                   Turn.Status.COMPLETE, Jsonb(t.metadata)))
    return len(rows)


SEGMENT_COLUMNS = ("interview_id", "turn_id", "position", "start", "end", "text", "kind", "speaker")


def _segment_rows(chunk: list[_Pending]) -> Iterator[tuple]:
    for p in chunk:
        position = 0
        for turn in p.turns:
            text = turn.text
            for span in segment_text(text):
                yield (p.interview.id, turn.id, position, span.start, span.end, text[span.start:span.end],
                       str(span.kind), turn.speaker)
                position += 1


def _insert_segments(chunk: list[_Pending]) -> int:
    """Segments of the chunk's turns; COPY on PostgreSQL (several times faster than INSERT)."""
    if connection.vendor == "postgresql":
        n = 0
        with copy_into(Segment._meta.db_table, SEGMENT_COLUMNS) as write:
            for row in _segment_rows(chunk):
                write(row)
                n += 1
        return n
    rows = [Segment(**dict(zip(SEGMENT_COLUMNS, r, strict=True))) for r in _segment_rows(chunk)]
    Segment.objects.bulk_create(rows, batch_size=2000)
    return len(rows)


class _ParticipantPicker:
    """The participant for each conversation: the user's choice, or one per model slug."""

    def __init__(self, project: Project, choice: str, summary: BatchSummary) -> None:
        self.project = project
        self.choice = choice
        self.summary = summary
        self.by_key: dict[str, Participant] = {}
        # Labels as the participant pages compare them (projects/names.py), so "GPT-4o" and "gpt-4o" are one.
        for p in Participant.objects.filter(project=project):
            self.by_key.setdefault(name_key(p.label), p)
            if p.model_id:
                self.by_key.setdefault(name_key(p.model_id), p)
        self.fixed: Participant | None = None
        if choice != "auto" and not choice.startswith("new:"):
            self.fixed = Participant.objects.get(project=project, uuid=_uuid_or_none(choice))

    def pick(self, conv: ParsedConversation) -> Participant:
        if self.fixed:
            return self.fixed
        if self.choice.startswith("new:"):
            # Created with the first conversation, so a chatgpt.com or claude.ai export names a web app.
            self.fixed = self._get_or_create(self.choice[4:], model_id="", fmt=conv.source_format)
            return self.fixed
        slug = main_model(conv)
        if slug:
            return self._get_or_create(slug, model_id=slug, fmt=conv.source_format)
        return self._get_or_create(FORMAT_FALLBACK_LABEL.get(conv.source_format, "Unknown chatbot"),
                                   model_id="", fmt=conv.source_format)

    def _get_or_create(self, label: str, *, model_id: str, fmt: str) -> Participant:
        label = normalised_name(label)[:100].rstrip()
        found = self.by_key.get(name_key(label)) or (self.by_key.get(name_key(model_id)) if model_id else None)
        if found:
            return found
        p = Participant(project=self.project, label=label, model_id=model_id[:200], provider=provider_for(label),
                        interface=Participant.Interface.WEB if fmt in WEB_FORMATS else Participant.Interface.API)
        p.full_clean(validate_unique=False, validate_constraints=False)
        try:
            with transaction.atomic():
                p.save()
        except IntegrityError as exc:
            # Added a moment ago by another import or on the participants page: this import uses it too.
            p = Participant.objects.filter(project=self.project, label__iexact=label).first()
            if "unique_participant_label" not in str(exc) or p is None:
                raise
        else:
            self.summary.participants_created.append(label)
        self.by_key[name_key(label)] = p
        if model_id:
            self.by_key.setdefault(name_key(model_id), p)
        return p


def main_model(conv: ParsedConversation) -> str | None:
    """The model that wrote most of the participant's turns (the first named, on a tie)."""
    counts = Counter(t.metadata.get("model") for t in conv.turns
                     if t.speaker == "participant" and t.metadata.get("model"))
    if counts:
        best = max(counts.values())
        return next(m for m in conv.model_slugs + list(counts) if counts.get(m) == best)
    return conv.model_slugs[0] if conv.model_slugs else None


def provider_for(slug: str) -> str:
    s = slug.lower()
    for prefixes, provider in PROVIDERS:
        if s.startswith(prefixes):
            return provider
    return ""


def import_paths(*, project: Project, user, paths: list[str], format: str = "auto",
                 options: ImportOptions | None = None) -> BatchSummary:
    """The command-line import: parse, check and store files in one transaction."""
    files = [stored_file_from_path(p, format) for p in paths]
    return import_batch(project=project, user=user, files=files, options=options or ImportOptions())


__all__ = [
    "BatchSummary", "ImportOptionsError", "ImportOptions", "StoredFile", "duplicates", "import_batch", "import_paths",
    "importjob_create", "importjob_queue", "importjob_run", "preview_files",
]
