"""Background work for interviews: imports run here, in the Celery worker."""

from __future__ import annotations

from celery import shared_task


@shared_task(acks_late=True, reject_on_worker_lost=True)
def import_batch_task(job_id: int) -> None:
    """Run an import job; a worker lost mid-import leaves nothing and the job is redelivered."""
    from interviews.services_import import importjob_run

    importjob_run(job_id=job_id)


@shared_task(acks_late=True, reject_on_worker_lost=True)
def import_preview_task(job_id: int) -> None:
    """Read a large upload and list its conversations for the user to choose from."""
    from interviews.services_import import importjob_preview

    importjob_preview(job_id=job_id)
