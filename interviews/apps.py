from __future__ import annotations

from django.apps import AppConfig


class InterviewsConfig(AppConfig):
    name = "interviews"
    verbose_name = "Interviews"

    def ready(self) -> None:
        # Deleted interviews go to the project trash (projects/trash.py).
        from projects.trash import trash_register

        trash_register("interview", "interviews.Interview", title_field="title")
        _register_import_jobs()


def _register_import_jobs() -> None:
    from interviews.models import ImportJob
    from interviews.tasks import import_batch_task, import_preview_task
    from projects.jobs import job_kind_register, send

    def send_import(job: ImportJob) -> None:
        send(import_preview_task if job.status == ImportJob.Status.ANALYSING else import_batch_task, job.pk)

    job_kind_register(ImportJob, name="import", send=send_import,
                      waiting=lambda: ImportJob.objects.filter(status__in=ImportJob.WAITING))
