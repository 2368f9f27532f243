"""Celery tasks of the probes app: one task per answer, and resuming runs when a worker starts."""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

from celery import shared_task
from celery.signals import worker_ready
from django.conf import settings
from django.db import OperationalError, connections

from conduct.tasks import endpoint_queue
from projects.jobs import send_or_keep

log = logging.getLogger(__name__)


@shared_task(bind=True, acks_late=True, ignore_result=True)
def probe_answer_task(self, answer_id: int) -> str:
    """Ask for one probe answer (idempotent: claims the row first, a second delivery is skipped)."""
    from probes.running import answer_run

    return answer_run(answer_id, worker=self.request.hostname or "")


def enqueue_answers(answer_ids: list[int]) -> None:
    """Send answers to the worker; without a broker (laptop mode) each runs in a thread of a bounded pool.

    Run inline, every finished answer would pump the next from inside the previous one's call. The pool is
    bounded like a worker's: a finished answer's thread may wait for the probe's lock to pump while the next
    answers already run, and unbounded threads (each with a database connection) would pile up there.
    """
    from config.celery import app

    for answer_id in answer_ids:
        if app.conf.task_always_eager and getattr(settings, "PROBES_EAGER_IN_THREAD", True):
            _in_process_pool().submit(_run_in_thread, answer_id)
        else:
            send_or_keep(probe_answer_task, answer_id, queue=endpoint_queue())


@lru_cache(maxsize=1)
def _in_process_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=int(getattr(settings, "PROBES_EAGER_THREADS", 32)),
                              thread_name_prefix="probe-answer")


def _run_in_thread(answer_id: int, attempts: int = 4) -> None:
    from probes.running import answer_run

    for attempt in range(1, attempts + 1):
        try:
            answer_run(answer_id, worker="in-process")
            return
        except OperationalError:
            # The database refused a connection (restarting, or all its connections taken): without a
            # retry the answer would stay queued, holding a place of the probe's concurrency, until the lease ends.
            if attempt == attempts:
                raise
            log.warning("probe answer %s: database unavailable, trying again", answer_id)
            time.sleep(0.5 * 2**attempt)
        finally:
            connections.close_all()  # this thread's own connections only


@worker_ready.connect
def _resume_probe_runs(sender=None, **kwargs) -> None:
    """A worker (re)starts: answers its previous life held go back to the queue, running probes continue."""
    from probes.running import probes_resume

    hostname = getattr(sender, "hostname", "") or ""
    try:
        sent = probes_resume(worker=hostname)
    except Exception:  # a resume must never stop the worker from starting
        log.exception("resuming probe runs failed")
        return
    if sent:
        log.warning("Resumed probe runs: %s answers sent again", len(sent))
