"""Two people doing the same thing at the same moment, made to happen every time (name uniqueness, double sends)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from django.db import connection, connections, transaction


def _waiting_on_a_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")
        return cursor.fetchone()[0] > 0


def second_while_first_uncommitted(first: Callable[[], Any], second: Callable[[], Any]) -> Any:
    """Run `first` in a transaction held open until `second` (both past their checks, neither seeing the other's row)
    waits on it in the database; then commit it. Returns what `second` returned, or the exception it raised."""
    first_done, let_first_commit, second_done = threading.Event(), threading.Event(), threading.Event()
    outcome: dict[str, Any] = {}

    def run_first() -> None:
        try:
            with transaction.atomic():
                first()
                first_done.set()
                let_first_commit.wait(timeout=30)
        finally:
            connections.close_all()

    def run_second() -> None:
        try:
            outcome["second"] = second()
        except Exception as exc:  # noqa: BLE001 -- handed to the test, which says what it expects
            outcome["second"] = exc
        finally:
            second_done.set()
            connections.close_all()

    one = threading.Thread(target=run_first)
    one.start()
    assert first_done.wait(timeout=30)
    two = threading.Thread(target=run_second)
    two.start()
    deadline = time.monotonic() + 30
    while not second_done.is_set() and not _waiting_on_a_lock() and time.monotonic() < deadline:
        second_done.wait(timeout=0.05)
    let_first_commit.set()
    one.join(timeout=30)
    two.join(timeout=30)
    return outcome["second"]


def in_two_threads(act: Callable[[], Any], *, timeout: float = 120) -> None:
    """Run `act` in two threads at once, each with its own database connection (closed after), and wait for both."""

    def run() -> None:
        try:
            act()
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout)
