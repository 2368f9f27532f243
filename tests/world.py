"""A project with one object of every kind, to fill URL kwargs in cross-cutting tests.

URL kwargs are resolved by name: `<model>_uuid` finds the model of that name in our apps
(`interview_uuid` → interviews.Interview) and builds one instance, filling required
fields and foreign keys from the same world, so every object hangs together (the turn
belongs to the interview, which belongs to the project). Models whose names differ from
their kwarg go in ALIASES; objects that need real content get a builder in BUILDERS.
"""

from __future__ import annotations

import datetime as dt
import uuid as uuidlib
from collections.abc import Callable
from typing import Any

from django.apps import apps
from django.db import models
from django.utils import timezone

OUR_APPS = ["projects", "interviews", "conduct", "probes", "coding", "themes", "reports"]

# kwarg stem → "app_label.ModelName" when the URL names the object differently from its model.
ALIASES: dict[str, str] = {
    "key": "conduct.EndpointKey",
    "job": "interviews.ImportJob",
    "import": "interviews.ImportJob",
    "import_send": "interviews.ImportJob",  # the imports API's send-again action (api-import-send-again)
    "session": "conduct.ConductSession",
    "guide_version": "interviews.GuideVersion",
    "meeting": "themes.Review",
    # The live-endpoints API lists live participants by their uuid.
    "live_endpoint": "interviews.Participant",
    "theme_snapshot": "themes.Snapshot",
    "api_token": "accounts.ApiToken",  # an account's, not a project's: outside OUR_APPS
}

# (url namespace, kwarg stem) → model, where apps use the same kwarg for different things.
NAMESPACE_ALIASES: dict[tuple[str, str], str] = {
    ("reports", "job"): "reports.ExportJob",
    ("", "job"): "reports.ProjectImportJob",  # /import/<job_uuid>/: a project import, the owner's own
    ("coding", "run"): "coding.SuggestionRun",
}
# Kwargs that are not objects: a value every view of that name accepts.
SCALARS: dict[str, object] = {
    "number": 1,  # a memo revision number, an interview's alternative branch
    "index": 0,  # position in a review's agenda
    "fmt": "csv",  # a download format
    "token": "not-an-invitation-token",  # invitation links are public by token; an unknown one is a 404
    "decision": "accept",  # a review of an AI suggestion: accept or reject
    "template_slug": "semantic-latent-starter",  # a codebook template (coding/codebook_templates/)
}
# (url name, kwarg) → a value, where one kwarg name means different things in different URLs.
URL_SCALARS: dict[tuple[str, str], object] = {}

TRANSCRIPT = "I think identity is negotiated. It shifts with every conversation."


class UnknownKwarg(LookupError):
    pass


class World:
    """One object of each kind in `project`, created on first use."""

    def __init__(self, *, project, owner, analyst, viewer, outsider) -> None:
        self.project = project
        self.users = {"owner": owner, "analyst": analyst, "viewer": viewer, "outsider": outsider}
        self.objects: dict[type[models.Model], models.Model] = {}
        membership = apps.get_model("projects.Membership")
        self.objects[membership] = membership.objects.get(project=project, user=owner)

    # --- kwargs -------------------------------------------------------------------------
    def kwarg(self, name: str, *, url_name: str = "") -> Any:
        """The value for URL kwarg `name` (url_name resolves DRF's bare `uuid`)."""
        if name == "project_uuid":
            return self.project.uuid
        if name == "username":
            # Membership views act on another member: the viewer (never the acting owner).
            return self.users["viewer"].username
        if name in ("uuid", "pk", "id") and url_name.startswith("api-"):
            stem = url_name.removeprefix("api-").rsplit("-", 1)[0].replace("-", "_")
            obj = self.project if stem == "project" else self.get(self.model_for(stem))
            return obj.uuid if name == "uuid" else obj.pk
        if (url_name, name) in URL_SCALARS:
            return URL_SCALARS[url_name, name]
        if name in SCALARS:
            return SCALARS[name]
        if name.endswith("_uuid"):
            stem = name.removesuffix("_uuid")
            namespace = url_name.split(":")[0] if ":" in url_name else ""
            if (namespace, stem) in NAMESPACE_ALIASES:
                return self.get(apps.get_model(NAMESPACE_ALIASES[namespace, stem])).uuid
            return self.get(self.model_for(stem)).uuid
        if name.endswith("_id") or name.endswith("_pk"):
            return self.get(self.model_for(name.rsplit("_", 1)[0])).pk
        raise UnknownKwarg(name)

    @staticmethod
    def model_for(stem: str) -> type[models.Model]:
        if stem in ALIASES:
            return apps.get_model(ALIASES[stem])
        wanted = stem.replace("_", "")
        for label in OUR_APPS:
            for model in apps.get_app_config(label).get_models():
                if model._meta.model_name == wanted:
                    return model
        raise UnknownKwarg(stem)

    # --- objects ------------------------------------------------------------------------
    def populate(self) -> World:
        """One object of every model in our apps that belongs to a project, so lists have rows."""
        for label in OUR_APPS:
            for model in apps.get_app_config(label).get_models():
                if _belongs_to_project(model):
                    self.get(model)
        return self

    def get(self, model: type[models.Model]) -> models.Model:
        if model._meta.label == "projects.Project":
            return self.project
        if model is apps.get_model("auth.User") or model._meta.label == "auth.User":
            return self.users["owner"]
        if model not in self.objects:
            builder = BUILDERS.get(model._meta.label)
            self.objects[model] = builder(self) if builder else self.autofill(model)
        return self.objects[model]

    def autofill(self, model: type[models.Model], **values: Any) -> models.Model:
        """An instance with every required field filled; foreign keys point into this world."""
        for field in model._meta.concrete_fields:
            if field.primary_key or field.name in values:
                continue
            if field.is_relation:
                if not field.null or field.related_model is apps.get_model("projects.Project"):
                    target = field.related_model
                    values[field.name] = None if target is model else self.get(target)
                continue
            if field.has_default() or field.null or getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
                continue
            values[field.name] = _value_for(field)
        return model.objects.create(**values)


def _belongs_to_project(model: type[models.Model], depth: int = 0) -> bool:
    if model._meta.label == "projects.Project":
        return depth > 0
    if depth > 4:
        return False
    return any(
        f.related_model is not model and _belongs_to_project(f.related_model, depth + 1)
        for f in model._meta.concrete_fields
        if f.is_relation and not f.null
    )


def _value_for(field: models.Field) -> Any:
    if field.choices:
        return field.choices[0][0]
    if isinstance(field, models.EmailField):
        return "world@example.org"
    if isinstance(field, models.URLField):
        return "http://127.0.0.1:9/"
    if isinstance(field, (models.CharField, models.TextField, models.SlugField)):
        return "world"[: field.max_length or 5]
    if isinstance(field, models.BooleanField):
        return False
    if isinstance(field, (models.PositiveIntegerField, models.PositiveSmallIntegerField, models.PositiveBigIntegerField)):
        return 1
    if isinstance(field, (models.IntegerField, models.FloatField, models.DecimalField)):
        return 0
    if isinstance(field, models.DateTimeField):
        return timezone.now()
    if isinstance(field, models.DateField):
        return dt.date.today()
    if isinstance(field, models.UUIDField):
        return uuidlib.uuid4()
    if isinstance(field, models.JSONField):
        return {}
    if isinstance(field, models.BinaryField):
        return b"world"
    if isinstance(field, models.FileField):
        return "world/world.txt"  # a name only: nothing reads the file in these tests
    raise TypeError(f"tests/world.py cannot fill {field.model.__name__}.{field.name} ({type(field).__name__}): add a builder")


def _interview(world: World):
    # Imported from a branching ChatGPT conversation: one alternative branch to read or import.
    branch = {"leaf": "world-leaf", "diverges_at": 0,
              "turns": [{"speaker": "participant", "text": "Identity is given. It rarely shifts.", "metadata": {}}]}
    return world.autofill(apps.get_model("interviews.Interview"), metadata={"branches": [branch]})


def _turn(world: World):
    interview = world.get(apps.get_model("interviews.Interview"))
    return world.autofill(apps.get_model("interviews.Turn"), interview=interview, position=0, speaker="participant", text=TRANSCRIPT)


def _segment(world: World):
    turn = world.get(apps.get_model("interviews.Turn"))
    end = TRANSCRIPT.index(".") + 1
    return world.autofill(
        apps.get_model("interviews.Segment"), interview=turn.interview, turn=turn, position=0,
        start=0, end=end, text=TRANSCRIPT[:end], speaker="participant",
    )


def _guide_version(world: World):
    return world.autofill(apps.get_model("interviews.GuideVersion"), number=1, opening_prompt="Who are you?")


def _coding(world: World):
    segment = world.get(apps.get_model("interviews.Segment"))
    return world.autofill(apps.get_model("coding.Coding"), segment=segment, interview=segment.interview)


def _participant(world: World):
    # Live, so the conduct pages and the live-endpoints API have one to show.
    return world.autofill(apps.get_model("interviews.Participant"), label="GPT-4o", model_id="gpt-4o-2024-08-06", is_live=True)


def _decision(world: World):
    # A valid pending decision (the API validates payloads on the way in).
    return world.autofill(apps.get_model("themes.Decision"), kind="rename", payload={"name": "Identity, renamed"})


def _exemplar(world: World):
    # A real quote of the world's segment: trimming re-reads the pinned spans of the turn.
    segment = world.get(apps.get_model("interviews.Segment"))
    return world.autofill(apps.get_model("themes.Exemplar"), turn=segment.turn, segment=segment,
                          spans=[[segment.start, segment.end]], quote=segment.text)


def _export_job(world: World):
    import io
    from datetime import timedelta

    from projects.blobs import blob_create

    blob = blob_create(source=io.BytesIO(b"theme,model,quote\r\nworld,world,world\r\n"), name="world.csv",
                       keep=timedelta(days=1))
    return world.autofill(apps.get_model("reports.ExportJob"), status="done", format="csv", filename="world.csv",
                          blob=blob)


def _project_import_job(world: World):
    # A finished restore of the world's owner: a waiting one always has a stored upload, which the world has not.
    return world.autofill(apps.get_model("reports.ProjectImportJob"), kind="restore", status="done", filename="world.zip")


def _import_job(world: World):
    # A finished job: an "uploaded" one always has stored files, which the world has not.
    return world.autofill(apps.get_model("interviews.ImportJob"), status="done")


BUILDERS: dict[str, Callable[[World], models.Model]] = {
    "interviews.Interview": _interview,
    "interviews.Turn": _turn,
    "interviews.Segment": _segment,
    "interviews.GuideVersion": _guide_version,
    "coding.Coding": _coding,
    "interviews.ImportJob": _import_job,
    "interviews.Participant": _participant,
    "themes.Decision": _decision,
    "reports.ExportJob": _export_job,
    "reports.ProjectImportJob": _project_import_job,
    "themes.Exemplar": _exemplar,
}
