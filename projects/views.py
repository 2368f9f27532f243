from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.templatetags.static import static
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from config.celery import app as celery_app
from projects import services
from projects.forms import MemberAddForm, MemberRoleForm, PositionalityForm, ProjectForm, ProjectSettingsForm
from projects.models import Invitation, Membership, Role
from projects.pagination import paginate
from projects.permissions import member_or_404, owner_or_403
from projects.submissions import submitted_once
from projects.views_invitations import invitation_link_pop, invitation_link_share


@login_required
@require_GET
def project_list(request: HttpRequest) -> HttpResponse:
    memberships = Membership.objects.filter(user=request.user).select_related("project").order_by("-project__created_at", "-pk")
    return render(request, "projects/project_list.html", {"memberships": paginate(request, memberships), "form": ProjectForm()})


@login_required
@require_POST
@submitted_once
def project_create(request: HttpRequest) -> HttpResponse:
    form = ProjectForm(request.POST)
    if not form.is_valid():
        memberships = Membership.objects.filter(user=request.user).select_related("project").order_by("-project__created_at", "-pk")
        return render(request, "projects/project_list.html", {"memberships": paginate(request, memberships), "form": form},
                      status=400)
    project = services.project_create(owner=request.user, **form.cleaned_data)
    messages.success(request, f"Project “{project.name}” created.")
    return redirect("project_home", project_uuid=project.uuid)


@login_required
@require_http_methods(["GET", "POST"])
def project_settings(request: HttpRequest, project_uuid) -> HttpResponse:
    membership = member_or_404(request, project_uuid)
    project = membership.project
    form = ProjectSettingsForm(instance=project)
    if request.method == "POST":
        membership = owner_or_403(request, project_uuid)
        form = ProjectSettingsForm(request.POST, instance=project)
        if form.is_valid():
            form.save()
            messages.success(request, "Project settings saved.")
            return redirect("projects:settings", project_uuid=project.uuid)
    return render(request, "projects/settings.html", {"project": project, "membership": membership, "form": form})


@login_required
@require_GET
def member_list(request: HttpRequest, project_uuid) -> HttpResponse:
    membership = member_or_404(request, project_uuid)
    return _render_members(request, membership, MemberAddForm())


def _render_members(request: HttpRequest, membership: Membership, add_form: MemberAddForm, status: int = 200) -> HttpResponse:
    members = Membership.objects.filter(project=membership.project).select_related("user").order_by("user__username")
    context = {"project": membership.project, "membership": membership, "members": members, "add_form": add_form, "roles": Role.choices, "nav": "members"}
    if membership.is_owner:
        context["invitations"] = Invitation.objects.pending_for(membership.project)
        context["new_invitation"] = invitation_link_pop(request)
    return render(request, "projects/members.html", context, status=status)


@login_required
@require_POST
def member_add(request: HttpRequest, project_uuid) -> HttpResponse:
    membership = owner_or_403(request, project_uuid)
    form = MemberAddForm(request.POST)
    if form.is_valid():
        try:
            added = services.membership_invite(
                project=membership.project, actor=request.user,
                username_or_email=form.cleaned_data["user"], role=form.cleaned_data["role"],
            )
        except ValidationError as exc:
            form.add_error("user", exc.message_dict.get("user", exc.messages))
        else:
            if isinstance(added, services.IssuedInvitation):
                invitation_link_share(request, added)
            else:
                messages.success(request, f"{added.user.username} added as {added.get_role_display().lower()}.")
            return redirect("projects:members", project_uuid=project_uuid)
    return _render_members(request, membership, form, status=400)


@login_required
@require_POST
def member_change_role(request: HttpRequest, project_uuid, username: str) -> HttpResponse:
    membership = owner_or_403(request, project_uuid)
    target = get_object_or_404(Membership, project=membership.project, user__username=username)
    form = MemberRoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose a role: owner, analyst or viewer.")
        return redirect("projects:members", project_uuid=project_uuid)
    try:
        services.membership_change_role(membership=target, actor=request.user, role=form.cleaned_data["role"])
        messages.success(request, f"{username} is now {form.cleaned_data['role']}.")
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    return redirect("projects:members", project_uuid=project_uuid)


@login_required
@require_POST
def member_remove(request: HttpRequest, project_uuid, username: str) -> HttpResponse:
    membership = owner_or_403(request, project_uuid)
    target = get_object_or_404(Membership, project=membership.project, user__username=username)
    try:
        services.membership_remove(membership=target, actor=request.user)
        messages.success(request, f"{username} removed from the project.")
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    return redirect("projects:members", project_uuid=project_uuid)


@login_required
@require_http_methods(["GET", "POST"])
def positionality(request: HttpRequest, project_uuid) -> HttpResponse:
    """Each member, viewers included, writes their own positionality statement."""
    membership = member_or_404(request, project_uuid)
    form = PositionalityForm(instance=membership)
    if request.method == "POST":
        form = PositionalityForm(request.POST, instance=membership)
        if form.is_valid():
            services.membership_update_positionality(membership=membership, positionality=form.cleaned_data["positionality"])
            messages.success(request, "Positionality statement saved.")
            return redirect("projects:members", project_uuid=project_uuid)
    return render(request, "projects/positionality.html", {"project": membership.project, "membership": membership, "form": form})


@require_GET
def favicon(request: HttpRequest) -> HttpResponse:
    """Browsers ask /favicon.ico for documents that name no icon (JSON records, API answers): not a 404."""
    return redirect(static("favicon.svg"), permanent=True)


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """Database and broker status for load balancers and `docker compose` healthchecks."""
    status = {"database": _database_status(), "broker": _broker_status()}
    healthy = status["database"] == "ok" and status["broker"] in {"ok", "in-process"}
    return JsonResponse({"status": "ok" if healthy else "degraded", **status}, status=200 if healthy else 503)


def _database_status() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return "ok"
    except Exception as exc:  # noqa: BLE001 - any failure means "not ok", reported as text
        return f"error: {exc.__class__.__name__}"


def _broker_status() -> str:
    if celery_app.conf.task_always_eager:
        return "in-process"
    try:
        with celery_app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=1)
        return "ok"
    except Exception as exc:  # noqa: BLE001
        return f"error: {exc.__class__.__name__}"


