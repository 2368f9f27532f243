"""Background jobs whose row is the outbox: a broker outage or a web restart delays a job, never loses it.

Every kind of background job (import previews and imports, exports, live answers) has a row that says
it waits for the worker and when its task was last handed to the broker (`sent_at`). Each app
registers its kind here (`job_kind_register`, in its AppConfig.ready).

- `enqueue(task, *args)` sends the task once the surrounding transaction commits: the fast path.
- If Redis (the broker) is down then, the request still succeeds: the row already says "queued". A
  thread of this process retries the send every few seconds, which only makes recovery quicker.
- The sweeper (`jobs_resend`: the `resend_waiting_jobs_task` Celery beat runs every
  RTA_JOB_SWEEP_SECONDS, and `manage.py resend_jobs`) re-sends every job still waiting
  RTA_JOB_RESEND_AFTER_SECONDS (a minute) after its last send. It finds jobs whose send failed and
  whose web process then restarted, and jobs the broker lost.
- A member can send a waiting job again (`job_send_again`) or discard it (each app's service).

Tasks claim their row before working (or find it finished), so a job sent twice runs once.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connection, models, transaction
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerError

logger = logging.getLogger("rta.jobs")
RETRY_SECONDS = 2.0
# Jobs re-sent per kind and sweep: a sweep stays short however long the outage was; the next takes the rest.
SWEEP_BATCH = 500


@dataclass(frozen=True)
class JobKind:
    """One kind of background job: which rows wait for the worker, and how to send one."""

    name: str
    waiting: Callable[[], models.QuerySet]  # rows waiting for the worker; each has a `sent_at` field
    send: Callable[[Any], None]  # hands one row's task to the broker; raises BrokerError or OSError when it is down


_kinds: dict[type[models.Model], JobKind] = {}


def job_kind_register(model: type[models.Model], *, name: str, waiting: Callable[[], models.QuerySet],
                      send: Callable[[Any], None]) -> None:
    """Let the sweeper and `job_send_again` find and send this model's waiting jobs."""
    _kinds[model] = JobKind(name=name, waiting=waiting, send=send)


def resend_after() -> timedelta:
    return timedelta(seconds=getattr(settings, "RTA_JOB_RESEND_AFTER_SECONDS", 60))


def waiting_long(sent_at) -> bool:
    """Sent longer ago than the sweeper waits: the page offers to send it again or discard it."""
    return sent_at is not None and timezone.now() - sent_at > resend_after()


def send(task: Any, *args: Any, **options: Any) -> None:
    """Hand `task(*args)` to the broker once, now; raises BrokerError or OSError if it is unreachable."""
    task.apply_async(args=args, retry=False, **options)


def enqueue(task: Any, *args: Any, **options: Any) -> None:
    """Send `task(*args)` to the worker after commit; never fails the request because the broker is down."""
    transaction.on_commit(lambda: send_or_keep(task, *args, **options))


def send_or_keep(task: Any, *args: Any, **options: Any) -> bool:
    """Send now (options go to apply_async, e.g. queue=); on a broker error keep it for the retry thread."""
    try:
        send(task, *args, **options)
        return True
    except (BrokerError, OSError) as exc:
        logger.warning("Broker unavailable, %s%r will be sent when it is back: %s", task.name, args, exc)
        with _lock:
            _pending.append((task, args, options))
        _ensure_sender()
        return False


def jobs_resend(*, older_than: timedelta | None = None) -> int:
    """Send again every job still waiting for the worker whose last send is older than `older_than`
    (default: RTA_JOB_RESEND_AFTER_SECONDS); returns how many were sent. Stops at the first broker error."""
    cutoff = timezone.now() - (resend_after() if older_than is None else older_than)
    sent = 0
    for kind in _kinds.values():
        for job in kind.waiting().filter(sent_at__lte=cutoff).order_by("sent_at")[:SWEEP_BATCH]:
            if not _claim_send(kind, job):
                continue  # started, discarded or sent by someone else meanwhile
            try:
                kind.send(job)
            except (BrokerError, OSError) as exc:
                logger.warning("Broker unavailable, waiting jobs stay queued until the next sweep: %s", exc)
                return sent
            logger.info("Re-sent %s job %s", kind.name, job.pk)
            sent += 1
    return sent


def job_send_again(*, job: models.Model) -> bool:
    """Send a job that waits for the worker again, now (after commit); False if the broker is still down."""
    kind = _kinds[type(job)]
    if not _claim_send(kind, job, check_sent_at=False):
        raise ValidationError("This job is no longer waiting for the worker; reload the page to see where it is.")
    try:
        kind.send(job)
    except (BrokerError, OSError) as exc:
        logger.warning("Broker unavailable, %s job %s stays queued: %s", kind.name, job.pk, exc)
        return False
    return True


def job_sent_again_notice(request: Any, sent: bool) -> None:
    """Tell the member who pressed "Send again" what happened."""
    from django.contrib import messages

    if sent:
        messages.success(request, "Sent to the worker again.")
    else:
        messages.warning(request, "The task queue (Redis) is still unreachable; the job stays queued and is sent "
                                  "when it is back.")


def _claim_send(kind: JobKind, job: Any, *, check_sent_at: bool = True) -> bool:
    """Mark the job sent now, if it still waits: of two sweepers only one sends it."""
    rows = kind.waiting().filter(pk=job.pk)
    if check_sent_at:
        rows = rows.filter(sent_at=job.sent_at)
    job.sent_at = timezone.now()
    return bool(rows.update(sent_at=job.sent_at))


@contextlib.contextmanager
def job_lock(name: str, pk: int) -> Iterator[bool]:
    """Hold PostgreSQL's advisory lock for this job while the block runs; yields False if another
    process holds it. A worker that dies releases it with its connection, so a redelivered task
    can tell a crashed run (lock free) from one still running (lock held)."""
    if connection.vendor != "postgresql":
        yield True  # laptop mode runs tasks in-process, one at a time
        return
    key = job_lock_key(name, pk)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", key)
        held = cursor.fetchone()[0]
    try:
        yield held
    finally:
        if held:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s, %s)", key)


def job_lock_key(name: str, pk: int) -> tuple[int, int]:
    """PostgreSQL's two-integer advisory lock key for one job."""
    return zlib.crc32(name.encode()) & 0x7FFFFFFF, int(pk) & 0x7FFFFFFF


# -- the in-process retry thread (a fast path only: the sweeper does not depend on it) --

_pending: list[tuple[Any, tuple, dict]] = []
_lock = threading.Lock()
_sender: threading.Thread | None = None


def pending() -> int:
    with _lock:
        return len(_pending)


def forget_pending() -> None:
    """Drop the sends this process still holds (what a restart of the web process does)."""
    with _lock:
        _pending.clear()


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
                send(task, *args, **options)
            except (BrokerError, OSError):
                break  # still down; try again later, in order
            with _lock:
                if item in _pending:
                    _pending.remove(item)
            logger.warning("Broker back: sent %s%r", task.name, args)
