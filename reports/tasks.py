"""Background work for reports: large exports are written here, and projects are imported, in the Celery worker."""

from __future__ import annotations

from celery import shared_task


@shared_task(acks_late=True, reject_on_worker_lost=True)
def export_excerpts_task(job_id: int) -> None:
    """Write an excerpt-table export; running it twice leaves one finished file."""
    from reports.exports import exportjob_run

    exportjob_run(job_id=job_id)


@shared_task(acks_late=True, reject_on_worker_lost=True)
def export_project_task(job_id: int) -> None:
    """Write a whole-project export (.qdpx or backup); running it twice leaves one finished file."""
    from reports.exports import exportjob_run

    exportjob_run(job_id=job_id)


@shared_task(acks_late=True, reject_on_worker_lost=True)
def project_import_task(job_id: int) -> None:
    """Read a backup or .qdpx for its people step, or import it as a new project; running it twice makes one."""
    from reports.imports import projectimport_run

    projectimport_run(job_id=job_id)
