from __future__ import annotations

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

import refiqda
from reports.exchange import project_import_qdpx


class Command(BaseCommand):
    help = "Import a REFI-QDA project (.qdpx from NVivo, ATLAS.ti, MAXQDA, QualCoder…) into a new project."

    def add_arguments(self, parser) -> None:
        parser.add_argument("file", help="the .qdpx file")
        parser.add_argument("--project-name", default="", help="name of the new project (default: the file's)")
        parser.add_argument("--owner", default="", help="username of the new project's owner (default: the first superuser)")

    def handle(self, *args, **options) -> None:
        path = Path(options["file"])
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        try:
            parsed = refiqda.read_project(path, name=path.name)
            owner = _owner(options["owner"])
            # The import can refuse the file too (too many coders, say); it rolls back whole.
            result = project_import_qdpx(source=parsed, owner=owner, name=options["project_name"], filename=path.name)
        except refiqda.QdpxError as exc:
            raise CommandError(f"{str(exc).rstrip('.')}. Nothing was imported.") from exc
        except ValidationError as exc:
            raise CommandError(f"{path.name}: {'; '.join(exc.messages)}. Nothing was imported.") from exc
        for warning in result.warnings:
            self.stderr.write(f"warning: {warning}")
        self.stdout.write(
            f"Imported “{result.project.name}” ({result.project.uuid}): {result.interviews} interviews, "
            f"{result.codes} codes, {result.codings} codings, {result.themes} themes; positions read as {parsed.counting}.")


def _owner(username: str):
    User = get_user_model()
    if username:
        try:
            return User.objects.get(username=username)
        except User.DoesNotExist:
            raise CommandError(f"--owner: no user called {username!r}") from None
    owner = User.objects.filter(is_superuser=True, is_active=True).order_by("pk").first()
    if owner is None:
        raise CommandError(_no_owner_message(User))
    return owner


def _no_owner_message(User) -> str:  # noqa: N803 - the user model
    """Says what to pass instead: the default owner, the first superuser, does not exist."""
    names = list(User.objects.filter(is_active=True).order_by("username").values_list("username", flat=True)[:6])
    if not names:
        return ("the new project needs an owner, and there are no users yet: create one with "
                "`python manage.py createsuperuser`, then run this again (or pass --owner USERNAME)")
    shown = ", ".join(names[:5]) + (", …" if len(names) > 5 else "")
    return (f"the new project needs an owner, and there is no superuser to default to: pass --owner USERNAME "
            f"(existing users: {shown})")
