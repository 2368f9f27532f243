"""Reports pages: project home, the reports index, excerpt tables, frequency tables, exports."""

from __future__ import annotations

import tempfile

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_POST

from interviews.statistics import DEPTH_CHOICES, STAT_COLUMNS, project_statistics, transposed, with_summary
from projects.blobs import blob_open
from projects.columns import breakdown_shown
from projects.filenames import download_filename, download_stem
from projects.jobs import job_send_again, job_sent_again_notice
from projects.models import Membership
from projects.pagination import paginate
from projects.permissions import member_or_404, owner_or_403
from reports import cases, codebook_export, frequency, trajectories
from reports.excerpts import (
    COLUMNS,
    MAX_CONTEXT,
    ExcerptSpec,
    ExcerptSpecError,
    chosen_codes,
    excerpt_columns,
    excerpt_count,
    excerpt_headers,
    excerpt_options,
    excerpt_rows,
    spec_from_query,
    spec_to_params,
)
from reports.exports import (
    INLINE_MAX_ROWS,
    excerpt_caption,
    excerpt_filename,
    excerpt_table,
    exportjob_create,
    exportjob_discard,
    query_params,
)
from reports.heatmap import heatmap_png, heatmap_svg
from reports.models import ExportJob
from reports.overview import project_overview
from reports.writers import FORMATS, ORIENTATIONS, PAPERS, STREAMED, Table, iter_table, page_from_query, write_table

PREVIEW_ROWS = 50
RECENT_JOBS = 5


@login_required
@require_GET
def project_home(request: HttpRequest, project_uuid) -> HttpResponse:
    """The six RTA phases as a progress strip, with the next useful action."""
    membership = member_or_404(request, project_uuid)
    overview = project_overview(membership.project)
    return render(request, "reports/project_home.html", {"project": membership.project, "membership": membership, "overview": overview})


def _context(membership, **extra) -> dict:
    return {"project": membership.project, "membership": membership, "nav": "reports", **extra}


@login_required
@require_GET
def index(request: HttpRequest, project_uuid) -> HttpResponse:
    """Everything the Reports section offers, with the user's recent exports."""
    membership = member_or_404(request, project_uuid)
    jobs = list(ExportJob.objects.filter(project=membership.project, created_by=request.user)[:RECENT_JOBS])
    return render(request, "reports/index.html", _context(membership, jobs=jobs, depth_choices=DEPTH_CHOICES))


# --- excerpt tables ---------------------------------------------------------------------------


@login_required
@require_GET
def excerpts(request: HttpRequest, project_uuid) -> HttpResponse:
    """The excerpt table builder; htmx requests get only the preview."""
    membership = member_or_404(request, project_uuid)
    project = membership.project
    options = excerpt_options(project)
    error, spec = "", ExcerptSpec()
    try:
        spec = spec_from_query(options, request.GET)
    except ExcerptSpecError as e:
        error = str(e)
    rows, total = [], 0
    columns = excerpt_columns(spec, inline_context=True)  # the preview sets context lighter, as Word does
    if not error:
        total = excerpt_count(project, spec, options)
        rows = [r.values(columns) for r in excerpt_rows(project, spec, limit=PREVIEW_ROWS, options=options, codings=total)]
    context = _context(
        membership, options=options, spec=spec, error=error, rows=rows, total=total, preview_rows=PREVIEW_ROWS,
        caption=excerpt_caption(project, spec), headers=excerpt_headers(columns), context_choices=range(MAX_CONTEXT + 1),
        all_columns=_column_choices(spec), params=spec_to_params(spec, options), formats=FORMATS,
        inline_max=INLINE_MAX_ROWS, selected=_selected(spec, options), papers=PAPERS.items(),
        orientations=ORIENTATIONS.items(),
    )
    if request.htmx and not request.htmx.boosted:
        # The error is shown inline in the fragment; htmx only swaps 2xx responses.
        return render(request, "reports/excerpts.html#excerpt-preview", context)
    return render(request, "reports/excerpts.html", context, status=400 if error else 200)


def _column_choices(spec: ExcerptSpec) -> list[dict]:
    """Chosen columns first in their order, then the others."""
    chosen = [{"key": c, "label": COLUMNS[c], "on": True} for c in spec.columns]
    return chosen + [{"key": k, "label": v, "on": False} for k, v in COLUMNS.items() if k not in spec.columns]


def _selected(spec: ExcerptSpec, options) -> dict:
    return {
        "themes": {t.pk for t in options.themes if t.pk in spec.themes and (t.parent_id not in spec.themes)},
        "codes": {c.pk for c in chosen_codes(spec, options)},
        "participants": set(spec.participants), "coders": set(spec.coders),
    }


@login_required
@require_POST
def excerpts_export(request: HttpRequest, project_uuid) -> HttpResponse:
    """Download the excerpt table now when small; queue a worker export with a progress page when large."""
    membership = member_or_404(request, project_uuid)
    project = membership.project
    fmt = request.POST.get("format", "")
    options = excerpt_options(project)
    try:
        if fmt not in FORMATS:
            raise ExcerptSpecError(f"Choose an export format: {', '.join(FORMATS)}.")
        spec = spec_from_query(options, request.POST)
    except ExcerptSpecError as e:
        return render(request, "reports/export_error.html", _context(membership, error=str(e)), status=400)
    total = excerpt_count(project, spec, options)
    if total > INLINE_MAX_ROWS:
        job = exportjob_create(project=project, user=request.user, fmt=fmt, params=query_params(request.POST), total=total)
        return redirect("reports:export_job", project_uuid=project.uuid, job_uuid=job.uuid)
    table = excerpt_table(project, spec, row_count=total, options=options, page=page_from_query(request.POST), fmt=fmt)
    return _download(table, fmt, excerpt_filename(project, fmt))


def _download(table: Table, fmt: str, filename: str) -> HttpResponse:
    """Text formats stream as they are written; XLSX/DOCX go through a temporary file (never all in memory)."""
    content_type = FORMATS[fmt][1]
    if fmt in STREAMED:
        response: HttpResponse = StreamingHttpResponse(iter_table(fmt, table), content_type=content_type)
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response
    tmp = tempfile.TemporaryFile()
    write_table(fmt, table, tmp)
    tmp.seek(0)
    return FileResponse(tmp, as_attachment=True, filename=filename, content_type=content_type)


@login_required
@require_GET
def export_job(request: HttpRequest, project_uuid, job_uuid) -> HttpResponse:
    """A worker export: progress while it runs (htmx polls the status fragment), then the download link."""
    job, membership = _export_job(request, project_uuid, job_uuid, ExportJob.objects.select_related("created_by"))
    context = _context(membership, job=job, can_act=_may_manage(membership, job, request.user))
    if request.htmx and not request.htmx.boosted:
        return render(request, "reports/export_job.html#job-status", context)
    return render(request, "reports/export_job.html", context)


@login_required
@require_POST
def export_job_send_again(request: HttpRequest, project_uuid, job_uuid) -> HttpResponse:
    """Send an export that still waits for the worker again (the sweeper does too, every minute)."""
    membership, job = _export_job_to_manage(request, project_uuid, job_uuid)
    try:
        job_sent_again_notice(request, job_send_again(job=job))
    except ValidationError as e:
        messages.error(request, " ".join(e.messages))
    return redirect("reports:export_job", project_uuid=membership.project.uuid, job_uuid=job.uuid)


@login_required
@require_POST
def export_job_discard(request: HttpRequest, project_uuid, job_uuid) -> HttpResponse:
    """Drop an export that still waits for the worker."""
    membership, job = _export_job_to_manage(request, project_uuid, job_uuid)
    try:
        exportjob_discard(job=job)
    except ValidationError as e:
        messages.error(request, " ".join(e.messages))
        return redirect("reports:export_job", project_uuid=membership.project.uuid, job_uuid=job.uuid)
    messages.success(request, "The export was discarded.")
    return redirect("reports:index", project_uuid=membership.project.uuid)


def _export_job_to_manage(request: HttpRequest, project_uuid, job_uuid) -> tuple:
    """The job, for whoever started it or may write in the project (viewers export too; backups are the owners')."""
    job, membership = _export_job(request, project_uuid, job_uuid, ExportJob.objects.all())
    if not _may_manage(membership, job, request.user):
        raise PermissionDenied("Only who started this export, an analyst or an owner can change it.")
    return membership, job


def _may_manage(membership, job: ExportJob, user) -> bool:
    return membership.can_write or job.created_by_id == user.pk


@login_required
@require_GET
def export_download(request: HttpRequest, project_uuid, job_uuid) -> HttpResponse:
    job, _ = _export_job(request, project_uuid, job_uuid, ExportJob.objects.select_related("blob"))
    if job.status != ExportJob.Status.DONE:
        raise Http404("This export is not ready.")
    if job.blob is None:  # removed after RTA_JOB_FILES_KEEP_DAYS
        raise Http404("This export's file is gone; export the table again.")
    handle = blob_open(job.blob)
    content_type = FORMATS[job.format][1] if job.kind == ExportJob.Kind.EXCERPTS else "application/zip"
    return FileResponse(handle, as_attachment=True, filename=job.filename, content_type=content_type)


def _export_job(request: HttpRequest, project_uuid, job_uuid, jobs) -> tuple[ExportJob, Membership]:
    """A member's view of an export job; a backup holds the whole project, so it stays the owners'."""
    membership = member_or_404(request, project_uuid)
    job = get_object_or_404(jobs, project=membership.project, uuid=job_uuid)
    if job.kind == ExportJob.Kind.BACKUP:
        membership = owner_or_403(request, project_uuid)
    return job, membership


# --- frequency and prevalence --------------------------------------------------------------------


def _frequency(request: HttpRequest, membership, population: frequency.Population | None = None):
    population = population or frequency.Population.of(membership.project)
    spec = frequency.spec_from_query(population, request.GET)
    return frequency.frequency_table(membership.project, spec, population)


FREQUENCY_CHOICES = ("level", "by", "a", "b", "denominator", "rollup", "correction", "suggestions", "sections", "infinity", "order")


@login_required
@require_GET
def frequency_view(request: HttpRequest, project_uuid) -> HttpResponse:
    """Code (or theme) × group counts, shares and the group log ratio, as a table and a heatmap."""
    membership = member_or_404(request, project_uuid)
    population = frequency.Population.of(membership.project)
    if request.GET.get("grouped", request.GET.get("by", "")) != request.GET.get("by", ""):
        # The columns were just regrouped: the groups chosen among the old values no longer apply.
        request.GET = request.GET.copy()
        for key in ("a", "b", "grouped"):
            request.GET.pop(key, None)
        if request.GET.get("sections") == request.GET.get("by"):  # the sections' attribute became the columns'
            request.GET.pop("sections")
    error, table = "", None
    try:
        table = _frequency(request, membership, population)
    except frequency.FrequencySpecError as e:
        error = str(e)
        request.GET = request.GET.copy()
        for key in FREQUENCY_CHOICES:
            request.GET.pop(key, None)
        table = _frequency(request, membership, population)
    breakdown = breakdown_shown(request, len(table.columns))
    context = _context(
        membership, table=table, error=error, breakdown=breakdown, query=request.GET.urlencode(), attributes=population.attributes(),
        denominators=frequency.DENOMINATORS.items(), infinities=frequency.INFINITIES.items(),
        orders=frequency.ORDERS.items(),
        heatmap=mark_safe(heatmap_svg(table, _frequency_title(membership.project, table))),  # noqa: S308 - built with escaping
        parts=[(part, [(r, list(zip(r.counts, r.percents, strict=True)),
                        frequency.format_ratio(r.ratio.value, table.spec.infinity), frequency.format_interval(r.ratio),
                        part.overall_percent(r)) for r in part.rows])
               for part in table.parts],
        span=1 + 2 * (len(table.columns) if breakdown else 1) + (4 if table.spec.has_ratio else 0),
    )
    if request.htmx and not request.htmx.boosted:
        # The error is shown inline in the fragment; htmx only swaps 2xx responses.
        return render(request, "reports/frequency.html#frequency-page", context)
    return render(request, "reports/frequency.html", context, status=400 if error else 200)


def _frequency_title(project, table: frequency.FrequencyTable) -> str:
    what = "Code" if table.level == "code" else "Theme"
    sections = f" in sections by {table.sections_label.lower()}" if table.sections else ""
    return f"{what} frequency by {table.by_label.lower()}{sections}: {project.name}"


FREQUENCY_FORMATS = ("csv", "xlsx", "docx", "tex", "svg", "png")


@login_required
@require_GET
def frequency_export(request: HttpRequest, project_uuid) -> HttpResponse:
    """The frequency table as CSV/XLSX/Word/LaTeX, or its heatmap as SVG/PNG."""
    membership = member_or_404(request, project_uuid)
    fmt = request.GET.get("format", "")
    if fmt not in FREQUENCY_FORMATS:
        return HttpResponse(f"Unknown format {fmt!r}; choose one of {', '.join(FREQUENCY_FORMATS)}.",
                            status=400, content_type="text/plain; charset=utf-8")
    try:
        table = _frequency(request, membership)
    except frequency.FrequencySpecError as e:
        return HttpResponse(str(e), status=400, content_type="text/plain; charset=utf-8")
    project = membership.project
    stem = download_stem(project, f"{table.level}-frequency")
    title = _frequency_title(project, table)
    if fmt == "svg":
        response = HttpResponse(heatmap_svg(table, title), content_type="image/svg+xml; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{stem}.svg"'
        response["Content-Security-Policy"] = "default-src 'none'; style-src 'unsafe-inline'"
        return response
    if fmt == "png":
        response = HttpResponse(heatmap_png(table), content_type="image/png")
        response["Content-Disposition"] = f'attachment; filename="{stem}.png"'
        return response
    # Papers get one "n (%)" column per group, sections as headings, and the note in the caption (LaTeX) or under
    # the table (Word); spreadsheets get numbers in columns of their own, a section column, and the note after the rows.
    notes = [table.note()]
    if fmt == "tex":
        headers, rows, caption, notes = table.compact_headers(), table.compact_rows(), f"{title}. {table.note()}", []
    elif fmt == "docx":
        headers, rows, caption = table.compact_headers(), table.compact_rows(), title
    else:
        headers, rows, caption = table.headers(), table.export_rows(), title
    labels = 2 if table.sections and fmt in ("csv", "xlsx") else 1  # the section and the code are text
    numeric = frozenset(range(labels, len(headers) - (1 if table.spec.has_ratio else 0)))  # the flag or interval is text
    out = Table(caption=caption, headers=headers, rows=rows, notes=notes,
                row_count=sum(len(p.rows) + 2 for p in table.parts), numeric=numeric,
                widths=[1.5] * (labels - 1) + [3.0] + [1.2] * (len(headers) - labels),
                label=f"tab:{table.level}-frequency", **page_from_query(request.GET))
    return _download(out, fmt, f"{stem}.{FORMATS[fmt][0]}")


# --- statistics and codebook ------------------------------------------------------------------------


STATISTICS_FORMATS = ("csv", "xlsx", "tex")


@login_required
@require_GET
def statistics_download(request: HttpRequest, project_uuid, fmt: str) -> HttpResponse:
    """The descriptive interview statistics (interviews.statistics): CSV and XLSX a row per model with the
    across-model summary under it; LaTeX in Appendix C's shape (a row per metric, a column per model, then the
    minimum, maximum and mean across models)."""
    membership = member_or_404(request, project_uuid)
    if fmt not in STATISTICS_FORMATS:
        raise Http404(f"No statistics format {fmt!r}.")
    depth = request.GET.get("depth", "")
    depth = depth if depth in dict(DEPTH_CHOICES) else ""
    unfinished = request.GET.get("unfinished") == "1"
    probes = request.GET.get("probes") == "1"
    statistics = project_statistics(membership.project, depth=depth or None, unfinished=unfinished, probes=probes)
    project = membership.project
    which = ", ".join(w for w in (f"{depth} interviews" if depth else "", "" if unfinished else "finished interviews only",
                                  "with interviews made from probe rationales" if probes else
                                  "interviews made from probe rationales left out" if statistics.probe_left_out else "")
                      if w)
    caption = f"Descriptive statistics of the interviews per model: {project.name} ({which}). "
    if fmt == "tex":
        headers, rows = transposed(statistics)
        table = Table(caption=caption + "The last three columns give the minimum, maximum and mean across models",
                      headers=headers, rows=rows, row_count=len(rows), label="tab:interview-statistics",
                      numeric=frozenset(range(1, len(headers))), widths=[3.2] + [1.0] * (len(headers) - 1),
                      **page_from_query(request.GET))
    else:
        rows = with_summary(statistics)
        table = Table(caption=caption + "The last three rows give the minimum, maximum and mean of each column across models",
                      headers=STAT_COLUMNS, rows=rows, row_count=len(rows), label="tab:interview-statistics",
                      numeric=frozenset(range(3, len(STAT_COLUMNS))))
    table_name = "interview-statistics" + (f"-{depth}" if depth else "")
    return _download(table, fmt, download_filename(project, table_name, FORMATS[fmt][0]))


CODEBOOK_FORMATS = ("csv", "docx", "xlsx", "qdc")


@login_required
@require_GET
def codebook_download(request: HttpRequest, project_uuid, fmt: str) -> HttpResponse:
    """The codebook as CSV, DOCX or XLSX (a table) or REFI-QDA .qdc."""
    membership = member_or_404(request, project_uuid)
    if fmt not in CODEBOOK_FORMATS:
        raise Http404(f"No codebook format {fmt!r}.")
    project = membership.project
    stem = download_stem(project, "codebook")
    if fmt == "qdc":
        from refiqda.errors import QdpxError

        try:
            xml = codebook_export.codebook_qdc(project)
        except QdpxError as e:
            return render(request, "reports/export_error.html", _context(membership, error=str(e)), status=400)
        response = HttpResponse(xml, content_type="application/xml; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{stem}.qdc"'
        return response
    return _download(codebook_export.codebook_table(project), fmt, f"{stem}.{fmt}")


# --- trajectories ------------------------------------------------------------------------------------


def _trajectories(request: HttpRequest, membership):
    from coding.models import Code

    population = frequency.Population.of(membership.project)
    codes = list(Code.objects.for_project(membership.project).order_by("position", "name"))
    spec = trajectories.spec_from_query(codes, population, request.GET)
    return trajectories.trajectories(membership.project, spec, population=population, codes=codes), codes, population


@login_required
@require_GET
def trajectory_view(request: HttpRequest, project_uuid) -> HttpResponse:
    """The moves of a chosen code set along each interview (timeline) and how they follow each other, by group."""
    membership = member_or_404(request, project_uuid)
    error = ""
    try:
        result, codes, population = _trajectories(request, membership)
    except trajectories.TrajectorySpecError as e:
        error = str(e)
        request.GET = request.GET.copy()
        for key in ("codes", "subcodes", "within", "by"):
            request.GET.pop(key, None)
        result, codes, population = _trajectories(request, membership)
    context = _context(membership, result=result, codes=codes, attributes=population.attributes(), error=error,
                       chosen={str(c.uuid) for c in codes if c.pk in result.spec.codes}, query=request.GET.urlencode(),
                       timeline=mark_safe(trajectories.timeline_svg(result)))  # noqa: S308 - built with escaping
    if request.htmx and not request.htmx.boosted:
        return render(request, "reports/trajectories.html#trajectory-result", context)
    return render(request, "reports/trajectories.html", context, status=400 if error else 200)


@login_required
@require_GET
def trajectory_export(request: HttpRequest, project_uuid) -> HttpResponse:
    """The transition table as CSV, or the timeline as SVG or PNG."""
    membership = member_or_404(request, project_uuid)
    fmt = request.GET.get("format", "")
    if fmt not in ("csv", "svg", "png"):
        return HttpResponse(f"Unknown format {fmt!r}; choose csv, svg or png.", status=400,
                            content_type="text/plain; charset=utf-8")
    try:
        result, _, _ = _trajectories(request, membership)
    except trajectories.TrajectorySpecError as e:
        return HttpResponse(str(e), status=400, content_type="text/plain; charset=utf-8")
    if fmt == "svg":
        response = HttpResponse(trajectories.timeline_svg(result), content_type="image/svg+xml; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{download_filename(membership.project, "trajectories", "svg")}"'
        response["Content-Security-Policy"] = "default-src 'none'; style-src 'unsafe-inline'"
        return response
    if fmt == "png":
        response = HttpResponse(trajectories.timeline_png(result), content_type="image/png")
        response["Content-Disposition"] = f'attachment; filename="{download_filename(membership.project, "trajectories", "png")}"'
        return response
    headers = result.csv_headers()
    table = Table(caption=f"Move transitions: {membership.project.name}. {result.note()}", headers=headers,
                  rows=result.csv_rows(), numeric=frozenset(range(2, len(headers))))
    return _download(table, "csv", download_filename(membership.project, "transitions", "csv"))


# --- case × code matrix ---------------------------------------------------------------------------------


def _cases(request: HttpRequest, membership):
    from coding.models import Code

    population = frequency.Population.of(membership.project)
    codes = list(Code.objects.for_project(membership.project).order_by("position", "name"))
    chosen = trajectories.code_set_from_query(codes, request.GET)
    return cases.case_matrix(membership.project, chosen, codes=codes, population=population,
                             username=request.user.username), codes


# Interviews per page of the case matrix: a thousand interviews by ten codes were 10,000 cells to draw (the exports
# hold them all).
CASE_ROWS = 50


@login_required
@require_GET
def cases_view(request: HttpRequest, project_uuid) -> HttpResponse:
    """Interviews × chosen codes applied to whole interviews (case features); writers tick cells in place."""
    membership = member_or_404(request, project_uuid)
    error = ""
    try:
        matrix, codes = _cases(request, membership)
    except trajectories.CodeSetError as e:
        error = str(e)
        request.GET = request.GET.copy()
        request.GET.pop("codes", None)
        matrix, codes = _cases(request, membership)
    chosen = {c.pk for c in matrix.codes}
    rows = paginate(request, matrix.rows, per_page=CASE_ROWS, target="#case-matrix")
    export_query = request.GET.copy()
    export_query.pop("page", None)  # the exports hold every interview
    context = _context(membership, matrix=matrix, rows=rows, codes=codes, chosen=chosen, error=error,
                       query=export_query.urlencode())
    if request.htmx and not request.htmx.boosted:
        return render(request, "reports/cases.html#case-matrix", context)
    return render(request, "reports/cases.html", context, status=400 if error else 200)


@login_required
@require_GET
def cases_export(request: HttpRequest, project_uuid) -> HttpResponse:
    """The case × code matrix as CSV or XLSX: per cell, how many coders applied the code to the whole interview."""
    membership = member_or_404(request, project_uuid)
    fmt = request.GET.get("format", "")
    if fmt not in ("csv", "xlsx"):
        return HttpResponse(f"Unknown format {fmt!r}; choose csv or xlsx.", status=400, content_type="text/plain; charset=utf-8")
    try:
        matrix, _ = _cases(request, membership)
    except trajectories.CodeSetError as e:
        return HttpResponse(str(e), status=400, content_type="text/plain; charset=utf-8")
    headers = matrix.headers()
    table = Table(caption=f"Codes applied to whole interviews: {membership.project.name} (number of coders per cell)",
                  headers=headers, rows=matrix.export_rows(), row_count=len(matrix.rows),
                  numeric=frozenset(range(2, len(headers))))
    return _download(table, fmt, download_filename(membership.project, "case-codes", fmt))
