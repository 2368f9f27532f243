"""Exchange pages: REFI-QDA (.qdpx) export and import, project backup download and restore."""

from __future__ import annotations

import tempfile

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

import refiqda
from projects.permissions import member_or_404, owner_or_403
from reports.backup import BackupError, backup_filename, project_backup, project_restore
from reports.exchange import project_export_qdpx, project_import_qdpx


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


@login_required
@require_GET
def exchange(request: HttpRequest, project_uuid) -> HttpResponse:
    """Downloads for one project: .qdpx for other QDA tools, and (owners) a full backup."""
    membership = member_or_404(request, project_uuid)
    return render(request, "reports/exchange.html", {
        "project": membership.project, "membership": membership, "nav": "reports", "form": QdpxExportForm()})


@login_required
@require_GET
def export_qdpx(request: HttpRequest, project_uuid) -> HttpResponse:
    membership = member_or_404(request, project_uuid)
    form = QdpxExportForm(request.GET)
    positions = form.cleaned_data["positions"] if form.is_valid() else "codepoints"
    # A spooled file keeps small exports in memory and large ones on disk.
    out = tempfile.SpooledTemporaryFile(max_size=16 * 1024 * 1024)
    project_export_qdpx(project=membership.project, out=out, positions=positions)
    out.seek(0)
    name = _safe_name(membership.project.name) + (".nvivo" if positions == "utf16" else "") + ".qdpx"
    return FileResponse(out, as_attachment=True, filename=name, content_type="application/zip")


@login_required
@require_GET
def download_backup(request: HttpRequest, project_uuid) -> HttpResponse:
    membership = owner_or_403(request, project_uuid)
    out = tempfile.SpooledTemporaryFile(max_size=16 * 1024 * 1024)
    project_backup(project=membership.project, out=out)
    out.seek(0)
    return FileResponse(out, as_attachment=True, filename=backup_filename(membership.project), content_type="application/zip")


@login_required
@require_http_methods(["GET", "POST"])
def import_project(request: HttpRequest) -> HttpResponse:
    """Bring a project in: a .qdpx from another tool or an RTA Studio backup, each into a new project."""
    qdpx_form, restore_form = QdpxImportForm(prefix="qdpx"), RestoreForm(prefix="restore")
    kind = request.POST.get("kind")
    if request.method == "POST" and kind == "qdpx":
        qdpx_form = QdpxImportForm(request.POST, request.FILES, prefix="qdpx")
        if qdpx_form.is_valid() and (project := _import_qdpx(request, qdpx_form)):
            return redirect("project_home", project.uuid)
    elif request.method == "POST" and kind == "restore":
        restore_form = RestoreForm(request.POST, request.FILES, prefix="restore")
        if restore_form.is_valid() and (project := _restore(request, restore_form)):
            return redirect("project_home", project.uuid)
    # A refused upload re-renders the page with the reason beside the field (200, like any form error).
    return render(request, "reports/exchange_import.html", {"qdpx_form": qdpx_form, "restore_form": restore_form})


def _import_qdpx(request: HttpRequest, form: QdpxImportForm):
    upload = form.cleaned_data["file"]
    try:
        result = project_import_qdpx(source=upload.file, owner=request.user, filename=upload.name,
                                     name=form.cleaned_data["project_name"])
    except refiqda.QdpxError as exc:
        form.add_error("file", f"This file cannot be imported: {exc}")
        return None
    messages.success(request, f"Imported {result.interviews} interviews, {result.codes} codes, {result.codings} codings, "
                              f"{result.themes} themes and {result.memos} memos.")
    _warn(request, result.warnings)
    return result.project


def _restore(request: HttpRequest, form: RestoreForm):
    upload = form.cleaned_data["file"]
    try:
        result = project_restore(source=upload.file, owner=request.user, filename=upload.name,
                                 name=form.cleaned_data["project_name"])
    except BackupError as exc:
        form.add_error("file", f"This backup cannot be restored: {exc}")
        return None
    messages.success(request, f"Restored “{result.project.name}” ({sum(result.counts.values())} records).")
    _warn(request, result.warnings)
    return result.project


def _warn(request: HttpRequest, warnings: list[str]) -> None:
    for warning in warnings[:20]:
        messages.warning(request, warning)
    if len(warnings) > 20:
        messages.warning(request, f"… and {len(warnings) - 20} more notes like these.")


def _safe_name(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_ " else "-" for ch in name).strip()[:80] or "project"
