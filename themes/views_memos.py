"""Memos: writing, revisions with diffs, conflicts shown (never lost), the reflexive journal."""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from coding.models import Code
from coding.queries import familiarisation_notes, interview_with_note_count
from interviews.models import Interview
from projects.models import Membership
from projects.pagination import paginate
from projects.permissions import member_or_404, writer_or_403
from projects.submissions import submitted_once
from themes import services
from themes.models import Memo, MemoRevision, Theme
from themes.rendering import render_markdown
from themes.views import posted_version

TARGETS = {"interview": Interview, "code": Code, "theme": Theme}


def _memo(membership: Membership, memo_uuid) -> Memo:
    return get_object_or_404(Memo.objects.for_project(membership.project), uuid=memo_uuid)


def _target(membership: Membership, data) -> dict:
    """The memo target named in the request (?theme=<uuid>, or about=theme:<uuid>), checked to be in this project."""
    about = data.get("about", "")
    if ":" in about:
        name, _, value = about.partition(":")
        data = {name: value}
    for name, model in TARGETS.items():
        if data.get(name):
            return {name: get_object_or_404(model.objects.for_project(membership.project), uuid=data[name])}
    return {}


# A project can hold hundreds of thousands of interviews: the "About" menu offers the most recent
# ones (the journal's filter: those with memos); any interview's page starts a memo about it.
MENU_INTERVIEWS = 200


def _choices(membership: Membership, *, with_memos: bool = False) -> list[tuple[str, list[tuple[str, str]]]]:
    """What a memo can be about, for the "About" menus (3 queries)."""
    project = membership.project
    interviews = Interview.objects.filter(project=project, deleted_at__isnull=True)
    if with_memos:
        interviews = interviews.filter(memos__deleted_at__isnull=True, memos__isnull=False).distinct()
    interviews = interviews.order_by("-created_at", "-pk").only("uuid", "title")[:MENU_INTERVIEWS]
    return [
        ("Themes", [(f"theme:{t.uuid}", t.name) for t in Theme.objects.for_project(project).only("uuid", "name")]),
        ("Codes", [(f"code:{c.uuid}", c.name) for c in Code.objects.for_project(project).only("uuid", "name")]),
        ("Interviews", [(f"interview:{i.uuid}", i.title) for i in interviews]),
    ]


def _ctx(membership: Membership, **extra) -> dict:
    return {"project": membership.project, "membership": membership, "nav": "themes", "kinds": Memo.Kind.choices, **extra}


@login_required
@require_GET
def journal(request: HttpRequest, project_uuid) -> HttpResponse:
    """Every memo of the project by date, filterable by type, author and target (5 queries)."""
    membership = member_or_404(request, project_uuid)
    memos = Memo.objects.for_project(membership.project).order_by("-created_at", "-id")
    kind, author, target = request.GET.get("kind", ""), request.GET.get("author", ""), request.GET.get("target", "")
    if kind:
        memos = memos.filter(kind=kind)
    if author:
        memos = memos.filter(author__username=author)
    if target == "project":
        memos = memos.filter(interview__isnull=True, code__isnull=True, theme__isnull=True)
    elif target in TARGETS:
        memos = memos.filter(**{f"{target}__isnull": False})
    workspace_interview = None
    if ":" in target:  # one particular theme, code or interview ("theme:<uuid>")
        name, _, value = target.partition(":")
        if name in TARGETS:
            memos = memos.filter(**{f"{name}__uuid": value}) if _is_uuid(value) else memos.none()
        # The workspace's familiarisation notes on that interview are the same phase of work: say where they are.
        if name == "interview" and _is_uuid(value):
            workspace_interview = interview_with_note_count(membership.project, value)
    memos = paginate(request, memos)
    for memo in memos:
        memo.html = render_markdown(memo.body)
    members = Membership.objects.filter(project=membership.project).select_related("user")
    return render(request, "themes/journal.html", _ctx(membership, memos=memos, members=members, choices=_choices(membership, with_memos=True),
                                                       filters={"kind": kind, "author": author, "target": target},
                                                       workspace_interview=workspace_interview))


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


@login_required
@require_http_methods(["GET", "POST"])
@submitted_once
def memo_new(request: HttpRequest, project_uuid) -> HttpResponse:
    membership = writer_or_403(request, project_uuid)
    data = request.POST if request.method == "POST" else request.GET
    target = _target(membership, data)
    form = {"title": data.get("title", ""), "body": data.get("body", ""), "kind": data.get("kind", Memo.Kind.REFLEXIVE)}
    errors: dict = {}
    if request.method == "POST":
        try:
            memo = services.memo_create(project=membership.project, actor=request.user, **form, **target)
        except ValidationError as exc:
            errors = exc.message_dict
        else:
            messages.success(request, f"Memo “{memo.title}” saved.")
            return redirect("themes:memo", project_uuid=membership.project.uuid, memo_uuid=memo.uuid)
    target_name, target_obj = next(iter(target.items()), ("project", membership.project))
    choices = _choices(membership) if not target else []
    return render(request, "themes/memo_form.html", _ctx(membership, form=form, errors=errors, target_name=target_name,
                                                         target_obj=target_obj, choices=choices), status=400 if errors else 200)


@login_required
@require_GET
def memo_detail(request: HttpRequest, project_uuid, memo_uuid) -> HttpResponse:
    membership = member_or_404(request, project_uuid)
    memo = _memo(membership, memo_uuid)
    revisions = list(memo.revisions.select_related("author").defer("body"))
    # A memo on an interview shows the workspace's familiarisation notes on it too: researchers look for them in one place.
    notes = familiarisation_notes(memo.interview) if memo.interview else []
    return render(request, "themes/memo_detail.html", _ctx(membership, memo=memo, html=render_markdown(memo.body), revisions=revisions,
                                                           workspace_notes=notes))


@login_required
@require_http_methods(["GET", "POST"])
def memo_edit(request: HttpRequest, project_uuid, memo_uuid) -> HttpResponse:
    """Edit from a known revision; if a colleague saved since, show both texts and their diff."""
    membership = writer_or_403(request, project_uuid)
    memo = _memo(membership, memo_uuid)
    form = {"title": memo.title, "body": memo.body, "kind": memo.kind, "base_version": memo.version}
    conflict = None
    errors: dict = {}
    if request.method == "POST":
        base = posted_version(request.POST.get("base_version", ""))
        form = {"title": request.POST.get("title", ""), "body": request.POST.get("body", ""),
                "kind": request.POST.get("kind", memo.kind), "base_version": base}
        try:
            services.memo_update(memo=memo, actor=request.user, base_version=base,
                                 title=form["title"], body=form["body"], kind=form["kind"])
        except services.MemoConflict as exc:
            conflict = {"latest": exc.latest}
            form["base_version"] = exc.latest.number  # saving again means "I have seen theirs"
        except ValidationError as exc:
            errors = exc.message_dict
        else:
            messages.success(request, "Memo saved as a new revision.")
            return redirect("themes:memo", project_uuid=membership.project.uuid, memo_uuid=memo.uuid)
    # A conflict is a normal state of the editor (both texts shown), so the page itself is a 200; the API answers 409.
    status = 400 if errors else 200
    return render(request, "themes/memo_edit.html", _ctx(membership, memo=memo, form=form, conflict=conflict, errors=errors), status=status)


@login_required
@require_GET
def memo_revision(request: HttpRequest, project_uuid, memo_uuid, number: int) -> HttpResponse:
    """One revision and its diff against the revision before it."""
    membership = member_or_404(request, project_uuid)
    memo = _memo(membership, memo_uuid)
    revisions = {r.number: r for r in MemoRevision.objects.filter(memo=memo, number__in=[number - 1, number]).select_related("author")}
    revision = revisions.get(number)
    if revision is None:
        return redirect("themes:memo", project_uuid=membership.project.uuid, memo_uuid=memo.uuid)
    previous = revisions.get(number - 1)
    return render(request, "themes/memo_revision.html", _ctx(membership, memo=memo, revision=revision, previous=previous,
                                                             previous_label=f"Revision {number - 1}",
                                                             revision_label=f"Revision {number}"))


@login_required
@require_POST
def memo_delete(request: HttpRequest, project_uuid, memo_uuid) -> HttpResponse:
    membership = writer_or_403(request, project_uuid)
    memo = _memo(membership, memo_uuid)
    services.memo_delete(memo=memo, actor=request.user)
    messages.success(request, f"Memo “{memo.title}” moved to the trash.")
    return redirect("themes:journal", project_uuid=membership.project.uuid)
