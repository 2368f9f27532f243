"""Background work for coding: the AI second reader's windows run in the Celery worker."""

from __future__ import annotations

import logging

from celery import shared_task
from celery.signals import worker_ready

log = logging.getLogger(__name__)


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def reader_window_task(run_id: int, window: int) -> str:
    """Ask the second reader about one window of a run (idempotent: kept steps and suggestions are reused)."""
    from coding.reader import window_run

    return window_run(run_id, window)


@worker_ready.connect
def _resume_reader_runs(sender=None, **kwargs) -> None:
    """A worker (re)starts: windows its previous life held would wait for the broker's visibility timeout; send them now."""
    from coding.reader import reader_runs_resume

    try:
        sent = reader_runs_resume()
    except Exception:  # a resume must never stop the worker from starting
        log.exception("resuming AI second reader runs failed")
        return
    if sent:
        log.warning("Resumed AI second reader runs: %s windows sent again", sent)
