"""Probe pages: list, setup (items, models, conditions), dry run, run with progress, results."""

from __future__ import annotations

import copy
from typing import Any
from uuid import UUID

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db.models import Count, Prefetch
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from probes import services
from probes.forms import ConditionForm, ItemImportForm, ProbeForm, SetupForm
from probes.items import ItemFilters, ItemImportError
from probes.models import Answer, Condition, ConditionVersion, Probe
from probes.running import probe_dry_run, progress, token_estimate
from probes.scoring import NONE_MEANINGS, categories_cited, paper_table, scores_from_query
from projects.models import Membership
from projects.permissions import member_or_404, writer_or_403

UNPARSED_SHOWN = 50
PAPER_FORMATS = [("docx", "Word"), ("tex", "LaTeX"), ("xlsx", "XLSX"), ("csv", "CSV"), ("md", "Markdown")]


def _context(membership: Membership, **extra: Any) -> dict[str, Any]:
    return {"project": membership.project, "membership": membership, "nav": "probes", **extra}


def _probe(membership: Membership, probe_uuid: UUID) -> Probe:
    return get_object_or_404(Probe.objects.live(), project=membership.project, uuid=probe_uuid)


def _condition(membership: Membership, probe_uuid: UUID, condition_uuid: UUID) -> Condition:
    return get_object_or_404(Condition.objects.select_related("probe__project"), probe=_probe(membership, probe_uuid),
                             uuid=condition_uuid)


def _errors(exc: ValidationError) -> str:
    return " ".join(exc.messages)


@login_required
@require_http_methods(["GET", "POST"])
def probe_list(request: HttpRequest, project_uuid: UUID) -> HttpResponse:
    """The project's probes, and a form to start one."""
    membership = member_or_404(request, project_uuid)
    form = ProbeForm()
    if request.method == "POST":
        writer_or_403(request, project_uuid)
        form = ProbeForm(request.POST)
        if form.is_valid():
            try:
                probe = services.probe_create(project=membership.project, user=request.user, **form.cleaned_data)
            except ValidationError as exc:
                _add_errors(form, exc)
            else:
                return redirect("probes:detail", project_uuid=project_uuid, probe_uuid=probe.uuid)
    probes = Probe.objects.for_project(membership.project).annotate(
        item_count=Count("items", distinct=True), condition_count=Count("conditions", distinct=True))
    return render(request, "probes/list.html", _context(membership, probes=probes, form=form),
                  status=400 if form.errors else 200)


def _detail_context(membership: Membership, probe: Probe, **forms: Any) -> dict[str, Any]:
    latest = Prefetch("versions", queryset=ConditionVersion.objects.order_by("-number"))
    conditions = probe.conditions.prefetch_related(latest).annotate(answer_count=Count("answers"))
    setup = forms.pop("setup", None) or SetupForm(probe=probe, initial={
        "participants": list(probe.participants.all()), "repetitions": probe.repetitions, "concurrency": probe.concurrency})
    return _context(
        membership, probe=probe, conditions=conditions, setup_form=setup,
        import_form=forms.pop("import_form", None) or ItemImportForm(), item_count=probe.items.count(),
        edit_form=forms.pop("edit_form", None) or ProbeForm(instance=probe),
        progress=progress(probe), **forms,
    )


@login_required
@require_GET
def probe_detail(request: HttpRequest, project_uuid: UUID, probe_uuid: UUID) -> HttpResponse:
    """The probe's setup and run; htmx polls get only the run's progress fragment."""
    membership = member_or_404(request, project_uuid)
    probe = _probe(membership, probe_uuid)
    if request.htmx and not request.htmx.boosted:
        return render(request, "probes/detail.html#run-progress", _context(membership, probe=probe, progress=progress(probe)))
    return render(request, "probes/detail.html", _detail_context(membership, probe))


@login_required
@require_POST
def items_import(request: HttpRequest, project_uuid: UUID, probe_uuid: UUID) -> HttpResponse:
    """Import the item sheet (replacing earlier items while nothing has been asked)."""
    membership = writer_or_403(request, project_uuid)
    probe = _probe(membership, probe_uuid)
    form = ItemImportForm(request.POST, request.FILES)
    if form.is_valid():
        data = form.cleaned_data
        spec = services.ItemImport(
            filename=data["file"].name, data=data["file"], text_column=data["text_column"].strip(),
            label_columns=data["label_columns"], filters=ItemFilters(data["min_words"] or 0, data["exclude_words"]),
            per_label=data["per_label"], seed=data["seed"],
        )
        try:
            count = services.items_import(probe=probe, spec=spec)
        except ItemImportError as exc:
            form.add_error("file", str(exc))
        else:
            messages.success(request, f"Imported {count} item{'s' if count != 1 else ''}.")
            return redirect("probes:detail", project_uuid=project_uuid, probe_uuid=probe.uuid)
    return render(request, "probes/detail.html", _detail_context(membership, probe, import_form=form), status=400)


@login_required
@require_POST
def probe_edit(request: HttpRequest, project_uuid: UUID, probe_uuid: UUID) -> HttpResponse:
    """Rename the probe or change its description."""
    membership = writer_or_403(request, project_uuid)
    probe = _probe(membership, probe_uuid)
    form = ProbeForm(request.POST, instance=copy.copy(probe))  # the page shows the saved name until it saves
    if form.is_valid():
        try:
            services.probe_edit(probe=probe, user=request.user, **form.cleaned_data)
        except ValidationError as exc:
            _add_errors(form, exc)
        else:
            messages.success(request, f"Probe “{probe.name}” saved.")
            return redirect("probes:detail", project_uuid=project_uuid, probe_uuid=probe.uuid)
    probe.refresh_from_db()
    return render(request, "probes/detail.html", _detail_context(membership, probe, edit_form=form), status=400)


@login_required
@require_POST
def probe_delete(request: HttpRequest, project_uuid: UUID, probe_uuid: UUID) -> HttpResponse:
    """Move the probe to the project's trash, where an owner can restore it."""
    membership = writer_or_403(request, project_uuid)
    probe = _probe(membership, probe_uuid)
    try:
        services.probe_trash(probe=probe, user=request.user)
    except ValidationError as exc:
        messages.error(request, _errors(exc))
        return redirect("probes:detail", project_uuid=project_uuid, probe_uuid=probe.uuid)
    messages.success(request, f"Probe “{probe.name}” moved to the trash, with its items, conditions and answers.")
    return redirect("probes:list", project_uuid=project_uuid)


@login_required
@require_POST
def probe_setup(request: HttpRequest, project_uuid: UUID, probe_uuid: UUID) -> HttpResponse:
    """Choose the models, repetitions and answers at once."""
    membership = writer_or_403(request, project_uuid)
    probe = _probe(membership, probe_uuid)
    form = SetupForm(request.POST, probe=probe)
    if form.is_valid():
        try:
            services.probe_configure(probe=probe, participants=list(form.cleaned_data["participants"]),
                                     repetitions=form.cleaned_data["repetitions"], concurrency=form.cleaned_data["concurrency"])
        except ValidationError as exc:
            form.add_error(None, _errors(exc))
        else:
            return redirect("probes:detail", project_uuid=project_uuid, probe_uuid=probe.uuid)
    return render(request, "probes/detail.html", _detail_context(membership, probe, setup=form), status=400)


@login_required
@require_http_methods(["GET", "POST"])
def condition_edit(request: HttpRequest, project_uuid: UUID, probe_uuid: UUID, condition_uuid: UUID | None = None) -> HttpResponse:
    """Create a condition, or save an edit as its next version."""
    membership = member_or_404(request, project_uuid)
    probe = _probe(membership, probe_uuid)
    condition = get_object_or_404(Condition, probe=probe, uuid=condition_uuid) if condition_uuid else None
    latest = condition.versions.order_by("-number").first() if condition else None
    form = ConditionForm(initial=ConditionForm.initial_from(latest) if latest else None)
    if request.method == "POST":
        writer_or_403(request, project_uuid)
        form = ConditionForm(request.POST)
        if form.is_valid():
            try:
                services.condition_save(probe=probe, condition=condition, user=request.user, name=form.cleaned_data["name"],
                                        **form.version_fields())
            except ValidationError as exc:
                _add_errors(form, exc)
            else:
                return redirect("probes:detail", project_uuid=project_uuid, probe_uuid=probe.uuid)
    versions = (condition.versions.select_related("created_by").annotate(answer_count=Count("answers")).order_by("-number")
                if condition else [])
    context = _context(membership, probe=probe, condition=condition, latest=latest, form=form, versions=versions)
    return render(request, "probes/condition_form.html", context, status=400 if form.errors else 200)


@login_required
@require_POST
def condition_delete(request: HttpRequest, project_uuid: UUID, probe_uuid: UUID, condition_uuid: UUID) -> HttpResponse:
    """Delete a condition that has no answers yet."""
    membership = writer_or_403(request, project_uuid)
    condition = _condition(membership, probe_uuid, condition_uuid)
    try:
        services.condition_delete(condition=condition, user=request.user)
    except ValidationError as exc:
        messages.error(request, _errors(exc))
    else:
        messages.success(request, f"Condition “{condition.name}” deleted.")
    return redirect("probes:detail", project_uuid=project_uuid, probe_uuid=probe_uuid)


def _add_errors(form: ConditionForm | ProbeForm, exc: ValidationError) -> None:
    if hasattr(exc, "error_dict"):
        for field, errors in exc.message_dict.items():
            form.add_error(field if field in form.fields else None, errors)
    else:
        form.add_error(None, _errors(exc))


@login_required
@require_POST
def dry_run(request: HttpRequest, project_uuid: UUID, probe_uuid: UUID) -> HttpResponse:
    """Ask the first model about three items under each condition and show requests and parses; stores nothing."""
    membership = writer_or_403(request, project_uuid)
    probe = _probe(membership, probe_uuid)
    context = _context(membership, probe=probe, results=probe_dry_run(probe=probe), estimate=token_estimate(probe))
    return render(request, "probes/_dry_run.html", context)


@login_required
@require_POST
def run_start(request: HttpRequest, project_uuid: UUID, probe_uuid: UUID) -> HttpResponse:
    """Start the run, or resume it: only answers not yet finished (or not yet created) are asked."""
    membership = writer_or_403(request, project_uuid)
    probe = _probe(membership, probe_uuid)
    try:
        started = services.run_start(probe=probe, retry_failed=request.POST.get("retry_failed") == "1")
    except services.RunNotReady as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, started.message)
    return redirect("probes:detail", project_uuid=project_uuid, probe_uuid=probe.uuid)


@login_required
@require_POST
def run_cancel(request: HttpRequest, project_uuid: UUID, probe_uuid: UUID) -> HttpResponse:
    membership = writer_or_403(request, project_uuid)
    probe = _probe(membership, probe_uuid)
    if probe.run_state != Probe.RunState.RUNNING:
        messages.info(request, "This probe was not running: there was nothing to cancel.")
        return redirect("probes:detail", project_uuid=project_uuid, probe_uuid=probe.uuid)
    services.run_cancel(probe=probe)
    messages.success(request, "Run cancelled: answers already asked are kept; Run again resumes the rest.")
    return redirect("probes:detail", project_uuid=project_uuid, probe_uuid=probe.uuid)


@login_required
@require_POST
def condition_reparse(request: HttpRequest, project_uuid: UUID, probe_uuid: UUID, condition_uuid: UUID) -> HttpResponse:
    """Parse the condition's answers again with its latest version (after fixing labels, keys or schema)."""
    membership = writer_or_403(request, project_uuid)
    condition = _condition(membership, probe_uuid, condition_uuid)
    counts = services.answers_reparse(condition=condition)
    stopped = (f", {counts['stopped']} from a pipeline that stopped early marked failed, to be asked again"
               if counts["stopped"] else "")
    messages.success(request, f"Re-parsed {condition.name}: {counts['done']} parsed, {counts['unparsed']} still unparsed"
                              f"{stopped}.")
    return redirect("probes:results", project_uuid=project_uuid, probe_uuid=probe_uuid)


@login_required
@require_GET
def results(request: HttpRequest, project_uuid: UUID, probe_uuid: UUID) -> HttpResponse:
    """Table 1: per condition × model and ground-truth group, with subsets by the categories cited."""
    membership = member_or_404(request, project_uuid)
    probe = _probe(membership, probe_uuid)
    scores = scores_from_query(probe, request.GET)
    unparsed = Answer.objects.for_probe(probe).filter(status__in=(Answer.Status.UNPARSED, Answer.Status.FAILED))[:UNPARSED_SHOWN]
    context = _context(
        membership, probe=probe, scores=scores, paper=paper_table(scores, request.GET.get("rate", "")),
        categories=categories_cited(probe), chosen=scores.chosen, truth=scores.truth_column, unparsed=unparsed,
        conditions=probe.conditions.order_by("name"), paper_formats=PAPER_FORMATS,
        none_meanings=NONE_MEANINGS.items(),
    )
    return render(request, "probes/results.html", context)


@login_required
@require_POST
def condition_to_interviews(request: HttpRequest, project_uuid: UUID, probe_uuid: UUID, condition_uuid: UUID) -> HttpResponse:
    """Make the condition's rationales interviews of the project, to code and theme them."""
    membership = writer_or_403(request, project_uuid)
    condition = _condition(membership, probe_uuid, condition_uuid)
    created = services.condition_to_interviews(condition=condition, user=request.user)
    messages.success(request, f"{created} interview{'s' if created != 1 else ''} made from the rationales of {condition.name}.")
    return redirect("probes:results", project_uuid=project_uuid, probe_uuid=probe_uuid)


@login_required
@require_GET
def answer_detail(request: HttpRequest, project_uuid: UUID, probe_uuid: UUID, answer_uuid: UUID) -> HttpResponse:
    """One answer with its item, parsed fields and full provenance (every request, raw response, attempts)."""
    membership = member_or_404(request, project_uuid)
    answer = get_object_or_404(
        Answer.objects.select_related("item__probe", "condition", "condition_version", "participant"),
        item__probe__project=membership.project, item__probe__uuid=probe_uuid, item__probe__deleted_at__isnull=True,
        uuid=answer_uuid,
    )
    steps = answer.provenance.get("pipeline") or ([answer.provenance] if answer.provenance else [])
    context = _context(membership, probe=answer.item.probe, answer=answer, steps=steps)
    return render(request, "probes/answer.html", context)
