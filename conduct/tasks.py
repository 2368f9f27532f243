"""Celery tasks of the conduct app: each model answer runs in the worker."""

from __future__ import annotations

import os
import threading

from celery import shared_task
from django.conf import settings
from django.db import connections

from conduct.answering import answer_run
from projects.jobs import send, send_or_keep


@shared_task(acks_late=True, ignore_result=True)
def answer_turn_task(turn_id: int) -> str:
    """Stream the model's answer into participant turn `turn_id` (idempotent: claims the job first)."""
    return answer_run(turn_id)


def enqueue_answer(turn_id: int) -> None:
    """Send the answer to the worker; without a broker (laptop mode) run it in a thread.

    In-process eager execution would block the request until the whole answer
    arrived, and the page could not show it streaming.
    """
    from config.celery import app

    if app.conf.task_always_eager and getattr(settings, "CONDUCT_EAGER_IN_THREAD", True):
        threading.Thread(target=_run_in_thread, args=(turn_id,), daemon=True).start()
    else:
        # A broker outage delays the answer (sent when Redis is back), it does not fail the page.
        send_or_keep(answer_turn_task, turn_id, queue=endpoint_queue())


def send_answer(turn_id: int) -> None:
    """Hand the answer's task to the broker now (the sweeper's way; raises if the broker is down)."""
    send(answer_turn_task, turn_id, queue=endpoint_queue())


def endpoint_queue() -> str | None:
    """The queue of every task that waits on a model's endpoint: live answers, probe answers, second-reader windows.

    They wait on the network for seconds or minutes; a deployment gives them their own threads-pool worker
    (`-Q $CONDUCT_QUEUE --pool=threads`, docker-compose.yml's worker-live) so CPU-bound imports and exports
    never hold a model's answer back, and a probe asking 16 at once is not run 2 at a time by a prefork worker.
    """
    return os.environ.get("CONDUCT_QUEUE") or None


def _run_in_thread(turn_id: int) -> None:
    try:
        answer_run(turn_id)
    finally:
        connections.close_all()  # this thread's own connections only
