"""Export services: excerpt tables straight to the response or, when large, through the worker."""

from __future__ import annotations

import datetime as dt
import logging
import re
import tempfile
from typing import Any

from django.conf import settings
from django.core.files import File
from django.db import transaction
from django.utils import timezone

from projects.jobs import enqueue
from projects.models import Project
from reports.excerpts import (
    ExcerptOptions,
    ExcerptSpec,
    ExcerptSpecError,
    excerpt_count,
    excerpt_options,
    excerpt_rows,
    spec_from_query,
)
from reports.models import ExportJob
from reports.writers import FORMATS, Table, write_table

log = logging.getLogger(__name__)

# Above this many rows an export runs in the worker with a progress bar.
INLINE_MAX_ROWS: int = settings.RTA_EXPORT_INLINE_MAX_ROWS
PROGRESS_EVERY = 500
WIDTHS = {"theme": 1.2, "subtheme": 1.2, "code": 1.2, "model": 1.0, "interview": 1.3, "turn": 0.5, "quote": 5.0,
          "provenance": 2.6}


def safe_filename(text: str, fallback: str = "export") -> str:
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")[:80]
    return stem or fallback


def excerpt_filename(project: Project, fmt: str) -> str:
    return f"{safe_filename(project.name, 'project')}-excerpts-{dt.date.today():%Y%m%d}.{FORMATS[fmt][0]}"


def excerpt_caption(project: Project, spec: ExcerptSpec) -> str:
    kind = "Exemplar quotes" if spec.exemplars_only else "Excerpts"
    return spec.caption or f"{kind} from {project.name}"


def excerpt_table(project: Project, spec: ExcerptSpec, *, row_count: int | None = None, on_row=None,
                  options: ExcerptOptions | None = None) -> Table:
    """The excerpt table for the writers; rows are streamed from the database when read."""
    rows = (row.values(spec.columns) for row in excerpt_rows(project, spec, options=options))
    return Table(caption=excerpt_caption(project, spec), headers=spec.headers, rows=rows, row_count=row_count,
                 widths=[WIDTHS[c] for c in spec.columns], label="tab:excerpts", on_row=on_row,
                 numeric=frozenset(i for i, c in enumerate(spec.columns) if c == "turn"))


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


def exportjob_run(*, job_id: int) -> None:
    """Write the job's file. Safe to run twice: a finished job is left alone, a half-run one starts over."""
    job = ExportJob.objects.select_related("project").filter(pk=job_id).first()
    if job is None or job.status == ExportJob.Status.DONE:
        return
    ExportJob.objects.filter(pk=job.pk).update(status=ExportJob.Status.RUNNING, started_at=timezone.now(),
                                               progress_done=0, error="")
    try:
        options = excerpt_options(job.project)
        spec = spec_from_query(options, job.params)
        total = excerpt_count(job.project, spec)
        ExportJob.objects.filter(pk=job.pk).update(progress_total=total)

        def progress(n: int) -> None:
            if n % PROGRESS_EVERY == 0:
                ExportJob.objects.filter(pk=job.pk).update(progress_done=n)

        with tempfile.TemporaryFile() as tmp:
            write_table(job.format, excerpt_table(job.project, spec, row_count=total, on_row=progress, options=options), tmp)
            tmp.seek(0)
            job.file.save(job.filename, File(tmp), save=False)
    except ExcerptSpecError as e:
        _fail(job, f"The export's choices no longer fit the project: {e}")
        return
    except Exception as e:
        log.exception("export job %s failed", job.pk)
        _fail(job, f"The export failed: {e.__class__.__name__}. Try again; if it keeps failing, tell the maintainers.")
        raise
    job.status, job.finished_at = ExportJob.Status.DONE, timezone.now()
    job.progress_done = job.progress_total = max(job.progress_total, total)
    job.save(update_fields=["file", "status", "finished_at", "progress_done", "progress_total"])


def _fail(job: ExportJob, message: str) -> None:
    ExportJob.objects.filter(pk=job.pk).update(status=ExportJob.Status.FAILED, error=message, finished_at=timezone.now())


def query_params(query: Any) -> dict[str, list[str]]:
    """A QueryDict as plain lists (what an ExportJob stores)."""
    keys = ("columns", "themes", "codes", "participants", "coders", "rows", "trim", "caption")
    return {k: [v for v in query.getlist(k)] for k in keys if query.getlist(k)}
