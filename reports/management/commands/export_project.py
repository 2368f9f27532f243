from __future__ import annotations

import os
import tempfile
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from reports.backup import project_backup
from reports.management.commands.export_qdpx import find_project


class Command(BaseCommand):
    help = "Back up a whole project (everything in every app) as one ZIP archive of JSON."

    def add_arguments(self, parser) -> None:
        parser.add_argument("project", help="project UUID (or its unique name)")
        parser.add_argument("out", help="the .zip file to write")

    def handle(self, *args, **options) -> None:
        project = find_project(options["project"])
        out = Path(options["out"])
        if not out.parent.is_dir():
            raise CommandError(f"{out.parent}: no such directory")
        fd, tmp = tempfile.mkstemp(dir=out.parent, suffix=".zip.part")
        os.close(fd)
        try:
            manifest = project_backup(project=project, out=tmp)
            os.replace(tmp, out)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        rows = sum(m["count"] for m in manifest["models"])
        self.stdout.write(f"Wrote {out}: {rows} rows from {len(manifest['models'])} models of “{project.name}”.")
