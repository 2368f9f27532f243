"""Export services: excerpt tables and whole-project archives (.qdpx, backup) straight to the response or,
when large, written by the worker (an ExportJob with a progress page and a download)."""

from __future__ import annotations

import logging
import tempfile
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from interviews.models import Segment
from projects.blobs import blob_create, blobs_delete
from projects.filenames import download_filename
from projects.jobs import enqueue, job_lock
from projects.models import Project
from reports.backup import backup_filename, project_backup
from reports.excerpts import (
    ExcerptOptions,
    ExcerptSpec,
    ExcerptSpecError,
    excerpt_columns,
    excerpt_count,
    excerpt_headers,
    excerpt_options,
    excerpt_rows,
    spec_from_query,
)
from reports.exchange import project_export_qdpx
from reports.models import ExportJob
from reports.writers import FORMATS, Table, page_from_query, write_table

log = logging.getLogger(__name__)

# Above this many rows an export runs in the worker with a progress bar.
INLINE_MAX_ROWS: int = settings.RTA_EXPORT_INLINE_MAX_ROWS
PROGRESS_EVERY = 500
WIDTHS = {"theme": 1.2, "subtheme": 1.2, "code": 1.2, "model": 1.0, "interview": 1.3, "turn": 0.5, "quote": 5.0,
          "provenance": 2.6, "offsets": 1.0, "interview_id": 1.6, "turn_id": 1.6, "response_id": 1.6,
          "question": 2.5, "context_before": 2.5, "context_after": 2.5, "quote_in_context": 7.0}
# Formats that set a quote's context lighter in the quote's own cell; the others get it as columns.
INLINE_CONTEXT_FORMATS = frozenset({"docx", "tex"})


def excerpt_filename(project: Project, fmt: str) -> str:
    return download_filename(project, "excerpts", FORMATS[fmt][0])


def qdpx_filename(project: Project, positions: str) -> str:
    return download_filename(project, "refi-qda" + ("-nvivo" if positions == "utf16" else ""), "qdpx")


def project_export_size(project: Project) -> int:
    """Segments in the project's live interviews: what a whole-project export grows with; one query."""
    return Segment.objects.filter(interview__project=project, interview__deleted_at__isnull=True).count()


def project_export_in_worker(project: Project) -> bool:
    """Whether a .qdpx or backup of the project is too large to write inside a web request."""
    return project_export_size(project) > settings.RTA_EXPORT_INLINE_MAX_SEGMENTS


def excerpt_caption(project: Project, spec: ExcerptSpec) -> str:
    kind = "Exemplar quotes" if spec.exemplars_only else "Excerpts"
    caption = spec.caption or f"{kind} from {project.name}"
    if not spec.with_suggestions and not spec.exemplars_only:
        caption += ". Codings made by accepting AI suggestions are left out"
    return caption


def excerpt_table(project: Project, spec: ExcerptSpec, *, row_count: int | None = None, on_row=None,
                  options: ExcerptOptions | None = None, page: dict[str, Any] | None = None, fmt: str = "") -> Table:
    """The excerpt table for the writers; rows are streamed from the database when read.

    `page` is the page chosen for DOCX and LaTeX (writers.page_from_query); `fmt` decides where a quote's
    context goes (INLINE_CONTEXT_FORMATS: lighter in the quote's cell; else its own columns)."""
    columns = excerpt_columns(spec, inline_context=fmt in INLINE_CONTEXT_FORMATS)
    rows = (row.values(columns) for row in excerpt_rows(project, spec, options=options))
    return Table(caption=excerpt_caption(project, spec), headers=excerpt_headers(columns), rows=rows, row_count=row_count,
                 widths=[WIDTHS[c] for c in columns], label="tab:excerpts", on_row=on_row,
                 numeric=frozenset(i for i, c in enumerate(columns) if c == "turn"), **(page or {}))


@transaction.atomic
def exportjob_create(*, project: Project, user, fmt: str, params: dict[str, list[str]], total: int) -> ExportJob:
    """Queue a worker export of the excerpt table described by `params`."""
    if fmt not in FORMATS:
        raise ExcerptSpecError(f"Unknown format {fmt!r}; choose from {', '.join(FORMATS)}.")
    job = ExportJob.objects.create(project=project, created_by=user, kind=ExportJob.Kind.EXCERPTS, format=fmt,
                                   params=params, progress_total=total, filename=excerpt_filename(project, fmt))
    from reports.tasks import export_excerpts_task

    enqueue(export_excerpts_task, job.pk)
    return job


@transaction.atomic
def exportjob_create_archive(*, project: Project, user, kind: str, positions: str = "codepoints") -> ExportJob:
    """Queue a worker export of the whole project: a REFI-QDA .qdpx (positions as chosen) or a backup."""
    if kind == ExportJob.Kind.QDPX:
        fmt, filename, params = "qdpx", qdpx_filename(project, positions), {"positions": positions}
    elif kind == ExportJob.Kind.BACKUP:
        fmt, filename, params = "zip", backup_filename(project), {}
    else:
        raise ValueError(f"Not a whole-project export: {kind!r}")
    job = ExportJob.objects.create(project=project, created_by=user, kind=kind, format=fmt, params=params,
                                   filename=filename)
    from reports.tasks import export_project_task

    enqueue(export_project_task, job.pk)
    return job


def exportjob_run(*, job_id: int) -> None:
    """Write the job's file. Safe to run twice: a finished, failed or discarded job is left alone, one
    another worker is writing too; one whose worker died (lock free, still running) starts over."""
    with job_lock("export", job_id) as mine:
        job = ExportJob.objects.select_related("project").filter(pk=job_id).first()
        if mine and job is not None and job.status in (ExportJob.Status.QUEUED, ExportJob.Status.RUNNING):
            _write(job)


def _write(job: ExportJob) -> None:
    if not ExportJob.objects.filter(pk=job.pk, status__in=[ExportJob.Status.QUEUED, ExportJob.Status.RUNNING]).update(
            status=ExportJob.Status.RUNNING, started_at=timezone.now(), progress_done=0, error=""):
        return  # discarded meanwhile
    write = _write_excerpts if job.kind == ExportJob.Kind.EXCERPTS else _write_archive
    try:
        # Written to this worker's scratch space, then kept in PostgreSQL for whichever web process serves it.
        with tempfile.TemporaryFile() as tmp:
            total = write(job, tmp)
            blob = blob_create(source=tmp, name=job.filename, user=job.created_by,
                               keep=timedelta(days=settings.RTA_JOB_FILES_KEEP_DAYS))
    except ExcerptSpecError as e:
        _fail(job, f"The export's choices no longer fit the project: {e}")
        return
    except Exception as e:
        log.exception("export job %s failed", job.pk)
        _fail(job, f"The export failed: {e.__class__.__name__}. Try again; if it keeps failing, tell the maintainers.")
        raise
    replaced = ExportJob.objects.filter(pk=job.pk).values_list("blob__uuid", flat=True).first()  # a run before died
    job.blob, job.status, job.finished_at = blob, ExportJob.Status.DONE, timezone.now()
    job.progress_done = job.progress_total = max(job.progress_total, total)
    job.save(update_fields=["blob", "status", "finished_at", "progress_done", "progress_total"])
    blobs_delete([replaced] if replaced else [])


def _write_excerpts(job: ExportJob, out) -> int:
    """The excerpt table, with its progress every PROGRESS_EVERY rows; returns the rows written."""
    options = excerpt_options(job.project)
    spec = spec_from_query(options, job.params)
    total = excerpt_count(job.project, spec, options)
    ExportJob.objects.filter(pk=job.pk).update(progress_total=total)

    def progress(n: int) -> None:
        if n % PROGRESS_EVERY == 0:
            ExportJob.objects.filter(pk=job.pk).update(progress_done=n)

    table = excerpt_table(job.project, spec, row_count=total, on_row=progress, options=options,
                          page=page_from_query(_Params(job.params)), fmt=job.format)
    write_table(job.format, table, out)
    return total


def _write_archive(job: ExportJob, out) -> int:
    """The .qdpx or backup of the whole project; its progress is the project's segments, all at once at the end."""
    total = project_export_size(job.project)
    ExportJob.objects.filter(pk=job.pk).update(progress_total=total)
    if job.kind == ExportJob.Kind.QDPX:
        project_export_qdpx(project=job.project, out=out, positions=job.params.get("positions", "codepoints"))
    else:
        project_backup(project=job.project, out=out)
    return total


def exportjob_discard(*, job: ExportJob) -> None:
    """Drop an export still waiting for the worker; one the worker has started finishes."""
    if not ExportJob.objects.filter(pk=job.pk, status=ExportJob.Status.QUEUED).delete()[0]:
        raise ValidationError("This export has started; wait for it to finish.")


def _fail(job: ExportJob, message: str) -> None:
    ExportJob.objects.filter(pk=job.pk).update(status=ExportJob.Status.FAILED, error=message, finished_at=timezone.now())


def query_params(query: Any) -> dict[str, list[str]]:
    """A QueryDict as plain lists (what an ExportJob stores)."""
    keys = ("columns", "themes", "codes", "subcodes", "participants", "coders", "rows", "trim", "caption", "quotes",
            "suggestions", "question", "context", "paper", "orientation")
    return {k: [v for v in query.getlist(k)] for k in keys if query.getlist(k)}


class _Params(dict):
    """A job's stored parameters (lists) read like a query string's last values."""

    def get(self, key: str, default: Any = None) -> Any:
        values = super().get(key) or []
        return values[-1] if values else default
