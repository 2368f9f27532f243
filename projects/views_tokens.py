"""The account's API tokens: create one (its key shown once), see when each was used and expires, revoke."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from accounts import services
from accounts.models import ApiToken
from projects.forms import ApiTokenForm, add_service_errors
from projects.submissions import submitted_once


@login_required
@require_http_methods(["GET", "POST"])
@submitted_once(repeat=lambda request, token_uuid: _render(request, ApiTokenForm(), sent_before=token_uuid))
def api_tokens(request: HttpRequest) -> HttpResponse:
    """The list and the form; a created key is shown in the answer to the POST only, never stored."""
    if request.method != "POST":
        return _render(request, ApiTokenForm())
    form = ApiTokenForm(request.POST)
    if not form.is_valid():
        return _render(request, form, status=400)
    try:
        issued = services.api_token_create(user=request.user, **form.cleaned_data)
    except ValidationError as exc:
        add_service_errors(form, exc)
        return _render(request, form, status=400)
    response = _render(request, ApiTokenForm(), issued=issued)
    # The key is not kept anywhere, the answer that shows it included: a repeated send names the token instead.
    response.submission_target = str(issued.token.uuid)
    return response


@login_required
@require_POST
def api_token_revoke(request: HttpRequest, api_token_uuid) -> HttpResponse:
    # Someone else's token is a 404, as if it did not exist.
    token = get_object_or_404(ApiToken.objects.select_related("user"), uuid=api_token_uuid, user=request.user)
    services.api_token_revoke(token=token)
    messages.success(request, f"Token “{token.name}” revoked: the API no longer accepts it.")
    return redirect("api_tokens")


def _render(request: HttpRequest, form: ApiTokenForm, *, issued: services.IssuedApiToken | None = None,
            sent_before: str | None = None, status: int = 200) -> HttpResponse:
    tokens = ApiToken.objects.for_user(request.user)
    context = {"form": form, "tokens": tokens, "issued": issued,
               "sent_before": tokens.filter(uuid=sent_before).first() if sent_before else None}
    return render(request, "projects/api_tokens.html", context, status=status)
