from __future__ import annotations

from django.core.management.base import BaseCommand

from reports.demo import DEMO_PASSWORD, DEMO_USERNAME, demo_load


class Command(BaseCommand):
    help = "Create the demo user and project (safe to run again: nothing is duplicated)."

    def handle(self, *args, **options) -> None:
        project = demo_load()
        self.stdout.write(f"Demo project: {project.name} ({project.uuid})")
        self.stdout.write(f"Demo login: {DEMO_USERNAME} / {DEMO_PASSWORD}")
