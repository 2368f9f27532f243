"""Import pages: upload → choose conversations, speakers and participant → progress → summary."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from interviews.models import ImportJob, Interview, Participant
from interviews.parsers import FORMATS, NOT_A_SPEAKER, ExchangeFileError, ParseError
from interviews.services_import import (
    ImportOptions,
    ImportOptionsError,
    get_progress,
    import_limits,
    importjob_create,
    importjob_discard,
    importjob_queue,
    preview_speaker_labels,
)
from projects.jobs import job_send_again, job_sent_again_notice
from projects.permissions import member_or_404, writer_or_403
from projects.submissions import submitted_once

RECENT_JOBS = 10
# Conversations listed with a checkbox on the preview page; the rest are summed up ("and N more") and can be
# imported together, so a file of thousands of conversations never renders a page of thousands of rows.
PREVIEW_ROWS = 500
SPEAKER_CHOICES = [("interviewer", "interviewer (you)"), ("participant", "participant (the chatbot)"), ("system", "system prompt")]
# Only text and Markdown keep the lines a label starts, to fold them back into the turn before.
FOLD_CHOICE = [(NOT_A_SPEAKER, "not a speaker: part of the text")]
FORMAT_LABELS = {
    "chatgpt": "ChatGPT export (ZIP or conversations.json)",
    "claude": "Claude export (ZIP or conversations.json)",
    "openai": "OpenAI chat messages (JSON or JSONL)",
    "sharegpt": "ShareGPT (JSON or JSONL)",
    "markdown": "Markdown export (one heading per message)",
    "text": "Plain text with speaker labels",
    "csv": "CSV or Excel, one turn per row",
}


@login_required
@require_http_methods(["GET", "POST"])
@submitted_once
def import_start(request: HttpRequest, project_uuid) -> HttpResponse:
    """The upload page (GET) and the upload itself (POST, analysts and owners)."""
    membership = member_or_404(request, project_uuid)
    error = ""
    if request.method == "POST":
        membership = writer_or_403(request, project_uuid)
        fmt = request.POST.get("format", "auto")
        try:
            job = importjob_create(project=membership.project, user=request.user,
                                   uploads=request.FILES.getlist("files"), format=fmt)
        except ExchangeFileError as e:
            # A .qdpx or .qdc has its own import; guessing speakers in its XML helps no one.
            messages.info(request, str(e))
            if e.kind == "codebook":
                return redirect("coding:import", project_uuid=membership.project.uuid)
            return redirect("exchange_import")
        except (ParseError, ImportOptionsError) as e:
            error = str(e)
        else:
            return redirect("interviews:import_job", project_uuid=membership.project.uuid, job_uuid=job.uuid)
    jobs = ImportJob.objects.filter(project=membership.project).select_related("created_by").order_by("-created_at")[:RECENT_JOBS]
    return render(request, "interviews/import_start.html", {
        "project": membership.project, "membership": membership, "nav": "interviews", "error": error,
        "formats": [(f, FORMAT_LABELS.get(f, f)) for f in FORMATS], "jobs": jobs, "max_mb": import_limits().max_file_bytes // (1024 * 1024),
        "selected_format": request.POST.get("format", "auto"),
    })  # an invalid upload re-renders the form with its message, like Django's FormView


@login_required
@require_GET
def import_job(request: HttpRequest, project_uuid, job_uuid) -> HttpResponse:
    """One import: the preview form while uploaded, then progress, then the summary."""
    membership = member_or_404(request, project_uuid)
    job = get_object_or_404(ImportJob.objects.select_related("created_by"), project=membership.project, uuid=job_uuid)
    context = {"project": membership.project, "membership": membership, "nav": "interviews", "job": job,
               "progress": get_progress(job), "can_act": membership.can_write}
    if request.htmx and not request.htmx.boosted:
        if job.status == ImportJob.Status.UPLOADED:
            # The worker has read the files: reload to show the choices form.
            return HttpResponse(headers={"HX-Refresh": "true"})
        return render(request, "interviews/import_job.html#job-status", context)
    if job.status == ImportJob.Status.UPLOADED:
        context.update(_preview_context(job))
    return render(request, "interviews/import_job.html", context)


@login_required
@require_POST
def import_job_start(request: HttpRequest, project_uuid, job_uuid) -> HttpResponse:
    """Start the import with the choices made in the preview."""
    membership = writer_or_403(request, project_uuid)
    job = get_object_or_404(ImportJob, project=membership.project, uuid=job_uuid)
    url = reverse("interviews:import_job", args=[membership.project.uuid, job.uuid])
    if job.status != ImportJob.Status.UPLOADED:
        return redirect(url)  # already started: a double submit changes nothing
    try:
        importjob_queue(job=job, options=_options_from_form(request, job))
    except ImportOptionsError as e:
        context = {"project": membership.project, "membership": membership, "nav": "interviews", "job": job,
                   "progress": get_progress(job), "error": str(e), **_preview_context(job, request.POST)}
        return render(request, "interviews/import_job.html", context)
    return redirect(url)


@login_required
@require_POST
def import_job_discard(request: HttpRequest, project_uuid, job_uuid) -> HttpResponse:
    """Throw away an upload before importing it."""
    membership = writer_or_403(request, project_uuid)
    job = get_object_or_404(ImportJob, project=membership.project, uuid=job_uuid)
    try:
        importjob_discard(job=job)
    except ImportOptionsError as e:
        messages.error(request, str(e))
        return redirect("interviews:import_job", project_uuid=membership.project.uuid, job_uuid=job.uuid)
    messages.success(request, "The upload was discarded; nothing was imported.")
    return redirect("interviews:import_start", project_uuid=membership.project.uuid)


@login_required
@require_POST
def import_job_send_again(request: HttpRequest, project_uuid, job_uuid) -> HttpResponse:
    """Send an import that still waits for the worker again (the sweeper does too, every minute)."""
    membership = writer_or_403(request, project_uuid)
    job = get_object_or_404(ImportJob, project=membership.project, uuid=job_uuid)
    try:
        sent = job_send_again(job=job)
    except ValidationError as e:
        messages.error(request, " ".join(e.messages))
    else:
        job_sent_again_notice(request, sent)
    return redirect("interviews:import_job", project_uuid=membership.project.uuid, job_uuid=job.uuid)


def _label_groups(job: ImportJob) -> list[dict]:
    """Per source file with speaker labels: its labels and the guessed speaker of each."""
    return [{"index": gi, "source": source, "choices": SPEAKER_CHOICES + (FOLD_CHOICE if foldable else []),
             "labels": [{"index": li, "label": lab, "guess": guess} for li, (lab, guess) in enumerate(labels.items())]}
            for gi, (source, labels, foldable) in enumerate(preview_speaker_labels(job))]


def _conversations(job: ImportJob) -> list[dict]:
    return [c for f in job.preview.get("files", []) for c in f["conversations"]]


def _preview_context(job: ImportJob, posted=None) -> dict:
    """The preview's choices: as guessed, or as `posted` when the form comes back with an error."""
    posted = posted if posted is not None else {}
    conversations = _conversations(job)
    shown = conversations[:PREVIEW_ROWS]
    ticked = set(posted.getlist("conversations")) if posted else {
        c["key"] for c in shown if not c.get("duplicate_of")}
    groups = _label_groups(job)
    for group in groups:
        for item in group["labels"]:
            item["chosen"] = posted.get(f"label-{group['index']}-{item['index']}", item["guess"])
    return {
        "files": job.preview.get("files", []),
        "conversations": shown,
        "found": len(conversations),
        "unlisted": len(conversations) - len(shown),
        "unlisted_chosen": bool(posted.get("unlisted")) if posted else True,
        "empty": sum(f.get("empty", 0) for f in job.preview.get("files", [])),
        "ticked": ticked,
        "label_groups": groups,
        "participants": Participant.objects.filter(project_id=job.project_id).only("uuid", "label", "model_id"),
        "depths": Interview.Depth.choices,
        "chosen": {"participant": posted.get("participant", "auto"), "new_participant": posted.get("new_participant", ""),
                   "depth": posted.get("depth", Interview.Depth.COMPREHENSIVE)},
    }


def _options_from_form(request: HttpRequest, job: ImportJob) -> ImportOptions:
    post = request.POST
    label_maps: dict[str, dict[str, str]] = {}
    for group in _label_groups(job):
        for item in group["labels"]:
            value = post.get(f"label-{group['index']}-{item['index']}", item["guess"])
            label_maps.setdefault(group["source"], {})[item["label"]] = value
    participant = post.get("participant", "auto")
    if participant == "new":
        participant = "new:" + post.get("new_participant", "").strip()
    selected = set(post.getlist("conversations"))
    if post.get("unlisted"):
        selected |= {c["key"] for c in _conversations(job)[PREVIEW_ROWS:] if not c.get("duplicate_of")}
    return ImportOptions(
        selected=selected, label_maps=label_maps, participant=participant,
        depth=post.get("depth", Interview.Depth.COMPREHENSIVE), allow_duplicates=True,
    )
