from __future__ import annotations

import os
import tempfile
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from projects.models import Project
from refiqda import EXPORT_COUNTINGS
from reports.exchange import project_export_qdpx


def find_project(ref: str) -> Project:
    """A project by UUID, or by exact name when that name is unique."""
    try:
        return Project.objects.get(uuid=ref)
    except (Project.DoesNotExist, ValidationError, ValueError):
        pass
    matches = list(Project.objects.filter(name=ref)[:2])
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise CommandError(f"more than one project is called {ref!r}; pass its UUID")
    raise CommandError(f"no project with UUID or name {ref!r}")


class Command(BaseCommand):
    help = "Export a project as a REFI-QDA project (.qdpx) for NVivo, ATLAS.ti, MAXQDA or QualCoder."

    def add_arguments(self, parser) -> None:
        parser.add_argument("project", help="project UUID (or its unique name)")
        parser.add_argument("out", help="the .qdpx file to write")
        parser.add_argument("--positions", choices=EXPORT_COUNTINGS, default="codepoints",
                            help="codepoints (the standard) or utf16 (NVivo-compatible)")

    def handle(self, *args, **options) -> None:
        project = find_project(options["project"])
        out = Path(options["out"])
        if not out.parent.is_dir():
            raise CommandError(f"{out.parent}: no such directory")
        # Write next to the target and rename, so a failure never leaves half a file.
        fd, tmp = tempfile.mkstemp(dir=out.parent, suffix=".qdpx.part")
        try:
            with os.fdopen(fd, "wb") as fh:
                project_export_qdpx(project=project, out=fh, positions=options["positions"])
            os.replace(tmp, out)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self.stdout.write(f"Wrote {out} ({out.stat().st_size} bytes, positions: {options['positions']}).")
