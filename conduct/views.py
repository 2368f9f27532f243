"""Pages for conducting live interviews: guides, endpoints, the conduct page, comparison."""

from __future__ import annotations

from itertools import zip_longest
from typing import Any
from uuid import UUID

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db.models import Count, Prefetch
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from conduct import services
from conduct.answering import deployment_base_url
from conduct.forms import AskForm, EndpointKeyForm, GuideForm, LiveParticipantForm, RerunForm, StartForm, key_choice_of
from conduct.models import AnswerJob, ConductSession, EndpointKey, LiveEndpoint, Seat
from conduct.throttle import DEFAULT_MAX_IN_FLIGHT
from interviews.models import Guide, Interview, Participant, Speaker, Turn
from interviews.rendering import diff_rendered
from projects.forms import add_service_errors
from projects.models import Membership
from projects.pagination import paginate
from projects.permissions import member_or_404, owner_or_403, writer_or_403
from projects.submissions import submitted_once


def _errors(exc: ValidationError) -> str:
    return " ".join(exc.messages)


# -- conduct home: sessions and the start form -----------------------------------


@login_required
@require_http_methods(["GET", "POST"])
@submitted_once
def conduct_home(request: HttpRequest, project_uuid: UUID) -> HttpResponse:
    membership = member_or_404(request, project_uuid)
    project = membership.project
    # "Conduct an interview with this guide" on a guide's page preselects that guide.
    form = StartForm(project=project, initial={"guide": request.GET.get("guide")})
    if request.method == "POST":
        writer_or_403(request, project_uuid)
        form = StartForm(request.POST, project=project)
        if form.is_valid():
            version = form.cleaned_data["guide"].versions.order_by("-number").first()
            try:
                session = services.session_start(
                    project=project,
                    user=request.user,
                    guide_version=version,
                    participants=list(form.cleaned_data["participants"]),
                )
            except ValidationError as exc:
                form.add_error(None, _errors(exc))
            else:
                return redirect("conduct:session", project_uuid=project.uuid, session_uuid=session.uuid)
    sessions = paginate(request, ConductSession.objects.for_project(project).annotate(interview_count=Count("seats")))
    context = {
        "project": project,
        "membership": membership,
        "form": form,
        "sessions": sessions,
        "nav": "interviews",
        # Said only when a participant would need it: with stored keys for all, the warning misled.
        "deployment_key_missing": not settings.OPENAI_API_KEY and LiveEndpoint.objects.filter(
            participant__project=project, key_source=LiveEndpoint.KeySource.DEPLOYMENT).exists(),
    }
    return render(request, "conduct/home.html", context, status=400 if form.errors else 200)


# -- guides -------------------------------------------------------------------------


@login_required
@require_GET
def guide_list(request: HttpRequest, project_uuid: UUID) -> HttpResponse:
    membership = member_or_404(request, project_uuid)
    guides = (
        Guide.objects.filter(project=membership.project)
        .annotate(version_count=Count("versions", distinct=True))
        .order_by("name", "pk")
    )
    context = {"project": membership.project, "membership": membership, "guides": paginate(request, guides),
               "nav": "interviews"}
    return render(request, "conduct/guide_list.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def guide_create(request: HttpRequest, project_uuid: UUID) -> HttpResponse:
    membership = writer_or_403(request, project_uuid)
    form = GuideForm(request.POST or None, project=membership.project)
    if request.method == "POST" and form.is_valid():
        try:
            guide = services.guide_create(project=membership.project, user=request.user, **form.cleaned_data)
        except ValidationError as exc:  # the name, taken by a colleague since the form was checked
            add_service_errors(form, exc)
        else:
            messages.success(request, f"Guide “{guide.name}” saved as version 1.")
            return redirect("conduct:guide", project_uuid=project_uuid, guide_uuid=guide.uuid)
    context = {"project": membership.project, "membership": membership, "form": form, "nav": "interviews"}
    return render(request, "conduct/guide_form.html", context, status=400 if form.errors else 200)


@login_required
@require_http_methods(["GET", "POST"])
def guide_detail(request: HttpRequest, project_uuid: UUID, guide_uuid: UUID) -> HttpResponse:
    membership = member_or_404(request, project_uuid)
    guide = get_object_or_404(Guide, project=membership.project, uuid=guide_uuid)
    versions = list(guide.versions.select_related("created_by").annotate(interview_count=Count("interviews")).order_by("-number"))
    form = GuideForm(initial=GuideForm.initial_from(versions[0]), project=membership.project, guide=guide)
    if request.method == "POST":
        writer_or_403(request, project_uuid)
        form = GuideForm(request.POST, project=membership.project, guide=guide)
        if form.is_valid():
            try:
                version = services.guide_revise(guide=guide, user=request.user, **form.cleaned_data)
            except ValidationError as exc:  # the name, taken by a colleague since the form was checked
                add_service_errors(form, exc)
            else:
                if version.number == versions[0].number:
                    messages.info(request, "Nothing changed; the guide stays at its current version.")
                else:
                    messages.success(request, f"Saved as version {version.number}. Earlier interviews keep the version they used.")
                return redirect("conduct:guide", project_uuid=project_uuid, guide_uuid=guide.uuid)
    context = {
        "project": membership.project,
        "membership": membership,
        "guide": guide,
        "versions": versions,
        "current": versions[0],
        "form": form,
        "nav": "interviews",
    }
    return render(request, "conduct/guide_detail.html", context, status=400 if form.errors else 200)


# -- live participants and keys -----------------------------------------------------


@login_required
@require_GET
def participant_list(request: HttpRequest, project_uuid: UUID) -> HttpResponse:
    membership = member_or_404(request, project_uuid)
    return _render_participants(request, membership, EndpointKeyForm(project=membership.project))


def _render_participants(
    request: HttpRequest, membership: Membership, key_form: EndpointKeyForm, status: int = 200
) -> HttpResponse:
    project = membership.project
    participants = (
        Participant.objects.filter(project=project, is_live=True)
        .select_related("live_endpoint__api_key")
        .order_by("label", "pk")
    )
    participants = paginate(request, participants)
    keys = EndpointKey.objects.filter(project=project).annotate(used_by=Count("endpoints")).order_by("label")
    context = {
        "project": project,
        "membership": membership,
        "participants": participants,
        "keys": keys,
        "key_form": key_form,
        "has_default_key": bool(settings.OPENAI_API_KEY),
        "default_base_url": deployment_base_url(),
        "nav": "interviews",
    }
    return render(request, "conduct/participants.html", context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def participant_edit(request: HttpRequest, project_uuid: UUID, participant_uuid: UUID | None = None) -> HttpResponse:
    membership = writer_or_403(request, project_uuid)
    project = membership.project
    participant = None
    initial: dict[str, Any] = {}
    if participant_uuid is not None:
        # Imported participants describe past transcripts; only live ones are edited here.
        participant = get_object_or_404(Participant, project=project, uuid=participant_uuid, is_live=True)
        initial = _participant_initial(participant)
    form = LiveParticipantForm(request.POST or None, initial=initial, project=project, participant=participant)
    if request.method == "POST" and form.is_valid():
        try:
            saved = services.live_participant_save(project=project, participant=participant, **form.cleaned_data)
        except ValidationError as exc:
            add_service_errors(form, exc, renamed={"api_key": "key"})
        else:
            messages.success(request, f"Endpoint for “{saved.label}” saved.")
            return redirect("conduct:participants", project_uuid=project_uuid)
    context = {"project": project, "membership": membership, "form": form, "participant": participant, "nav": "interviews"}
    return render(request, "conduct/participant_form.html", context, status=400 if form.errors else 200)


def _participant_initial(participant: Participant) -> dict[str, Any]:
    live = LiveEndpoint.objects.select_related("api_key").filter(participant=participant).first()
    fields = ("label", "provider", "model_id", "base_url", "temperature", "top_p", "seed", "max_tokens")
    initial = {field: getattr(participant, field) for field in fields}
    initial["timeout_seconds"] = live.timeout_seconds if live else 60
    initial["key"] = key_choice_of(live)
    initial["stream_answers"] = live.stream_answers if live else True
    initial["max_in_flight"] = live.max_in_flight if live else DEFAULT_MAX_IN_FLIGHT
    return initial


@login_required
@require_POST
def key_create(request: HttpRequest, project_uuid: UUID) -> HttpResponse:
    # Only owners bind a key to an endpoint: analysts choose among keys, never where one goes.
    membership = owner_or_403(request, project_uuid)
    form = EndpointKeyForm(request.POST, project=membership.project)
    if form.is_valid():
        try:
            key = services.endpoint_key_store(project=membership.project, user=request.user, **form.cleaned_data)
        except ValidationError as exc:
            add_service_errors(form, exc)
        else:
            messages.success(request, f"Key “{key.label}” stored encrypted ({key.hint}), sent only to {key.base_url}.")
            return redirect("conduct:participants", project_uuid=project_uuid)
    return _render_participants(request, membership, form, status=400)


@login_required
@require_POST
def key_delete(request: HttpRequest, project_uuid: UUID, key_uuid: UUID) -> HttpResponse:
    membership = owner_or_403(request, project_uuid)
    key = get_object_or_404(EndpointKey, project=membership.project, uuid=key_uuid)
    affected = services.endpoint_key_delete(key=key, user=request.user)
    note = f" {affected} participant{'s' if affected != 1 else ''} that used it now send no key: choose another for them." if affected else ""
    messages.success(request, f"Key “{key.label}” deleted.{note}")
    return redirect("conduct:participants", project_uuid=project_uuid)


# -- the conduct page -----------------------------------------------------------------


def _session_or_404(membership: Membership, session_uuid: UUID) -> ConductSession:
    return get_object_or_404(
        ConductSession.objects.select_related("guide_version__guide"),
        project=membership.project,
        uuid=session_uuid,
    )


def _columns(session: ConductSession, only: list[int] | None = None) -> list[Seat]:
    """Seats with interview, participant and every turn (with its answer job), in 2 queries."""
    turns = Turn.objects.select_related("answer_job").order_by("position")
    seats = (
        Seat.objects.filter(session=session)
        .select_related("interview__participant")
        .annotate(rerun_count=Count("interview__reruns"))
        .prefetch_related(Prefetch("interview__turns", queryset=turns))
        .order_by("position")
    )
    if only is not None:
        seats = seats.filter(interview_id__in=only)
    return list(seats)


def _checklist(session: ConductSession) -> list[dict[str, Any]]:
    checked = set(session.checked_questions)
    return [
        {"index": i, "text": q.get("text", ""), "probes": q.get("probes", []), "checked": i in checked}
        for i, q in enumerate(session.guide_version.planned_questions)
    ]


@login_required
@require_GET
def session_page(request: HttpRequest, project_uuid: UUID, session_uuid: UUID) -> HttpResponse:
    membership = member_or_404(request, project_uuid)
    session = _session_or_404(membership, session_uuid)
    seats = _columns(session)
    if any(_has_stale(seat) for seat in seats):
        services.answers_mark_lost(interviews=[seat.interview for seat in seats])
        seats = _columns(session)
    others = Participant.objects.filter(project=membership.project, is_live=True).order_by("label")
    context = {
        "project": membership.project,
        "membership": membership,
        "session": session,
        "seats": seats,
        "checklist": _checklist(session),
        "rerun_participants": others,
        "nav": "interviews",
    }
    return render(request, "conduct/session.html", context)


def _has_stale(seat: Seat) -> bool:
    return any(
        turn.status in services.ACTIVE and _job(turn) is not None and _job(turn).is_stale
        for turn in seat.interview.turns.all()
    )


def _job(turn: Turn) -> AnswerJob | None:
    try:
        return turn.answer_job
    except AnswerJob.DoesNotExist:
        return None


@login_required
@require_POST
def session_ask(request: HttpRequest, project_uuid: UUID, session_uuid: UUID) -> HttpResponse:
    membership = writer_or_403(request, project_uuid)
    session = _session_or_404(membership, session_uuid)
    form = AskForm(request.POST)
    seats = _columns(session)
    error = ""
    targets: list[Seat] = []
    if form.is_valid():
        to = form.cleaned_data["to"] or "all"
        targets = seats if to == "all" else [s for s in seats if str(s.interview.uuid) == to]
        if not targets:
            error = "Pick which interview the question goes to."
        else:
            try:
                services.question_ask(
                    session=session,
                    interviews=[seat.interview for seat in targets],
                    text=form.cleaned_data["text"],
                    user=request.user,
                    planned_index=form.cleaned_data["planned"],
                )
            except ValidationError as exc:
                error = _errors(exc)
    else:
        error = " ".join(e for errors in form.errors.values() for e in errors)
    if not request.htmx:
        if error:
            messages.error(request, error)
        return redirect("conduct:session", project_uuid=project_uuid, session_uuid=session_uuid)
    session.refresh_from_db(fields=["checked_questions"])
    context = {
        "project": membership.project,
        "membership": membership,
        "session": session,
        "seats": [] if error else _columns(session, only=[s.interview_id for s in targets]),
        "checklist": _checklist(session),
        "error": error,
        "form_id": request.POST.get("form_id", ""),
    }
    # 200 even on error: htmx swaps only 2xx, and the error belongs next to the question box.
    return render(request, "conduct/_ask_result.html", context)


@login_required
@require_POST
def session_check(request: HttpRequest, project_uuid: UUID, session_uuid: UUID) -> HttpResponse:
    membership = writer_or_403(request, project_uuid)
    session = _session_or_404(membership, session_uuid)
    try:
        index = int(request.POST.get("index", ""))
        session = services.question_check(session=session, index=index, checked=request.POST.get("checked") == "on")
    except (ValueError, ValidationError):
        return HttpResponse("No such planned question.", status=400)
    context = {"project": membership.project, "membership": membership, "session": session, "checklist": _checklist(session)}
    if request.htmx:
        return render(request, "conduct/session.html#checklist", context)
    return redirect("conduct:session", project_uuid=project_uuid, session_uuid=session_uuid)


@login_required
@require_POST
def session_end(request: HttpRequest, project_uuid: UUID, session_uuid: UUID) -> HttpResponse:
    membership = writer_or_403(request, project_uuid)
    session = _session_or_404(membership, session_uuid)
    try:
        services.session_end(session=session)
    except ValidationError as exc:
        messages.error(request, _errors(exc))
    else:
        messages.success(request, "Interview ended. Every turn is segmented and ready to code.")
    return redirect("conduct:session", project_uuid=project_uuid, session_uuid=session_uuid)


# -- one answer: poll, stop, retry ------------------------------------------------------


def _turn_or_404(membership: Membership, turn_uuid: UUID) -> Turn:
    turn = (
        Turn.objects.select_related("answer_job", "interview__conduct_seat__session")
        .filter(uuid=turn_uuid, interview__project=membership.project, speaker=Speaker.PARTICIPANT)
        .first()
    )
    if turn is None:
        raise Http404("No such answer.")
    return turn


@login_required
@require_GET
def turn_fragment(request: HttpRequest, project_uuid: UUID, turn_uuid: UUID) -> HttpResponse:
    """The answer as it stands; polled every ~300 ms while it streams."""
    membership = member_or_404(request, project_uuid)
    turn = _turn_or_404(membership, turn_uuid)
    job = _job(turn)
    if turn.status in services.ACTIVE and job is not None and job.is_stale:
        services.answers_mark_lost(interviews=[turn.interview])
        turn = _turn_or_404(membership, turn_uuid)
    context = {"project": membership.project, "membership": membership, "turn": turn}
    return render(request, "conduct/_turn.html", context)


@login_required
@require_POST
def turn_retry(request: HttpRequest, project_uuid: UUID, turn_uuid: UUID) -> HttpResponse:
    membership = writer_or_403(request, project_uuid)
    turn = _turn_or_404(membership, turn_uuid)
    error = ""
    try:
        turn = services.answer_retry(turn=turn)
    except ValidationError as exc:
        error = _errors(exc)
    return _turn_response(request, membership, turn_uuid, error)


@login_required
@require_POST
def turn_stop(request: HttpRequest, project_uuid: UUID, turn_uuid: UUID) -> HttpResponse:
    membership = writer_or_403(request, project_uuid)
    services.answer_stop(turn=_turn_or_404(membership, turn_uuid))
    return _turn_response(request, membership, turn_uuid, "")


def _turn_response(request: HttpRequest, membership: Membership, turn_uuid: UUID, error: str) -> HttpResponse:
    turn = _turn_or_404(membership, turn_uuid)
    if not request.htmx:
        if error:
            messages.error(request, error)
        seat = getattr(turn.interview, "conduct_seat", None)
        if seat is None:
            raise Http404("This answer is not part of a conduct session.")
        return redirect("conduct:session", project_uuid=membership.project.uuid, session_uuid=seat.session.uuid)
    context = {"project": membership.project, "membership": membership, "turn": turn, "error": error}
    return render(request, "conduct/_turn.html", context)


# -- re-run and comparison --------------------------------------------------------------


@login_required
@require_POST
def interview_rerun(request: HttpRequest, project_uuid: UUID, interview_uuid: UUID) -> HttpResponse:
    membership = writer_or_403(request, project_uuid)
    interview = get_object_or_404(Interview.objects.for_project(membership.project), uuid=interview_uuid)
    form = RerunForm(request.POST, project=membership.project)
    if not form.is_valid():
        messages.error(request, "Pick a live participant to re-run the interview on.")
        return _back_to_interview(interview)
    try:
        session = services.interview_rerun(
            interview=interview, participant=form.cleaned_data["participant"], user=request.user
        )
    except ValidationError as exc:
        messages.error(request, _errors(exc))
        return _back_to_interview(interview)
    messages.success(request, "Re-run started: the original questions are asked one after another.")
    return redirect("conduct:session", project_uuid=project_uuid, session_uuid=session.uuid)


def _back_to_interview(interview: Interview) -> HttpResponse:
    seat = Seat.objects.filter(interview=interview).select_related("session").first()
    if seat:
        return redirect("conduct:session", project_uuid=interview.project.uuid, session_uuid=seat.session.uuid)
    return redirect("conduct:home", project_uuid=interview.project.uuid)


@login_required
@require_GET
def interview_compare(request: HttpRequest, project_uuid: UUID, interview_uuid: UUID) -> HttpResponse:
    """The root original of an interview next to all its re-runs (of re-runs too), question by question."""
    membership = member_or_404(request, project_uuid)
    alive = Interview.objects.for_project(membership.project)
    interview = get_object_or_404(alive, uuid=interview_uuid)
    compared = sorted(
        alive.rerun_family(interview).prefetch_related(Prefetch("turns", queryset=Turn.objects.order_by("position"))),
        # The root original first; a re-run is always created after the interview it re-runs.
        key=lambda iv: (iv.rerun_of_id is not None, iv.created_at),
    )
    rows = list(zip_longest(*[_exchanges(iv) for iv in compared]))
    _mark_changes(rows)
    context = {
        "project": membership.project,
        "membership": membership,
        "interviews": compared,
        "rows": rows,
        "nav": "interviews",
    }
    return render(request, "conduct/compare.html", context)


def _mark_changes(rows: list[tuple[dict[str, Any] | None, ...]]) -> None:
    """Set `marked` on each re-run's answers: rendered, with the words that differ from the original's nth answer
    to the same question marked <ins>; with a single re-run, the original's changed words are marked <del> too."""
    for original, *reruns in rows:
        for exchange in reruns:
            if not original or not exchange:
                continue
            for base, answer in zip(original["answers"], exchange["answers"], strict=False):
                old, new = diff_rendered(base.text, answer.text)
                answer.marked = new
                if len(reruns) == 1:
                    base.marked = old


def _exchanges(interview: Interview) -> list[dict[str, Any]]:
    """Each interviewer question with the answer turns that follow it."""
    exchanges: list[dict[str, Any]] = []
    for turn in interview.turns.all():
        if turn.speaker == Speaker.INTERVIEWER:
            exchanges.append({"question": turn, "answers": []})
        elif exchanges:
            exchanges[-1]["answers"].append(turn)
    return exchanges

