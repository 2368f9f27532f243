"""The project trash (owners only): restore deleted interviews, codes, themes, memos and probes, or empty it."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from projects.models import Membership
from projects.pagination import paginate
from projects.permissions import owner_or_403
from projects.trash import TrashList, trash_empty, trash_restore


class RestoreForm(forms.Form):
    kind = forms.CharField(max_length=40)
    uuid = forms.UUIDField()


class EmptyForm(forms.Form):
    confirm = forms.BooleanField(
        label="I understand that everything in the trash will be deleted permanently, with its codings, memos and history.",
        error_messages={"required": "Tick the box to confirm: emptying the trash cannot be undone."},
    )


def _render(request: HttpRequest, membership: Membership, *, empty_form: EmptyForm | None = None, error: str = "") -> HttpResponse:
    """The trash page; a refused action re-renders it with the reason (200, like any form error)."""
    items = paginate(request, TrashList(membership.project))
    context = {"project": membership.project, "membership": membership, "nav": "trash", "items": items,
               "empty_form": empty_form or EmptyForm(), "error": error}
    return render(request, "projects/trash.html", context)


@login_required
@require_GET
def trash_list(request: HttpRequest, project_uuid) -> HttpResponse:
    return _render(request, owner_or_403(request, project_uuid))


@login_required
@require_POST
def trash_restore_view(request: HttpRequest, project_uuid) -> HttpResponse:
    membership = owner_or_403(request, project_uuid)
    form = RestoreForm(request.POST)
    if not form.is_valid():
        return _render(request, membership, error="Choose an item in the trash to restore.")
    try:
        restored = trash_restore(project=membership.project, actor=request.user, **form.cleaned_data)
    except ValidationError as exc:
        return _render(request, membership, error=" ".join(exc.messages))
    names = ", ".join(f"{item.kind.name} “{item.title}”" for item in restored)
    messages.success(request, f"Restored {names}, with everything attached.")
    return redirect("projects:trash", project_uuid=project_uuid)


@login_required
@require_POST
def trash_empty_view(request: HttpRequest, project_uuid) -> HttpResponse:
    membership = owner_or_403(request, project_uuid)
    form = EmptyForm(request.POST)
    if not form.is_valid():
        return _render(request, membership, empty_form=form)
    try:
        count = trash_empty(project=membership.project, actor=request.user)
    except ValidationError as exc:
        return _render(request, membership, error=" ".join(exc.messages))
    messages.success(request, f"The trash is empty: {count} item{'s' if count != 1 else ''} deleted permanently.")
    return redirect("projects:trash", project_uuid=project_uuid)
