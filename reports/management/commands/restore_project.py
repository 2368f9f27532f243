from __future__ import annotations

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from reports.backup import BackupError, backup_people, project_restore
from reports.management.commands.import_qdpx import _owner


class Command(BaseCommand):
    help = ("Restore a project backup (from export_project) into a new project. Never creates accounts: people of "
            "the backup are mapped to existing accounts with --map (or --map-same-usernames), the rest kept as names.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("file", help="the backup .zip")
        parser.add_argument("--project-name", default="", help="name of the new project (default: the backup's)")
        parser.add_argument("--owner", default="", help="username of the new project's owner (default: the first superuser)")
        parser.add_argument("--map", action="append", default=[], metavar="NAME=ACCOUNT",
                            help="the backup's person NAME is this instance's account ACCOUNT (repeatable); "
                                 "the owner's own username maps to the owner unless mapped otherwise")
        parser.add_argument("--map-same-usernames", action="store_true",
                            help="map every person of the backup to the existing account with the same username")
        parser.add_argument("--members", choices=["me", "all"], default="me",
                            help="'all' also restores the memberships of the people mapped to accounts; "
                                 "'me' (default) only the owner's")

    def handle(self, *args, **options) -> None:
        path = Path(options["file"])
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        owner = _owner(options["owner"])
        try:
            people = self.people(path, owner, options)
            with path.open("rb") as fh:
                result = project_restore(source=fh, owner=owner, name=options["project_name"], people=people,
                                         members=options["members"], filename=path.name)
        except BackupError as exc:
            raise CommandError(str(exc)) from exc
        for warning in result.warnings:
            self.stderr.write(f"warning: {warning}")
        self.stdout.write(f"Restored “{result.project.name}” ({result.project.uuid}): "
                          f"{sum(result.counts.values())} rows in {len(result.counts)} models.")

    def people(self, path: Path, owner, options) -> dict:
        """Who is who: the owner is themselves, then --map-same-usernames, then each --map."""
        accounts = get_user_model()._base_manager
        people = {owner.username: owner}
        if options["map_same_usernames"]:
            with path.open("rb") as fh:
                names = [p.username for p in backup_people(source=fh, filename=path.name)]
            people |= {u.username: u for u in accounts.filter(username__in=names)}
        for item in options["map"]:
            name, sep, account = item.partition("=")
            if not sep or not name or not account:
                raise CommandError(f"--map {item!r}: write NAME=ACCOUNT (the backup's username = an account here)")
            user = accounts.filter(username=account).first()
            if user is None:
                raise CommandError(f"--map {item!r}: there is no account called {account!r} here")
            people[name] = user
        return people
