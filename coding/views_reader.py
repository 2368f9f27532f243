"""Pages of the AI second reader: settings, runs, the review queue and where the AI and researchers differ."""

from __future__ import annotations

from urllib.parse import urlencode
from uuid import UUID

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Count, F, Q, Value
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from coding import reader, services, shortcuts
from coding.forms import ReaderRunForm, ReaderSettingsForm
from coding.models import Code, Suggestion, SuggestionRun
from projects.forms import add_service_errors
from projects.models import Membership, Role
from projects.permissions import member_or_404, owner_or_403, writer_or_403
from projects.submissions import submitted_once

REVIEW_PAGE = 200  # suggestions shown at once in the review queue; filters narrow it


def _ctx(membership: Membership, **extra) -> dict:
    return {"project": membership.project, "membership": membership, "nav": "codebook", **extra}


@login_required
@require_GET
def reader_home(request: HttpRequest, project_uuid: UUID) -> HttpResponse:
    membership = member_or_404(request, project_uuid)
    project = membership.project
    settings_form = ReaderSettingsForm.for_current(project, reader.reader_settings(project))
    run_form = ReaderRunForm(project=project, initial={"interview": request.GET.get("interview")})
    focus = None
    if request.GET.get("code"):  # a code's "find more like this"
        try:
            focus = run_form.fields["code"].to_python(request.GET["code"])
        except ValidationError:
            focus = None
        run_form.initial["code"] = focus.uuid if focus else None
    return _render_home(request, membership, settings_form, run_form, focus=focus)


def _render_home(request: HttpRequest, membership: Membership, settings_form: ReaderSettingsForm,
                 run_form: ReaderRunForm, *, estimate: dict | None = None, status: int = 200,
                 focus: Code | None = None) -> HttpResponse:
    project = membership.project
    if run_form.is_bound and run_form.is_valid():
        focus = run_form.cleaned_data["code"]
    current = reader.reader_settings(project)
    runs = (SuggestionRun.objects.filter(project=project).select_related("created_by", "focus_code")
            .annotate(pending=Count("suggestions", filter=Q(suggestions__status=Suggestion.Status.PENDING)),
                      total=Count("suggestions"))[:50])
    endpoint_url, unapproved = reader.endpoint_shown(current)
    return render(request, "coding/reader.html", _ctx(
        membership, reader_settings=current, settings_form=settings_form, run_form=run_form, runs=runs,
        estimate=estimate, endpoint_url=endpoint_url, unapproved=unapproved, focus=focus),
        status=status)


@login_required
@require_POST
def reader_settings_view(request: HttpRequest, project_uuid: UUID) -> HttpResponse:
    membership = owner_or_403(request, project_uuid)
    form = ReaderSettingsForm(request.POST, project=membership.project)
    if form.is_valid():
        try:
            reader.reader_settings_save(project=membership.project, user=request.user, **form.cleaned_data)
        except ValidationError as exc:
            add_service_errors(form, exc)
        else:
            messages.success(request, "Second reader settings saved.")
            return redirect("coding:reader", project_uuid=project_uuid)
    return _render_home(request, membership, form, ReaderRunForm(project=membership.project), status=400)


@login_required
@require_POST
@submitted_once
def reader_start(request: HttpRequest, project_uuid: UUID) -> HttpResponse:
    """First an estimate of what would be sent; starting takes a second, explicit click."""
    membership = writer_or_403(request, project_uuid)
    project = membership.project
    form = ReaderRunForm(request.POST, project=project)
    settings_form = ReaderSettingsForm.for_current(project, reader.reader_settings(project))
    if not form.is_valid():
        return _render_home(request, membership, settings_form, form, status=400)
    options = {"with_critic": form.cleaned_data["with_critic"], "new_code_ideas": form.cleaned_data["new_code_ideas"],
               "focus": form.cleaned_data["code"]}
    if request.POST.get("confirm") != "start":
        estimate = reader.estimate(project, form.cleaned_data["interviews"], with_critic=options["with_critic"],
                                   focus=options["focus"])
        estimate["interviews"] = len(form.cleaned_data["interviews"])
        return _render_home(request, membership, settings_form, form, estimate=estimate)
    try:
        run = reader.run_start(project=project, user=request.user, interviews=form.cleaned_data["interviews"], **options)
    except ValidationError as exc:
        form.add_error(None, exc)
        return _render_home(request, membership, settings_form, form, status=400)
    return redirect("coding:reader_run", project_uuid=project_uuid, run_uuid=run.uuid)


@login_required
@require_GET
def reader_run(request: HttpRequest, project_uuid: UUID, run_uuid: UUID) -> HttpResponse:
    membership = member_or_404(request, project_uuid)
    run = get_object_or_404(SuggestionRun, project=membership.project, uuid=run_uuid)
    progress = reader.progress(run)
    if request.htmx and request.GET.get("part") == "progress":
        return render(request, "coding/reader_run.html#progress", _ctx(membership, run=run, progress=progress))
    status, code_uuid = request.GET.get("status", Suggestion.Status.PENDING), request.GET.get("code", "")
    suggestions = (run.suggestions.select_related("segment__interview__participant", "code", "proposed_code", "decided_by")
                   .order_by("segment__interview_id", "segment__position", "code__name"))
    if status in Suggestion.Status.values:
        suggestions = suggestions.filter(status=status)
    if code_uuid:
        suggestions = suggestions.filter(code__uuid=code_uuid)
    codes = (Code.objects.filter(suggestions__run=run).annotate(
        pending=Count("suggestions", filter=Q(suggestions__run=run, suggestions__status=Suggestion.Status.PENDING)),
        critic_rejected=Count("suggestions", filter=Q(suggestions__run=run, suggestions__status=Suggestion.Status.PENDING,
                                                      suggestions__critic_verdict=Suggestion.Verdict.REJECTED)),
        # With a critic, the pending ones it did not check (its request failed, or it gave no verdict).
        unchecked=Count("suggestions", filter=Q(suggestions__run=run, suggestions__status=Suggestion.Status.PENDING,
                                                suggestions__critic_verdict=Suggestion.Verdict.NONE))
        if run.with_critic else Value(0),
        acceptable=F("pending") - F("critic_rejected") - F("unchecked"),  # what "Accept the rest" accepts
        reviewed=Count("suggestions", filter=Q(suggestions__run=run) & ~Q(suggestions__status=Suggestion.Status.PENDING)),
    ).order_by("name").distinct())
    return render(request, "coding/reader_run.html", _ctx(
        membership, run=run, progress=progress, suggestions=suggestions[:REVIEW_PAGE], status=status,
        code_uuid=code_uuid, codes=codes, dropped=reader.dropped_counts(run), ideas=run.code_ideas.all(),
        accept_rest_after=services.ACCEPT_ALL_AFTER, review_page=REVIEW_PAGE, shortcuts=shortcuts.SECOND_READER,
        refine=_refine_links(run) if membership.can_write else []))


REFINE_AFTER = 3  # rejections of one code's suggestions in a run before the page offers to refine the code
REFINE_CASES = 10


def _refine_links(run: SuggestionRun) -> list[tuple[Code, str]]:
    """A reflexive memo on each much-rejected code, prefilled with the rejected cases: its definition may need work."""
    rejected: dict[int, list[Suggestion]] = {}
    for suggestion in (run.suggestions.filter(status=Suggestion.Status.REJECTED)
                       .select_related("code", "segment").order_by("code_id", "decided_at")):
        rejected.setdefault(suggestion.code_id, []).append(suggestion)
    links = []
    for cases in rejected.values():
        if len(cases) < REFINE_AFTER:
            continue
        code = cases[0].code
        body = (f"{len(cases)} suggestions of “{code.name}” were rejected in the run of "
                f"{run.created_at:%Y-%m-%d %H:%M}. Does the definition say what we mean?\n\nDefinition now: "
                f"{code.definition or '(none)'}\n\nRejected cases:\n" + "\n".join(
                    f"- “{case.segment.text}”" + (f" — {case.reject_reason}" if case.reject_reason else "")
                    for case in cases[:REFINE_CASES]))
        query = urlencode({"code": str(code.uuid), "kind": "reflexive", "title": f"Refining “{code.name}”",
                           "body": body})
        links.append((code, f"{reverse('themes:memo_new', args=[run.project.uuid])}?{query}"))
    return links


@login_required
@require_POST
def reader_cancel(request: HttpRequest, project_uuid: UUID, run_uuid: UUID) -> HttpResponse:
    membership = writer_or_403(request, project_uuid)
    run = get_object_or_404(SuggestionRun, project=membership.project, uuid=run_uuid)
    if reader.run_cancel(run=run, user=request.user):
        messages.success(request, "Run cancelled: nothing more is sent; its suggestions stay for review.")
    else:
        messages.info(request, "This run had already finished: there was nothing to cancel.")
    return redirect("coding:reader_run", project_uuid=project_uuid, run_uuid=run_uuid)


@login_required
@require_POST
def reader_retry_failed(request: HttpRequest, project_uuid: UUID, run_uuid: UUID) -> HttpResponse:
    membership = writer_or_403(request, project_uuid)
    run = get_object_or_404(SuggestionRun, project=membership.project, uuid=run_uuid)
    try:
        windows = reader.run_retry_failed(run=run, user=request.user)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(request, f"Asking the {len(windows)} failed window{'s' if len(windows) != 1 else ''} again.")
    return redirect("coding:reader_run", project_uuid=project_uuid, run_uuid=run_uuid)


@login_required
@require_POST
def suggestion_decide(request: HttpRequest, project_uuid: UUID, suggestion_uuid: UUID, decision: str) -> HttpResponse:
    """Accept or reject one suggestion: one statement (coding.services.suggestion_decide), like applying a code."""
    if decision not in ("accept", "reject"):
        raise Http404("No such decision.")
    result = services.suggestion_decide(project_uuid=project_uuid, suggestion_uuid=suggestion_uuid,
                                        user_id=request.user.pk, accept=decision == "accept",
                                        reason=request.POST.get("reason", ""))
    if result.role is None or not result.found:
        raise Http404("No such suggestion.")
    if result.role not in (Role.OWNER, Role.ANALYST):
        raise PermissionDenied("Your role in this project is read-only (viewer).")
    if "application/json" in request.headers.get("Accept", ""):
        # The coding page decides from its dashed chips and then refreshes its chips itself.
        return JsonResponse({"status": result.status, "error": result.error}, status=409 if result.error else 200)
    membership = member_or_404(request, project_uuid)
    suggestion = Suggestion.objects.select_related("run", "code", "proposed_code", "decided_by",
                                                   "segment__interview__participant").get(uuid=suggestion_uuid)
    if request.htmx:
        return render(request, "coding/reader_run.html#suggestion", _ctx(membership, s=suggestion, run=suggestion.run,
                                                                          error=result.error),
                      status=409 if result.error else 200)
    if result.error:
        messages.error(request, result.error)
    if suggestion.run is None:
        return redirect("coding:reader", project_uuid=project_uuid)
    return redirect("coding:reader_run", project_uuid=project_uuid, run_uuid=suggestion.run.uuid)


@login_required
@require_POST
def reader_accept_rest(request: HttpRequest, project_uuid: UUID, run_uuid: UUID, code_uuid: UUID) -> HttpResponse:
    membership = writer_or_403(request, project_uuid)
    run = get_object_or_404(SuggestionRun, project=membership.project, uuid=run_uuid)
    code = get_object_or_404(Code, project=membership.project, uuid=code_uuid)
    try:
        accepted = services.suggestions_accept_rest(run=run, code=code, user=request.user)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(request, f"Accepted the {accepted} remaining suggestion{'s' if accepted != 1 else ''} of “{code.name}”.")
    return redirect("coding:reader_run", project_uuid=project_uuid, run_uuid=run_uuid)


@login_required
@require_GET
def reader_differ(request: HttpRequest, project_uuid: UUID, run_uuid: UUID) -> HttpResponse:
    membership = member_or_404(request, project_uuid)
    run = get_object_or_404(SuggestionRun, project=membership.project, uuid=run_uuid)
    return render(request, "coding/reader_differ.html", _ctx(membership, run=run, **reader.differences(run)))
