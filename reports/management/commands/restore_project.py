from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from reports.backup import BackupError, project_restore
from reports.management.commands.import_qdpx import _owner


class Command(BaseCommand):
    help = "Restore a project backup (from export_project) into a new project."

    def add_arguments(self, parser) -> None:
        parser.add_argument("file", help="the backup .zip")
        parser.add_argument("--project-name", default="", help="name of the new project (default: the backup's)")
        parser.add_argument("--owner", default="", help="username of the new project's owner (default: the first superuser)")
        parser.add_argument("--members", choices=["me", "all"], default="me",
                            help="'all' restores every membership by username; 'me' (default) only the owner's")

    def handle(self, *args, **options) -> None:
        path = Path(options["file"])
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        owner = _owner(options["owner"])
        try:
            with path.open("rb") as fh:
                result = project_restore(source=fh, owner=owner, name=options["project_name"],
                                         members=options["members"], filename=path.name)
        except BackupError as exc:
            raise CommandError(str(exc)) from exc
        for warning in result.warnings:
            self.stderr.write(f"warning: {warning}")
        self.stdout.write(f"Restored “{result.project.name}” ({result.project.uuid}): "
                          f"{sum(result.counts.values())} rows in {len(result.counts)} models.")
