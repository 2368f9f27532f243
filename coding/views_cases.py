"""Codes applied to a whole interview (a case): the toggle behind each cell of the case × code matrix (reports)."""

from __future__ import annotations

from uuid import UUID

from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_POST

from coding.models import CaseCoding, Code
from coding.services import case_coding_set
from interviews.models import Interview
from projects.permissions import writer_or_403


@login_required
@require_POST
def case_code(request: HttpRequest, project_uuid: UUID, interview_uuid: UUID) -> HttpResponse:
    """Tick (on=1) or untick a code for the whole interview; answers with the matrix cell."""
    membership = writer_or_403(request, project_uuid)
    interview = get_object_or_404(Interview.objects.alive(), project=membership.project, uuid=interview_uuid)
    try:
        code = Code.objects.for_project(membership.project).get(uuid=request.POST.get("code", ""))
    except (Code.DoesNotExist, ValidationError):
        return HttpResponse("Choose a code of this project's codebook (“code”: its uuid).", status=400,
                           content_type="text/plain; charset=utf-8")
    case_coding_set(interview=interview, code=code, coder=request.user, on=request.POST.get("on") == "1")
    coders = sorted(CaseCoding.objects.filter(interview=interview, code=code).values_list("coder__username", flat=True))
    cell = {"interview": interview, "code": code, "coders": coders, "mine": request.user.username in coders}
    return render(request, "coding/_case_cell.html", {"project": membership.project, "membership": membership, "cell": cell})
