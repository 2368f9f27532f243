"""The codebook template gallery: browse the templates in coding/codebook_templates/ and start from one."""

from __future__ import annotations

from uuid import UUID

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from coding.codebook_import import CodebookImportError, Row
from coding.gallery import codebook_template, codebook_template_apply, codebook_templates, existing_names, is_taken
from projects.permissions import member_or_404, writer_or_403


@login_required
@require_GET
def gallery(request: HttpRequest, project_uuid: UUID) -> HttpResponse:
    membership = member_or_404(request, project_uuid)
    taken = existing_names(membership.project)
    cards = []
    for template in codebook_templates():
        rows = template.rows(cited=False)
        cards.append({"template": template, "codes": _outline(rows),
                      "new": sum(not is_taken(r, taken) for r in rows)})
    return render(request, "coding/gallery.html",
                  {"project": membership.project, "membership": membership, "nav": "codebook", "cards": cards})


def _outline(rows: list[Row]) -> list[tuple[Row, int]]:
    """The template's codes with their depth, for an indented preview."""
    parents = {r.name.lower(): r.parent.lower() for r in rows}

    def depth(name: str) -> int:
        seen = 0
        while parents.get(name) and seen < len(rows):  # bounded, should a file's parents form a cycle
            name, seen = parents[name], seen + 1
        return seen

    return [(r, depth(r.name.lower())) for r in rows]


@login_required
@require_POST
def gallery_apply(request: HttpRequest, project_uuid: UUID, template_slug: str) -> HttpResponse:
    membership = writer_or_403(request, project_uuid)
    template = codebook_template(template_slug)
    if template is None:
        raise Http404("No such codebook template.")
    try:
        outcome = codebook_template_apply(project=membership.project, actor=request.user, template=template)
    except CodebookImportError as exc:
        messages.error(request, f"Nothing was added from “{template.title}”: " + " ".join(exc.errors))
        return redirect("coding:gallery", project_uuid=project_uuid)
    skipped = f" Already in the codebook, so left as they were: {', '.join(outcome.skipped)}." if outcome.skipped else ""
    messages.success(request, f"Added {len(outcome.created)} codes from “{template.title}”.{skipped}")
    return redirect("coding:codebook", project_uuid=project_uuid)
