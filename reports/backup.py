"""Project backups: one ZIP of JSON per model, restored into a new project, losing nothing but what EXCLUDED lists
(the exchange page tells the owner what that is).

The plan is built from the models themselves, not written by hand: every model of
the project's apps that reaches `projects.Project` through foreign keys is backed up,
with rows found by following that path. A model that should not travel (secrets,
transient worker state) is listed in EXCLUDED with the reason; the coverage test
fails when a model is neither reachable nor excluded, so a new model is never
silently left out.

Restore inserts every row with fresh primary keys and fresh UUIDs (so a backup can
be restored next to its original on the same instance) and remaps:
  * foreign keys between backed-up rows (old pk → new pk);
  * UUIDs wherever they appear as text: UUID fields, char/text fields holding exactly
    a UUID (e.g. AuditEvent.target_id) and strings inside JSON (snapshots, metadata);
  * people (usernames in the backup) through the restorer's `people` mapping: each to an
    existing account the restorer chose, or kept as a name only (`PersonName`: the row's
    user field stays empty and the name is kept as text). A restore NEVER creates accounts,
    so a crafted backup cannot reserve usernames or catch an invitation to an address.
    Codings and turn notes belong to a coder, so their people need an account; the rows
    that only make sense for an account (memberships, read markers) are left out for a
    person kept as a name only. `backup_people` lists the people for the mapping step.
Integer ids inside JSON are not remapped (we only store UUIDs there).

Memberships: by default only the restoring user keeps one (as owner), so a backup never
grants access by itself; `members="all"` also restores the memberships (role, positionality)
of the people mapped to accounts.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import decimal
import functools
import io
import itertools
import json
import logging
import uuid
import zipfile
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import ijson
from django.apps import apps
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.validators import MaxLengthValidator, MaxValueValidator, MinValueValidator
from django.db import DatabaseError, models, transaction
from django.utils import timezone

from interviews.parsers.archive import DAMAGED, is_encrypted
from interviews.parsers.base import storable
from projects import safejson
from projects.audit import audit_record
from projects.copy import insert_all
from projects.models import AuditEvent, Membership, Project, Role
from reports.models import PersonName

log = logging.getLogger(__name__)

FORMAT = "rta-studio-project-backup"
VERSION = 1
PROJECT_APPS = ("projects", "interviews", "conduct", "probes", "coding", "themes", "reports")
PROJECT_LABEL = "projects.project"

# Models that never travel in a backup, and why.
EXCLUDED: dict[str, str] = {
    "conduct.endpointkey": "API keys are secrets encrypted with this instance's key; re-enter them after a restore.",
    "conduct.answerjob": "transient worker state (queue, heartbeat, lease); a restored project has no running answers.",
    "interviews.importjob": "upload job state pointing at the original server's stored uploads; a restored job must "
                            "never be able to read them. The imported interviews themselves are backed up.",
    "reports.exportjob": "generated download files and worker progress; the files stay on the original server, so "
                         "exports are simply made again after a restore.",
    "reports.projectimportjob": "the import that brought a project in (its upload, the people read from it and "
                                "the importer's choices) is the importer's job on this server, not part of the project.",
    "projects.storedblob": "job files (uploads waiting to be imported, finished exports) belong to their jobs, "
                           "which do not travel either.",
    "projects.blobchunk": "the pieces of a stored job file (see projects.storedblob).",
    "projects.invitation": "a link to join one project: a restored copy must not be joined through the original's "
                           "links (nor a restore fail on their tokens), and a backup must never carry a link its "
                           "author can use. Members are restored as memberships; invite anyone else again.",
    "reports.personname": "names kept by an earlier restore travel inside the rows they belong to, like usernames.",
    # The AI second reader's history names segments and codes by their ids (windows, the codebook as
    # sent), which a restore renumbers; accepted suggestions travel as the codings they became.
    "coding.suggestionrun": "AI second reader runs refer to segments and codes by id; they stay with the original.",
    "coding.readerstep": "the requests and answers of an AI second reader run, which stays with the original.",
    "coding.codeidea": "new-code ideas of an AI second reader run, which stays with the original.",
    "coding.suggestion": "AI suggestions belong to their run, which stays with the original; accepted ones are "
                         "restored as the reviewers' codings (origin 'suggestion').",
}
USER = "$user"  # target label used for foreign keys and many-to-many fields to the user model

MAX_MEMBER_BYTES = 512 * 1024 * 1024
MAX_RATIO = 200
MAX_MANIFEST_BYTES = 4 * 1024 * 1024
MAX_PROJECT_MEMBER_BYTES = 4 * 1024 * 1024  # one row
# A restore reads each member's rows as it inserts them, a batch at a time; what it keeps for the whole restore
# is each row's new primary key by its old one and the fresh UUIDs (~140 bytes a row, measured). Rows are counted (in
# constant memory) before any is parsed, and a backup of more is refused: a project 50× the peer corpus holds
# 639,578 rows and restores at a 179 MB peak (962 MB when every row was held at once).
MAX_RESTORE_ROWS = 4_000_000
RESTORE_BATCH = 1000
MAX_PEOPLE = 500  # people one backup may name; more is not a real team
# Rows that only make sense for an account (access, read markers): left out for a person kept as a name only.
ACCOUNT_ONLY = frozenset({"projects.membership", "themes.threadread", "themes.mentionsread"})


class BackupError(ValueError):
    """The archive cannot be restored; the message says what and where."""


# --- the plan ----------------------------------------------------------------------------


@dataclass
class ModelPlan:
    model: type[models.Model]
    label: str
    path: str  # lookup from this model to Project ("" for Project itself)
    fks: dict[str, str] = field(default_factory=dict)  # FK attname → target label (backed-up models)
    user_fks: list[str] = field(default_factory=list)  # FK attnames to the user model
    m2m: dict[str, str] = field(default_factory=dict)  # auto-created M2M field name → target label or USER

    @property
    def fields(self) -> list[models.Field]:
        return [f for f in self.model._meta.concrete_fields
                if not f.primary_key and not getattr(f, "generated", False)]


def _project_models() -> list[type[models.Model]]:
    return [m for app in PROJECT_APPS for m in apps.get_app_config(app).get_models()]


def _label(model: type[models.Model]) -> str:
    return model._meta.label_lower


def _forward_fks(model: type[models.Model]) -> list[models.ForeignKey]:
    return [f for f in model._meta.concrete_fields if f.is_relation and (f.many_to_one or f.one_to_one)]


def _paths() -> dict[str, str]:
    """Lookup path from each project-scoped model to Project: required FKs first, then the shortest."""
    paths: dict[str, tuple[int, int, str]] = {PROJECT_LABEL: (0, 0, "")}
    models_ = [m for m in _project_models() if _label(m) not in EXCLUDED]
    changed = True
    while changed:
        changed = False
        for m in models_:
            for f in _forward_fks(m):
                target = _label(f.related_model)
                if target not in paths or target in EXCLUDED or f.related_model is m:
                    continue
                nullable, length, rest = paths[target]
                cand = (nullable + int(f.null), length + 1, f.name + ("__" + rest if rest else ""))
                if _label(m) != PROJECT_LABEL and (_label(m) not in paths or cand < paths[_label(m)]):
                    paths[_label(m)] = cand
                    changed = True
    return {label: p[2] for label, p in paths.items()}


def _topological(plans: dict[str, ModelPlan]) -> list[ModelPlan]:
    """Order so that each model's required FK targets come first (nullable ones may be deferred)."""
    ordered: list[ModelPlan] = []
    state: dict[str, int] = {}

    def visit(label: str, trail: tuple[str, ...]) -> None:
        if state.get(label) == 2:
            return
        if state.get(label) == 1:
            raise RuntimeError(f"backup plan: required foreign keys form a cycle: {' → '.join(trail + (label,))}")
        state[label] = 1
        plan = plans[label]
        for f in _forward_fks(plan.model):
            target = _label(f.related_model)
            if target in plans and target != label and not f.null:
                visit(target, trail + (label,))
        state[label] = 2
        ordered.append(plan)

    for label in sorted(plans, key=lambda lb: (lb != PROJECT_LABEL, lb)):
        visit(label, ())
    return ordered


def backup_plan() -> list[ModelPlan]:
    """Every backed-up model with its path to Project, in insertion order."""
    user_model = get_user_model()
    paths = _paths()
    plans: dict[str, ModelPlan] = {}
    for m in _project_models():
        label = _label(m)
        if label in EXCLUDED or label not in paths:
            continue
        plans[label] = ModelPlan(model=m, label=label, path=paths[label])
    for plan in plans.values():
        for f in _forward_fks(plan.model):
            target = _label(f.related_model)
            if f.related_model is user_model:
                plan.user_fks.append(f.attname)
            elif target in plans:
                plan.fks[f.attname] = target
            elif target in EXCLUDED:
                if not f.null:
                    raise RuntimeError(f"backup plan: {plan.label}.{f.name} requires excluded {target}")
            else:
                raise RuntimeError(f"backup plan: {plan.label}.{f.name} points to {target}, which a backup cannot carry")
        for f in plan.model._meta.many_to_many:
            if not f.remote_field.through._meta.auto_created:
                continue  # an explicit through model is backed up as a model of its own
            target = USER if f.related_model is user_model else _label(f.related_model)
            if target != USER and target not in plans:
                raise RuntimeError(f"backup plan: {plan.label}.{f.name} links to {target}, which a backup cannot carry")
            plan.m2m[f.name] = target
    return _topological(plans)


def uncovered_models() -> list[str]:
    """Models of the project's apps that are neither backed up nor excluded with a reason."""
    covered = {p.label for p in backup_plan()} | set(EXCLUDED)
    return sorted(_label(m) for m in _project_models() if _label(m) not in covered)


# --- export ------------------------------------------------------------------------------


def _encode(value: Any) -> Any:
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()  # full precision (DjangoJSONEncoder would cut microseconds)
    if isinstance(value, decimal.Decimal | uuid.UUID):
        return str(value)
    if isinstance(value, bytes | memoryview):
        return {"$base64": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, dt.timedelta):
        return {"$seconds": value.total_seconds()}
    return value


def _kept_names(plan: ModelPlan, project: Project) -> dict[tuple[int, str], list[str]]:
    """Names an earlier restore kept for this model's rows, by (row pk, field)."""
    if not plan.user_fks and USER not in plan.m2m.values():
        return {}
    names: dict[tuple[int, str], list[str]] = defaultdict(list)
    for row_id, name_field, name in (PersonName.objects.filter(project=project, model=plan.label).order_by("pk")
                                     .values_list("row_id", "field", "name")):
        names[row_id, name_field].append(name)
    return names


def _rows(plan: ModelPlan, project: Project) -> Iterator[dict]:
    qs = plan.model._base_manager.filter(**({"pk": project.pk} if not plan.path else {plan.path: project}))
    kept = _kept_names(plan, project)
    user_cache: dict[int, str] = {}
    users = get_user_model()._base_manager
    if plan.m2m:
        qs = qs.prefetch_related(*plan.m2m)
    for obj in qs.order_by("pk").iterator(chunk_size=2000):
        row = {}
        for f in plan.fields:
            value = getattr(obj, f.attname)
            if f.attname in plan.user_fks and value is not None:
                if value not in user_cache:
                    user_cache[value] = users.filter(pk=value).values_list("username", flat=True).first() or ""
                value = user_cache[value]
            elif f.attname in plan.user_fks:
                value = next(iter(kept.get((obj.pk, f.attname), ())), None)  # a person kept as a name only
            elif f.is_relation and f.attname not in plan.fks and f.attname not in plan.user_fks:
                value = None  # a key to an excluded model (e.g. an API key): never exported
            row[f.attname] = _encode(value if f.is_relation else f.value_from_object(obj))
        for name, target in plan.m2m.items():
            related = getattr(obj, name).all()
            row[name] = (sorted([u.username for u in related] + kept.get((obj.pk, name), [])) if target == USER
                         else sorted(o.pk for o in related))
        yield {"pk": obj.pk, "fields": row}


def project_backup(*, project: Project, out: BinaryIO | str) -> dict:
    """Write the whole project as a backup ZIP to `out`; returns the manifest."""
    plan = backup_plan()
    manifest: dict[str, Any] = {
        "format": FORMAT, "version": VERSION, "created_at": timezone.now().isoformat(),
        "project": {"uuid": str(project.uuid), "name": project.name}, "models": [],
    }
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for p in plan:
            name = f"data/{p.label}.json"
            count = 0
            # Stream rows straight into the archive: memory stays flat however big the project.
            with zf.open(name, "w", force_zip64=True) as raw, io.TextIOWrapper(raw, encoding="utf-8") as fh:
                fh.write("[")
                for row in _rows(p, project):
                    fh.write(("," if count else "") + "\n" + json.dumps(row, ensure_ascii=False))
                    count += 1
                fh.write("\n]")
            manifest["models"].append({"model": p.label, "file": name, "count": count,
                                       "fields": [f.attname for f in p.fields] + list(p.m2m)})
        zf.writestr("manifest.json", json.dumps(manifest, indent=2))
    return manifest


# --- restore -----------------------------------------------------------------------------


@dataclass
class RestoreResult:
    project: Project
    counts: dict[str, int]
    warnings: list[str] = field(default_factory=list)


class _Archive:
    def __init__(self, source: BinaryIO | bytes | str, name: str) -> None:
        self.name = name
        try:
            self.zf = zipfile.ZipFile(io.BytesIO(source) if isinstance(source, bytes) else source)
        except zipfile.BadZipFile:
            raise BackupError(f"{name}: not a ZIP archive (a project backup is a .zip)") from None
        total = 0
        for info in self.zf.infolist():
            total += info.file_size
            if is_encrypted(info):
                raise BackupError(f"{name}: member {info.filename!r} is encrypted; a project backup is written without "
                                  "a password")
            if info.file_size > MAX_MEMBER_BYTES or (info.file_size > 1 << 20 and info.file_size > MAX_RATIO * max(info.compress_size, 1)):
                raise BackupError(f"{name}: member {info.filename!r} is too large or too compressed (a ZIP bomb?)")
        limit = settings.RTA_MAX_UNCOMPRESSED_BYTES
        if total > limit:
            raise BackupError(f"{name}: the archive unpacks to {total} bytes, more than the limit of {limit}")

    def _info(self, member: Any) -> zipfile.ZipInfo:
        try:
            return self.zf.getinfo(member)
        except (KeyError, TypeError):
            raise BackupError(f"{self.name}: {member} is missing") from None

    def json(self, member: str, *, cap: int = MAX_MEMBER_BYTES) -> Any:
        """A small member (the manifest, the project's row) parsed whole; refused unread when larger than `cap`."""
        info = self._info(member)
        if info.file_size > cap:
            raise BackupError(f"{self.name}: {member} unpacks to {info.file_size / 2**20:.1f} MB; it may be at most "
                              f"{cap / 2**20:.0f} MB")
        data = bytearray()
        with self.zf.open(info) as fh, self.intact(member):
            while chunk := fh.read(1 << 20):
                data += chunk
                if len(data) > cap:
                    raise BackupError(f"{self.name}: {member} unpacks to more than {cap / 2**20:.0f} MB")
        raw = bytes(data)
        del data
        try:
            return safejson.loads(raw)
        except safejson.JSONInputError as exc:
            raise BackupError(f"{self.name}: {member}: {exc}") from None

    def scan(self, member: str, *, cap: int = MAX_MEMBER_BYTES) -> int:
        """Check a member without parsing it, in constant memory: its size, depth and number sizes (as `json`
        does); returns how many rows it holds (its "pk" keys)."""
        info = self._info(member)
        if info.file_size > cap:
            raise BackupError(f"{self.name}: {member} unpacks to {info.file_size / 2**20:.1f} MB; it may be at most "
                              f"{cap / 2**20:.0f} MB")
        counter = _CountingReader(self.zf.open(info), cap)
        try:
            with counter, self.intact(member):
                safejson.check_stream(counter)
        except safejson.JSONInputError as exc:
            raise BackupError(f"{self.name}: {member}: {exc}") from None
        except _TooLarge:
            raise BackupError(f"{self.name}: {member} unpacks to more than {cap / 2**20:.0f} MB") from None
        return counter.rows

    @contextlib.contextmanager
    def intact(self, member: str) -> Iterator[None]:
        """Around reading `member`: bytes that do not unpack (a download cut short, a file changed on the way) refuse
        the backup naming the member, not the decompressor's words."""
        try:
            yield
        except DAMAGED:
            raise BackupError(f"{self.name}: member {member!r} is damaged (it does not unpack); copy or download the "
                              "backup again") from None

    def rows(self, member: str) -> Iterator[Any]:
        """A member's rows one at a time, parsed as they are read; `scan` it first (depth and number sizes)."""
        with self.zf.open(self._info(member)) as fh, self.intact(member):
            if not fh.peek(64).lstrip().startswith(b"["):
                raise BackupError(f"{self.name}: {member} is not a list of rows")
            try:
                yield from ijson.items(fh, "item", use_float=True)
            except ijson.JSONError as exc:
                raise BackupError(f"{self.name}: {member}: not valid JSON ({exc})") from None


class _TooLarge(Exception):
    pass


class _CountingReader(io.RawIOBase):
    """A member read in chunks, counting its bytes and rows ("pk")."""

    def __init__(self, raw: BinaryIO, cap: int) -> None:
        self.raw, self.cap = raw, cap
        self.size = self.rows = 0
        self.tail = b""  # a '"pk"' cut between two chunks

    def read(self, n: int = -1) -> bytes:
        chunk = self.raw.read(n)
        self.size += len(chunk)
        if self.size > self.cap:
            raise _TooLarge
        joined = self.tail + chunk
        self.rows += joined.count(b'"pk"') - self.tail.count(b'"pk"')
        self.tail = chunk[-3:]
        return chunk

    def close(self) -> None:
        self.raw.close()
        super().close()


def _remap_json(value: Any, uuids: dict[str, str]) -> Any:
    if isinstance(value, str):
        if "\x00" in value:
            raise ValidationError(NUL_REFUSED)
        return uuids.get(value.lower(), value)
    if isinstance(value, list):
        return [_remap_json(v, uuids) for v in value]
    if isinstance(value, dict):
        return {_remap_json(k, uuids): _remap_json(v, uuids) for k, v in value.items()}
    return value


NUL_REFUSED = "it holds a NUL character, which cannot be stored"


def _storable(f: models.Field, value: Any) -> Any:
    """`value` as decoded, once it is known to fit `f` (its length, range and choices): a value the database would
    refuse stops the restore at its row and field, not at the batch it is in with the database's own words."""
    if value is None:
        return value
    if isinstance(value, str) and "\x00" in value:
        raise ValidationError(NUL_REFUSED)
    if isinstance(value, dt.datetime) and not storable(value):
        raise ValidationError(f"{value.isoformat()} falls outside the years 1 to 9999 in UTC")
    if value in f.empty_values:  # as Field.clean(): blank is for the model to allow, and it did when written
        return value
    if f.choices and value not in _choice_values(f):
        raise ValidationError(f"{value!r} is not a valid choice")
    for validator in _size_validators(f):
        validator(value)
    return value


@functools.cache
def _choice_values(f: models.Field) -> frozenset:
    return frozenset(value for value, _ in f.flatchoices)


@functools.cache
def _size_validators(f: models.Field) -> tuple:
    """The validators of what the column can hold (max_length, an integer's range); not the form's others (a URL's
    shape), which a project kept what it was given."""
    return tuple(v for v in f.validators if isinstance(v, MaxLengthValidator | MinValueValidator | MaxValueValidator))


def _decode(f: models.Field, value: Any, uuids: dict[str, str]) -> Any:
    if value is None:
        return None
    if isinstance(value, dict) and "$base64" in value and not isinstance(f, models.JSONField):
        return base64.b64decode(value["$base64"])
    if isinstance(value, dict) and "$seconds" in value and isinstance(f, models.DurationField):
        return dt.timedelta(seconds=value["$seconds"])
    if isinstance(f, models.JSONField):
        return _remap_json(value, uuids)
    if isinstance(f, models.UUIDField):
        return uuid.UUID(uuids.get(str(value).lower(), str(value)))
    if isinstance(f, models.CharField | models.TextField) and isinstance(value, str):
        return uuids.get(value.lower(), value)
    return f.to_python(value)


def _refused(archive: str, plan: ModelPlan, rows: Sequence[dict], exc: DatabaseError) -> str:
    """Why the database refused a batch of rows, in words: their rows and the rule (a constraint of the model) they
    break; never the database's own text, which names tables and internals."""
    where = f"{archive}: {plan.label} rows {rows[0]['pk']} to {rows[-1]['pk']}"
    rule = getattr(getattr(exc.__cause__, "diag", None), "constraint_name", None)
    if rule:
        return (f"{where} break the rule “{rule}” (two rows that must differ, or a value out of bounds): the backup "
                f"was changed after it was written. Nothing was restored.")
    log.warning("restore of %s refused by the database", plan.label, exc_info=exc)
    return f"{where}: a value the database cannot store. Nothing was restored."


@dataclass
class BackupPerson:
    """Someone an imported file names (a backup, a .qdpx): their name there, what they did, and whether that needs
    an account here. The people step of a restore and of a .qdpx import maps each to an account or keeps the name."""

    username: str  # the name shown and kept (a backup's username, a .qdpx user's name)
    counts: dict[str, int] = field(default_factory=dict)  # model verbose name (plural) → rows
    needs_account: bool = False  # they coded or wrote turn notes: those rows belong to an account
    key: str = ""  # what the import's mapping is keyed by (a .qdpx user's GUID); the username when empty
    aliases: tuple[str, ...] = ()  # other names the file gives them (a .qdpx user's id)

    def __post_init__(self) -> None:
        self.key = self.key or self.username

    @property
    def summary(self) -> str:
        """What they did, as "2 memos, 1 coding"."""
        return ", ".join(f"{n:,} {label if n != 1 else _one(label)}" for label, n in sorted(self.counts.items()))

    def is_named(self, username: str) -> bool:
        """Whether the file calls them `username` (the importer's own entry is suggested as the importer)."""
        return username in (self.username, *self.aliases)


@functools.cache
def _singular() -> dict[str, str]:
    return {str(m._meta.verbose_name_plural): str(m._meta.verbose_name) for m in apps.get_models()}


def _one(plural: str) -> str:
    """The singular of a model's plural name ("thread reads" → "thread read"); other words lose their s."""
    return _singular().get(plural) or plural.removesuffix("s")


def _unique_uuid_fields(plan: ModelPlan) -> list[str]:
    """The model's public ids: a restore gives each a fresh UUID and maps every mention of it."""
    return [f.attname for f in plan.fields if isinstance(f, models.UUIDField) and f.unique]


def _names_people(plan: ModelPlan) -> bool:
    """Whether the model's rows name people (a foreign key or many-to-many field to the user model)."""
    return bool(plan.user_fks) or USER in plan.m2m.values()


def _people(archive_name: str, plans: dict[str, ModelPlan],
            entries: dict[str, list] | Iterator[tuple[str, list]]) -> dict[str, BackupPerson]:
    """Every username the backup's rows name, with what each did. `entries` may be a lazy (label, rows) stream."""
    people: dict[str, BackupPerson] = {}
    for label, rows in entries.items() if isinstance(entries, dict) else entries:
        plan = plans[label]
        user_m2m = [n for n, t in plan.m2m.items() if t == USER]
        if not plan.user_fks and not user_m2m:
            continue
        required = {f.attname for f in plan.fields if f.attname in plan.user_fks and not f.null}
        what = str(plan.model._meta.verbose_name_plural)
        for row in rows:
            values = row.get("fields") if isinstance(row, dict) else None
            if not isinstance(values, dict):
                raise BackupError(f"{archive_name}: a {label} row is malformed")
            named = [(a, values.get(a)) for a in plan.user_fks] + [(n, u) for n in user_m2m for u in values.get(n) or []]
            for attname, username in named:
                if username is None or username == "":
                    continue
                if not isinstance(username, str) or len(username) > 150:
                    raise BackupError(f"{archive_name}: {label} row {row.get('pk')}, field {attname}: "
                                      f"not a username: {str(username)[:80]!r}")
                person = people.setdefault(username, BackupPerson(username))
                person.counts[what] = person.counts.get(what, 0) + 1
                person.needs_account |= attname in required and label not in ACCOUNT_ONLY
            if len(people) > MAX_PEOPLE:
                raise BackupError(f"{archive_name}: the backup names more than {MAX_PEOPLE} people; "
                                  "that is not a real team, so it is not restored")
    return people


def _manifest(archive: _Archive) -> tuple[dict, dict[str, ModelPlan], dict[str, str]]:
    """The manifest, the plans and each backed-up model's member, checked before any row is read: the project
    row first (exactly one), and the members' unpacked sizes against what a restore may hold."""
    if "manifest.json" not in archive.zf.namelist():
        raise BackupError(f"{archive.name}: not an RTA Studio project backup (it holds no manifest.json); a .qdpx from a "
                          "QDA tool is imported under “From another QDA tool”")
    manifest = archive.json("manifest.json", cap=MAX_MANIFEST_BYTES)
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BackupError(f"{archive.name}: not an RTA Studio project backup (manifest format is not {FORMAT!r})")
    if not isinstance(manifest.get("version"), int) or manifest["version"] > VERSION:
        raise BackupError(f"{archive.name}: backup version {manifest.get('version')!r} is newer than this "
                          f"instance understands ({VERSION}); upgrade first")
    plans = {p.label: p for p in backup_plan()}
    files: dict[str, str] = {}
    models_listed = manifest.get("models", [])
    for entry in models_listed if isinstance(models_listed, list) else []:
        label = entry.get("model") if isinstance(entry, dict) else None
        if label in EXCLUDED:
            continue
        if label not in plans:
            raise BackupError(f"{archive.name}: the backup holds {label!r}, which this instance does not know "
                              "(made by a newer version?)")
        files[label] = entry.get("file")
    if PROJECT_LABEL not in files:
        raise BackupError(f"{archive.name}: the backup must hold exactly one project")
    project = _member_rows(archive, files[PROJECT_LABEL], cap=MAX_PROJECT_MEMBER_BYTES)
    if len(project) != 1:
        raise BackupError(f"{archive.name}: the backup must hold exactly one project")
    return manifest, plans, files


def _member_rows(archive: _Archive, member: str, *, cap: int) -> list:
    rows = archive.json(member, cap=cap)
    if not isinstance(rows, list):
        raise BackupError(f"{archive.name}: {member} is not a list of rows")
    return rows


def _counted(archive: _Archive, files: dict[str, str]) -> dict[str, int]:
    """Each model's rows, counted while every member is checked (size, depth, numbers) in constant memory; a
    backup of more rows than one restore may hold is refused before any is parsed."""
    counts = {label: archive.scan(member) for label, member in files.items()}
    if (total := sum(counts.values())) > MAX_RESTORE_ROWS:
        raise BackupError(f"{archive.name}: too large to restore on this server: it holds {total:,} rows, more than "
                          f"the {MAX_RESTORE_ROWS:,} one restore may bring in")
    return counts


# Told how far a long import is: (done, total, what is counted), e.g. (1200, 98000, "records").
Progress = Callable[[int, int, str], None]


def no_progress(done: int, total: int, what: str) -> None:
    pass


class _Restorer:
    def __init__(self, archive: _Archive, *, owner, name: str, members: str, people: Mapping[str, Any],
                 progress: Progress | None = None) -> None:
        self.archive, self.owner, self.name, self.members = archive, owner, name, members
        self.progress = progress or no_progress
        self.pk_maps: dict[str, dict[int, int]] = defaultdict(dict)
        self.accounts: dict[str, Any] = {k: v for k, v in people.items() if v is not None}
        # (model label, row's new key, field, name) of people kept as names only, written once all rows are in.
        self.names: list[tuple[str, Any, str, str]] = []
        # (plan, row's new key, field, old key it points to, row's old key): keys set once every row is in.
        self.deferred: list[tuple[ModelPlan, int, str, Any, Any]] = []
        self.warnings: list[str] = []
        self.counts: dict[str, int] = {plan.label: 0 for plan in backup_plan()}

    def account(self, username: str | None):
        """The account the restorer chose for this person, or None (kept as a name only)."""
        return self.accounts.get(username) if username else None

    def check_people(self, people: dict[str, BackupPerson]) -> None:
        chosen: dict[int, list[str]] = defaultdict(list)
        for username in people:
            if (account := self.account(username)) is not None:
                chosen[account.pk].append(username)
        for names in chosen.values():
            if len(names) > 1:
                raise BackupError(f"{self.archive.name}: {' and '.join(names)} are mapped to the same account; "
                                  "each account can stand for one person of the backup")
        unmapped = [p for p in people.values() if p.needs_account and self.account(p.username) is None]
        if unmapped:
            listed = "; ".join(f"{p.username} ({p.summary})" for p in unmapped[:10])
            raise BackupError(f"{self.archive.name}: codings and notes belong to a coder, so choose an existing account "
                              f"for {listed}{' and more' if len(unmapped) > 10 else ''}")

    def run(self) -> RestoreResult:
        """Every member is read a batch of rows at a time, three times: its people, its UUIDs, its rows to insert."""
        manifest, plans, files = _manifest(self.archive)
        counts = _counted(self.archive, files)

        def members(which: Callable[[ModelPlan], bool]) -> Iterator[tuple[str, Iterator[Any]]]:
            return ((label, self.archive.rows(member)) for label, member in files.items() if which(plans[label]))

        people = _people(self.archive.name, plans, members(_names_people))
        self.check_people(people)
        uuids = self.new_uuids(plans, members(lambda plan: bool(_unique_uuid_fields(plan))))
        done, total = 0, sum(counts.values())
        self.progress(done, total, "records")
        for plan in backup_plan():
            if plan.label not in files:
                continue
            for rows in itertools.batched(self.archive.rows(files[plan.label]), RESTORE_BATCH):
                done += len(rows)
                if plan.label in ACCOUNT_ONLY:
                    rows = [r for r in rows if self.keep_account_row(plan.label, r)]
                self.insert(plan, rows, uuids)
                self.progress(done, total, "records")
        self.fix_deferred()
        project = Project.objects.get(pk=next(iter(self.pk_maps[PROJECT_LABEL].values())))
        PersonName.objects.bulk_create([PersonName(project=project, model=label, row_id=pk, field=attname, name=name)
                                        for label, pk, attname, name in self.names], batch_size=1000)
        self.ensure_owner(project)
        kept = sorted(p for p in people if self.account(p) is None)
        if kept:
            self.warnings.append(f"Kept as names only (no account here): {', '.join(kept[:20])}"
                                 f"{f' and {len(kept) - 20} more' if len(kept) > 20 else ''}.")
        audit_record(project=project, actor=self.owner, action=AuditEvent.Action.RESTORED, target=project,
                     summary=f"Project restored from the backup {self.archive.name}",
                     data={"backup_of": manifest.get("project", {}), "backup_created_at": manifest.get("created_at"),
                           "people": {p: getattr(self.account(p), "username", None) for p in sorted(people)}})
        return RestoreResult(project=project, counts=self.counts, warnings=self.warnings)

    def new_uuids(self, plans: dict[str, ModelPlan], entries: Iterator[tuple[str, Iterator[Any]]]) -> dict[str, str]:
        """A fresh UUID for every unique UUID in the backup (rows' public ids), so restores never collide.

        Other fields, JSON included, are then mapped through the same table.
        """
        uuids: dict[str, str] = {}
        for label, rows in entries:
            names = _unique_uuid_fields(plans[label])
            for row in rows:
                values = row.get("fields") if isinstance(row, dict) else None
                if not isinstance(values, dict):
                    raise BackupError(f"{self.archive.name}: a {label} row is malformed")
                for n in names:
                    value = values.get(n)
                    if isinstance(value, str):
                        uuids.setdefault(value.lower(), str(uuid.uuid4()))
        return uuids

    def build(self, plan: ModelPlan, row: dict, uuids: dict[str, str]) -> models.Model:
        values = row.get("fields")
        if not isinstance(values, dict) or not isinstance(row.get("pk"), int):
            raise BackupError(f"{self.archive.name}: a {plan.label} row is malformed")
        obj = plan.model()
        for f in plan.fields:
            if f.attname not in values:
                continue  # an older backup without this field: keep the model default
            raw = values[f.attname]
            if f.attname in plan.user_fks:
                account = self.account(raw)
                setattr(obj, f.attname, account.pk if account else None)
                if account is None and raw:
                    self.names.append((plan.label, obj, f.attname, raw))
            elif f.attname in plan.fks:
                target = plan.fks[f.attname]
                new = self.pk_maps[target].get(raw) if raw is not None else None
                if raw is not None and new is None:
                    if not f.null:
                        raise BackupError(f"{self.archive.name}: {plan.label} row {row['pk']} points to {target} "
                                          f"{raw}, which the backup does not hold")
                    # Target not inserted yet (self reference or later model): set after all inserts.
                setattr(obj, f.attname, new)
            elif f.is_relation:
                setattr(obj, f.attname, None)
            elif isinstance(f, models.FileField):
                # Stored files do not travel, and a path from a backup must never point this
                # project at a file that belongs to someone else on this server.
                setattr(obj, f.attname, "")
            else:
                try:
                    setattr(obj, f.attname, _storable(f, _decode(f, raw, uuids)))
                except (ValidationError, ValueError, TypeError) as exc:
                    reason = "; ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc)
                    raise BackupError(f"{self.archive.name}: {plan.label} row {row['pk']}, field {f.name}: "
                                      f"{reason}") from None
        if plan.label == PROJECT_LABEL and self.name:
            obj.name = self.name[:200]
        return obj

    def insert(self, plan: ModelPlan, rows: Sequence[dict], uuids: dict[str, str]) -> None:
        """Insert a batch of a model's rows; what is kept of them: their new keys, the names kept for their people
        and the keys they point to that were not inserted yet (`fix_deferred`)."""
        named_from = len(self.names)
        objs = [self.build(plan, r, uuids) for r in rows]
        try:
            insert_all(plan.model, objs, raw=True)  # raw: the backed-up times, not "now"
        except DatabaseError as exc:
            raise BackupError(_refused(self.archive.name, plan, rows, exc)) from None
        for row, obj in zip(rows, objs, strict=True):
            self.pk_maps[plan.label][row["pk"]] = obj.pk
            for attname in plan.fks:
                raw = row["fields"].get(attname)
                if raw is not None and getattr(obj, attname) is None:
                    self.deferred.append((plan, obj.pk, attname, raw, row["pk"]))
        if plan.m2m:
            self.insert_m2m(plan, rows, objs)
        # The rows are let go: their people's names are kept by their new key.
        self.names[named_from:] = [(label, obj.pk, attname, name) for label, obj, attname, name in self.names[named_from:]]
        self.counts[plan.label] = self.counts.get(plan.label, 0) + len(objs)

    def insert_m2m(self, plan: ModelPlan, rows: Sequence[dict], objs: list[models.Model]) -> None:
        for name, target in plan.m2m.items():
            through = getattr(plan.model, name).through
            f = plan.model._meta.get_field(name)
            src_col, dst_col = f.m2m_field_name() + "_id", f.m2m_reverse_field_name() + "_id"
            links = []
            for row, obj in zip(rows, objs, strict=True):
                for old in row["fields"].get(name) or []:
                    if target == USER:
                        account = self.account(old)
                        new = account.pk if account else None
                        if account is None and old:
                            self.names.append((plan.label, obj, name, old))
                    else:
                        new = self.pk_maps[target].get(old)
                    if new is not None:
                        links.append(through(**{src_col: obj.pk, dst_col: new}))
            through.objects.bulk_create(links, batch_size=1000)

    def fix_deferred(self) -> None:
        """Set the keys that pointed to rows inserted later (a self reference, a later model) now all are in."""
        changed: dict[tuple[type[models.Model], str], list[models.Model]] = defaultdict(list)
        for plan, pk, attname, raw, old_pk in self.deferred:
            new = self.pk_maps[plan.fks[attname]].get(raw)
            if new is None:
                self.warnings.append(f"{plan.label} row {old_pk}: {attname} pointed outside the backup; cleared.")
                continue
            changed[plan.model, attname].append(plan.model(pk=pk, **{attname: new}))
        for (model, attname), objs in changed.items():
            model._base_manager.bulk_update(objs, [model._meta.get_field(attname.removesuffix("_id")).name], batch_size=500)

    def keep_account_row(self, label: str, row: dict) -> bool:
        """Memberships and read markers come back only for people mapped to an account; memberships of
        others than the restorer only with members="all" (a backup never grants access by itself)."""
        account = self.account(row.get("fields", {}).get("user_id"))
        if account is None:
            return False
        return label != "projects.membership" or self.members == "all" or account.pk == self.owner.pk

    def ensure_owner(self, project: Project) -> None:
        membership, created = Membership.objects.get_or_create(project=project, user=self.owner, defaults={"role": Role.OWNER})
        if not created and membership.role != Role.OWNER:
            membership.role = Role.OWNER
            membership.save(update_fields=["role"])


def backup_people(*, source: BinaryIO | bytes | str, filename: str = "backup.zip") -> list[BackupPerson]:
    """The people a backup names (for the restorer to map to accounts), by username; refuses a bad archive."""
    archive = _Archive(source, filename)
    _, plans, files = _manifest(archive)
    _counted(archive, files)  # every member checked, as a restore would
    # Only the members whose rows name people are parsed, a row at a time.
    entries = ((label, archive.rows(member)) for label, member in files.items() if _names_people(plans[label]))
    return sorted(_people(archive.name, plans, entries).values(), key=lambda p: p.username.lower())


def restore_accounts(restorer) -> list:
    """The accounts a restorer may map people to: themselves and the active people they share a project with
    (never a search of every account on the instance)."""
    User = get_user_model()
    shared = Membership.objects.filter(project__memberships__user=restorer).values("user_id")
    return list(User.objects.filter(models.Q(pk=restorer.pk) | models.Q(pk__in=shared, is_active=True))
                .order_by("username"))


@transaction.atomic
def project_restore(*, source: BinaryIO | bytes | str, owner, name: str = "", members: str = "me",
                    people: Mapping[str, Any] | None = None, filename: str = "backup.zip",
                    progress: Progress | None = None) -> RestoreResult:
    """Restore a backup into a new project owned by `owner`; lands whole or not at all, and never creates accounts.

    `people` maps a username in the backup to the existing account that person is here (chosen by the
    restorer); everyone else is kept as a name only. `progress(done, total, "records")` is told how far the
    restore is as it goes.
    """
    if members not in ("me", "all"):
        raise ValueError("members must be 'me' or 'all'")
    return _Restorer(_Archive(source, filename), owner=owner, name=name, members=members, people=people or {},
                     progress=progress).run()


def backup_filename(project: Project) -> str:
    stamp = timezone.now().strftime("%Y%m%d-%H%M")
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in project.name)[:60].strip("-") or "project"
    return f"{safe}-{stamp}.rta-backup.zip"

