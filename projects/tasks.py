"""Background work of the projects app: the sweeper that re-sends jobs the broker never got."""

from __future__ import annotations

from celery import shared_task


@shared_task(ignore_result=True)
def resend_waiting_jobs_task() -> int:
    """Send again every job still waiting for the worker a minute after its last send (run by Celery beat)."""
    from projects.jobs import jobs_resend

    return jobs_resend()


@shared_task(ignore_result=True)
def delete_expired_blobs_task() -> int:
    """Remove stored job files past their expiry: abandoned uploads, old exports (run by Celery beat)."""
    from projects.blobs import blobs_delete_expired

    return blobs_delete_expired()
