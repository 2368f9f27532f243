"""The project's audit log: who created, changed, deleted or restored what, and when (owners only)."""

from __future__ import annotations

import datetime as dt

from django import forms
from django.contrib.auth.decorators import login_required
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from projects.models import AuditEvent, Membership, audit_target_label
from projects.pagination import paginate
from projects.permissions import owner_or_403


class AuditFilterForm(forms.Form):
    actor = forms.ChoiceField(required=False, label="Who")
    action = forms.ChoiceField(required=False, choices=[("", "Any action"), *AuditEvent.Action.choices])
    target_type = forms.ChoiceField(required=False, label="What")
    since = forms.DateField(required=False, label="From", widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(required=False, label="To", widget=forms.DateInput(attrs={"type": "date"}))

    def __init__(self, *args, project, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        members = Membership.objects.filter(project=project).select_related("user").order_by("user__username")
        self.fields["actor"].choices = [("", "Anyone")] + [(m.user.username, m.user.get_full_name() or m.user.username) for m in members]
        types = AuditEvent.objects.filter(project=project).order_by("target_type").values_list("target_type", flat=True).distinct()
        self.fields["target_type"].choices = [("", "Anything")] + [(t, audit_target_label(t)) for t in types]

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("since") and cleaned.get("until") and cleaned["since"] > cleaned["until"]:
            self.add_error("until", "“To” is before “From”.")
        return cleaned

    def apply(self, events: QuerySet[AuditEvent]) -> QuerySet[AuditEvent]:
        data = self.cleaned_data
        if data.get("actor"):
            events = events.filter(actor__username=data["actor"])
        if data.get("action"):
            events = events.filter(action=data["action"])
        if data.get("target_type"):
            events = events.filter(target_type=data["target_type"])
        if data.get("since"):
            events = events.filter(created_at__date__gte=data["since"])
        if data.get("until"):
            events = events.filter(created_at__date__lt=data["until"] + dt.timedelta(days=1))
        return events


@login_required
@require_GET
def audit_log(request: HttpRequest, project_uuid) -> HttpResponse:
    """The filterable audit log; the filter form swaps only the table over htmx."""
    membership = owner_or_403(request, project_uuid)
    project = membership.project
    form = AuditFilterForm(request.GET or None, project=project)
    events = AuditEvent.objects.for_project(project)
    if form.is_bound:
        # Invalid filters show their inline errors and no rows (200, like any form error).
        events = form.apply(events) if form.is_valid() else events.none()
    page = paginate(request, events, target="#audit-table")
    context = {"project": project, "membership": membership, "nav": "audit", "form": form, "page": page}
    template = "projects/audit.html#audit-table" if request.htmx and not request.htmx.boosted else "projects/audit.html"
    return render(request, template, context)
