"""Codebook, coding workspace, comparison, retrieval and search pages."""

from __future__ import annotations

import json
from uuid import UUID

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import OperationalError, transaction
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from coding import queries, shortcuts
from coding.agreement import per_code_agreement
from coding.codebook_import import (
    CodebookImportError,
    codebook_import,
    renamed_codes,
    rows_from_csv,
    rows_from_qdc,
    upload_bytes,
)
from coding.excerpts import excerpts_by_participant, excerpts_for_codes
from coding.forms import ArchiveForm, CodeCreateForm, CodeEditForm, ImportForm, MergeForm, MoveForm, SplitForm
from coding.models import Code, CodeEvent, Note
from coding.render import (
    ChipRenderer,
    chips_from_rows,
    render_code_options,
    render_code_rows,
    render_notes,
    render_transcript,
)
from coding.services import (
    NAME_MAX_LENGTH,
    CodeConflict,
    CodingResult,
    NameTaken,
    UndoOutcome,
    code_archive,
    code_bring_back,
    code_create,
    code_merge,
    code_move,
    code_split,
    code_update,
    coding_apply,
    coding_remove,
    coding_undo,
    next_colour,
    note_save,
)
from interviews.models import Interview, Participant, Speaker, Turn, turn_number
from interviews.rendering import render_turns
from projects.columns import breakdown_shown
from projects.forms import add_service_errors, row_id
from projects.middleware import is_query_cancelled
from projects.models import Membership
from projects.pagination import paginate
from projects.permissions import member_or_404, writer_or_403
from themes.queries import familiarisation_memos


def _code(membership: Membership, code_uuid: UUID) -> Code:
    return get_object_or_404(Code.objects.for_project(membership.project).select_related("parent", "project"), uuid=code_uuid)


def _interview(membership: Membership, interview_uuid: UUID) -> Interview:
    return get_object_or_404(Interview.objects.for_project(membership.project), uuid=interview_uuid)


def _ctx(membership: Membership, **extra) -> dict:
    return {"project": membership.project, "membership": membership, "nav": "codebook", **extra}


def _any_speaker_key(project_uuid: UUID) -> str:
    return f"coding:any_speaker:{project_uuid}"


# A page of the codebook: codes, per-model count columns and interviews to code, each paged on its own.
CODEBOOK_CODES = 100
CODEBOOK_COLUMNS = 12
CODEBOOK_INTERVIEWS = 25
# A code's excerpts are paged by interview, so an excerpt never splits across pages.
EXCERPT_INTERVIEWS = 20
# Search pages are not counted: counting every match of a broad search is the slow part.
SEARCH_PAGE = 50


# --- codebook --------------------------------------------------------------------------------

@login_required
@require_GET
def codebook(request: HttpRequest, project_uuid: UUID) -> HttpResponse:
    membership = member_or_404(request, project_uuid)
    q, kind = request.GET.get("q", "")[:200], request.GET.get("kind", "")
    archived = request.GET.get("archived") == "1"
    ctx = _code_list_ctx(request, membership, q=q, kind=kind if kind in Code.Kind.values else "", archived=archived)
    if request.htmx and not request.htmx.boosted:
        return render(request, "coding/codebook.html#code-list", ctx)
    return render(request, "coding/codebook.html", _codebook_ctx(request, membership, ctx))


def _code_list_ctx(request: HttpRequest, membership: Membership, *, q: str = "", kind: str = "",
                   archived: bool = False) -> dict:
    """The codebook's table: a page of codes, with use counts in a page of participant columns.

    Only participants with an interview get a column (the others have nothing to count), and past a
    few of them the columns are collapsed behind a toggle so the definitions keep their width.
    """
    project = membership.project
    participants = paginate(request, Participant.objects.interviewed().filter(project=project).order_by("label", "pk"),
                            per_page=CODEBOOK_COLUMNS, param="models", counted=False, target="#code-list")
    breakdown = breakdown_shown(request, len(participants) + participants.has_next)
    columns = participants.items if breakdown else []
    nodes, _ = queries.codebook_tree(project, q=q, kind=kind, archived=archived, participants=columns)
    return _ctx(membership, nodes=paginate(request, nodes, per_page=CODEBOOK_CODES, target="#code-list"),
                participants=participants, breakdown=breakdown,
                column_count=f"{len(participants)}+" if participants.has_next else len(participants),
                q=q, kind=kind, archived=archived, filtered=bool(q or kind))


def _codebook_ctx(request: HttpRequest, membership: Membership, ctx: dict, form: CodeCreateForm | None = None,
                  name_taken: Code | None = None) -> dict:
    """The whole codebook page: its table, a page of interviews to code with their progress, the new-code form
    (and, when its name is an archived code's, that code to bring back or the code it was merged into)."""
    project = membership.project
    interviews = paginate(request, Interview.objects.for_project(project).order_by("participant__label", "title", "pk"),
                          per_page=CODEBOOK_INTERVIEWS, param="interviews")
    initial = {"kind": Code.Kind.SEMANTIC, "colour": next_colour(project)}
    return {**ctx, "interviews": interviews, "progress": queries.interview_progress(interviews.items),
            "form": form or CodeCreateForm(project=project, initial=initial),
            "name_taken": name_taken if name_taken is not None and name_taken.archived else None}


@login_required
@require_POST
def code_new(request: HttpRequest, project_uuid: UUID) -> HttpResponse:
    membership = writer_or_403(request, project_uuid)
    form = CodeCreateForm(request.POST, project=membership.project)
    name_taken = None
    if form.is_valid():
        d = form.cleaned_data
        try:
            code = code_create(project=membership.project, actor=request.user, name=d["name"], kind=d["kind"],
                               colour=d["colour"], definition=d["definition"], include_when=d["include_when"],
                               exclude_when=d["exclude_when"], example=d["example"], parent=d["parent"], reason=d["reason"])
        except ValidationError as exc:
            add_service_errors(form, exc)
            name_taken = exc.taken if isinstance(exc, NameTaken) else None
        else:
            messages.success(request, f"Code “{code.name}” created.")
            return redirect("coding:codebook", project_uuid=project_uuid)
    return render(request, "coding/codebook.html", _codebook_ctx(request, membership, _code_list_ctx(request, membership),
                                                                 form=form, name_taken=name_taken), status=400)


@login_required
@require_GET
def code_detail(request: HttpRequest, project_uuid: UUID, code_uuid: UUID) -> HttpResponse:
    membership = member_or_404(request, project_uuid)
    code = _code(membership, code_uuid)
    return render(request, "coding/code_detail.html", _detail_ctx(membership, code))


def _detail_ctx(membership: Membership, code: Code, **forms) -> dict:
    initial = {f: getattr(code, f) for f in ("name", "kind", "colour", "definition", "include_when", "exclude_when", "example")}
    return _ctx(
        membership, code=code,
        edit_form=forms.get("edit_form") or CodeEditForm(initial={**initial, "version": code.version}),
        move_form=forms.get("move_form") or MoveForm(code=code, initial={"parent": code.parent_id}),
        merge_form=forms.get("merge_form") or MergeForm(code=code),
        split_form=forms.get("split_form") or SplitForm(),
        archive_form=forms.get("archive_form"),
        conflict=forms.get("conflict"),
        events=CodeEvent.objects.filter(code=code).select_related("actor")[:50],
        uses=code.codings.count(),
    )


# Before any name is typed, the split form offers this many new codes to move an excerpt to.
SPLIT_CHOICES = 4
# The split form lists this many of the code's first excerpts to move to the new codes; the rest stay.
SPLIT_EXCERPTS = 60


@login_required
@require_GET
def code_split_excerpts(request: HttpRequest, project_uuid: UUID, code_uuid: UUID) -> HttpResponse:
    """The split form's excerpt choices, fetched when the user asks for them: sorting a code's uses grows with
    the project, and only a split needs them."""
    membership = writer_or_403(request, project_uuid)
    code = _code(membership, code_uuid)
    excerpts = excerpts_for_codes(membership.project, [code.pk], limit=SPLIT_EXCERPTS + 1)
    # The new codes by the names typed so far (the form sends them along), else by number.
    names = [n.strip() for n in request.GET.get("names", "").splitlines() if n.strip()] or [
        f"new code {k}" for k in range(1, SPLIT_CHOICES + 1)]
    return render(request, "coding/code_detail.html#split-excerpts", _ctx(
        membership, code=code, split_excerpts=[(e, ",".join(map(str, e.segment_ids))) for e in excerpts[:SPLIT_EXCERPTS]],
        more_excerpts=len(excerpts) > SPLIT_EXCERPTS, new_codes=names))


@login_required
@require_POST
def code_edit(request: HttpRequest, project_uuid: UUID, code_uuid: UUID) -> HttpResponse:
    membership = writer_or_403(request, project_uuid)
    code = _code(membership, code_uuid)
    form = CodeEditForm(request.POST)
    if form.is_valid():
        d = form.cleaned_data
        try:
            code_update(code=code, actor=request.user, version=d["version"], reason=d["reason"],
                        **{f: d[f] for f in ("name", "kind", "colour", "definition", "include_when", "exclude_when", "example")})
        except CodeConflict as conflict:
            # Keep the user's text in the form, now based on the newer version, and show what changed.
            data = request.POST.copy()
            data["version"] = conflict.current.version
            form = CodeEditForm(data)
            form.is_valid()
            form.add_error(None, f"This code changed while you were editing: version {conflict.current.version} was "
                                 "saved by a colleague or in another tab. Its text is shown above; yours is still in "
                                 "the form: review it and save again.")
            return render(request, "coding/code_detail.html",
                          _detail_ctx(membership, conflict.current, edit_form=form, conflict=conflict.current), status=409)
        except ValidationError as exc:
            add_service_errors(form, exc)
        else:
            messages.success(request, "Code saved.")
            return redirect("coding:code_detail", project_uuid=project_uuid, code_uuid=code_uuid)
    return render(request, "coding/code_detail.html", _detail_ctx(membership, code, edit_form=form), status=400)


def _code_action(request: HttpRequest, project_uuid: UUID, code_uuid: UUID, form_class, form_key: str, action) -> HttpResponse:
    membership = writer_or_403(request, project_uuid)
    code = _code(membership, code_uuid)
    form = form_class(request.POST, code=code) if form_class in (MoveForm, MergeForm) else form_class(request.POST)
    if form.is_valid():
        try:
            message, target = action(code, form.cleaned_data)
        except ValidationError as exc:
            add_service_errors(form, exc)
        else:
            messages.success(request, message)
            return redirect("coding:code_detail", project_uuid=project_uuid, code_uuid=target.uuid)
    return render(request, "coding/code_detail.html", _detail_ctx(membership, code, **{form_key: form}), status=400)


@login_required
@require_POST
def code_move_view(request: HttpRequest, project_uuid: UUID, code_uuid: UUID) -> HttpResponse:
    def act(code: Code, d: dict):
        code_move(code=code, actor=request.user, parent=d["parent"], reason=d["reason"])
        return f"“{code.name}” moved.", code
    return _code_action(request, project_uuid, code_uuid, MoveForm, "move_form", act)


@login_required
@require_POST
def code_merge_view(request: HttpRequest, project_uuid: UUID, code_uuid: UUID) -> HttpResponse:
    def act(code: Code, d: dict):
        target = code_merge(source=code, target=d["target"], actor=request.user, reason=d["reason"])
        return f"“{code.name}” merged into “{target.name}”.", target
    return _code_action(request, project_uuid, code_uuid, MergeForm, "merge_form", act)


@login_required
@require_POST
def code_split_view(request: HttpRequest, project_uuid: UUID, code_uuid: UUID) -> HttpResponse:
    def act(code: Code, d: dict):
        new = code_split(code=code, actor=request.user, names=d["names"].splitlines(), reason=d["reason"],
                         archive_original=d["archive_original"], assignments=_split_assignments(request))
        return f"“{code.name}” split into {', '.join(c.name for c in new)}.", code
    return _code_action(request, project_uuid, code_uuid, SplitForm, "split_form", act)


def _split_assignments(request: HttpRequest) -> dict[int, int]:
    """From the split form's per-excerpt choices ("<new code index>:<segment ids>") to {segment id: index}."""
    out: dict[int, int] = {}
    for value in request.POST.getlist("assign"):
        if not value:  # the excerpt stays with the original code
            continue
        index, _, segments = value.partition(":")
        try:
            for segment in segments.split(","):
                out[int(segment)] = int(index)
        except ValueError:
            raise ValidationError({"names": "The excerpt choices could not be read; reload the page and try again."}) from None
    return out


@login_required
@require_POST
def code_archive_view(request: HttpRequest, project_uuid: UUID, code_uuid: UUID) -> HttpResponse:
    def act(code: Code, d: dict):
        code_archive(code=code, actor=request.user, archived=d["archived"], reason=d["reason"])
        return (f"“{code.name}” archived." if d["archived"] else f"“{code.name}” is back in use."), code
    return _code_action(request, project_uuid, code_uuid, ArchiveForm, "archive_form", act)


@login_required
@require_GET
def codebook_history(request: HttpRequest, project_uuid: UUID) -> HttpResponse:
    membership = member_or_404(request, project_uuid)
    events = paginate(request, CodeEvent.objects.filter(project=membership.project).select_related("actor", "code"))
    return render(request, "coding/history.html", _ctx(membership, events=events))


@login_required
@require_http_methods(["GET", "POST"])
def codebook_import_view(request: HttpRequest, project_uuid: UUID) -> HttpResponse:
    membership = writer_or_403(request, project_uuid)
    errors: list[str] = []
    form = ImportForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        name = upload.name or "codebook"
        data = upload_bytes(upload)
        try:
            if name.lower().endswith((".qdc", ".qdpx", ".xml")):
                rows = rows_from_qdc(data, filename=name)
            else:
                rows = rows_from_csv(data, filename=name)
            created = codebook_import(project=membership.project, actor=request.user, rows=rows, source=name)
        except CodebookImportError as exc:
            errors = exc.errors
        else:
            renamed = "; ".join(f"“{old}” as “{new}”" for old, new in renamed_codes(rows))
            messages.success(request, f"Imported {len(created)} codes from {name}."
                             + (f" Names that repeat in the file were imported as: {renamed}." if renamed else ""))
            return redirect("coding:codebook", project_uuid=project_uuid)
    status = 400 if request.method == "POST" else 200
    return render(request, "coding/import.html", _ctx(membership, form=form, errors=errors), status=status)


@login_required
@require_GET
def code_excerpts(request: HttpRequest, project_uuid: UUID, code_uuid: UUID) -> HttpResponse:
    membership = member_or_404(request, project_uuid)
    code = _code(membership, code_uuid)
    mine = request.GET.get("coder") == "mine"
    family = queries.code_with_descendants(code)
    with_subcodes = request.GET.get("sub") == "1" and len(family) > 1
    code_ids = [c["id"] for c in family] if with_subcodes else [code.pk]
    coder_ids = [request.user.pk] if mine else None
    interviews = paginate(request, queries.interviews_with_codes(membership.project, code_ids, coder_ids=coder_ids),
                          per_page=EXCERPT_INTERVIEWS)
    excerpts = excerpts_for_codes(membership.project, code_ids, coder_ids=coder_ids,
                                  interview_ids=[i.pk for i in interviews]) if interviews else []
    # Sub-codes' excerpts read in transcript order among the code's own, each named by its code.
    excerpts.sort(key=lambda e: (e.participant_label, e.interview_title, e.interview_id, e.positions[0], e.code_id))
    questions = queries.questions_before({e.turn_id for e in excerpts}) if excerpts else {}
    codes = {c["id"]: c for c in family}
    for e in excerpts:
        e.question, e.code_info = questions.get(e.turn_id, ""), codes.get(e.code_id)
    return render(request, "coding/excerpts.html", _ctx(
        membership, code=code, groups=excerpts_by_participant(excerpts), count=len(excerpts), mine=mine,
        subcodes=family[1:], with_subcodes=with_subcodes, interviews=interviews, coders=queries.coders_of(membership.project)))


# Segments shown before and after an excerpt when its context is opened.
CONTEXT_SEGMENTS = 2


@login_required
@require_GET
def excerpt_context(request: HttpRequest, project_uuid: UUID, interview_uuid: UUID) -> HttpResponse:
    """The sentences around an excerpt (?from=&to= its first and last segment ids), by turn, for the excerpts page."""
    membership = member_or_404(request, project_uuid)
    interview = _interview(membership, interview_uuid)
    first, last = row_id(request.GET.get("from")), row_id(request.GET.get("to"))
    if first is None:
        return HttpResponseBadRequest("Say which excerpt: ?from=<first segment id>&to=<last segment id>.")
    segments = queries.excerpt_context(interview, first, last or first, around=CONTEXT_SEGMENTS)
    if not segments:
        raise Http404("No such excerpt in this interview.")
    inside = {s.pk for s in segments if s.pk in (first, last)}
    lo = next(i for i, s in enumerate(segments) if s.pk in inside)
    hi = max(i for i, s in enumerate(segments) if s.pk in inside)
    turns: list[dict] = []
    for i, segment in enumerate(segments):
        if not turns or turns[-1]["turn"] != segment.turn_id:
            speaker = interview.participant.label if segment.speaker == Speaker.PARTICIPANT else segment.get_speaker_display()
            turns.append({"turn": segment.turn_id, "number": segment.turn.number, "speaker": speaker, "parts": []})
        turns[-1]["parts"].append((segment.text, lo <= i <= hi))
    return render(request, "coding/excerpts.html#context", {"turns": turns, "first": first})


# --- the coding workspace ----------------------------------------------------------------------

@login_required
@require_GET
def workspace(request: HttpRequest, project_uuid: UUID, interview_uuid: UUID) -> HttpResponse:
    membership = member_or_404(request, project_uuid)
    project = membership.project
    interview = _interview(membership, interview_uuid)
    if interview.status == Interview.Status.IN_PROGRESS:
        return _workspace_in_progress(request, membership, interview)
    any_speaker = bool(request.session.get(_any_speaker_key(project_uuid)))
    codes = queries.workspace_codes(project)
    coders = queries.coders_of(project)
    renderer = ChipRenderer(queries.code_infos(codes), coders, request.user.pk, can_remove=membership.can_write)
    turns, segments, codings = queries.interview_transcript(interview, {c["id"]: i for i, c in enumerate(codes)})
    notes = queries.interview_notes(interview)
    notes_html = {tid: render_notes(key=f"t{tid}", notes=n, me=request.user.pk, coders=coders)
                  for tid, n in notes.items() if tid is not None}
    transcript = render_transcript(
        turns=turns, segments=segments, codings=codings, renderer=renderer, participant_label=interview.participant.label,
        code_any_speaker=any_speaker, notes_html=notes_html, can_write=membership.can_write,
        suggestions=queries.interview_suggestions(interview.pk))
    codable = sum(1 for s in segments if s[4] == Speaker.PARTICIPANT)
    coded = sum(1 for s in segments if s[4] == Speaker.PARTICIPANT and s[0] in codings)
    project_coded, project_codable = queries.project_progress(project)
    used_here: dict[int, int] = {}
    for pairs in codings.values():
        for code_id, _coder in pairs:
            used_here[code_id] = used_here.get(code_id, 0) + 1
    for c in codes:
        c["here"] = used_here.get(c["id"], 0)
    coders_here = sorted({c for pairs in codings.values() for _code, c in pairs} | {request.user.pk})
    picker = [{"id": c["id"], "name": c["name"], "colour": c["colour"], "kind": c["kind"], "definition": c["definition"][:200],
               "archived": c["archived"], "mergedInto": c["merged_into_id"]} for c in codes]
    return render(request, "coding/workspace.html", {
        "project": project, "membership": membership, "nav": "interviews", "interview": interview,
        "transcript": transcript, "codes": codes, "code_rows": render_code_rows(codes), "code_options": render_code_options(codes),
        "any_code_in_use": any(not c["archived"] for c in codes),
        "picker": picker, "shortcuts": shortcuts.WORKSPACE, "name_max_length": NAME_MAX_LENGTH,
        "coders": [coders[c] for c in coders_here if c in coders], "coded": coded, "codable": codable,
        "project_coded": project_coded, "project_codable": project_codable, "any_speaker": any_speaker,
        "interview_notes": render_notes(key="interview", notes=notes.get(None, []), me=request.user.pk, coders=coders),
        "familiarisation_memos": familiarisation_memos(interview),
        "config": {"apply": reverse("coding:apply", args=[project_uuid, interview_uuid]),
                   "remove": reverse("coding:remove", args=[project_uuid, interview_uuid]),
                   "create": reverse("coding:create_inline", args=[project_uuid, interview_uuid]),
                   "undo": reverse("coding:undo", args=[project_uuid, interview_uuid]),
                   "notes": reverse("coding:notes", args=[project_uuid, interview_uuid]),
                   "state": reverse("coding:state", args=[project_uuid, interview_uuid]),
                   "decide": reverse("coding:suggestion_decide", args=[project_uuid, UUID(int=0), "DECISION"]),
                   "me": request.user.pk, "project": str(project_uuid), "interview": str(interview_uuid), "canWrite": membership.can_write,
                   "coders": {c.id: c.name for c in coders.values()},
                   "initials": {c.id: c.initials for c in coders.values()},
                   "pollSeconds": _poll_seconds(request.GET.get("poll"))},
    })


def _workspace_in_progress(request: HttpRequest, membership: Membership, interview: Interview) -> HttpResponse:
    """An interview still being conducted: its sentences are made when it ends, so it can be read here, not coded."""
    session, turns = queries.interview_being_conducted(interview)
    for turn, html in zip(turns, render_turns(t["text"] for t in turns), strict=True):
        turn["html"] = html
        turn["who"] = interview.participant.label if turn["speaker"] == Speaker.PARTICIPANT else Speaker(turn["speaker"]).label
        turn["number"] = turn_number(turn["position"])
        turn["unfinished"] = "" if turn["status"] == Turn.Status.COMPLETE else Turn.Status(turn["status"]).label
    return render(request, "coding/workspace_in_progress.html", {
        "project": membership.project, "membership": membership, "nav": "interviews", "interview": interview,
        "session": session, "turns": turns})


def _check_role(result: CodingResult) -> None:
    if not result.is_member:
        raise Http404("No such interview.")
    if not result.can_write:
        raise PermissionDenied("Your role in this project is read-only (viewer).")


def _chips_response(request: HttpRequest, result: CodingResult, *, code_id: int, segments: list[int],
                    trigger: dict) -> HttpResponse:
    """The touched segments' chips and the code's count, out of band, and the `coding-changed` event."""
    renderer, by_segment = chips_from_rows(result.chips, request.user.pk)
    parts = [renderer.container(s, by_segment.get(s, []), oob=True) for s in segments]
    if result.code_found:
        parts.append(f'<span id="uses-{code_id}" class="uses" hx-swap-oob="true">{result.code_count}</span>')
    response = HttpResponse("".join(parts))
    response["HX-Trigger"] = json.dumps({"coding-changed": trigger})
    return response


def _coding_response(request: HttpRequest, result: CodingResult, *, action: str, code_id: int, segments: list[int],
                     extra_trigger: dict | None = None) -> HttpResponse:
    _check_role(result)
    if not result.code_found:
        return HttpResponseBadRequest("That code does not exist in this project or is archived.")
    if not result.segments_found:
        return HttpResponseBadRequest("None of the selected segments can be coded here.")
    trigger = {"action": action, "code": code_id, "segments": result.changed, **(extra_trigger or {})}
    return _chips_response(request, result, code_id=code_id, segments=segments, trigger=trigger)


def _segment_ids(request: HttpRequest) -> list[int]:
    """The segment ids a coding request names (at most 500); ValidationError names the first that is not an id."""
    ids = []
    for raw in request.POST.getlist("segment") or request.POST.get("segments", "").split(","):
        if raw.strip():
            if (segment_id := row_id(raw.strip())) is None:
                raise ValidationError(f"Segment ids must be numbers; “{raw.strip()[:40]}” is not a segment id.")
            ids.append(segment_id)
    return ids[:500]


def _code_and_segments(request: HttpRequest) -> tuple[int, list[int]]:
    """The code and segment ids a coding request names; ValueError says what is missing or wrong."""
    code_id = row_id(request.POST.get("code"))
    try:
        segments = _segment_ids(request)
    except ValidationError as exc:
        raise ValueError(exc.messages[0]) from None
    if code_id is None or not segments:
        raise ValueError("Choose a code and at least one segment.")
    return code_id, segments


def _poll_seconds(value: str | None) -> int:
    """How often the workspace asks for others' codings: ?poll= (tests use 1) within an hour, else 15 s."""
    seconds = row_id(value)  # a positive whole number, else None
    return seconds if seconds is not None and seconds <= 3600 else 15


@login_required
@require_POST
def apply(request: HttpRequest, project_uuid: UUID, interview_uuid: UUID) -> HttpResponse:
    """The hot path: one statement checks membership, inserts (ignoring duplicates) and returns the chips."""
    try:
        code_id, segments = _code_and_segments(request)
    except ValueError as exc:
        return HttpResponseBadRequest(str(exc))
    result = coding_apply(project_uuid=project_uuid, interview_uuid=interview_uuid, user_id=request.user.pk,
                          code_id=code_id, segment_ids=segments,
                          any_speaker=bool(request.session.get(_any_speaker_key(project_uuid))))
    return _coding_response(request, result, action="apply", code_id=code_id, segments=segments)


@login_required
@require_POST
def remove(request: HttpRequest, project_uuid: UUID, interview_uuid: UUID) -> HttpResponse:
    try:
        code_id, segments = _code_and_segments(request)
    except ValueError as exc:
        return HttpResponseBadRequest(str(exc))
    result = coding_remove(project_uuid=project_uuid, interview_uuid=interview_uuid, user_id=request.user.pk,
                           code_id=code_id, segment_ids=segments)
    return _coding_response(request, result, action="remove", code_id=code_id, segments=segments)


@login_required
@require_POST
def create_inline(request: HttpRequest, project_uuid: UUID, interview_uuid: UUID) -> HttpResponse:
    """Create a code from the picker and apply it to the selection; or, with `bring_back` (a code's id), bring that
    archived code back into use and apply it (the picker offers it when the name typed is an archived code's)."""
    membership = writer_or_403(request, project_uuid)
    _interview(membership, interview_uuid)
    # All or nothing: a code created (or brought back) for an apply that is refused would stay behind, unused.
    with transaction.atomic():
        try:
            segments = _segment_ids(request)
            code, audit_extra = _inline_code(request, membership)
        except ValidationError as exc:
            return _inline_refused(exc)
        # The page adds the code to its panel and picker from the event (before any swap), as for a colleague's new code.
        new = _picker_code(code)
        if not segments:
            response = HttpResponse("")
            response["HX-Trigger"] = json.dumps({"coding-changed": {"action": "create", "code": code.pk, "segments": [],
                                                                    "newCode": new}})
            return response
        # Marked in the audit event, so that undoing this apply also takes the new code away again (or back to the archive).
        result = coding_apply(project_uuid=project_uuid, interview_uuid=interview_uuid, user_id=request.user.pk,
                              code_id=code.pk, segment_ids=segments,
                              any_speaker=bool(request.session.get(_any_speaker_key(project_uuid))),
                              audit_extra=audit_extra or None)
        response = _coding_response(request, result, action="apply", code_id=code.pk, segments=segments,
                                    extra_trigger={"newCode": new})
        if response.status_code != 200:
            transaction.set_rollback(True)
        return response


def _inline_code(request: HttpRequest, membership: Membership) -> tuple[Code, dict]:
    """The picker's code: created by the name typed, or the archived one (`bring_back`) back in use; and what the
    apply's audit event carries for undoing it."""
    bring_back = row_id(request.POST.get("bring_back"))
    if bring_back is None:
        code = code_create(project=membership.project, actor=request.user, name=request.POST.get("name", ""),
                           kind=request.POST.get("kind") or Code.Kind.SEMANTIC, reason="Created while coding")
        return code, {"created_code": True}
    code = get_object_or_404(Code.objects.for_project(membership.project).select_related("merged_into", "project"),
                             pk=bring_back)
    return code, code_bring_back(code=code, actor=request.user)


def _inline_refused(exc: ValidationError) -> HttpResponse:
    """Why the picker's code was not created; a name taken by a code of the project comes with that code (the
    `code-name-taken` event), which the page may not know by that name yet (a colleague renamed it), to offer it."""
    response = HttpResponseBadRequest(" ".join(exc.messages), content_type="text/plain; charset=utf-8")
    if isinstance(exc, NameTaken):
        response["HX-Trigger"] = json.dumps({"code-name-taken": _picker_code(exc.taken)})
    return response


def _picker_code(code: Code) -> dict:
    """A code as the workspace's picker knows it (the page's `coding-codes` entries)."""
    return {"id": code.pk, "name": code.name, "colour": code.colour, "kind": code.kind, "definition": code.definition[:200],
            "archived": code.archived, "mergedInto": code.merged_into_id}


@login_required
@require_POST
def undo(request: HttpRequest, project_uuid: UUID, interview_uuid: UUID) -> HttpResponse:
    """Take back the user's own last apply or remove here (kept on the server: it survives a reload)."""
    outcome = coding_undo(project_uuid=project_uuid, interview_uuid=interview_uuid, user=request.user)
    if outcome is None:
        membership = writer_or_403(request, project_uuid)
        _interview(membership, interview_uuid)
        response = HttpResponse("")
        response["HX-Trigger"] = json.dumps({"coding-undo": {"message": "Nothing to undo: none of your latest "
                                                                         "applies or removes here is left to take back."}})
        return response
    _check_role(outcome.result)
    return _chips_response(request, outcome.result, code_id=outcome.code_id, segments=outcome.segment_ids,
                           trigger=_undo_trigger(outcome))


def _undo_trigger(outcome: UndoOutcome) -> dict:
    return {"action": "remove" if outcome.undid == "apply" else "apply", "code": outcome.code_id,
            "segments": outcome.result.changed,
            "undo": {"message": outcome.message,
                     "archivedCode": outcome.code_id if outcome.created_code_archived else None}}


@login_required
@require_GET
def chips_state(request: HttpRequest, project_uuid: UUID, interview_uuid: UUID) -> HttpResponse:
    """Every coding of the interview as compact JSON, for light polling: coders see each other's work live."""
    membership = member_or_404(request, project_uuid)
    interview = _interview(membership, interview_uuid)
    codings, codes = queries.interview_codings_state(interview)
    return JsonResponse({"codings": codings, "codes": codes})


@login_required
@require_POST
def notes(request: HttpRequest, project_uuid: UUID, interview_uuid: UUID) -> HttpResponse:
    membership = writer_or_403(request, project_uuid)
    interview = _interview(membership, interview_uuid)
    turn = None
    if request.POST.get("turn"):
        turn = get_object_or_404(Turn, interview=interview, pk=row_id(request.POST.get("turn")) or 0)
    try:
        note_save(interview=interview, turn=turn, author=request.user, text=request.POST.get("text", ""))
    except ValidationError as exc:
        return HttpResponseBadRequest(" ".join(exc.messages), content_type="text/plain; charset=utf-8")
    coders = queries.coders_of(membership.project)
    current = Note.objects.filter(interview=interview, turn=turn).order_by("created_at")
    return HttpResponse(render_notes(key=f"t{turn.pk}" if turn else "interview", notes=list(current), me=request.user.pk,
                                     coders=coders, oob=True))


@login_required
@require_POST
def speaker_toggle(request: HttpRequest, project_uuid: UUID, interview_uuid: UUID) -> HttpResponse:
    """Let this user code interviewer and system turns too (kept in the session)."""
    member_or_404(request, project_uuid)
    request.session[_any_speaker_key(project_uuid)] = request.POST.get("any_speaker") == "1"
    return redirect("coding:workspace", project_uuid=project_uuid, interview_uuid=interview_uuid)


# --- comparison, search ----------------------------------------------------------------------

@login_required
@require_GET
def compare(request: HttpRequest, project_uuid: UUID, interview_uuid: UUID) -> HttpResponse:
    membership = member_or_404(request, project_uuid)
    project = membership.project
    interview = _interview(membership, interview_uuid)
    coders = queries.coders_of(project)
    coded_by = [c for c in queries.interview_coders(interview) if c in coders]
    a = row_id(request.GET.get("a")) or (coded_by[0] if coded_by else None)
    b = row_id(request.GET.get("b")) or (coded_by[1] if len(coded_by) > 1 else None)
    ctx = {"project": project, "membership": membership, "nav": "interviews", "interview": interview,
           "coders": [coders[c] for c in coders], "a": a, "b": b, "diffs": [], "summary": None, "agreement": None}
    if a and b and a != b and a in coders and b in coders:
        diffs, summary = queries.compare_coders(interview, a, b)
        codes = {c["id"]: c for c in queries.codes_with_counts(project)}
        for d in diffs:
            d.only_a, d.only_b, d.both = ([codes[c] for c in ids if c in codes] for ids in (d.only_a, d.only_b, d.both))
        ctx.update(diffs=diffs, summary=summary, coder_a=coders[a], coder_b=coders[b])
        if project.agreement_statistics_enabled:
            ctx["agreement"] = _agreement(interview, a, b, codes)
    return render(request, "coding/compare.html", ctx)


def _agreement(interview: Interview, a: int, b: int, codes: dict) -> list[dict]:
    from coding.models import Coding

    units = list(interview.segments.filter(speaker=Speaker.PARTICIPANT).values_list("id", flat=True))
    codings = set(Coding.objects.filter(interview=interview, coder_id__in=[a, b]).values_list("segment_id", "code_id", "coder_id"))
    used = sorted({c for _s, c, _u in codings})
    rows = per_code_agreement(units, [a, b], codings, used)
    return [{"code": codes.get(cid), "kappa": k, "alpha": al, "units": n} for cid, k, al, n in rows]


@login_required
@require_GET
def search(request: HttpRequest, project_uuid: UUID) -> HttpResponse:
    membership = member_or_404(request, project_uuid)
    q = request.GET.get("q", "").strip()[:300]
    coded = request.GET.get("coded", "")
    too_broad = False
    try:
        # A savepoint: a search cancelled by the statement timeout leaves the connection usable for the page.
        with transaction.atomic():
            results = paginate(request, queries.search_segments(membership.project, q, coded=coded) if q else [],
                               per_page=SEARCH_PAGE, counted=False, target="#results")
    except OperationalError as exc:
        if not is_query_cancelled(exc):
            raise
        results, too_broad = paginate(request, [], target="#results"), True
    ctx = {"project": membership.project, "membership": membership, "nav": "interviews", "q": q, "coded": coded,
           "results": results, "too_broad": too_broad, "ranked": queries.search_is_ranked()}
    template = "coding/search.html#results" if request.htmx and not request.htmx.boosted else "coding/search.html"
    return render(request, template, ctx)
