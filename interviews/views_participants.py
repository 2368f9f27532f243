"""The project's participants (the interviewed chatbots) and the form that describes an imported one.

Live participants have their endpoint settings on the conduct pages; their edit link goes there.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET

from interviews.forms import AttributeFormSet, ParticipantForm, attribute_initial
from interviews.models import Participant
from interviews.services import participant_update
from projects.forms import add_service_errors
from projects.permissions import member_or_404, writer_or_403


@login_required
@require_GET
def participant_list(request: HttpRequest, project_uuid) -> HttpResponse:
    """Every participant of the project, imported and live, with how many interviews each has."""
    membership = member_or_404(request, project_uuid)
    participants = Participant.objects.filter(project=membership.project).with_interview_counts().order_by("label")
    context = {"project": membership.project, "membership": membership, "nav": "interviews", "participants": participants}
    return render(request, "interviews/participant_list.html", context)


@login_required
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

