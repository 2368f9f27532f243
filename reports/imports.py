"""Bringing a project in from a file, in the worker: a backup restore or a .qdpx import, one ProjectImportJob each.

The request only stores the upload (projects/blobs.py) and queues the job; the worker reads the file once and
keeps the people it names on the job; the importer maps them on the job's page; the worker then creates the
project. A 36 MB backup took minutes to read and restore, past the proxy's timeout, when this ran in requests.

One job makes at most one project: the people step moves the job on with one conditional update (a double
submit queues it once), and the project and the job's "done" commit in one transaction (a task delivered twice,
or redelivered after its worker died mid-import, finds the job done or starts over with nothing left behind).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import IO

from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

import refiqda
from projects.blobs import BlobMissing, blob_create, blob_open, blobs_delete
from projects.jobs import enqueue, job_lock
from reports.backup import BackupError, BackupPerson, Progress, backup_people, project_restore, restore_accounts
from reports.exchange import project_import_qdpx, qdpx_people, qdpx_read
from reports.models import ProjectImportJob

log = logging.getLogger(__name__)
Job = ProjectImportJob

PENDING_UPLOAD = timedelta(hours=24)  # an upload waiting for its people step is removed after this
MAX_WARNINGS = 20
PROGRESS_KEPT_SECONDS = 6 * 3600  # longer than any import may run
REFUSED = {Job.Kind.RESTORE: "This backup cannot be restored", Job.Kind.QDPX: "This file cannot be imported"}
FILE_GONE = "The uploaded file is no longer kept (an upload waits a day for its import). Nothing was imported; choose it again."
OUT_OF_MEMORY = ("Reading this file needed more memory than a worker process may use (RTA_MEMORY_LIMIT_MB). "
                 "Nothing was imported.")
ACCOUNT_GONE = ("An account you chose for someone in the file is no longer one you share a project with. Nothing was "
                "imported; choose the file again.")


@transaction.atomic
def projectimport_create(*, kind: str, upload: IO[bytes], filename: str, user, project_name: str = "") -> Job:
    """Keep the upload and queue the worker to read it (nothing of it is read here)."""
    blob = blob_create(source=upload, name=filename, user=user, keep=PENDING_UPLOAD)
    job = Job.objects.create(kind=kind, created_by=user, blob=blob, filename=filename[:255], project_name=project_name)
    _send(job)
    return job


def _send(job: Job) -> None:
    from reports.tasks import project_import_task

    enqueue(project_import_task, job.pk)


def job_people(job: Job) -> list[BackupPerson]:
    """The people the job's file names, as the worker read them."""
    return [BackupPerson(**{**p, "aliases": tuple(p.get("aliases", ()))}) for p in job.people]


@transaction.atomic
def projectimport_queue(*, job: Job, people: Mapping[str, object], project_name: str, members: str) -> bool:
    """Queue the import with the importer's choices; False if the job had left the people step already (a
    double submit), which then changes nothing."""
    if members not in ("me", "all"):
        raise ValueError("members must be 'me' or 'all'")
    choices = {"people": {key: account.pk for key, account in people.items()}, "members": members}
    queued = Job.objects.filter(pk=job.pk, status=Job.Status.PEOPLE).update(
        status=Job.Status.QUEUED, choices=choices, project_name=project_name, sent_at=timezone.now())
    if queued:
        _send(job)
    return bool(queued)


def projectimport_discard(*, job: Job) -> None:
    """Throw away an import that has not started (its upload too); one the worker is importing finishes."""
    if not Job.objects.filter(pk=job.pk, status__in=[*Job.WAITING, Job.Status.PEOPLE]).delete()[0]:
        raise ValidationError("This import has started or finished; it can no longer be discarded.")
    _drop_upload(job)


def projectimport_run(*, job_id: int) -> None:
    """The task's body: read the file, or import it. Safe to run twice: a delivery while another run holds the job
    does nothing, one after a run whose worker died starts that step over, and a finished step is not done again."""
    with job_lock("project-import", job_id) as mine:
        job = Job.objects.select_related("blob", "created_by").filter(pk=job_id).first()
        if not mine or job is None:
            return
        if job.status == Job.Status.READING:
            _guarded(job, _read)
        elif job.status in (Job.Status.QUEUED, Job.Status.RUNNING):
            _guarded(job, _import)


def _guarded(job: Job, step: Callable[[Job], None]) -> None:
    """Run a step; any failure leaves the job failed with a message for its page, and nothing else behind."""
    try:
        step(job)
        return
    except (BackupError, refiqda.QdpxError) as exc:
        message = f"{REFUSED[job.kind]}: {exc}"
    except ValidationError as exc:
        message = " ".join(exc.messages)
    except BlobMissing:
        message = FILE_GONE
    except MemoryError:
        message = OUT_OF_MEMORY
    except Exception as exc:
        log.exception("project import %s failed", job.pk)
        message = (f"The import failed: {exc.__class__.__name__}. Nothing was imported. Try again; if it keeps "
                   "failing, tell the maintainers.")
    Job.objects.filter(pk=job.pk).update(status=Job.Status.FAILED, error=message, finished_at=timezone.now())
    _drop_upload(job)


def _read(job: Job) -> None:
    """Read the people the file names (once: the people step shows them from the job); a .qdpx naming nobody but
    the importer is imported straight away, from what was just read."""
    Job.objects.filter(pk=job.pk).update(started_at=timezone.now())
    source = _source(job)
    if job.kind == Job.Kind.RESTORE:
        people = backup_people(source=source, filename=job.filename)
    else:
        qp = qdpx_read(source, filename=job.filename)
        people = qdpx_people(qp, job.filename)
        if all(p.is_named(job.created_by.username) for p in people):
            job.choices = {"people": {}, "members": "me"}
            _import(job, qdpx=qp)
            return
    Job.objects.filter(pk=job.pk, status=Job.Status.READING).update(
        status=Job.Status.PEOPLE, people=[dataclasses.asdict(p) for p in people])


def import_progress(job: Job) -> dict | None:
    """How far the worker said it is: {"done", "total", "what"}, or None before it says. Kept in the cache, as the
    import's rows stay invisible to the page until its one transaction commits."""
    return cache.get(_progress_key(job)) if job.status == Job.Status.RUNNING else None


def _progress_key(job: Job) -> str:
    return f"project-import-progress:{job.pk}"


def _progress_told(job: Job) -> Progress:
    def tell(done: int, total: int, what: str) -> None:
        cache.set(_progress_key(job), {"done": done, "total": total, "what": what}, PROGRESS_KEPT_SECONDS)
    return tell


def _drop_upload(job: Job) -> None:
    blobs_delete([job.blob.uuid] if job.blob else [])


def _source(job: Job) -> IO[bytes]:
    if job.blob is None:
        raise BlobMissing(job.filename)
    return blob_open(job.blob)


def _import(job: Job, qdpx: refiqda.Project | None = None) -> None:
    """Create the project; it and the job's "done" commit together, or neither does."""
    Job.objects.filter(pk=job.pk, status__in=[*Job.WAITING, Job.Status.RUNNING]).update(
        status=Job.Status.RUNNING, started_at=timezone.now())
    owner, members = job.created_by, job.choices.get("members", "me")
    accounts = {a.pk: a for a in restore_accounts(owner)}
    chosen = job.choices.get("people", {})
    if any(pk not in accounts for pk in chosen.values()):
        raise ValidationError(ACCOUNT_GONE)
    people = {key: accounts[pk] for key, pk in chosen.items()}
    with transaction.atomic():
        running = Job.objects.select_for_update().filter(pk=job.pk, status=Job.Status.RUNNING, project=None)
        if running.values_list("pk", flat=True).first() is None:
            return  # discarded, or finished by an earlier delivery
        if job.kind == Job.Kind.RESTORE:
            restored = project_restore(source=_source(job), owner=owner, filename=job.filename,
                                       name=job.project_name, people=people, members=members, progress=_progress_told(job))
            project, warnings = restored.project, restored.warnings
            summary = f"Restored “{project.name}” ({sum(restored.counts.values()):,} records)."
        else:
            imported = project_import_qdpx(source=qdpx or _source(job), owner=owner, filename=job.filename,
                                           name=job.project_name, people=people, members=members,
                                           progress=_progress_told(job))
            project, warnings = imported.project, imported.warnings
            summary = f"Imported {imported.summary}."
        if len(warnings) > MAX_WARNINGS:
            warnings = [*warnings[:MAX_WARNINGS], f"… and {len(warnings) - MAX_WARNINGS} more notes like these."]
        Job.objects.filter(pk=job.pk).update(status=Job.Status.DONE, project=project, summary=summary,
                                             warnings=warnings, choices=job.choices, finished_at=timezone.now())
        _drop_upload(job)  # with the project: a rolled-back import keeps its file
