"""The project's participants (the interviewed chatbots) and the form that describes an imported one.

Live participants have their endpoint settings on the conduct pages; their edit link goes there.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from interviews.attribute_sheet import (
    INTERVIEW_LAYOUT,
    PARTICIPANT_LAYOUT,
    SheetError,
    read_sheet,
    sheet_attributes,
    sheet_interview_attributes,
    table_sheet,
)
from interviews.forms import AttributeFormSet, ParticipantForm, attribute_initial, shown_value
from interviews.models import Interview, Participant
from interviews.services import interview_attributes_set, participant_attributes_set, participant_update
from projects.forms import add_service_errors
from projects.pagination import paginate
from projects.permissions import member_or_404, writer_or_403


@login_required
@require_GET
def participant_list(request: HttpRequest, project_uuid) -> HttpResponse:
    """Every participant of the project, imported and live, with how many interviews each has."""
    membership = member_or_404(request, project_uuid)
    participants = Participant.objects.filter(project=membership.project).with_interview_counts().order_by("label", "pk")
    page = paginate(request, participants)
    context = {"project": membership.project, "membership": membership, "nav": "interviews", "participants": page}
    return render(request, "interviews/participant_list.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def participant_edit(request: HttpRequest, project_uuid, participant_uuid) -> HttpResponse:
    """Describe an imported participant: label, provider, model, interface, snapshot and case attributes."""
    membership = writer_or_403(request, project_uuid)
    participant = get_object_or_404(Participant, project=membership.project, uuid=participant_uuid)
    if participant.is_live:
        return redirect("conduct:participant_edit", project_uuid=project_uuid, participant_uuid=participant.uuid)
    data = request.POST if request.method == "POST" else None
    form = ParticipantForm(data, initial=ParticipantForm.initial_from(participant))
    # Posted rows stand on their own: with `initial`, a row sent unchanged would count as empty and be dropped.
    rows = AttributeFormSet(data, initial=None if data else attribute_initial(participant.attributes), prefix="attributes")
    if data is not None and form.is_valid() & rows.is_valid():
        try:
            participant_update(participant=participant, actor=request.user, **form.cleaned_data,
                               attributes=rows.attributes(participant.attributes))
        except ValidationError as exc:
            participant.refresh_from_db()  # the service set the rejected values before it refused them
            add_service_errors(form, exc)
        else:
            messages.success(request, f"Participant “{participant.label}” saved.")
            return redirect("interviews:participants", project_uuid=project_uuid)
    failed = data is not None and (bool(form.errors) or not rows.is_valid())
    context = {"project": membership.project, "membership": membership, "nav": "interviews",
               "participant": participant, "form": form, "rows": rows}
    return render(request, "interviews/participant_form.html", context, status=400 if failed else 200)



NEW_VARIABLE_COLUMNS = 1


@login_required
@require_http_methods(["GET", "POST"])
def participant_variables(request: HttpRequest, project_uuid) -> HttpResponse:
    """Case variables of every participant in one table, edited in place or set from an uploaded CSV/XLSX sheet;
    interview attributes (ground truth, condition, wave...) from a sheet too."""
    membership = member_or_404(request, project_uuid) if request.method == "GET" else writer_or_403(request, project_uuid)
    participants = list(Participant.objects.filter(project=membership.project).order_by("label"))
    error = ""
    if request.method == "POST":
        try:
            said = _save_variables(request, membership.project, participants)
        except (SheetError, ValidationError) as exc:
            error = exc.messages[0] if isinstance(exc, ValidationError) else str(exc)
        else:
            messages.success(request, said)
            return redirect("interviews:participant_variables", project_uuid=project_uuid)
    names = sorted({k for p in participants if isinstance(p.attributes, dict) for k in p.attributes})
    rows = [(p, [shown_value(p.attributes[n]) if isinstance(p.attributes, dict) and n in p.attributes else "" for n in names]
             + [""] * NEW_VARIABLE_COLUMNS) for p in participants]
    context = {"project": membership.project, "membership": membership, "nav": "interviews", "error": error,
               "names": names + [""] * NEW_VARIABLE_COLUMNS, "rows": rows}
    return render(request, "interviews/participant_variables.html", context, status=400 if error else 200)


MAX_SHEET_BYTES = 2 * 1024 * 1024


def _save_variables(request: HttpRequest, project, participants: list[Participant]) -> str:
    """Apply the posted table or sheet; what changed, as the message to show."""
    if request.POST.get("action") == "interviews":
        interviews = list(Interview.objects.alive().filter(project=project).only("id", "uuid", "title", "metadata", "project"))
        changes = sheet_interview_attributes(_uploaded_sheet(request, layout=INTERVIEW_LAYOUT), interviews)
        n = interview_attributes_set(actor=request.user, attributes=changes)
        return f"Interview attributes saved: {n} interview{'s' if n != 1 else ''} changed."
    sheet = _uploaded_sheet(request, layout=PARTICIPANT_LAYOUT) if request.POST.get("action") == "upload" else _table_sheet(request, participants)
    by = {str(getattr(p, sheet.keyed_by)): p for p in participants}
    n = participant_attributes_set(actor=request.user, attributes=sheet_attributes(sheet, by))
    return f"Case variables saved: {n} participant{'s' if n != 1 else ''} changed."


def _uploaded_sheet(request: HttpRequest, *, layout: str):
    upload = request.FILES.get("sheet")
    if upload is None:
        raise SheetError("Choose a CSV or XLSX file to upload.")
    if upload.size > MAX_SHEET_BYTES:
        raise SheetError(f"{upload.name}: larger than 2 MB; a sheet of attributes is much smaller.")
    return read_sheet(upload.name, upload.read(), layout=layout)


def _table_sheet(request: HttpRequest, participants: list[Participant]):
    cells = {str(p.uuid): request.POST.getlist(f"cell-{p.uuid}") for p in participants if f"cell-{p.uuid}" in request.POST}
    return table_sheet(request.POST.getlist("name"), request.POST.getlist("shown"), cells,
                       {str(p.uuid): p.label for p in participants})
