"""Exchange pages: REFI-QDA (.qdpx) export and import, project backup download and restore."""

from __future__ import annotations

import tempfile
import uuid

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import FileResponse, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from projects.jobs import job_send_again, job_sent_again_notice
from projects.permissions import member_or_404, owner_or_403
from projects.submissions import submitted_once
from reports.backup import BackupPerson, backup_filename, project_backup, restore_accounts
from reports.exchange import project_export_qdpx
from reports.exports import exportjob_create_archive, project_export_in_worker, qdpx_filename
from reports.imports import import_progress, job_people, projectimport_create, projectimport_discard, projectimport_queue
from reports.models import ExportJob, ProjectImportJob


class QdpxExportForm(forms.Form):
    positions = forms.ChoiceField(
        choices=[("codepoints", "Standard (Unicode code points) — ATLAS.ti, MAXQDA, QualCoder"),
                 ("utf16", "NVivo-compatible (UTF-16 positions)")],
        initial="codepoints", widget=forms.RadioSelect, label="Character positions")


class _UploadForm(forms.Form):
    extensions: tuple[str, ...] = ()

    def clean_file(self):
        f = self.cleaned_data["file"]
        limit = settings.RTA_MAX_UPLOAD_BYTES
        if f.size > limit:
            raise forms.ValidationError(f"The file is {f.size / 1e6:.0f} MB; the limit is {limit / 1e6:.0f} MB.")
        if not f.name.lower().endswith(self.extensions):
            raise forms.ValidationError(f"Choose a {' or '.join(self.extensions)} file (this one is called {f.name}).")
        return f


class QdpxImportForm(_UploadForm):
    extensions = (".qdpx",)
    file = forms.FileField(label="REFI-QDA project (.qdpx)",
                           help_text="Exported from NVivo, ATLAS.ti, MAXQDA, QualCoder or RTA Studio.")
    project_name = forms.CharField(max_length=200, required=False, label="Name of the new project",
                                   help_text="Leave empty to use the name stored in the file.")


class RestoreForm(_UploadForm):
    extensions = (".zip",)
    file = forms.FileField(label="Project backup (.zip)", help_text="A backup downloaded from RTA Studio.")
    project_name = forms.CharField(max_length=200, required=False, label="Name of the new project",
                                   help_text="Leave empty to keep the backed-up project's name.")


UPLOAD_FORMS: dict[str, type[_UploadForm]] = {ProjectImportJob.Kind.QDPX: QdpxImportForm,
                                              ProjectImportJob.Kind.RESTORE: RestoreForm}
NAME_ONLY = ""


class PeopleForm(forms.Form):
    """Step two of a restore or a .qdpx import: who each person the file names is here. Nobody gets an account
    made for them: each is mapped to an account the importer chooses, or kept as a name only."""

    project_name = forms.CharField(max_length=200, required=False, label="Name of the new project",
                                   help_text="Leave empty to keep the name stored in the file.")
    members = forms.BooleanField(required=False, label="Give the people you map their roles from the backup",
                                 help_text="Otherwise only you get access; add your team from the Team page.")

    def __init__(self, *args, people: list[BackupPerson], accounts: list, restorer, kind: str = "restore",
                 **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.people, self.accounts = people, {str(a.pk): a for a in accounts}
        if kind == "qdpx":
            self.fields["members"].label = "Make the people you map analysts of the new project"
        name_only = "Keep as a name only" + (" (their codings become yours)" if kind == "qdpx" else "")
        options = [(pk, f"{a.username} ({a.get_full_name()})" if a.get_full_name() else a.username)
                   for pk, a in self.accounts.items()]
        for i, person in enumerate(people):
            first = ("", "— choose an account (their codings need one) —") if person.needs_account else (NAME_ONLY, name_only)
            self.fields[f"person-{i}"] = forms.ChoiceField(
                choices=[first, *options], required=person.needs_account, label=person.username,
                initial=str(restorer.pk) if person.is_named(restorer.username) else NAME_ONLY,
                help_text=person.summary, error_messages={"required": f"{person.username} coded segments or wrote notes: "
                                                                      "choose the account that is them here."})

    def person_fields(self) -> list[tuple[BackupPerson, forms.BoundField]]:
        return [(person, self[f"person-{i}"]) for i, person in enumerate(self.people)]

    def clean(self) -> dict:
        data = super().clean()
        by_account: dict[str, list[str]] = {}
        for i, person in enumerate(self.people):
            if chosen := data.get(f"person-{i}"):
                by_account.setdefault(chosen, []).append(person.username)
        for pk, names in by_account.items():
            if len(names) > 1:
                raise forms.ValidationError(f"{' and '.join(names)} are all mapped to {self.accounts[pk].username}; "
                                            "each account can stand for one person of the backup.")
        return data

    def mapping(self) -> dict[str, object]:
        return {person.key: self.accounts[chosen] for i, person in enumerate(self.people)
                if (chosen := self.cleaned_data.get(f"person-{i}"))}


@login_required
@require_GET
def exchange(request: HttpRequest, project_uuid) -> HttpResponse:
    """Downloads for one project: .qdpx for other QDA tools, and (owners) a full backup."""
    membership = member_or_404(request, project_uuid)
    return render(request, "reports/exchange.html", {
        "project": membership.project, "membership": membership, "nav": "reports", "form": QdpxExportForm()})


@login_required
@require_POST
def export_qdpx(request: HttpRequest, project_uuid) -> HttpResponse:
    """The project as a .qdpx: downloaded now when small, written by the worker (progress page) when large."""
    membership = member_or_404(request, project_uuid)
    project = membership.project
    form = QdpxExportForm(request.POST)
    positions = form.cleaned_data["positions"] if form.is_valid() else "codepoints"
    if project_export_in_worker(project):
        job = exportjob_create_archive(project=project, user=request.user, kind=ExportJob.Kind.QDPX, positions=positions)
        return redirect("reports:export_job", project_uuid=project.uuid, job_uuid=job.uuid)
    # A spooled file keeps small exports in memory and large ones on disk.
    out = tempfile.SpooledTemporaryFile(max_size=16 * 1024 * 1024)
    project_export_qdpx(project=project, out=out, positions=positions)
    out.seek(0)
    return FileResponse(out, as_attachment=True, filename=qdpx_filename(project, positions), content_type="application/zip")


@login_required
@require_POST
def download_backup(request: HttpRequest, project_uuid) -> HttpResponse:
    """The project's backup (owners): downloaded now when small, written by the worker (progress page) when large."""
    membership = owner_or_403(request, project_uuid)
    project = membership.project
    if project_export_in_worker(project):
        job = exportjob_create_archive(project=project, user=request.user, kind=ExportJob.Kind.BACKUP)
        return redirect("reports:export_job", project_uuid=project.uuid, job_uuid=job.uuid)
    out = tempfile.SpooledTemporaryFile(max_size=16 * 1024 * 1024)
    project_backup(project=project, out=out)
    out.seek(0)
    return FileResponse(out, as_attachment=True, filename=backup_filename(project), content_type="application/zip")


@login_required
@require_http_methods(["GET", "POST"])
@submitted_once
def import_project(request: HttpRequest) -> HttpResponse:
    """Bring a project in: a .qdpx from another tool or an RTA Studio backup, each into a new project. The upload
    is kept and handed to the worker, which reads it; its page follows the job."""
    forms_by_kind = {kind: form_class(prefix=kind) for kind, form_class in UPLOAD_FORMS.items()}
    kind = request.POST.get("kind", "")
    if request.method == "POST" and kind in UPLOAD_FORMS:
        form = forms_by_kind[kind] = UPLOAD_FORMS[kind](request.POST, request.FILES, prefix=kind)
        if form.is_valid():
            upload = form.cleaned_data["file"]
            job = projectimport_create(kind=kind, upload=upload, filename=upload.name, user=request.user,
                                       project_name=form.cleaned_data["project_name"])
            return redirect("exchange_import_job", job.uuid)
    # A refused upload re-renders the page with the reason beside the field (200, like any form error).
    return render(request, "reports/exchange_import.html",
                  {"qdpx_form": forms_by_kind["qdpx"], "restore_form": forms_by_kind["restore"]})


def _own_job(request: HttpRequest, job_uuid: uuid.UUID) -> ProjectImportJob:
    # Only the uploader's own: nobody else can see, map or import someone's upload (404: nor learn it exists).
    return get_object_or_404(ProjectImportJob.objects.select_related("project"), uuid=job_uuid, created_by=request.user)


@login_required
@require_http_methods(["GET", "POST"])
def import_job(request: HttpRequest, job_uuid: uuid.UUID) -> HttpResponse:
    """One import: the worker reads the file; then (POST) who is who, mapped to accounts you share a project with
    or kept as names only (never a new account); then the worker imports; then the new project, or why not."""
    job = _own_job(request, job_uuid)
    if request.method == "GET" and request.htmx and not request.htmx.boosted:
        if job.status == ProjectImportJob.Status.PEOPLE:
            return HttpResponse(headers={"HX-Refresh": "true"})  # the file is read: reload to show the people step
        return render(request, "reports/import_job.html#job-status", {"job": job, "can_act": True,
                                                                      "progress": import_progress(job)})
    if job.status != ProjectImportJob.Status.PEOPLE:
        if request.method == "POST":  # queued already: a double submit changes nothing
            return redirect("exchange_import_job", job.uuid)
        return render(request, "reports/import_job.html", {"job": job, "can_act": True, "progress": import_progress(job)})
    form = PeopleForm(request.POST or None, people=job_people(job), accounts=restore_accounts(request.user),
                      kind=job.kind, restorer=request.user, initial={"project_name": job.project_name})
    if request.method == "POST" and form.is_valid():
        projectimport_queue(job=job, people=form.mapping(), project_name=form.cleaned_data["project_name"],
                            members="all" if form.cleaned_data["members"] else "me")
        return redirect("exchange_import_job", job.uuid)
    return render(request, "reports/import_job.html", {"job": job, "form": form}, status=400 if form.errors else 200)


@login_required
@require_POST
def import_job_send_again(request: HttpRequest, job_uuid: uuid.UUID) -> HttpResponse:
    """Send an import that still waits for the worker again (the sweeper does too, every minute)."""
    job = _own_job(request, job_uuid)
    try:
        sent = job_send_again(job=job)
    except ValidationError as e:
        messages.error(request, " ".join(e.messages))
    else:
        job_sent_again_notice(request, sent)
    return redirect("exchange_import_job", job.uuid)


@login_required
@require_POST
def import_job_discard(request: HttpRequest, job_uuid: uuid.UUID) -> HttpResponse:
    """Throw away an upload before it is imported."""
    job = _own_job(request, job_uuid)
    try:
        projectimport_discard(job=job)
    except ValidationError as e:
        messages.error(request, " ".join(e.messages))
        return redirect("exchange_import_job", job.uuid)
    messages.success(request, "The upload was discarded; nothing was imported.")
    return redirect("exchange_import")
