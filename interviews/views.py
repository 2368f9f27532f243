"""Reading pages: one interview's transcript with provenance, its details form, and the interview statistics.

Import pages live in interviews/views_import.py, participant pages in interviews/views_participants.py.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db.models import Count, Exists, F, IntegerField, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from interviews.forms import InterviewForm
from interviews.models import Interview, Participant, Segment, Speaker, Turn
from interviews.provenance import interview_provenance, turn_provenance
from interviews.rendering import render_turns
from interviews.services import interview_update
from interviews.statistics import DEPTH_CHOICES, project_statistics, statistics_csv, statistics_xlsx
from projects.forms import add_service_errors
from projects.permissions import member_or_404, writer_or_403

VIEWS = ("read", "segments")


def _wants_fragment(request: HttpRequest) -> bool:
    """An htmx swap asks for the fragment; a boosted link or a history restore needs the whole page."""
    htmx = request.htmx
    return bool(htmx) and not htmx.boosted and not htmx.history_restore_request


def _count(queryset) -> Coalesce:
    """A correlated COUNT subquery: one query for the list however many rows it has."""
    counted = queryset.filter(interview=OuterRef("pk")).order_by().values("interview").annotate(n=Count("pk", distinct=True))
    return Coalesce(Subquery(counted.values("n"), output_field=IntegerField()), 0)


@login_required
def interview_list(request: HttpRequest, project_uuid) -> HttpResponse:
    """The project's interviews with turn counts and coding progress; filter by participant, depth, origin."""
    membership = member_or_404(request, project_uuid)
    project = membership.project
    participants = list(Participant.objects.filter(project=project).order_by("label").only("uuid", "label"))
    filters = {
        "participant": request.GET.get("participant", ""),
        "depth": request.GET.get("depth", "") if request.GET.get("depth") in Interview.Depth.values else "",
        "origin": request.GET.get("origin", "") if request.GET.get("origin") in Interview.Origin.values else "",
    }
    interviews = Interview.objects.for_project(project)
    if filters["participant"] in {str(p.uuid) for p in participants}:
        interviews = interviews.filter(participant__uuid=filters["participant"])
    else:
        filters["participant"] = ""
    if filters["depth"]:
        interviews = interviews.filter(depth=filters["depth"])
    if filters["origin"]:
        interviews = interviews.filter(origin=filters["origin"])
    answers = Segment.objects.filter(speaker=Speaker.PARTICIPANT)
    interviews = interviews.annotate(
        turn_count=_count(Turn.objects.all()),
        answer_segments=_count(answers),
        coded_segments=_count(answers.filter(codings__isnull=False)),
    ).order_by(F("conducted_at").desc(nulls_last=True), "title")
    rows = list(interviews)
    for row in rows:
        row.coded_percent = round(100 * row.coded_segments / row.answer_segments) if row.answer_segments else 0
    context = {
        "project": project, "membership": membership, "nav": "interviews", "interviews": rows,
        "participants": participants, "filters": filters, "filtered": any(filters.values()),
        "depth_choices": Interview.Depth.choices, "origin_choices": Interview.Origin.choices,
    }
    if _wants_fragment(request):
        return render(request, "interviews/interview_list.html#interview-table", context)
    return render(request, "interviews/interview_list.html", context)


def _interview_or_404(membership, interview_uuid, interviews=None) -> Interview:
    interviews = Interview.objects.for_project(membership.project) if interviews is None else interviews
    interview = interviews.filter(uuid=interview_uuid).first()
    if interview is None:
        raise Http404("No such interview in this project.")
    return interview


@login_required
def interview_detail(request: HttpRequest, project_uuid, interview_uuid) -> HttpResponse:
    """The transcript, turn by turn, as rendered Markdown or as its coding segments."""
    membership = member_or_404(request, project_uuid)
    # The original it re-runs and whether it has re-runs come with the interview: no extra query.
    interviews = Interview.objects.for_project(membership.project).select_related("rerun_of").annotate(
        has_reruns=Exists(Interview.objects.alive().filter(rerun_of=OuterRef("pk"))))
    interview = _interview_or_404(membership, interview_uuid, interviews)
    view = request.GET.get("view", "read")
    view = view if view in VIEWS else "read"
    turns = list(
        Turn.objects.filter(interview=interview)
        .order_by("position")
        .only("uuid", "position", "speaker", "text", "model_slug", "timestamp", "status", "metadata")
    )
    segments = Segment.objects.filter(interview=interview)
    if view == "segments":
        by_turn: dict[int, list] = {}
        for seg in segments.order_by("position").only("turn_id", "position", "kind", "text"):
            by_turn.setdefault(seg.turn_id, []).append(seg)
        for turn in turns:
            segs = by_turn.get(turn.pk, [])
            turn.segments_html = _segments_html(segs)
            turn.segment_count = len(segs)
    else:
        counts = dict(segments.values_list("turn_id").annotate(n=Count("id")).values_list("turn_id", "n"))
        for turn, html in zip(turns, render_turns(t.text for t in turns), strict=True):
            turn.html = html
            turn.segment_count = counts.get(turn.pk, 0)
    for turn in turns:
        turn.provenance = turn_provenance(turn)
        turn.anchor = f"turn-{turn.position}"  # a str: ints go through number formatting in templates
    original = interview.rerun_of if interview.rerun_of and interview.rerun_of.deleted_at is None else None
    context = {
        "project": membership.project, "membership": membership, "nav": "interviews",
        "interview": interview, "participant": interview.participant, "turns": turns, "view": view,
        "original": original, "comparable": bool(original or interview.has_reruns),
        "provenance": interview_provenance(interview, turns),
        "segment_total": sum(t.segment_count for t in turns),
    }
    if _wants_fragment(request):
        return render(request, "interviews/interview_detail.html#transcript", context)
    return render(request, "interviews/interview_detail.html", context)


@login_required
def interview_edit(request: HttpRequest, project_uuid, interview_uuid) -> HttpResponse:
    """Correct an interview's title, date, depth, notes or participant after it came in."""
    membership = writer_or_403(request, project_uuid)
    interview = _interview_or_404(membership, interview_uuid)
    form = InterviewForm(request.POST or None, initial=InterviewForm.initial_from(interview), project=membership.project)
    if request.method == "POST" and form.is_valid():
        try:
            interview_update(interview=interview, actor=request.user, **form.cleaned_data)
        except ValidationError as exc:
            interview.refresh_from_db()  # the service set the rejected values before it refused them
            add_service_errors(form, exc)
        else:
            messages.success(request, f"Details of “{interview.title}” saved.")
            return redirect("interviews:interview_detail", project_uuid=project_uuid, interview_uuid=interview.uuid)
    context = {"project": membership.project, "membership": membership, "nav": "interviews", "interview": interview,
               "form": form}
    return render(request, "interviews/interview_form.html", context, status=400 if form.errors else 200)


KIND_LABELS = dict(Segment.Kind.choices)


def _segments_html(segments: list[Segment]) -> SafeString:
    """The segment lines of one turn; built here because a template loop costs ~0.2 ms per segment."""
    if not segments:
        return mark_safe('<li class="empty">No segments.</li>')
    return mark_safe("".join(  # noqa: S308 - every value is escaped
        f'<li class="segment segment-{escape(s.kind)}" value="{int(s.position)}">'
        f'<span class="segment-kind">{escape(KIND_LABELS.get(s.kind, s.kind))}</span>'
        f'<span class="segment-text">{escape(s.text)}</span></li>'
        for s in segments
    ))


@login_required
def turn_metadata(request: HttpRequest, project_uuid, interview_uuid, turn_uuid) -> JsonResponse:
    """A turn's full provenance record (request, raw response, usage…) as JSON."""
    membership = member_or_404(request, project_uuid)
    interview = _interview_or_404(membership, interview_uuid)
    turn = Turn.objects.filter(interview=interview, uuid=turn_uuid).only("metadata", "position", "speaker", "model_slug").first()
    if turn is None:
        raise Http404("No such turn in this interview.")
    return JsonResponse(
        {"interview": str(interview.uuid), "turn": str(turn_uuid), "position": turn.position, "speaker": turn.speaker,
         "model_slug": turn.model_slug, "metadata": turn.metadata},
        json_dumps_params={"indent": 2, "ensure_ascii": False},
    )


@login_required
def statistics(request: HttpRequest, project_uuid) -> HttpResponse:
    """Descriptive statistics per participant; ?depth= filters, ?format=csv|xlsx downloads."""
    membership = member_or_404(request, project_uuid)
    depth = request.GET.get("depth", "")
    depth = depth if depth in dict(DEPTH_CHOICES) else ""
    rows = project_statistics(membership.project, depth=depth or None)
    fmt = request.GET.get("format", "")
    if fmt in ("csv", "xlsx"):
        return _download(membership.project, rows, fmt, depth)
    context = {
        "project": membership.project, "membership": membership, "nav": "interviews",
        "rows": rows, "depth": depth, "depth_choices": DEPTH_CHOICES,
    }
    if _wants_fragment(request):
        return render(request, "interviews/statistics.html#statistics-table", context)
    return render(request, "interviews/statistics.html", context)


def _download(project, rows, fmt: str, depth: str) -> HttpResponse:
    stem = f"interview-statistics-{project.uuid}" + (f"-{depth}" if depth else "")
    if fmt == "csv":
        response = HttpResponse(statistics_csv(rows), content_type="text/csv; charset=utf-8")
    else:
        response = HttpResponse(
            statistics_xlsx(rows), content_type="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
        )
    response["Content-Disposition"] = f'attachment; filename="{stem}.{fmt}"'
    return response
