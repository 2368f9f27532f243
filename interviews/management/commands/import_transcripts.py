"""python manage.py import_transcripts FILE... --project NAME_OR_UUID [...]"""

from __future__ import annotations

import os
import uuid

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from interviews.models import Interview
from interviews.parsers import FORMATS, ParseError
from interviews.services_import import ImportOptions, ImportOptionsError, import_paths
from projects.models import Membership, Project, Role


class Command(BaseCommand):
    help = ("Import chatbot transcripts (ChatGPT/Claude exports, OpenAI or ShareGPT JSON, Markdown, "
            "text with speaker labels, CSV/XLSX) into a project. All files land in one transaction: "
            "on any error nothing is imported.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("files", nargs="+", metavar="FILE")
        parser.add_argument("--project", required=True, help="Project name or UUID.")
        parser.add_argument("--create-project", action="store_true", help="Create the project if no project has this name.")
        parser.add_argument("--participant", help="Label of the participant for every interview (created if new). "
                            "Default: one participant per model named in the files.")
        parser.add_argument("--format", default="auto", choices=["auto", *FORMATS])
        parser.add_argument("--depth", default=Interview.Depth.COMPREHENSIVE, choices=Interview.Depth.values)
        parser.add_argument("--allow-duplicates", action="store_true", help="Import conversations imported before.")
        parser.add_argument("--owner", help="Username recorded as importer (and owner of a created project).")

    def handle(self, *args, **opts) -> None:
        for path in opts["files"]:
            if not os.path.isfile(path):
                raise CommandError(f"{path}: expected a readable file, found nothing there")
        user = self._user(opts["owner"])
        options = ImportOptions(
            participant=f"new:{opts['participant']}" if opts["participant"] else "auto",
            depth=opts["depth"], allow_duplicates=opts["allow_duplicates"],
        )
        try:
            with transaction.atomic():
                project = self._project(opts["project"], opts["create_project"], user)
                summary = import_paths(project=project, user=user, paths=opts["files"], format=opts["format"], options=options)
        except (ParseError, ImportOptionsError) as e:
            raise CommandError(str(e)) from None
        for row in summary.interviews:
            self.stdout.write(f"imported  {row['source']}: “{row['title']}” — {row['participant']}, {row['turns']} turns "
                              f"({row['uuid']})")
        for row in summary.skipped:
            self.stdout.write(f"skipped   {row['source']}: “{row['title']}” — {row['reason']}")
        self.stdout.write(self.style.SUCCESS(
            f"{len(summary.interviews)} interviews, {summary.turns} turns, {summary.segments} segments imported into "
            f"“{project.name}” in {summary.seconds:.2f} s; {len(summary.skipped)} skipped."))

    def _user(self, username: str | None):
        if not username:
            return None
        try:
            return get_user_model().objects.get(username=username)
        except get_user_model().DoesNotExist:
            raise CommandError(f"--owner: expected an existing username, found {username!r}") from None

    def _project(self, ref: str, create: bool, user) -> Project:
        try:
            return Project.objects.get(uuid=uuid.UUID(ref))
        except ValueError:
            pass
        except Project.DoesNotExist:
            raise CommandError(f"--project: expected the UUID of an existing project, found {ref}") from None
        matches = list(Project.objects.filter(name=ref)[:2])
        if len(matches) > 1:
            raise CommandError(f"--project: several projects are named {ref!r}; give its UUID instead")
        if matches:
            return matches[0]
        if not create:
            raise CommandError(f"--project: expected the name or UUID of an existing project, found {ref!r} "
                               "(add --create-project to create it)")
        project = Project.objects.create(name=ref, created_by=user)
        if user:
            Membership.objects.create(project=project, user=user, role=Role.OWNER)
        return project
