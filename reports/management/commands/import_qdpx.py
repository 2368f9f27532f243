from __future__ import annotations

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

import refiqda
from reports.exchange import project_import_qdpx, qdpx_people, qdpx_read


class Command(BaseCommand):
    help = ("Import a REFI-QDA project (.qdpx from NVivo, ATLAS.ti, MAXQDA, QualCoder…) into a new project. Never "
            "creates accounts: coders are mapped to existing accounts with --map, the rest kept as names.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("file", help="the .qdpx file")
        parser.add_argument("--project-name", default="", help="name of the new project (default: the file's)")
        parser.add_argument("--owner", default="", help="username of the new project's owner (default: the first superuser)")
        parser.add_argument("--map", action="append", default=[], metavar="NAME=ACCOUNT",
                            help="the file's coder NAME (their name or id there) is this instance's account ACCOUNT "
                                 "(repeatable); a coder called like the owner is the owner unless mapped otherwise")

    def handle(self, *args, **options) -> None:
        path = Path(options["file"])
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        try:
            parsed = qdpx_read(str(path), filename=path.name)  # the limits an upload has
            owner = _owner(options["owner"])
            people = _mapping(qdpx_people(parsed, path.name), options["map"])
            # The import can refuse the file too (two coders mapped to one account, say); it rolls back whole.
            result = project_import_qdpx(source=parsed, owner=owner, name=options["project_name"], filename=path.name,
                                         people=people)
        except refiqda.QdpxError as exc:
            raise CommandError(f"{str(exc).rstrip('.')}. Nothing was imported.") from exc
        except ValidationError as exc:
            raise CommandError(f"{path.name}: {'; '.join(exc.messages)}. Nothing was imported.") from exc
        for warning in result.warnings:
            self.stderr.write(f"warning: {warning}")
        self.stdout.write(
            f"Imported “{result.project.name}” ({result.project.uuid}): {result.summary}; positions read as {parsed.counting}.")


def _mapping(people: list, items: list[str]) -> dict:
    """User GUID → account for each --map NAME=ACCOUNT, NAME being a coder's name or id in the file."""
    User = get_user_model()
    chosen = {}
    for item in items:
        name, sep, account = item.partition("=")
        if not sep or not name or not account:
            raise CommandError(f"--map {item!r}: write NAME=ACCOUNT (a coder's name in the file = an account here)")
        matches = [p for p in people if p.is_named(name)]
        if not matches:
            named = ", ".join(p.username for p in people[:10]) or "nobody"
            raise CommandError(f"--map {item!r}: the file names no coder {name!r} (it names {named})")
        user = User._base_manager.filter(username=account).first()
        if user is None:
            raise CommandError(f"--map {item!r}: there is no account called {account!r} here")
        chosen |= {p.key: user for p in matches}
    return chosen


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
