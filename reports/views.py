"""Reports pages: project home, the reports index, excerpt tables, frequency tables, exports."""

from __future__ import annotations

import datetime as dt
import tempfile

from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_POST

from interviews.statistics import DEPTH_CHOICES, STAT_COLUMNS, as_table, project_statistics
from projects.permissions import member_or_404
from reports import codebook_export, frequency
from reports.excerpts import (
    COLUMNS,
    ExcerptSpec,
    ExcerptSpecError,
    excerpt_count,
    excerpt_options,
    excerpt_rows,
    spec_from_query,
    spec_to_params,
)
from reports.exports import INLINE_MAX_ROWS, excerpt_filename, excerpt_table, exportjob_create, query_params, safe_filename
from reports.heatmap import heatmap_png, heatmap_svg
from reports.models import ExportJob
from reports.overview import project_overview
from reports.writers import FORMATS, STREAMED, Table, iter_table, write_table

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
    if not error:
        total = excerpt_count(project, spec)
        rows = [r.values(spec.columns) for r in excerpt_rows(project, spec, limit=PREVIEW_ROWS, options=options)]
    context = _context(
        membership, options=options, spec=spec, error=error, rows=rows, total=total, preview_rows=PREVIEW_ROWS,
        all_columns=_column_choices(spec), params=spec_to_params(spec, options), formats=FORMATS,
        inline_max=INLINE_MAX_ROWS, selected=_selected(spec, options),
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
        "codes": set(spec.codes), "participants": set(spec.participants), "coders": set(spec.coders),
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
    total = excerpt_count(project, spec)
    if total > INLINE_MAX_ROWS:
        job = exportjob_create(project=project, user=request.user, fmt=fmt, params=query_params(request.POST), total=total)
        return redirect("reports:export_job", project_uuid=project.uuid, job_uuid=job.uuid)
    return _download(excerpt_table(project, spec, row_count=total, options=options), fmt, excerpt_filename(project, fmt))


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
    membership = member_or_404(request, project_uuid)
    job = get_object_or_404(ExportJob.objects.select_related("created_by"), project=membership.project, uuid=job_uuid)
    context = _context(membership, job=job)
    if request.htmx and not request.htmx.boosted:
        return render(request, "reports/export_job.html#job-status", context)
    return render(request, "reports/export_job.html", context)


@login_required
@require_GET
def export_download(request: HttpRequest, project_uuid, job_uuid) -> HttpResponse:
    membership = member_or_404(request, project_uuid)
    job = get_object_or_404(ExportJob, project=membership.project, uuid=job_uuid)
    if job.status != ExportJob.Status.DONE or not job.file:
        raise Http404("This export is not ready.")
    try:
        handle = job.file.open("rb")
    except FileNotFoundError:
        raise Http404("This export's file is gone; export the table again.") from None
    return FileResponse(handle, as_attachment=True, filename=job.filename, content_type=FORMATS[job.format][1])


# --- frequency and prevalence --------------------------------------------------------------------


def _frequency(request: HttpRequest, membership):
    from interviews.models import Participant

    participants = list(Participant.objects.filter(project=membership.project).order_by("label"))
    spec = frequency.spec_from_query(participants, request.GET)
    return frequency.frequency_table(membership.project, spec, participants)


@login_required
@require_GET
def frequency_view(request: HttpRequest, project_uuid) -> HttpResponse:
    """Code (or theme) × model counts, shares and the group log ratio, as a table and a heatmap."""
    membership = member_or_404(request, project_uuid)
    error, table = "", None
    try:
        table = _frequency(request, membership)
    except frequency.FrequencySpecError as e:
        error = str(e)
        request.GET = request.GET.copy()
        for key in ("level", "a", "b"):
            request.GET.pop(key, None)
        table = _frequency(request, membership)
    context = _context(
        membership, table=table, error=error, query=request.GET.urlencode(),
        heatmap=mark_safe(heatmap_svg(table, _frequency_title(membership.project, table))),  # noqa: S308 - built with escaping
        rows=[(r, list(zip(r.counts, r.percents, strict=True)), frequency.format_ratio(r.log_ratio)) for r in table.rows],
        group_a={str(p.uuid) for p in table.participants if p.pk in table.spec.group_a},
        group_b={str(p.uuid) for p in table.participants if p.pk in table.spec.group_b},
    )
    if request.htmx and not request.htmx.boosted:
        # The error is shown inline in the fragment; htmx only swaps 2xx responses.
        return render(request, "reports/frequency.html#frequency-result", context)
    return render(request, "reports/frequency.html", context, status=400 if error else 200)


def _frequency_title(project, table: frequency.FrequencyTable) -> str:
    what = "Code" if table.level == "code" else "Theme"
    return f"{what} frequency by model: {project.name}"


FREQUENCY_FORMATS = ("csv", "xlsx", "tex", "svg", "png")


@login_required
@require_GET
def frequency_export(request: HttpRequest, project_uuid) -> HttpResponse:
    """The frequency table as CSV/XLSX/LaTeX, or its heatmap as SVG/PNG."""
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
    stem = f"{safe_filename(project.name, 'project')}-{table.level}-frequency-{dt.date.today():%Y%m%d}"
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
    caption = title + _groups_note(table)
    # Papers get one "n (%)" column per model; spreadsheets get numbers in columns of their own.
    headers, rows = (table.compact_headers(), table.compact_rows()) if fmt == "tex" else (table.headers(), table.export_rows())
    out = Table(caption=caption, headers=headers, rows=rows, row_count=len(table.rows) + 1,
                numeric=frozenset(range(1, len(headers))), widths=[3.0] + [1.2] * (len(headers) - 1),
                label=f"tab:{table.level}-frequency")
    return _download(out, fmt, f"{stem}.{FORMATS[fmt][0]}")


def _groups_note(table: frequency.FrequencyTable) -> str:
    if not table.spec.has_ratio:
        return ""
    return (f". n = coded segments; % = share of the model's coded segments; ln(A/B) compares group A "
            f"({', '.join(table.group_a_labels)}) with group B ({', '.join(table.group_b_labels)})")


# --- statistics and codebook ------------------------------------------------------------------------


@login_required
@require_GET
def statistics_latex(request: HttpRequest, project_uuid) -> HttpResponse:
    """The descriptive interview statistics (interviews.statistics) as a LaTeX table."""
    membership = member_or_404(request, project_uuid)
    depth = request.GET.get("depth", "")
    depth = depth if depth in dict(DEPTH_CHOICES) else ""
    rows = as_table(project_statistics(membership.project, depth=depth or None))
    project = membership.project
    caption = f"Descriptive statistics of the interviews per model: {project.name}" + (f" ({depth} interviews)" if depth else "")
    table = Table(caption=caption, headers=STAT_COLUMNS, rows=rows, row_count=len(rows), label="tab:interview-statistics",
                  numeric=frozenset(range(3, len(STAT_COLUMNS))), widths=[1.6, 1.2, 1.8] + [1.0] * (len(STAT_COLUMNS) - 3))
    return _download(table, "tex", f"{safe_filename(project.name, 'project')}-interview-statistics.tex")


CODEBOOK_FORMATS = ("csv", "docx", "xlsx", "qdc")


@login_required
@require_GET
def codebook_download(request: HttpRequest, project_uuid, fmt: str) -> HttpResponse:
    """The codebook as CSV, DOCX or XLSX (a table) or REFI-QDA .qdc."""
    membership = member_or_404(request, project_uuid)
    if fmt not in CODEBOOK_FORMATS:
        raise Http404(f"No codebook format {fmt!r}.")
    project = membership.project
    stem = f"{safe_filename(project.name, 'project')}-codebook"
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
