"""REST API for participants, interviews (with turns and segments) and imports.

Everything lives under /api/projects/<project_uuid>/ with the pages' rules: outsiders
get 404, viewers may read but not write (403).
"""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Prefetch
from drf_spectacular.utils import extend_schema, extend_schema_field, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from interviews.models import ImportJob, Interview, Participant, Segment, Turn
from interviews.parsers import FORMATS, LABEL_CHOICES, NOT_A_SPEAKER, SPEAKERS, ParseError
from interviews.parsers.base import human_size
from interviews.services import PARTICIPANT_FIELDS, interview_update, participant_create, participant_update
from interviews.services_import import (
    ImportOptions,
    ImportOptionsError,
    _check_participant_choice,
    get_progress,
    import_limits,
    importjob_create,
    importjob_discard,
    importjob_queue,
    preview_speaker_labels,
)
from projects.api_exceptions import drf_error
from projects.api_filters import query_filters
from projects.api_parsers import SafeJSONParser
from projects.api_permissions import ProjectScopedMixin
from projects.jobs import job_send_again
from projects.submissions import created_once


class ParticipantSerializer(serializers.ModelSerializer):
    # Annotated on lists; a participant just created or edited has it counted here instead.
    interview_count = serializers.SerializerMethodField()

    class Meta:
        model = Participant
        fields = ["uuid", "label", "provider", "model_id", "interface", "snapshot_date", "attributes", "interview_count",
                  "created_at"]
        read_only_fields = ["uuid", "created_at", "interview_count"]

    def get_interview_count(self, participant: Participant) -> int:
        if hasattr(participant, "interview_count"):
            return participant.interview_count
        return participant.interviews.filter(deleted_at__isnull=True).count()


class InterviewWriteSerializer(serializers.Serializer):
    """The details of an interview that can be corrected after it came in; PATCH sends any of them."""

    title = serializers.CharField(max_length=300)
    conducted_at = serializers.DateTimeField(allow_null=True)
    depth = serializers.ChoiceField(choices=Interview.Depth.choices)
    notes = serializers.CharField(allow_blank=True)
    participant = serializers.SlugRelatedField(slug_field="uuid", queryset=Participant.objects.none(),
                                               help_text="The uuid of one of the project's participants.")

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        project = self.context.get("project")
        if project is not None:
            self.fields["participant"].queryset = Participant.objects.filter(project=project)



class SegmentSerializer(serializers.ModelSerializer):
    class Meta:
        model = Segment
        fields = ["id", "position", "start", "end", "text", "kind", "speaker"]


class TurnSerializer(serializers.ModelSerializer):
    segments = SegmentSerializer(many=True, read_only=True)

    class Meta:
        model = Turn
        fields = ["uuid", "position", "speaker", "text", "model_slug", "timestamp", "status", "metadata", "segments"]


class InterviewSerializer(serializers.ModelSerializer):
    participant = serializers.SlugRelatedField(slug_field="uuid", read_only=True)
    participant_label = serializers.CharField(source="participant.label", read_only=True)
    turn_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = Interview
        fields = ["uuid", "title", "participant", "participant_label", "conducted_at", "origin", "status", "depth",
                  "notes", "source_format", "source_filename", "source_sha256", "source_conversation_id",
                  "content_sha256", "turn_count", "created_at"]
        read_only_fields = fields


class InterviewDetailSerializer(InterviewSerializer):
    turns = TurnSerializer(many=True, read_only=True)

    class Meta(InterviewSerializer.Meta):
        fields = [*InterviewSerializer.Meta.fields, "metadata", "turns"]
        read_only_fields = fields


class ImportJobSerializer(serializers.ModelSerializer):
    progress = serializers.SerializerMethodField()
    file_names = serializers.SerializerMethodField()

    class Meta:
        model = ImportJob
        fields = ["uuid", "status", "file_names", "progress", "summary", "errors", "created_at", "started_at", "finished_at"]
        read_only_fields = fields

    def get_progress(self, job: ImportJob) -> dict:
        return get_progress(job)

    def get_file_names(self, job: ImportJob) -> list[str]:
        return [f["name"] for f in job.files]


class EarlierImportSerializer(serializers.Serializer):
    uuid = serializers.UUIDField()
    title = serializers.CharField()
    imported_at = serializers.DateTimeField()


class PreviewConversationSerializer(serializers.Serializer):
    key = serializers.CharField(help_text="Name it in `conversations` when starting the import.")
    title = serializers.CharField()
    started_at = serializers.DateTimeField(allow_null=True)
    format = serializers.CharField()
    models = serializers.ListField(child=serializers.CharField(), help_text="Model slugs named in the conversation.")
    turns = serializers.IntegerField(help_text="Visible turns.")
    duplicate_of = EarlierImportSerializer(allow_null=True, help_text="The interview of this project with the same content, if any.")


class PreviewFileSerializer(serializers.Serializer):
    name = serializers.CharField()
    imported_before = EarlierImportSerializer(allow_null=True, help_text="An interview imported from this very file, if any.")
    conversations = PreviewConversationSerializer(many=True)


class SpeakerLabelSerializer(serializers.Serializer):
    label = serializers.CharField()
    guess = serializers.CharField(help_text="The speaker the label is taken for unless `label_maps` says otherwise.")


class SpeakerLabelsSerializer(serializers.Serializer):
    source = serializers.CharField(help_text="The key of `label_maps` for this file's labels.")
    labels = SpeakerLabelSerializer(many=True)
    choices = serializers.ListField(child=serializers.CharField(), help_text="What each label may map to.")


class ImportPreviewSerializer(serializers.Serializer):
    files = PreviewFileSerializer(many=True)
    speaker_labels = SpeakerLabelsSerializer(many=True, help_text="Files with speaker labels (plain text, Markdown, CSV).")


class ImportJobDetailSerializer(ImportJobSerializer):
    """The job with its preview: what `start` can choose from (empty while the worker is still reading the files)."""

    preview = serializers.SerializerMethodField()

    class Meta(ImportJobSerializer.Meta):
        fields = [*ImportJobSerializer.Meta.fields, "preview", "options"]
        read_only_fields = fields

    @extend_schema_field(ImportPreviewSerializer)
    def get_preview(self, job: ImportJob) -> dict:
        files = job.preview.get("files", [])
        return {"files": [{"name": f["name"], "imported_before": f.get("imported_before"),
                           "conversations": [{k: c.get(k) for k in PREVIEW_KEYS} for c in f["conversations"]]}
                          for f in files],
                "speaker_labels": speaker_label_groups(job)}


PREVIEW_KEYS = ("key", "title", "started_at", "format", "models", "turns", "duplicate_of")
def speaker_label_groups(job: ImportJob) -> list[dict]:
    """Per source file with speaker labels: each label with its guessed speaker, and the allowed choices."""
    return [{"source": source, "labels": [{"label": lab, "guess": guess} for lab, guess in labels.items()],
             "choices": list(LABEL_CHOICES) if foldable else list(SPEAKERS)}
            for source, labels, foldable in preview_speaker_labels(job)]


def _check_participant(project, choice: str) -> str:
    """The participant choice, or a 400 naming the field (checked before anything is stored)."""
    try:
        _check_participant_choice(project, choice)  # the import's own rule: auto, new:<label>, or a participant's uuid
    except ImportOptionsError as e:
        problem = f'{str(e).rstrip(".")} after "new:".' if choice.startswith("new:") else (
            f"{choice!r} is not a participant of this project: send auto, a participant's uuid, or new:<label>.")
        raise serializers.ValidationError({"participant": [problem]}) from None
    return choice


def _upload_over_limit(uploads) -> str:
    """The message for the first upload larger than the import limit, or ""."""
    limit = import_limits().max_file_bytes
    for up in uploads:
        if up.size > limit:
            return f"{up.name}: the file is {human_size(up.size)}; the limit is {human_size(limit)} per file."
    return ""


class ImportCreateSerializer(serializers.Serializer):
    files = serializers.ListField(child=serializers.FileField(), allow_empty=False)
    format = serializers.ChoiceField(choices=["auto", *FORMATS], default="auto")
    start = serializers.BooleanField(
        default=True, help_text="true (the default): import every conversation at once with the options below. "
        "false: only upload and preview; choose conversations and speakers with the job's `start` action.")
    participant = serializers.CharField(required=False, default="auto",
                                        help_text="auto, a participant uuid, or new:<label>")
    depth = serializers.ChoiceField(choices=Interview.Depth.choices, default=Interview.Depth.COMPREHENSIVE)
    allow_duplicates = serializers.BooleanField(default=False)


class ImportStartSerializer(serializers.Serializer):
    """The preview's choices, as the import page offers them."""

    conversations = serializers.ListField(
        child=serializers.CharField(max_length=1000), required=False, min_length=1, max_length=100000,
        error_messages={"min_length": "Choose at least one conversation to import."},
        help_text="Keys of the preview's conversations to import; without it, every conversation not imported before.")
    label_maps = serializers.DictField(
        child=serializers.DictField(child=serializers.ChoiceField(choices=LABEL_CHOICES)), required=False, default=dict,
        help_text="Per source file of `preview.speaker_labels`: label → speaker (interviewer, participant, system, "
        "or text: not a speaker, for plain text and Markdown). Labels left out keep their guess.")
    participant = serializers.CharField(default="auto", max_length=110,
                                        help_text="auto (one per model), a participant uuid, or new:<label>")
    depth = serializers.ChoiceField(choices=Interview.Depth.choices, default=Interview.Depth.COMPREHENSIVE)
    allow_duplicates = serializers.BooleanField(
        default=False, help_text="Import conversations already in the project (or twice in this upload) again.")

    def validate_participant(self, value: str) -> str:
        return _check_participant(self.context["job"].project, value)

    def validate_conversations(self, value: list[str]) -> list[str]:
        known = {c["key"] for f in self.context["job"].preview.get("files", []) for c in f["conversations"]}
        unknown = [key for key in value if key not in known]
        if unknown:
            raise serializers.ValidationError(f"Not a conversation of this upload: {', '.join(map(repr, unknown[:10]))}.")
        return value

    def validate_label_maps(self, value: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
        groups = {g["source"]: g for g in speaker_label_groups(self.context["job"])}
        errors: dict[str, list[str]] = {}
        for source, mapping in value.items():
            group = groups.get(source)
            if group is None:
                errors[source] = ["No file of this upload has speaker labels under this name."]
                continue
            labels = {item["label"] for item in group["labels"]}
            problems = [f"{label!r} is not one of its speaker labels ({', '.join(sorted(labels))})."
                        for label in mapping if label not in labels]
            problems += [f"{label!r} cannot map to {NOT_A_SPEAKER!r}: only plain text and Markdown lines fold into the turn before."
                         for label, speaker in mapping.items() if speaker not in group["choices"] and label in labels]
            if problems:
                errors[source] = problems
        if errors:
            raise serializers.ValidationError(errors)
        return value

    def options(self) -> ImportOptions:
        v = self.validated_data
        return ImportOptions(selected=set(v["conversations"]) if "conversations" in v else None,
                             label_maps=v["label_maps"], participant=v["participant"], depth=v["depth"],
                             allow_duplicates=v["allow_duplicates"])


class ConflictSerializer(serializers.Serializer):
    detail = serializers.CharField()


class ParticipantViewSet(ProjectScopedMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin,
                         mixins.UpdateModelMixin, viewsets.GenericViewSet):
    """The project's interviewed chatbots."""

    serializer_class = ParticipantSerializer
    lookup_field = "uuid"

    def get_queryset(self):
        return Participant.objects.filter(project=self.project).with_interview_counts().order_by("label")

    def get_serializer_context(self):
        return {**super().get_serializer_context(), "project": self.project}

    # Writes go through the services, so they are checked and audited like the page's (label taken, attributes' shape).
    def perform_create(self, serializer):
        d = serializer.validated_data
        try:
            serializer.instance = participant_create(project=self.project, actor=self.request.user,
                                                     **{f: d[f] for f in PARTICIPANT_FIELDS if f in d})
        except DjangoValidationError as exc:
            raise drf_error(exc) from None

    def perform_update(self, serializer):
        participant, d = serializer.instance, serializer.validated_data
        try:
            participant_update(participant=participant, actor=self.request.user,
                               **{f: d.get(f, getattr(participant, f)) for f in PARTICIPANT_FIELDS})
        except DjangoValidationError as exc:
            raise drf_error(exc) from None


class InterviewFilter(serializers.Serializer):
    depth = serializers.ChoiceField(choices=Interview.Depth.choices, required=False)
    participant = serializers.UUIDField(required=False, source="participant__uuid", help_text="Only this participant's interviews.")


@extend_schema_view(list=extend_schema(parameters=[InterviewFilter]))
class InterviewViewSet(ProjectScopedMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Interviews; the detail includes every turn with its segments (a constant number of queries).

    PATCH corrects the details (title, conducted_at, depth, notes, participant); the transcript stays as it came in.
    """

    lookup_field = "uuid"

    def get_serializer_class(self):
        if self.action == "partial_update":
            return InterviewWriteSerializer
        return InterviewDetailSerializer if self.action == "retrieve" else InterviewSerializer

    def get_serializer_context(self):
        return {**super().get_serializer_context(), "project": self.project}

    @extend_schema(request=InterviewWriteSerializer, responses=InterviewSerializer)
    def partial_update(self, request: Request, *args, **kwargs) -> Response:
        interview = self.get_object()
        data = InterviewWriteSerializer(data=request.data, partial=True, context=self.get_serializer_context())
        data.is_valid(raise_exception=True)
        fields = ("title", "conducted_at", "depth", "notes", "participant")
        try:
            interview_update(interview=interview, actor=request.user,
                             **{f: data.validated_data.get(f, getattr(interview, f)) for f in fields})
        except DjangoValidationError as exc:
            raise drf_error(exc) from None
        return Response(InterviewSerializer(self.get_queryset().get(pk=interview.pk)).data)

    def get_queryset(self):
        qs = Interview.objects.for_project(self.project).with_turn_count()
        if self.action == "list":
            qs = qs.filter(**query_filters(self.request, InterviewFilter))
        if self.action == "retrieve":
            qs = qs.prefetch_related(Prefetch("turns", Turn.objects.order_by("position").prefetch_related(
                Prefetch("segments", Segment.objects.order_by("position")))))
        return qs.order_by("-created_at", "title")


@extend_schema_view(
    create=extend_schema(request={"multipart/form-data": ImportCreateSerializer},
                         responses={201: ImportJobDetailSerializer, 202: ImportJobDetailSerializer,
                                    413: ConflictSerializer}),
    retrieve=extend_schema(responses=ImportJobDetailSerializer),
    destroy=extend_schema(responses={204: None, 409: ConflictSerializer}),
)
@created_once
class ImportViewSet(ProjectScopedMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin,
                    mixins.DestroyModelMixin, viewsets.GenericViewSet):
    """Imports, in one call or two.

    One call: POST the files (start=true, the default) and every conversation not imported before is imported
    with guessed speakers (202); a file over the import limit (RTA_MAX_UPLOAD_BYTES, 200 MB by default) is
    refused whole with 413 and a message naming it. Two calls, as on the import page: POST the files with start=false (201: the job
    with its preview; a large upload is read by the worker first, status "analysing", then "uploaded"), then
    POST the job's `start` with the chosen conversations, speaker labels, participant and depth (202), or DELETE
    the job to discard the upload (409 once the worker has started it). A job still waiting for the worker can be
    sent again (`send-again`) or discarded.
    """

    lookup_field = "uuid"
    parser_classes = [MultiPartParser, FormParser]

    def get_serializer_class(self):
        if self.action == "create":
            return ImportCreateSerializer
        return ImportJobDetailSerializer if self.action in ("retrieve", "start") else ImportJobSerializer

    def get_queryset(self):
        return ImportJob.objects.filter(project=self.project).order_by("-created_at")

    def create(self, request: Request, *args, **kwargs) -> Response:
        # A plain dict, never request.data.copy(): QueryDict.copy() deep-copies the uploads, and an
        # upload over FILE_UPLOAD_MAX_MEMORY_SIZE is an open temporary file that cannot be copied (a 500).
        data = {key: request.data.get(key) for key in request.data if key != "files"}
        data["files"] = request.FILES.getlist("files")
        if too_big := _upload_over_limit(data["files"]):
            return Response({"detail": too_big}, status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
        ser = ImportCreateSerializer(data=data)
        ser.is_valid(raise_exception=True)
        v = ser.validated_data
        if v["start"]:
            _check_participant(self.project, v["participant"])  # before the files are stored: a bad choice leaves nothing
        try:
            job = importjob_create(project=self.project, user=request.user, uploads=v["files"], format=v["format"])
            if not v["start"]:
                return Response(ImportJobDetailSerializer(job).data, status=status.HTTP_201_CREATED)
            importjob_queue(job=job, options=ImportOptions(participant=v["participant"], depth=v["depth"],
                                                           allow_duplicates=v["allow_duplicates"]))
        except (ParseError, ImportOptionsError) as e:
            return Response({"detail": str(e)}, status=status.HTTP_400_BAD_REQUEST)
        job.refresh_from_db()
        return Response(ImportJobDetailSerializer(job).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=ImportStartSerializer, responses={202: ImportJobDetailSerializer, 409: ConflictSerializer})
    @action(detail=True, methods=["post"], parser_classes=[SafeJSONParser])
    def start(self, request: Request, *args, **kwargs) -> Response:
        """Import an uploaded job's chosen conversations in the worker (the import page's "Import" button).

        409 while the files are still being read, and once the job has started, finished or failed.
        """
        job = self.get_object()
        if job.status != ImportJob.Status.UPLOADED:
            return _conflict(job)
        choices = ImportStartSerializer(data=request.data, context={"job": job})
        choices.is_valid(raise_exception=True)
        try:
            importjob_queue(job=job, options=choices.options())
        except ImportOptionsError as e:
            job.refresh_from_db()
            if job.status != ImportJob.Status.UPLOADED:  # a concurrent start won
                return _conflict(job)
            return Response({"detail": str(e)}, status=status.HTTP_400_BAD_REQUEST)
        job.refresh_from_db()
        return Response(ImportJobDetailSerializer(job).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=None, responses={202: ImportJobDetailSerializer, 409: ConflictSerializer})
    @action(detail=True, methods=["post"], url_path="send-again")
    def send_again(self, request: Request, *args, **kwargs) -> Response:
        """Send a job that still waits for the worker ("analysing" or "queued") to it again; 409 once it has
        started. Jobs waiting a minute are re-sent on their own; this does it now."""
        job = self.get_object()
        try:
            job_send_again(job=job)
        except DjangoValidationError as e:
            return Response({"detail": " ".join(e.messages)}, status=status.HTTP_409_CONFLICT)
        job.refresh_from_db()
        return Response(ImportJobDetailSerializer(job).data, status=status.HTTP_202_ACCEPTED)

    def destroy(self, request: Request, *args, **kwargs) -> Response:
        """Discard an upload that has not been imported, also one still waiting for the worker (its stored
        files go with it); 409 once the worker has started it."""
        try:
            importjob_discard(job=self.get_object())
        except ImportOptionsError as e:
            return Response({"detail": str(e)}, status=status.HTTP_409_CONFLICT)
        return Response(status=status.HTTP_204_NO_CONTENT)


def _conflict(job: ImportJob) -> Response:
    reasons = {ImportJob.Status.ANALYSING: "The files are still being read; start once the status is \"uploaded\".",
               ImportJob.Status.FAILED: "This upload could not be read; see its errors."}
    detail = reasons.get(job.status, "This import has already been started.")
    return Response({"detail": detail}, status=status.HTTP_409_CONFLICT)
