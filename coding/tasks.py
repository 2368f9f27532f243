"""Background work for coding: the AI second reader's windows run in the Celery worker."""

from __future__ import annotations

from celery import shared_task


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def reader_window_task(run_id: int, window: int) -> str:
    """Ask the second reader about one window of a run (idempotent: kept steps and suggestions are reused)."""
    from coding.reader import window_run

    return window_run(run_id, window)
