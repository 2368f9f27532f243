"""Sending background jobs so that a broker outage delays them instead of failing the request.

`enqueue(task, *args)` sends the task once the surrounding transaction commits. If Redis
(the broker) is down, the request still succeeds: the job's own row already says "queued",
and a background thread of this process keeps trying to send it until the broker is back,
when the worker runs it. Tasks are idempotent (they claim their job row), so a send that
reached the broker just before it failed does no harm when repeated.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from django.db import transaction
from kombu.exceptions import OperationalError as BrokerError

logger = logging.getLogger("rta.jobs")
RETRY_SECONDS = 2.0

_pending: list[tuple[Any, tuple, dict]] = []
_lock = threading.Lock()
_sender: threading.Thread | None = None


def enqueue(task: Any, *args: Any, **options: Any) -> None:
    """Send `task(*args)` to the worker after commit; never fails the request because the broker is down."""
    transaction.on_commit(lambda: send_or_keep(task, *args, **options))


def send_or_keep(task: Any, *args: Any, **options: Any) -> bool:
    """Send now (options go to apply_async, e.g. queue=); on a broker error keep it for the retry thread."""
    try:
        task.apply_async(args=args, retry=False, **options)
        return True
    except (BrokerError, OSError) as exc:
        logger.warning("Broker unavailable, %s%r will be sent when it is back: %s", task.name, args, exc)
        with _lock:
            _pending.append((task, args, options))
        _ensure_sender()
        return False


def pending() -> int:
    with _lock:
        return len(_pending)


def _ensure_sender() -> None:
    global _sender
    with _lock:
        if _sender is None or not _sender.is_alive():
            _sender = threading.Thread(target=_retry_loop, name="rta-job-sender", daemon=True)
            _sender.start()


def _retry_loop() -> None:
    while True:
        time.sleep(RETRY_SECONDS)
        with _lock:
            if not _pending:
                return
            batch = list(_pending)
        for item in batch:
            task, args, options = item
            try:
                task.apply_async(args=args, retry=False, **options)
            except (BrokerError, OSError):
                break  # still down; try again later, in order
            with _lock:
                _pending.remove(item)
            logger.warning("Broker back: sent %s%r", task.name, args)
