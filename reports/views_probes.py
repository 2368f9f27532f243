"""Downloads of probe answers and scores, written by the report writers."""

from __future__ import annotations

from uuid import UUID

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_GET

from probes.models import Probe
from probes.scoring import paper_table, scores_from_query
from projects.permissions import member_or_404
from reports.probe_exports import answers_table, paper_table_download, probe_filename, summary_table
from reports.views import _download
from reports.writers import FORMATS, page_from_query

ANSWER_FORMATS = ("csv", "xlsx")


def _probe(request: HttpRequest, project_uuid: UUID, probe_uuid: UUID) -> Probe:
    """The live probe of a project the reader is a member of (404 otherwise)."""
    membership = member_or_404(request, project_uuid)
    return get_object_or_404(Probe.objects.live().select_related("project"), project=membership.project, uuid=probe_uuid)


@login_required
@require_GET
def probe_answers(request: HttpRequest, project_uuid: UUID, probe_uuid: UUID, fmt: str) -> HttpResponse:
    """Every answer of the probe with provenance, as CSV or XLSX."""
    probe = _probe(request, project_uuid, probe_uuid)
    if fmt not in ANSWER_FORMATS:
        raise Http404("Answers download as csv or xlsx.")
    return _download(answers_table(probe), fmt, probe_filename(probe, "answers", fmt))


@login_required
@require_GET
def probe_summary(request: HttpRequest, project_uuid: UUID, probe_uuid: UUID, fmt: str) -> HttpResponse:
    """Table 1 (with the subsets chosen on the results page) in any table format."""
    probe = _probe(request, project_uuid, probe_uuid)
    if fmt not in FORMATS:
        raise Http404(f"Choose one of {', '.join(FORMATS)}.")
    return _download(summary_table(probe, scores_from_query(probe, request.GET)), fmt, probe_filename(probe, "scores", fmt))


@login_required
@require_GET
def probe_table1(request: HttpRequest, project_uuid: UUID, probe_uuid: UUID, fmt: str) -> HttpResponse:
    """Table 1 as the paper prints it (a column group per condition over its subsets), with the results page's choices."""
    probe = _probe(request, project_uuid, probe_uuid)
    if fmt not in FORMATS:
        raise Http404(f"Choose one of {', '.join(FORMATS)}.")
    table = paper_table(scores_from_query(probe, request.GET), request.GET.get("rate", ""))
    return _download(paper_table_download(probe, table, page_from_query(request.GET)), fmt, probe_filename(probe, "table1", fmt))
