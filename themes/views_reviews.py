"""Review meetings: agenda, presenter mode, decisions applied with one click, snapshots compared."""

from __future__ import annotations

import datetime

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.formats import date_format
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.timezone import localtime
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from coding.models import Code
from projects.models import Membership
from projects.pagination import paginate
from projects.permissions import member_or_404, writer_or_403
from projects.submissions import submitted_once
from themes import presenting, queries, services, shortcuts, snapshots
from themes.excerpts import theme_excerpt_sample
from themes.models import AgendaItem, Comment, Decision, Review, Snapshot, Theme, ThemeCode
from themes.rendering import render_markdown
from themes.views import posted_version


class ReviewCloseForm(forms.Form):
    confirm = forms.BooleanField(
        label="I understand that closing makes this meeting read-only: its notes, agenda, attendees and decisions can no longer change.",
        error_messages={"required": "Tick the box to confirm: a closed meeting cannot be reopened."},
    )


def _review(membership: Membership, review_uuid) -> Review:
    review = get_object_or_404(Review.objects.filter(project=membership.project).select_related("notes_saved_by"), uuid=review_uuid)
    review.project = membership.project  # already loaded with the membership
    return review


def _next(request: HttpRequest, default: str) -> str:
    """Where to go after a form in presenter mode or the meeting page; never another site."""
    target = request.POST.get("next", "")
    # A local path only: redirect() would take a bare word ("zzz") for a URL name and fail.
    if target.startswith("/") and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return target
    return default


def _ctx(membership: Membership, **extra) -> dict:
    return {"project": membership.project, "membership": membership, "nav": "themes", **extra}


def _meeting_form(membership: Membership, data) -> tuple[dict, dict]:
    """Validated title/date/attendees/agenda from a meeting form, or errors by field."""
    project = membership.project
    try:
        date = datetime.date.fromisoformat(data.get("date", ""))
    except ValueError:
        return {}, {"date": ["Give the meeting's date as YYYY-MM-DD."]}
    chosen = data.getlist("themes")
    themes = {str(t.uuid): t for t in Theme.objects.for_project(project).filter(uuid__in=chosen)}
    members = Membership.objects.filter(project=project, user__username__in=data.getlist("attendees")).select_related("user")
    return {"title": data.get("title", ""), "date": date, "attendees": [m.user for m in members],
            "themes": [themes[u] for u in chosen if u in themes]}, {}


@login_required
@require_http_methods(["GET", "POST"])
@submitted_once
def review_list(request: HttpRequest, project_uuid) -> HttpResponse:
    """Meetings (newest first) and the form to schedule one."""
    membership = member_or_404(request, project_uuid)
    project = membership.project
    errors: dict = {}
    if request.method == "POST":
        membership = writer_or_403(request, project_uuid)
        fields, errors = _meeting_form(membership, request.POST)
        if not errors:
            try:
                review = services.review_create(project=project, actor=request.user, **fields)
            except ValidationError as exc:
                errors = exc.message_dict
            else:
                return redirect("themes:review", project_uuid=project.uuid, review_uuid=review.uuid)
    reviews = paginate(request, Review.objects.filter(project=project).prefetch_related("attendees"))
    return render(request, "themes/review_list.html", _ctx(
        membership, reviews=reviews, errors=errors, form=request.POST if errors else {},
        themes=Theme.objects.for_project(project), members=Membership.objects.filter(project=project).select_related("user"),
        today=datetime.date.today().isoformat(),
    ), status=400 if errors else 200)


@login_required
@require_GET
def review_detail(request: HttpRequest, project_uuid, review_uuid) -> HttpResponse:
    membership = member_or_404(request, project_uuid)
    review = _review(membership, review_uuid)
    return render(request, "themes/review_detail.html", _ctx(membership, **_review_context(review)))


def _refused_as_closed(request: HttpRequest, membership: Membership, review: Review, exc: services.ReviewClosed) -> HttpResponse:
    """The meeting page (now without its edit controls) saying what can no longer change; 409 as for the notes."""
    review.refresh_from_db()
    context = _review_context(review, errors={"closed": str(exc)})
    return render(request, "themes/review_detail.html", _ctx(membership, **context), status=409)


def _review_context(review: Review, *, errors: dict | None = None, conflict: dict | None = None,
                    notes_text: str | None = None, close_form: ReviewCloseForm | None = None) -> dict:
    """Agenda with each theme's codes, decisions, snapshots (fixed number of queries)."""
    project = review.project
    # Items about themes merged, trashed or deleted for good stay on the agenda, marked as such: they are meeting history.
    agenda = list(AgendaItem.objects.filter(review=review).select_related("theme__merged_into"))
    live = [a for a in agenda if a.theme is not None and a.theme.deleted_at is None]
    codes_by_theme: dict[int, list[Code]] = {}
    for tc in ThemeCode.objects.filter(theme__in=[a.theme_id for a in live], code__deleted_at__isnull=True).select_related("code").order_by("position"):
        codes_by_theme.setdefault(tc.theme_id, []).append(tc.code)
    for item in agenda:
        item.codes = codes_by_theme.get(item.theme_id, [])
    decisions = queries.with_target_themes(list(
        Decision.objects.filter(review=review).select_related("theme__merged_into", "applied_by", "created_by", "declined_by")))
    attendees = list(review.attendees.all())
    return {
        "review": review, "agenda": agenda, "decisions": decisions, "errors": errors or {},
        "attendees": attendees, "notes_html": render_markdown(review.notes),
        "notes_text": review.notes if notes_text is None else notes_text, "conflict": conflict,
        "themes": list(Theme.objects.for_project(project)), "statuses": Theme.Status.choices, "kinds": Decision.Kind.choices,
        "snapshots": list(Snapshot.objects.filter(review=review).defer("data")),
        "members": list(Membership.objects.filter(project=project).select_related("user")),
        "agenda_theme_ids": {a.theme_id for a in live}, "presentable": any(a.theme_id for a in agenda), "attendee_ids": {u.id for u in attendees},
        "close_form": close_form or ReviewCloseForm(), "pending": sum(1 for d in decisions if not d.applied_at and not d.declined_at),
    }


@login_required
@require_POST
def review_edit(request: HttpRequest, project_uuid, review_uuid) -> HttpResponse:
    """Change title, date, attendees and agenda."""
    membership = writer_or_403(request, project_uuid)
    review = _review(membership, review_uuid)
    fields, errors = _meeting_form(membership, request.POST)
    try:
        if errors:
            raise ValidationError(errors)
        services.review_update(review=review, actor=request.user, **fields)
    except services.ReviewClosed as exc:
        return _refused_as_closed(request, membership, review, exc)
    except ValidationError as exc:
        messages.error(request, f"Meeting not changed: {' '.join(exc.messages)}")
    else:
        messages.success(request, "Meeting updated.")
    return redirect("themes:review", project_uuid=membership.project.uuid, review_uuid=review.uuid)


@login_required
@require_POST
def review_notes(request: HttpRequest, project_uuid, review_uuid) -> HttpResponse:
    """Save the notes as of the version the page showed; a newer save by a colleague is never overwritten."""
    membership = writer_or_403(request, project_uuid)
    review = _review(membership, review_uuid)
    notes = request.POST.get("notes", "")
    try:
        services.review_save_notes(review=review, actor=request.user, notes=notes,
                                   base_version=posted_version(request.POST.get("notes_version", "")))
    except services.ReviewClosed as exc:
        context = _review_context(review, errors={"notes": str(exc)})
        return render(request, "themes/review_detail.html", _ctx(membership, **context), status=409)
    except services.ReviewNotesConflict as exc:
        # As for themes and memos, a conflict is a normal state of the editor: both texts shown, yours kept in the form.
        conflict = {"current": exc.current, "message": str(exc), "their_label": _their_notes_label(exc.current)}
        review.notes_version = exc.current.notes_version  # saving again means "I have seen theirs"
        context = _review_context(review, conflict=conflict, notes_text=notes)
        return render(request, "themes/review_detail.html", _ctx(membership, **context))
    messages.success(request, "Meeting notes saved.")
    return redirect(_next(request, reverse("themes:review", args=[membership.project.uuid, review.uuid])))


def _their_notes_label(current: Review) -> str:
    """Whose notes a refused save is shown next to, and when they were saved (a researcher's words, not a diff's)."""
    who = f" by {current.notes_saved_by.username}" if current.notes_saved_by else ""
    when = f" at {date_format(localtime(current.notes_saved_at), 'Y-m-d H:i')}" if current.notes_saved_at else ""
    return f"Their version (saved{when}{who})" if who or when else f"Their version (version {current.notes_version})"


@login_required
@require_POST
@submitted_once
def decision_create(request: HttpRequest, project_uuid, review_uuid) -> HttpResponse:
    membership = writer_or_403(request, project_uuid)
    review = _review(membership, review_uuid)
    theme = get_object_or_404(Theme.objects.for_project(membership.project), uuid=request.POST.get("theme"))
    kind = request.POST.get("kind", "")
    payload = {
        "name": request.POST.get("name", ""), "into": request.POST.get("into", ""), "definition": request.POST.get("definition", ""),
        "status": request.POST.get("status", ""), "to": request.POST.get("to", ""), "codes": request.POST.getlist("codes"),
    }
    try:
        decision = services.decision_record(review=review, theme=theme, actor=request.user, kind=kind, payload=payload,
                                            note=request.POST.get("note", ""), seen_version=request.POST.get("theme_version"))
    except services.ReviewClosed as exc:
        return _refused_as_closed(request, membership, review, exc)
    except ValidationError as exc:
        messages.error(request, f"Decision on “{theme.name}” not recorded. {_decision_errors(exc, kind)}")
    else:
        messages.success(request, f"Decision on “{theme.name}” recorded. Apply it when the team agrees.")
        if notice := services.decision_stale_notice(decision, theme):
            messages.warning(request, notice)
    return redirect(_next(request, reverse("themes:review", args=[membership.project.uuid, review.uuid])))


def _decision_field_label(field: str, kind: str) -> str:
    """The form's label of a decision field (as themes_review.js words it for the chosen kind)."""
    if field == "name":
        return "Name of the new theme" if kind == Decision.Kind.SPLIT else "New name"
    if field == "codes":
        return "Codes for the new theme" if kind == Decision.Kind.SPLIT else "Codes to move"
    return {"kind": "Decision", "into": "Merge into", "to": "Move codes to", "definition": "New definition",
            "status": "New status", "theme": "Theme", "theme_version": "Theme version"}.get(field, field)


def _decision_errors(exc: ValidationError, kind: str) -> str:
    """Each refusal prefixed with the field it is about, so the person knows what to fix in the form."""
    if not hasattr(exc, "error_dict"):
        return " ".join(exc.messages)
    return " ".join(f"{_decision_field_label(field, kind)}: {message}" for field, errors in exc.message_dict.items() for message in errors)


def _decision(membership: Membership, decision_uuid) -> Decision:
    return get_object_or_404(Decision.objects.filter(review__project=membership.project).select_related("review"), uuid=decision_uuid)


def _conflict_context(conflict: services.DecisionConflict) -> dict:
    """The decision, the theme as it is now, who made that version, and the text the decision would replace with its own."""
    decision, current = conflict.decision, conflict.current
    field = {Decision.Kind.RENAME: "name", Decision.Kind.REDEFINE: "definition"}.get(decision.kind)
    replaced = {"now": getattr(current, field), "decided": decision.payload[field],
                "now_label": f"The {field} now (version {current.version})",
                "decided_label": f"The {field} decided in {decision.review.title}"} if field else None
    return {"decision": decision, "current": current, "replaced": replaced, "last_edit": queries.theme_last_edit(current)}


@login_required
@require_POST
def decision_apply(request: HttpRequest, project_uuid, decision_uuid) -> HttpResponse:
    """Apply a decision; if its theme was edited since the meeting, show both and change nothing until confirmed."""
    membership = writer_or_403(request, project_uuid)
    decision = _decision(membership, decision_uuid)
    back = _next(request, reverse("themes:review", args=[membership.project.uuid, decision.review.uuid]))
    # The version confirmed on the conflict page, if any; a garbled one matches no version, so it asks again.
    confirmed = request.POST.get("version")
    try:
        outcome = services.decision_apply(decision=decision, actor=request.user,
                                          confirmed_version=None if confirmed is None else posted_version(confirmed))
    except services.DecisionConflict as exc:
        # As on the theme editor, a conflict is a normal page (both texts and two choices): 200 here, 409 in the API.
        return render(request, "themes/decision_conflict.html", _ctx(membership, next=back, **_conflict_context(exc)))
    except services.ReviewClosed as exc:
        return _refused_as_closed(request, membership, decision.review, exc)
    except ValidationError as exc:
        messages.error(request, f"Not applied: {' '.join(exc.messages)}")
    else:
        messages.success(request, outcome.message)
    return redirect(back)


@login_required
@require_POST
def decision_decline(request: HttpRequest, project_uuid, decision_uuid) -> HttpResponse:
    """Keep the theme as it is now: the decision stays on the meeting's record as not applied, with a note."""
    membership = writer_or_403(request, project_uuid)
    decision = _decision(membership, decision_uuid)
    try:
        declined = services.decision_decline(decision=decision, actor=request.user, reason=request.POST.get("reason", ""))
    except services.ReviewClosed as exc:
        return _refused_as_closed(request, membership, decision.review, exc)
    except ValidationError as exc:
        messages.error(request, f"Not changed: {' '.join(exc.messages)}")
    else:
        if declined.cannot_apply:
            messages.success(request, f"Decision on “{declined.theme_label}” set aside: {declined.declined_reason}")
        else:
            messages.success(request, f"Decision on “{declined.theme_label}” marked as not applied; the theme keeps its current text.")
    return redirect(_next(request, reverse("themes:review", args=[membership.project.uuid, decision.review.uuid])))


@login_required
@require_POST
def review_close(request: HttpRequest, project_uuid, review_uuid) -> HttpResponse:
    """Close the meeting once the person ticked that they understand it becomes read-only (as emptying the trash asks)."""
    membership = writer_or_403(request, project_uuid)
    review = _review(membership, review_uuid)
    form = ReviewCloseForm(request.POST)
    # A closed meeting needs no confirmation to be refused: the service says so. Unticked, the page comes back with
    # the reason next to the box (200, like any form error and as the trash does).
    if review.status == Review.Status.OPEN and not form.is_valid():
        return render(request, "themes/review_detail.html", _ctx(membership, **_review_context(review, close_form=form)))
    try:
        services.review_close(review=review, actor=request.user)
    except services.ReviewClosed as exc:
        return _refused_as_closed(request, membership, review, exc)
    messages.success(request, "Meeting closed; the theme structure it leaves behind was saved as a snapshot.")
    return redirect("themes:review", project_uuid=membership.project.uuid, review_uuid=review.uuid)


@login_required
@require_GET
def review_present(request: HttpRequest, project_uuid, review_uuid, index: int) -> HttpResponse:
    """Presenter mode: one agenda theme at a time (definition, codes, excerpts by model, open threads)."""
    membership = member_or_404(request, project_uuid)
    review = _review(membership, review_uuid)
    # Themes merged or trashed during the meeting stay on the agenda (shown as such), so the walk does not jump;
    # a theme deleted for good has nothing left to present.
    agenda = list(AgendaItem.objects.filter(review=review, theme__isnull=False).select_related("theme__merged_into"))
    if not agenda:
        messages.error(request, "The agenda is empty.")
        return redirect("themes:review", project_uuid=membership.project.uuid, review_uuid=review.uuid)
    index = max(0, min(index, len(agenda) - 1))
    theme = agenda[index].theme
    theme.project = membership.project
    codes = list(Code.objects.filter(theme_codes__theme=theme, deleted_at__isnull=True).order_by("theme_codes__position"))
    threads = list(Comment.objects.filter(theme=theme, parent__isnull=True, resolved_at__isnull=True).select_related("author"))
    usernames = list(Membership.objects.filter(project=membership.project).values_list("user__username", flat=True))
    for c in threads:
        c.html = render_markdown(c.body, mentionable=usernames)
    return render(request, "themes/review_present.html", _ctx(
        membership, review=review, theme=theme, index=index, count=len(agenda), codes=codes, groups=theme_excerpt_sample(theme),
        threads=threads, themes=Theme.objects.for_project(membership.project).exclude(pk=theme.pk), statuses=Theme.Status.choices,
        kinds=Decision.Kind.choices,
        decisions=queries.with_target_themes(list(
            Decision.objects.filter(review=review, theme=theme).select_related("theme__merged_into", "applied_by", "declined_by"))),
        prev_index=index - 1 if index > 0 else None, next_index=index + 1 if index + 1 < len(agenda) else None,
        shortcuts=shortcuts.PRESENTER,
        lead=presenting.present_position(review),
    ))


# ---------------------------------------------------------------- snapshots

@login_required
@require_http_methods(["GET", "POST"])
@submitted_once
def snapshot_list(request: HttpRequest, project_uuid) -> HttpResponse:
    membership = member_or_404(request, project_uuid)
    if request.method == "POST":
        membership = writer_or_403(request, project_uuid)
        services.snapshot_take(project=membership.project, actor=request.user, label=request.POST.get("label") or "Manual snapshot")
        messages.success(request, "Snapshot saved.")
        return redirect("themes:snapshots", project_uuid=membership.project.uuid)
    items = paginate(request, Snapshot.objects.filter(project=membership.project).select_related("review", "taken_by").defer("data"))
    return render(request, "themes/snapshot_list.html", _ctx(membership, snapshots=items))


@login_required
@require_GET
def snapshot_compare(request: HttpRequest, project_uuid) -> HttpResponse:
    membership = member_or_404(request, project_uuid)
    items = Snapshot.objects.filter(project=membership.project)
    a = get_object_or_404(items, uuid=request.GET.get("a"))
    b = get_object_or_404(items, uuid=request.GET.get("b"))
    before, after = (a, b) if (a.taken_at, a.id) <= (b.taken_at, b.id) else (b, a)
    return render(request, "themes/snapshot_compare.html", _ctx(membership, before=before, after=after,
                                                                diff=snapshots.compare(before.data, after.data)))
