"""REST API for participants, interviews (with turns and segments) and imports.

Everything lives under /api/projects/<project_uuid>/ with the pages' rules: outsiders
get 404, viewers may read but not write (403).
"""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Count, Prefetch
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from interviews.models import ImportJob, Interview, Participant, Segment, Turn
from interviews.parsers import FORMATS, ParseError
from interviews.services import interview_update, participant_update
from interviews.services_import import ImportOptions, ImportOptionsError, get_progress, importjob_create, importjob_queue
from projects.api_filters import query_filters
from projects.api_permissions import ProjectScopedMixin


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

    def validate_label(self, value: str) -> str:
        project = self.context["project"]
        clash = Participant.objects.filter(project=project, label=value)
        if self.instance is not None:
            clash = clash.exclude(pk=self.instance.pk)
        if clash.exists():
            raise serializers.ValidationError("This project already has a participant with this label.")
        return value


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


def _drf_error(exc: DjangoValidationError) -> serializers.ValidationError:
    return serializers.ValidationError(exc.message_dict if hasattr(exc, "error_dict") else {"detail": exc.messages})


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


class ImportCreateSerializer(serializers.Serializer):
    files = serializers.ListField(child=serializers.FileField(), allow_empty=False)
    format = serializers.ChoiceField(choices=["auto", *FORMATS], default="auto")
    participant = serializers.CharField(required=False, default="auto",
                                        help_text="auto, a participant uuid, or new:<label>")
    depth = serializers.ChoiceField(choices=Interview.Depth.choices, default=Interview.Depth.COMPREHENSIVE)
    allow_duplicates = serializers.BooleanField(default=False)


class ParticipantViewSet(ProjectScopedMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin,
                         mixins.UpdateModelMixin, viewsets.GenericViewSet):
    """The project's interviewed chatbots."""

    serializer_class = ParticipantSerializer
    lookup_field = "uuid"

    def get_queryset(self):
        return Participant.objects.filter(project=self.project).with_interview_counts().order_by("label")

    def get_serializer_context(self):
        return {**super().get_serializer_context(), "project": self.project}

    def perform_create(self, serializer):
        serializer.save(project=self.project)

    def perform_update(self, serializer):
        # Through the service, so the edit is audited like the page's.
        participant, d = serializer.instance, serializer.validated_data
        fields = ("label", "provider", "model_id", "interface", "snapshot_date", "attributes")
        try:
            participant_update(participant=participant, actor=self.request.user,
                               **{f: d.get(f, getattr(participant, f)) for f in fields})
        except DjangoValidationError as exc:
            raise _drf_error(exc) from None


class InterviewFilter(serializers.Serializer):
    depth = serializers.ChoiceField(choices=Interview.Depth.choices, required=False)
    participant = serializers.UUIDField(required=False, help_text="Only this participant's interviews.")


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
            raise _drf_error(exc) from None
        return Response(InterviewSerializer(self.get_queryset().get(pk=interview.pk)).data)

    def get_queryset(self):
        qs = Interview.objects.for_project(self.project).annotate(turn_count=Count("turns"))
        wanted = query_filters(self.request, InterviewFilter) if self.action == "list" else {}
        if "depth" in wanted:
            qs = qs.filter(depth=wanted["depth"])
        if "participant" in wanted:
            qs = qs.filter(participant__uuid=wanted["participant"])
        if self.action == "retrieve":
            qs = qs.prefetch_related(Prefetch("turns", Turn.objects.order_by("position").prefetch_related(
                Prefetch("segments", Segment.objects.order_by("position")))))
        return qs.order_by("-created_at", "title")


class ImportViewSet(ProjectScopedMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin,
                    viewsets.GenericViewSet):
    """Upload files and import every conversation in them (duplicates skipped unless allowed)."""

    lookup_field = "uuid"
    parser_classes = [MultiPartParser, FormParser]

    def get_serializer_class(self):
        return ImportCreateSerializer if self.action == "create" else ImportJobSerializer

    def get_queryset(self):
        return ImportJob.objects.filter(project=self.project).order_by("-created_at")

    def create(self, request: Request, *args, **kwargs) -> Response:
        data = request.data.copy()
        if hasattr(request.data, "getlist"):
            data.setlist("files", request.FILES.getlist("files"))
        ser = ImportCreateSerializer(data=data)
        ser.is_valid(raise_exception=True)
        v = ser.validated_data
        try:
            job = importjob_create(project=self.project, user=request.user, uploads=v["files"], format=v["format"])
            importjob_queue(job=job, options=ImportOptions(participant=v["participant"], depth=v["depth"],
                                                           allow_duplicates=v["allow_duplicates"]))
        except (ParseError, ImportOptionsError) as e:
            return Response({"detail": str(e)}, status=status.HTTP_400_BAD_REQUEST)
        job.refresh_from_db()
        return Response(ImportJobSerializer(job).data, status=status.HTTP_202_ACCEPTED)
