from __future__ import annotations

from django.apps import AppConfig


class ReportsConfig(AppConfig):
    name = "reports"
    verbose_name = "Reports"

    def ready(self) -> None:
        from projects.jobs import job_kind_register, send
        from reports.models import ExportJob, ProjectImportJob
        from reports.tasks import export_excerpts_task, project_import_task

        job_kind_register(ExportJob, name="export", send=lambda job: send(export_excerpts_task, job.pk),
                          waiting=lambda: ExportJob.objects.filter(status=ExportJob.Status.QUEUED))
        job_kind_register(ProjectImportJob, name="project import", send=lambda job: send(project_import_task, job.pk),
                          waiting=lambda: ProjectImportJob.objects.filter(status__in=ProjectImportJob.WAITING))
