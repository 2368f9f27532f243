"""Send again the background jobs that still wait for the worker (what Celery beat runs every 30 s)."""

from __future__ import annotations

from datetime import timedelta

from django.core.management.base import BaseCommand

from projects.jobs import jobs_resend, resend_after


class Command(BaseCommand):
    help = ("Send again every import, export and live answer still waiting for the worker a minute after its "
            "last send: jobs accepted while the broker was down, or lost by it. Running it twice sends nothing twice.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("--older-than", type=float, default=resend_after().total_seconds(), metavar="SECONDS",
                            help="only jobs last sent at least this many seconds ago (default %(default)s)")

    def handle(self, *args, older_than: float, **options) -> None:
        sent = jobs_resend(older_than=timedelta(seconds=older_than))
        self.stdout.write(f"{sent} waiting job{'s' if sent != 1 else ''} sent again.")
