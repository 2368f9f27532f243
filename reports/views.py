from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from projects.permissions import member_or_404
from reports.overview import project_overview


@login_required
@require_GET
def project_home(request: HttpRequest, project_uuid) -> HttpResponse:
    """The six RTA phases as a progress strip, with the next useful action."""
    membership = member_or_404(request, project_uuid)
    overview = project_overview(membership.project)
    return render(request, "reports/project_home.html", {"project": membership.project, "membership": membership, "overview": overview})
