"""Themes board, thematic map, theme page, exemplars and discussion threads."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count, Q, Window
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.html import strip_tags
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from coding.models import Code
from interviews.models import Participant, Segment
from projects.forms import row_id
from projects.models import Membership
from projects.pagination import paginate
from projects.permissions import member_or_404, writer_or_403
from projects.submissions import submitted_once
from themes import queries, services
from themes.excerpts import theme_excerpt_summary, theme_excerpts, theme_interviews
from themes.models import Comment, Exemplar, Memo, Theme, ThreadRead
from themes.rendering import render_markdown


def _theme(membership: Membership, theme_uuid) -> Theme:
    theme = get_object_or_404(Theme.objects.for_project(membership.project).select_related("parent"), uuid=theme_uuid)
    theme.project = membership.project  # already loaded with the membership; saves a query per use
    return theme


def _notice_or_404(membership: Membership, theme_uuid) -> queries.ThemeNotice:
    """What became of a theme no longer on the board; 404 for one that never was in the project (or is purged)."""
    notice = queries.theme_notice(membership.project, theme_uuid)
    if notice is None or notice.what == "gone":
        raise Http404("No such theme.")
    return notice


def _theme_gone(request: HttpRequest, membership: Membership, theme_uuid, *, kept: dict[str, str], to_do: str) -> HttpResponse:
    """The answer to a change sent to a theme a colleague has since trashed or merged away: what became of it, and the
    text that was sent, to copy. 404 only for a theme that never was in the project."""
    notice = _notice_or_404(membership, theme_uuid)
    return render(request, "themes/theme_gone.html", {"project": membership.project, "membership": membership, "nav": "themes",
                                                      "notice": notice, "theme_uuid": theme_uuid, "to_do": to_do,
                                                      "kept": {label: text for label, text in kept.items() if text.strip()}},
                  status=409)


def _code(membership: Membership, code_uuid) -> Code:
    return get_object_or_404(Code.objects.for_project(membership.project), uuid=code_uuid)


def _errors(exc: ValidationError) -> str:
    return " ".join(exc.messages)


# ---------------------------------------------------------------- board

@login_required
@require_GET
def board(request: HttpRequest, project_uuid) -> HttpResponse:
    membership = member_or_404(request, project_uuid)
    return _render_board(request, membership)


def _render_board(request: HttpRequest, membership: Membership, *, error: str = "", status: int = 200,
                  name_error: dict | None = None) -> HttpResponse:
    """The board; `name_error` ({"message", "value", "parent"}): a refused theme name, shown at the field it was typed in."""
    context = {"project": membership.project, "membership": membership, "nav": "themes", "error": error,
               "name_error": name_error, "statuses": Theme.Status.choices,
               **queries.board(membership.project, request.user, q=request.GET.get("q", "")[:200], show=request.GET.get("show", "all"))}
    template = "themes/board.html#board" if request.htmx or request.headers.get("X-Fragment") else "themes/board.html"
    if request.htmx:
        status = 200  # htmx swaps only 2xx answers; the error is shown inside the fragment
    return render(request, template, context, status=status)


@login_required
@require_POST
def theme_create(request: HttpRequest, project_uuid) -> HttpResponse:
    membership = writer_or_403(request, project_uuid)
    parent = _theme(membership, request.POST["parent"]) if request.POST.get("parent") else None
    try:
        services.theme_create(project=membership.project, actor=request.user, name=request.POST.get("name", ""),
                              definition=request.POST.get("definition", ""), parent=parent)
    except ValidationError as exc:
        if hasattr(exc, "error_dict") and "name" in exc.error_dict:
            # At the name field (the new theme's, or the sub-theme's of `parent`), with what was typed kept.
            name_error = {"message": " ".join(exc.message_dict["name"]), "value": request.POST.get("name", ""),
                          "parent": parent.uuid if parent else None, "new": parent is None}
            return _render_board(request, membership, name_error=name_error, status=400)
        return _render_board(request, membership, error=_errors(exc), status=400)
    return _board_or_redirect(request, membership)


def _board_or_redirect(request: HttpRequest, membership: Membership) -> HttpResponse:
    if request.htmx or request.headers.get("X-Fragment"):
        return _render_board(request, membership)
    return redirect("themes:board", project_uuid=membership.project.uuid)


@login_required
@require_POST
def code_place(request: HttpRequest, project_uuid) -> HttpResponse:
    """One drag or one keyboard move: add / move / remove / up / down a code in a theme."""
    membership = writer_or_403(request, project_uuid)
    action = request.POST.get("action", "")
    code = _code(membership, request.POST.get("code"))
    target = _theme(membership, request.POST["theme"]) if request.POST.get("theme") else None
    source = _theme(membership, request.POST["source"]) if request.POST.get("source") else None
    before = _code(membership, request.POST["before"]) if request.POST.get("before") else None
    try:
        if action == "add" and target:
            services.theme_add_code(theme=target, actor=request.user, code=code, before=before)
        elif action == "move" and target and source:
            services.theme_move_code(code=code, source=source, target=target, actor=request.user, before=before)
        elif action == "remove" and source:
            services.theme_remove_code(theme=source, actor=request.user, code=code)
        elif action in ("up", "down") and source:
            services.theme_shift_code(theme=source, actor=request.user, code=code, offset=-1 if action == "up" else 1)
        else:
            raise ValidationError("Say what to do with the code: add, move, remove, up or down, and which theme.")
    except ValidationError as exc:
        return _render_board(request, membership, error=_errors(exc), status=400)
    if request.headers.get("X-Fragment") == "changes":
        return _render_board_changes(request, membership, changed=[t for t in (source, target) if t], moved=code)
    return _board_or_redirect(request, membership)


def _render_board_changes(request: HttpRequest, membership: Membership, *, changed: list[Theme], moved: Code) -> HttpResponse:
    """What one move changed, each piece with the id of the element it replaces: the top-level columns holding the
    themes, the code's chip in the code list and the count of codes in no theme. The board keeps the rest."""
    context = {"project": membership.project, "membership": membership, "statuses": Theme.Status.choices, "moved": moved,
               **queries.board(membership.project, request.user, changed=changed, moved=moved)}
    return render(request, "themes/_board_changes.html", context)


@login_required
@require_POST
def theme_reorder(request: HttpRequest, project_uuid, theme_uuid) -> HttpResponse:
    membership = writer_or_403(request, project_uuid)
    theme = _theme(membership, theme_uuid)
    try:
        if request.POST.get("before"):
            services.theme_place_before(theme=theme, actor=request.user, before=_theme(membership, request.POST["before"]))
        else:
            services.theme_reorder(theme=theme, actor=request.user, offset=-1 if request.POST.get("direction") == "left" else 1)
    except ValidationError as exc:
        return _render_board(request, membership, error=_errors(exc), status=400)
    return _board_or_redirect(request, membership)


@login_required
@require_POST
def theme_status(request: HttpRequest, project_uuid, theme_uuid) -> HttpResponse:
    membership = writer_or_403(request, project_uuid)
    theme = _theme(membership, theme_uuid)
    try:
        services.theme_set_status(theme=theme, actor=request.user, status=request.POST.get("status", ""), reason=request.POST.get("reason", ""))
    except ValidationError as exc:
        messages.error(request, _errors(exc))
    if request.POST.get("next") == "board":
        return _board_or_redirect(request, membership)
    return redirect("themes:detail", project_uuid=membership.project.uuid, theme_uuid=theme.uuid)


@login_required
@require_http_methods(["GET", "POST"])
def theme_edit(request: HttpRequest, project_uuid, theme_uuid) -> HttpResponse:
    """Edit from a known version; if a colleague saved since, show their text next to yours and keep yours in the form."""
    membership = writer_or_403(request, project_uuid)
    try:
        theme = _theme(membership, theme_uuid)
    except Http404:
        kept = {"Name": request.POST.get("name", ""), "Definition": request.POST.get("definition", "")}
        return _theme_gone(request, membership, theme_uuid, kept=kept, to_do="save this")
    form = {"name": theme.name, "definition": theme.definition, "colour": theme.colour,
            "parent": str(theme.parent.uuid) if theme.parent else "", "version": theme.version}
    error, name_error, conflict = "", "", None
    if request.method == "POST":
        form = {field: request.POST.get(field, "") for field in ("name", "definition", "colour", "parent")}
        form["version"] = posted_version(request.POST.get("version", ""))
        try:
            with transaction.atomic():  # a refused parent must not leave the new name saved
                services.theme_update(theme=theme, actor=request.user, base_version=form["version"], name=form["name"],
                                      definition=form["definition"], colour=form["colour"])
                parent = _theme(membership, form["parent"]) if form["parent"] else None
                if parent != theme.parent:
                    services.theme_set_parent(theme=theme, actor=request.user, parent=parent)
        except services.ThemeConflict as exc:
            conflict = {"current": exc.current}
            form["version"] = exc.current.version  # saving again means "I have seen theirs"
        except ValidationError as exc:
            if hasattr(exc, "error_dict") and "name" in exc.error_dict:
                errors = exc.message_dict
                name_error = " ".join(errors.pop("name"))  # shown at the name field
                error = " ".join(m for ms in errors.values() for m in ms)
            else:
                error = _errors(exc)
        else:
            messages.success(request, f"Theme “{theme.name}” saved.")
            return redirect("themes:detail", project_uuid=membership.project.uuid, theme_uuid=theme.uuid)
    others = Theme.objects.for_project(membership.project).exclude(pk=theme.pk)
    # As with memos, a conflict is a normal state of the editor (both texts shown): 200 here, 409 in the API.
    return render(request, "themes/theme_edit.html", {"project": membership.project, "membership": membership, "nav": "themes",
                                                      "theme": theme, "form": form, "others": others, "error": error,
                                                      "name_error": name_error, "conflict": conflict},
                  status=400 if error or name_error else 200)


def posted_version(value: str) -> int:
    """The version a form says it was based on; a missing or garbled one matches no version, so the save is refused, never forced."""
    try:
        return int(value)
    except ValueError:
        return -1


@login_required
@require_POST
def theme_delete(request: HttpRequest, project_uuid, theme_uuid) -> HttpResponse:
    membership = writer_or_403(request, project_uuid)
    theme = _theme(membership, theme_uuid)
    services.theme_delete(theme=theme, actor=request.user)
    messages.success(request, f"Theme “{theme.name}” moved to the trash.")
    return redirect("themes:board", project_uuid=membership.project.uuid)


# ---------------------------------------------------------------- map

@login_required
@require_GET
def theme_map(request: HttpRequest, project_uuid) -> HttpResponse:
    membership = member_or_404(request, project_uuid)
    outline = queries.map_outline(queries.map_data(membership.project))
    return render(request, "themes/map.html", {"project": membership.project, "membership": membership, "nav": "themes",
                                               "outline": outline})


@login_required
@require_GET
def map_data(request: HttpRequest, project_uuid) -> JsonResponse:
    membership = member_or_404(request, project_uuid)
    return JsonResponse(queries.map_data(membership.project))


# ---------------------------------------------------------------- theme page

@login_required
@require_GET
def theme_detail(request: HttpRequest, project_uuid, theme_uuid) -> HttpResponse:
    membership = member_or_404(request, project_uuid)
    try:
        theme = _theme(membership, theme_uuid)
    except Http404:
        # A merged-away theme is in the trash for good: old links (memos, meeting notes) to it lead to the theme
        # it became part of. Looked up only when the theme is not live, which no merged theme is.
        destination = Theme.objects.merge_destination(membership.project, theme_uuid)
        if destination is None:
            raise
        messages.info(request, f"That theme was merged into “{destination.name}”.")
        return redirect("themes:detail", project_uuid=membership.project.uuid, theme_uuid=destination.uuid)
    if request.htmx and request.htmx.target == "excerpt-pages" and not request.htmx.history_restore_request:
        context = {"project": membership.project, "membership": membership, "theme": theme, **theme_excerpt_page(request, theme)}
        return render(request, "themes/theme_detail.html#excerpt-pages", context)
    context = theme_page_context(request, membership, theme)
    _mark_shown_read(request, theme, context)
    return render(request, "themes/theme_detail.html", context)


# The theme page shows the excerpts of this many interviews at a time (an excerpt never splits across pages),
# and the latest memos on the theme and on its codes, the rest being in the journal.
THEME_EXCERPT_INTERVIEWS = 5
THEME_MEMOS = 10


def theme_page_context(request: HttpRequest, membership: Membership, theme: Theme) -> dict:
    """Definition, codes, a page of excerpts, exemplars, the latest memos and threads: a fixed number of queries.

    What grows with the whole project, the excerpt counts by model, the page loads afterwards (theme_excerpt_counts).
    """
    project = membership.project
    excerpts = theme_excerpt_page(request, theme)
    # What the page shows of an exemplar, and its turn's text to check the quote against (not the interview's metadata).
    exemplars = list(Exemplar.objects.filter(theme=theme, turn__interview__deleted_at__isnull=True)
                     .select_related("turn__interview__participant")
                     .only("uuid", "spans", "quote", "note", "turn__text", "turn__interview__title",
                           "turn__interview__participant__label"))
    memos = _latest_memos(Memo.objects.for_project(project).filter(theme=theme))
    code_memos = _latest_memos(Memo.objects.for_project(project).filter(code__in=excerpts["codes"])) if excerpts["codes"] else []
    return {
        "project": project, "membership": membership, "nav": "themes", "theme": theme, **excerpts,
        "exemplars": exemplars, "memos": memos, "memo_total": memos[0].total if memos else 0,
        "code_memos": code_memos, "code_memo_total": code_memos[0].total if code_memos else 0,
        "subthemes": list(Theme.objects.for_project(project).filter(parent=theme)),
        "history": list(theme.status_changes.select_related("actor")[:20]),
        "statuses": Theme.Status.choices, **thread_context(request, membership, theme, since=_comment_id(request.GET.get("since"))),
    }


def _latest_memos(memos) -> list[Memo]:
    """The latest THEME_MEMOS of `memos`, each with the `total` of them all (one query).

    Only what the page lists of a memo is read (title, kind, author, date, code): not its body, nor its other targets.
    """
    listed = memos.select_related(None).select_related("author", "code").only(
        "uuid", "title", "kind", "created_at", "author__username", "code__name")
    return list(listed.annotate(total=Window(Count("id"))).order_by("-created_at", "-id")[:THEME_MEMOS])


def theme_excerpt_page(request: HttpRequest, theme: Theme) -> dict:
    """The theme's codes and one page of its excerpts, by model (5 queries)."""
    codes = list(Code.objects.filter(theme_codes__theme=theme, deleted_at__isnull=True).order_by("theme_codes__position"))
    code_names = {c.id: c for c in codes}
    interviews = paginate(request, theme_interviews(theme), per_page=THEME_EXCERPT_INTERVIEWS, counted=False, target="#excerpt-pages")
    groups = theme_excerpts(theme, interview_ids=[i.pk for i in interviews], code_ids=list(code_names)) if interviews else []
    for group in groups:
        for excerpt in group.excerpts:
            excerpt.codes = [code_names[i] for i in sorted(excerpt.code_ids) if i in code_names]
    return {"codes": codes, "groups": groups, "interviews": interviews}


@login_required
@require_GET
def theme_excerpt_counts(request: HttpRequest, project_uuid, theme_uuid) -> HttpResponse:
    """Excerpts and interviews per model over the whole project; the theme page loads them once it is shown (3 queries).

    Every model of the project is listed, so one that never expresses the theme shows as 0 rather than vanishing.
    Each model links to the page of excerpts where its first interview is (the pages list the interviews by model).
    """
    membership = member_or_404(request, project_uuid)
    theme = _theme(membership, theme_uuid)
    summary = theme_excerpt_summary(theme)
    rows, before = [], 0
    for p in (Participant.objects.filter(project=membership.project)
              .annotate(n=Count("interviews", filter=Q(interviews__deleted_at__isnull=True))).filter(n__gt=0).order_by("label")):
        excerpts, interviews = summary.get(p.pk, (0, 0))
        rows.append({"label": p.label, "excerpts": excerpts, "interviews": interviews, "total": p.n,
                     "page": before // THEME_EXCERPT_INTERVIEWS + 1 if interviews else None})
        before += interviews
    return render(request, "themes/_excerpt_counts.html", {"project": membership.project, "theme": theme, "model_rows": rows,
                                                           "total_excerpts": sum(n for n, _ in summary.values())})


# ---------------------------------------------------------------- exemplars

@login_required
@require_POST
def exemplar_pin(request: HttpRequest, project_uuid, theme_uuid) -> HttpResponse:
    membership = writer_or_403(request, project_uuid)
    theme = _theme(membership, theme_uuid)
    segments = Segment.objects.filter(interview__project=membership.project, interview__deleted_at__isnull=True).select_related("turn", "interview")
    end_given = request.POST.get("end_segment", "")
    segment_id, end_segment_id = row_id(request.POST.get("segment")), row_id(end_given)
    if segment_id is None or (end_given and end_segment_id is None):
        return HttpResponse("“segment” and “end_segment” must be segment ids (whole numbers).", status=400, content_type="text/plain; charset=utf-8")
    segment = get_object_or_404(segments, pk=segment_id)
    end_segment = segments.filter(pk=end_segment_id).first() if end_segment_id else None
    try:
        services.exemplar_pin(theme=theme, actor=request.user, segment=segment, end_segment=end_segment, quote=request.POST.get("quote", ""))
    except ValidationError as exc:
        messages.error(request, f"Not pinned: {_errors(exc)}")
    else:
        messages.success(request, "Exemplar pinned.")
    return redirect(reverse("themes:detail", args=[membership.project.uuid, theme.uuid]) + "#exemplars")


def _exemplar(membership: Membership, exemplar_uuid) -> Exemplar:
    return get_object_or_404(
        Exemplar.objects.filter(theme__project=membership.project, theme__deleted_at__isnull=True).select_related("theme", "turn", "segment"),
        uuid=exemplar_uuid,
    )


@login_required
@require_POST
def exemplar_change(request: HttpRequest, project_uuid, exemplar_uuid) -> HttpResponse:
    """Trim, move up/down or unpin an exemplar."""
    membership = writer_or_403(request, project_uuid)
    exemplar = _exemplar(membership, exemplar_uuid)
    action = request.POST.get("action")
    try:
        if action == "trim":
            services.exemplar_trim(exemplar=exemplar, actor=request.user, quote=request.POST.get("quote", ""), note=request.POST.get("note"))
        elif action in ("up", "down"):
            services.exemplar_shift(exemplar=exemplar, actor=request.user, offset=-1 if action == "up" else 1)
        elif action == "unpin":
            services.exemplar_unpin(exemplar=exemplar, actor=request.user)
    except ValidationError as exc:
        messages.error(request, f"Not saved: {_errors(exc)}")
    return redirect(reverse("themes:detail", args=[membership.project.uuid, exemplar.theme.uuid]) + "#exemplars")


# ---------------------------------------------------------------- discussion

# The theme page opens on this many of the most recently active threads; older ones come on request.
THREAD_LATEST = 10


def thread_context(request: HttpRequest, membership: Membership, theme: Theme, shown_up_to: int | None = None,
                   since: int | None = None) -> dict:
    """The latest threads (top-level comments with replies), unread markers, and the poll token (4 queries).

    `since`: a comment id; every thread active since it is shown too ("Show older threads", a link to
    one comment), and the page's polling keeps it, so what the page shows only grows.
    `shown_up_to`: the newest comment id the refreshing page already showed. Comments after it are new
    to that page even if another render (the theme page in another tab, a concurrent refresh) has
    meanwhile marked the thread read.
    """
    read = ThreadRead.objects.filter(theme=theme, user=request.user).values_list("last_read_at", flat=True).first()
    usernames = list(Membership.objects.filter(project=membership.project).values_list("user__username", flat=True))
    window = queries.thread_window(theme, request.user, latest=THREAD_LATEST, since=since, read_at=read, shown_up_to=shown_up_to)
    tops, by_id = [], {}
    for c in window.comments:
        c.html = render_markdown(c.body, mentionable=usernames)
        # The same rule as queries.thread_window's count of unread comments, shown or not.
        c.unread = (read is None or c.created_at > read or (shown_up_to is not None and c.id > shown_up_to)) \
            and c.author_id != request.user.id
        c.thread_replies = []
        by_id[c.id] = c
    for c in window.comments:
        (by_id[c.parent_id].thread_replies if c.parent_id in by_id else tops).append(c)
    return {"thread": tops, "thread_token": window.token, "thread_since": window.since, "older_threads": window.older,
            "older_since": window.older_since, "unread_count": window.unread, "open_count": window.open, "members": usernames}


def _mark_shown_read(request: HttpRequest, theme: Theme, context: dict) -> None:
    """The unread comments just shown count as read from now on. With none (most views) nothing is written: every
    comment by someone else is already older than the reader's marker, so moving it would change no count."""
    if context["unread_count"]:
        services.thread_mark_read(theme=theme, user=request.user)


def _comment_id(value: str | None) -> int | None:
    """A comment id from a query string or form (the `since` of a thread, the newest comment a page showed)."""
    value = value or ""
    return int(value) if value.isascii() and value.isdigit() and len(value) <= 18 else None


@login_required
@require_http_methods(["GET", "POST"])
@submitted_once
def thread(request: HttpRequest, project_uuid, theme_uuid) -> HttpResponse:
    """GET: the thread fragment (polled; 204 when nothing changed). POST: a new comment or reply."""
    membership = member_or_404(request, project_uuid)
    try:
        theme = _theme(membership, theme_uuid)
    except Http404:
        if request.method != "POST":
            raise
        return _comment_refused(request, writer_or_403(request, project_uuid), theme_uuid)
    token = request.GET.get("token")
    if request.method == "GET" and token and token == queries.thread_token(theme):
        return HttpResponse(status=204)  # the poll found nothing new: no rendering at all
    error = ""
    if request.method == "POST":
        membership = writer_or_403(request, project_uuid)
        parent = Comment.objects.filter(theme=theme, uuid=request.POST["parent"]).first() if request.POST.get("parent") else None
        try:
            services.comment_post(theme=theme, actor=request.user, body=request.POST.get("body", ""), parent=parent)
        except ValidationError as exc:
            error = _errors(exc)
        if not request.htmx:
            if error:
                messages.error(request, error)
            return redirect(reverse("themes:detail", args=[membership.project.uuid, theme.uuid]) + "#thread")
    shown_up_to = _comment_id((token or "").partition("-")[0])  # the token starts with the newest id the page showed
    since = _comment_id(request.POST.get("since") if request.method == "POST" else request.GET.get("since"))
    context = {"project": membership.project, "membership": membership, "theme": theme, "thread_error": error,
               **thread_context(request, membership, theme, shown_up_to, since)}
    _mark_shown_read(request, theme, context)
    # htmx swaps only 2xx answers, so an htmx post shows its error inside the fragment with 200.
    return render(request, "themes/_thread.html", context, status=400 if error and not request.htmx else 200)


def _comment_refused(request: HttpRequest, membership: Membership, theme_uuid) -> HttpResponse:
    """A comment posted to a theme no longer on the board. From the page's form (htmx) the comment stays in the form and
    the message is flashed; without scripts, a page says what happened and shows the comment to copy."""
    if not request.htmx:
        return _theme_gone(request, membership, theme_uuid, kept={"Your comment": request.POST.get("body", "")}, to_do="post this")
    notice = _notice_or_404(membership, theme_uuid)
    message = render_to_string("themes/_theme_notice.html#sentence", {"project": membership.project, "membership": membership,
                                                                     "notice": notice, "to_do": "post this"}, request=request)
    return HttpResponse(" ".join(strip_tags(message).split()), status=409, content_type="text/plain; charset=utf-8")


@login_required
@require_GET
def theme_notice(request: HttpRequest, project_uuid, theme_uuid) -> HttpResponse:
    """What became of the theme an open page shows (trashed, merged, renamed since), asked on every "board" event."""
    membership = member_or_404(request, project_uuid)
    notice = queries.theme_notice(membership.project, theme_uuid, shown_name=request.GET.get("name", ""))
    return render(request, "themes/_theme_notice.html", {"project": membership.project, "membership": membership, "notice": notice,
                                                         "theme_uuid": theme_uuid, "shown_name": request.GET.get("name", "")})


@login_required
@require_POST
def comment_resolve(request: HttpRequest, project_uuid, comment_uuid) -> HttpResponse:
    membership = writer_or_403(request, project_uuid)
    comment = get_object_or_404(Comment.objects.filter(theme__project=membership.project, theme__deleted_at__isnull=True)
                                .select_related("theme", "parent"), uuid=comment_uuid)
    services.comment_resolve(comment=comment, actor=request.user, resolved=request.POST.get("resolved", "1") == "1")
    if request.htmx:
        theme = comment.theme
        return render(request, "themes/_thread.html", {"project": membership.project, "membership": membership, "theme": theme,
                                                       **thread_context(request, membership, theme, since=_comment_id(request.POST.get("since")))})
    return redirect(reverse("themes:detail", args=[membership.project.uuid, comment.theme.uuid]) + "#thread")


@login_required
@require_POST
def thread_read(request: HttpRequest, project_uuid, theme_uuid) -> HttpResponse:
    membership = member_or_404(request, project_uuid)
    services.thread_mark_read(theme=_theme(membership, theme_uuid), user=request.user)
    return HttpResponse(status=204)


@login_required
@require_GET
def mentions(request: HttpRequest, project_uuid) -> HttpResponse:
    """Comments that mention a member (you by default)."""
    membership = member_or_404(request, project_uuid)
    members = list(Membership.objects.filter(project=membership.project).select_related("user"))
    username = request.GET.get("user") or request.user.username
    who = next((m.user for m in members if m.user.username == username), request.user)
    mine = who.pk == request.user.pk
    # Looking at your own mentions clears the badge; what was unread until now is marked new on the page.
    read_before = services.mentions_mark_read(project=membership.project, user=request.user) if mine else None
    comments = paginate(request, (
        Comment.objects.filter(theme__project=membership.project, theme__deleted_at__isnull=True, mentions=who)
        .annotate(thread_seen=queries.seen_in_thread(who))
        .select_related("author", "theme").order_by("-created_at", "-pk")
    ))
    names = [m.user.username for m in members]
    for c in comments:
        c.html = render_markdown(c.body, mentionable=names)
        c.unread = (mine and c.author_id != who.pk and not c.thread_seen
                    and (read_before is None or c.created_at > read_before))
    return render(request, "themes/mentions.html", {"project": membership.project, "membership": membership, "nav": "themes",
                                                    "comments": comments, "who": who, "members": members})


