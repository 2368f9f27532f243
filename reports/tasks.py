"""Background work for reports: large exports are written here, in the Celery worker."""

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
