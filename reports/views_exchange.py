"""Exchange pages: REFI-QDA (.qdpx) export and import, project backup download and restore."""

from __future__ import annotations

import tempfile
import uuid
from datetime import timedelta
from urllib.parse import urlencode

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

import refiqda
from projects.blobs import blob_create, blob_open, blobs_delete
from projects.models import StoredBlob
from projects.permissions import member_or_404, owner_or_403
from reports.backup import (
    BackupError,
    BackupPerson,
    backup_filename,
    backup_people,
    project_backup,
    project_restore,
    restore_accounts,
)
from reports.exchange import project_export_qdpx, project_import_qdpx, qdpx_people, qdpx_read
from reports.exports import exportjob_create_archive, project_export_in_worker, qdpx_filename
from reports.models import ExportJob

PENDING_UPLOAD = timedelta(hours=24)  # an upload waiting for its people step is removed after this


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
def import_project(request: HttpRequest) -> HttpResponse:
    """Bring a project in: a .qdpx from another tool or an RTA Studio backup, each into a new project."""
    qdpx_form, restore_form = QdpxImportForm(prefix="qdpx"), RestoreForm(prefix="restore")
    kind = request.POST.get("kind")
    if request.method == "POST" and kind == "qdpx":
        qdpx_form = QdpxImportForm(request.POST, request.FILES, prefix="qdpx")
        if qdpx_form.is_valid() and (next_step := _read_qdpx(request, qdpx_form)):
            return redirect(next_step)
    elif request.method == "POST" and kind == "restore":
        restore_form = RestoreForm(request.POST, request.FILES, prefix="restore")
        if restore_form.is_valid() and (next_step := _keep_for_restore(request, restore_form)):
            return redirect(next_step)
    # A refused upload re-renders the page with the reason beside the field (200, like any form error).
    return render(request, "reports/exchange_import.html", {"qdpx_form": qdpx_form, "restore_form": restore_form})


def _read_qdpx(request: HttpRequest, form: QdpxImportForm) -> str | None:
    """Check the .qdpx; import it now when it names nobody to map, else keep it for the people step.

    Returns the next page's URL (None: refused, with the reason beside the field).
    """
    upload = form.cleaned_data["file"]
    try:
        qp = qdpx_read(upload.file, filename=upload.name)
        people = qdpx_people(qp, upload.name)
    except refiqda.QdpxError as exc:
        form.add_error("file", f"This file cannot be imported: {exc}")
        return None
    if all(p.is_named(request.user.username) for p in people):
        return _import_qdpx(request, source=qp, filename=upload.name, name=form.cleaned_data["project_name"], form=form)
    token = _keep_upload(request.user, upload)
    query = urlencode({"name": form.cleaned_data["project_name"]})
    return reverse("exchange_qdpx_people", args=[token]) + "?" + query


def _import_qdpx(request: HttpRequest, *, source, filename: str, name: str, form: forms.Form,
                 people: dict | None = None, members: str = "me") -> str | None:
    try:
        result = project_import_qdpx(source=source, owner=request.user, filename=filename, name=name, people=people,
                                     members=members)
    except refiqda.QdpxError as exc:
        form.add_error("file" if "file" in form.fields else None, f"This file cannot be imported: {exc}")
        return None
    messages.success(request, f"Imported {result.summary}.")
    _warn(request, result.warnings)
    return reverse("project_home", args=[result.project.uuid])


def _pending(user, token: uuid.UUID) -> StoredBlob | None:
    # Only the uploader's own: nobody else can import (or even find) someone's pending upload.
    return StoredBlob.objects.filter(uuid=token, created_by=user, expires_at__gt=timezone.now()).first()


def _keep_upload(user, upload) -> uuid.UUID:
    """Keep a checked upload for its people step (in PostgreSQL: the next request may reach another machine);
    returns the token naming it. An abandoned one is removed by the hourly sweep once it expires."""
    return blob_create(source=upload, name=upload.name, user=user, keep=PENDING_UPLOAD).uuid


def _keep_for_restore(request: HttpRequest, form: RestoreForm) -> str | None:
    """Check the backup, keep it for the people step, and return that step's URL (None: refused)."""
    upload = form.cleaned_data["file"]
    try:
        backup_people(source=upload.file, filename=upload.name)
    except BackupError as exc:
        form.add_error("file", f"This backup cannot be restored: {exc}")
        return None
    token = _keep_upload(request.user, upload)
    query = urlencode({"name": form.cleaned_data["project_name"]})
    return reverse("exchange_restore_people", args=[token]) + "?" + query


def _people_form(request: HttpRequest, people: list[BackupPerson], kind: str) -> PeopleForm:
    return PeopleForm(request.POST or None, people=people, accounts=restore_accounts(request.user), kind=kind,
                      restorer=request.user, initial={"project_name": request.GET.get("name", "")})


def _gone(request: HttpRequest, why: str = "That upload is no longer waiting to be imported") -> HttpResponse:
    messages.error(request, f"{why}; choose the file again.")
    return redirect("exchange_import")


@login_required
@require_http_methods(["GET", "POST"])
def restore_people(request: HttpRequest, token: uuid.UUID) -> HttpResponse:
    """Step two of a restore: map each person of the backup to an account you share a project with, or keep
    them as a name only; then restore. A restore never creates accounts."""
    pending = _pending(request.user, token)
    if pending is None:
        return _gone(request)
    filename = pending.name
    try:
        people = backup_people(source=blob_open(pending), filename=filename)
    except BackupError as exc:  # not an upload kept by the restore's first step: another file of this user's
        return _gone(request, f"This file cannot be restored: {exc}")
    form = _people_form(request, people, "restore")
    if request.method == "POST" and form.is_valid():
        try:
            result = project_restore(source=blob_open(pending), owner=request.user, filename=filename,
                                     name=form.cleaned_data["project_name"], people=form.mapping(),
                                     members="all" if form.cleaned_data["members"] else "me")
        except BackupError as exc:
            form.add_error(None, f"This backup cannot be restored: {exc}")
        else:
            blobs_delete([pending.uuid])
            messages.success(request, f"Restored “{result.project.name}” ({sum(result.counts.values())} records).")
            _warn(request, result.warnings)
            return redirect("project_home", result.project.uuid)
    return render(request, "reports/import_people.html", {"form": form, "filename": filename, "kind": "restore"},
                  status=400 if form.errors else 200)


@login_required
@require_http_methods(["GET", "POST"])
def qdpx_people_step(request: HttpRequest, token: uuid.UUID) -> HttpResponse:
    """Step two of a .qdpx import: map each coder of the file to an account you share a project with, or keep
    them as a name only (their codings become yours, with their name kept); then import. Never creates accounts."""
    pending = _pending(request.user, token)
    if pending is None:
        return _gone(request)
    filename = pending.name
    try:
        qp = qdpx_read(blob_open(pending), filename=filename)
        people = qdpx_people(qp, filename)
    except refiqda.QdpxError as exc:  # not an upload kept by the import's first step: another file of this user's
        return _gone(request, f"This file cannot be imported: {exc}")
    form = _people_form(request, people, "qdpx")
    if request.method == "POST" and form.is_valid():
        members = "all" if form.cleaned_data["members"] else "me"
        if done := _import_qdpx(request, source=qp, filename=filename, name=form.cleaned_data["project_name"],
                                form=form, people=form.mapping(), members=members):
            blobs_delete([pending.uuid])
            return redirect(done)
    return render(request, "reports/import_people.html", {"form": form, "filename": filename, "kind": "qdpx"},
                  status=400 if form.errors else 200)


def _warn(request: HttpRequest, warnings: list[str]) -> None:
    for warning in warnings[:20]:
        messages.warning(request, warning)
    if len(warnings) > 20:
        messages.warning(request, f"… and {len(warnings) - 20} more notes like these.")
