"""Reading pages: one interview's transcript with provenance, its details form, and the interview statistics.

Import pages live in interviews/views_import.py, participant pages in interviews/views_participants.py.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db.models import Count, Exists, F, OuterRef
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from interviews.forms import InterviewForm
from interviews.models import Interview, Participant, Segment, Speaker, Turn, per_interview_count
from interviews.provenance import interview_provenance, turn_provenance
from interviews.rendering import quote_html, render_turns
from interviews.services import interview_import_branch, interview_update
from interviews.statistics import DEPTH_CHOICES, STAT_COLUMNS, across_models, as_table, project_statistics
from projects.forms import add_service_errors
from projects.pagination import paginate
from projects.permissions import member_or_404, writer_or_403

VIEWS = ("read", "segments", "source")  # source: the Markdown as stored


def _wants_fragment(request: HttpRequest) -> bool:
    """An htmx swap asks for the fragment; a boosted link or a history restore needs the whole page."""
    htmx = request.htmx
    return bool(htmx) and not htmx.boosted and not htmx.history_restore_request


@login_required
@require_GET
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
    # "Has a coding" per segment, straight from the unique coding index (segment first): not a join the planner
    # may turn into a scan of every coding of the project for each interview listed, nor a second visit to the
    # segment (the coding model is reached through the relation: this app does not import coding).
    codings = Segment._meta.get_field("codings").related_model.objects
    interviews = interviews.with_turn_count().annotate(
        answer_segments=per_interview_count(answers),
        coded_segments=per_interview_count(answers.filter(Exists(codings.filter(segment_id=OuterRef("pk"))))),
    ).order_by(F("conducted_at").desc(nulls_last=True), "title", "pk")
    page = paginate(request, interviews, target="#interview-table")
    for row in page:
        row.coded_percent = round(100 * row.coded_segments / row.answer_segments) if row.answer_segments else 0
    context = {
        "project": project, "membership": membership, "nav": "interviews", "interviews": page,
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
@require_GET
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
        htmls = render_turns(t.text for t in turns) if view == "read" else [""] * len(turns)
        for turn, html in zip(turns, htmls, strict=True):
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
        "branches": [{"number": k, "diverges_at": b["diverges_at"] + 1, "first": b["turns"][0]}
                     for k, b in enumerate(interview.alternative_branches(), 1)],
    }
    if _wants_fragment(request):
        # The view buttons come along (out of band), so the one pressed shows as current.
        return render(request, "interviews/interview_detail.html#transcript", context | {"fragment": True})
    return render(request, "interviews/interview_detail.html", context)


def _branch_or_404(interview: Interview, number: int) -> dict:
    branches = interview.alternative_branches()
    if not 1 <= number <= len(branches):
        raise Http404("No such branch of this interview.")
    return branches[number - 1]


@login_required
@require_GET
def interview_branch(request: HttpRequest, project_uuid, interview_uuid, number: int) -> HttpResponse:
    """One alternative branch of an imported conversation, read-only: the shared turns, then the branch's own."""
    membership = member_or_404(request, project_uuid)
    interview = _interview_or_404(membership, interview_uuid)
    branch = _branch_or_404(interview, number)
    shared = list(Turn.objects.filter(interview=interview).order_by("position")[: branch["diverges_at"]]
                  .only("position", "speaker", "text"))
    rows = [{"speaker": t.speaker, "text": t.text, "own": False} for t in shared]
    rows += [{"speaker": t["speaker"], "text": t["text"], "own": True} for t in branch["turns"]]
    for row, html in zip(rows, render_turns(r["text"] for r in rows), strict=True):
        row["html"] = html
        row["who"] = interview.participant.label if row["speaker"] == Speaker.PARTICIPANT else Speaker(row["speaker"]).label
    imported = Interview.objects.alive().filter(project=membership.project, metadata__branch_of=str(interview.uuid),
                                                metadata__branch_leaf=branch["leaf"]).only("uuid", "title").first()
    return render(request, "interviews/interview_branch.html", {
        "project": membership.project, "membership": membership, "nav": "interviews", "interview": interview,
        "number": number, "branch_count": len(interview.alternative_branches()), "rows": rows,
        "diverges_at": branch["diverges_at"], "imported": imported,
    })


@login_required
@require_POST
def interview_branch_import(request: HttpRequest, project_uuid, interview_uuid, number: int) -> HttpResponse:
    """Import one alternative branch as its own interview (analysts and owners)."""
    membership = writer_or_403(request, project_uuid)
    interview = _interview_or_404(membership, interview_uuid)
    _branch_or_404(interview, number)
    try:
        new, created = interview_import_branch(interview=interview, index=number - 1, actor=request.user)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect("interviews:interview_branch", project_uuid=project_uuid, interview_uuid=interview.uuid,
                        number=number)
    if created:
        messages.success(request, f"Branch {number} is now its own interview, “{new.title}”.")
    else:
        messages.info(request, f"Branch {number} was imported before, as “{new.title}”.")
    return redirect("interviews:interview_detail", project_uuid=project_uuid, interview_uuid=new.uuid)


@login_required
@require_http_methods(["GET", "POST"])
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
    """The segment lines of one turn, each as the reader sees it (interviews.rendering.quote_html); built here
    because a template loop costs ~0.2 ms per segment."""
    if not segments:
        return mark_safe('<li class="empty">No segments.</li>')
    return mark_safe("".join(  # noqa: S308 - every value is escaped
        f'<li class="segment segment-{escape(s.kind)}" value="{int(s.position)}">'
        f'<span class="segment-kind">{escape(KIND_LABELS.get(s.kind, s.kind))}</span>'
        f'<span class="segment-text">{quote_html(s.text)}</span></li>'
        for s in segments
    ))


@login_required
@require_GET
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
@require_GET
def statistics(request: HttpRequest, project_uuid) -> HttpResponse:
    """Descriptive statistics per participant with the across-model summary; ?depth=, ?unfinished=1 and ?probes=1
    (interviews made from probe rationales) filter.
    Downloads are the reports app's, whose spreadsheet writer neutralises formulas in every cell."""
    membership = member_or_404(request, project_uuid)
    depth = request.GET.get("depth", "")
    depth = depth if depth in dict(DEPTH_CHOICES) else ""
    unfinished = request.GET.get("unfinished") == "1"
    probes = request.GET.get("probes") == "1"
    filters = urlencode({k: v for k, v in (("depth", depth), ("unfinished", "1" if unfinished else ""),
                                           ("probes", "1" if probes else "")) if v})
    fmt = request.GET.get("format", "")
    if fmt in ("csv", "xlsx"):  # links from before the downloads moved
        url = reverse("reports:statistics_download", args=[membership.project.uuid, fmt])
        return redirect(url + (f"?{filters}" if filters else ""))
    rows = project_statistics(membership.project, depth=depth or None, unfinished=unfinished, probes=probes)
    table = as_table(rows)
    context = {
        "project": membership.project, "membership": membership, "nav": "interviews",
        "rows": rows, "depth": depth, "depth_choices": DEPTH_CHOICES, "unfinished": unfinished, "probes": probes,
        "columns": STAT_COLUMNS, "table": table, "summary": across_models(table),
        "filters": filters,
    }
    if _wants_fragment(request):
        return render(request, "interviews/statistics.html#statistics-table", context)
    return render(request, "interviews/statistics.html", context)
