"""REST API for guides, live endpoints, stored keys and conduct sessions.

Same rules as the pages (outsiders 404, viewers read-only). A stored API key is
write-only: responses carry its label and masked hint, never the key.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Count, Prefetch
from rest_framework import mixins, serializers, viewsets
from rest_framework.exceptions import ValidationError

from conduct import services
from conduct.models import ConductSession, EndpointKey, Seat
from conduct.throttle import DEFAULT_MAX_IN_FLIGHT
from interviews.models import Guide, GuideVersion, Participant
from projects.api_permissions import ProjectScopedMixin
from projects.models import Role


class GuideVersionSerializer(serializers.ModelSerializer):
    class Meta:
        model = GuideVersion
        fields = ["uuid", "number", "opening_prompt", "system_prompt", "planned_questions", "notes", "created_at"]


class GuideSerializer(serializers.ModelSerializer):
    versions = GuideVersionSerializer(many=True, read_only=True)

    class Meta:
        model = Guide
        fields = ["uuid", "name", "created_at", "versions"]


class EndpointKeySerializer(serializers.ModelSerializer):
    key = serializers.CharField(write_only=True, trim_whitespace=True, style={"input_type": "password"})

    class Meta:
        model = EndpointKey
        fields = ["uuid", "label", "hint", "key", "base_url", "created_at"]
        read_only_fields = ["uuid", "hint", "created_at"]
        extra_kwargs = {"base_url": {"required": True, "allow_blank": False}}


class LiveEndpointSerializer(serializers.ModelSerializer):
    timeout_seconds = serializers.FloatField(source="live_endpoint.timeout_seconds", default=60.0, read_only=True)
    stream_answers = serializers.BooleanField(source="live_endpoint.stream_answers", default=True, read_only=True)
    max_in_flight = serializers.IntegerField(source="live_endpoint.max_in_flight", default=DEFAULT_MAX_IN_FLIGHT,
                                            read_only=True)
    key_source = serializers.CharField(source="live_endpoint.key_source", default="none", read_only=True)
    api_key = serializers.SerializerMethodField()

    class Meta:
        model = Participant
        fields = ["uuid", "label", "provider", "model_id", "base_url", "temperature", "top_p", "seed", "max_tokens",
                  "timeout_seconds", "stream_answers", "max_in_flight", "key_source",
                  "api_key"]

    def get_api_key(self, participant: Participant) -> dict[str, str] | None:
        key = getattr(getattr(participant, "live_endpoint", None), "api_key", None)
        return {"uuid": str(key.uuid), "label": key.label, "hint": key.hint} if key else None


class SeatSerializer(serializers.ModelSerializer):
    interview = serializers.UUIDField(source="interview.uuid")
    participant = serializers.CharField(source="interview.participant.label")
    status = serializers.CharField(source="interview.status")
    rerun_of = serializers.UUIDField(source="interview.rerun_of.uuid", default=None, allow_null=True)

    class Meta:
        model = Seat
        fields = ["position", "interview", "participant", "status", "rerun_of"]


class ConductSessionSerializer(serializers.ModelSerializer):
    guide = serializers.UUIDField(source="guide_version.guide.uuid")
    guide_version = serializers.IntegerField(source="guide_version.number")
    seats = SeatSerializer(many=True)

    class Meta:
        model = ConductSession
        fields = ["uuid", "guide", "guide_version", "checked_questions", "created_at", "ended_at", "seats"]


class GuideViewSet(ProjectScopedMixin, viewsets.ReadOnlyModelViewSet):
    serializer_class = GuideSerializer
    lookup_field = "uuid"

    def get_queryset(self):
        versions = GuideVersion.objects.order_by("-number")
        return Guide.objects.filter(project=self.project).prefetch_related(Prefetch("versions", queryset=versions))


class LiveEndpointViewSet(ProjectScopedMixin, viewsets.ReadOnlyModelViewSet):
    serializer_class = LiveEndpointSerializer
    lookup_field = "uuid"

    def get_queryset(self):
        return (
            Participant.objects.filter(project=self.project, is_live=True)
            .select_related("live_endpoint__api_key")
            .order_by("label")
        )


class EndpointKeyViewSet(
    ProjectScopedMixin, mixins.CreateModelMixin, mixins.DestroyModelMixin, viewsets.ReadOnlyModelViewSet
):
    """Stored keys; only owners store or delete them, each bound to the one endpoint it is sent to."""

    serializer_class = EndpointKeySerializer
    lookup_field = "uuid"
    write_level = Role.OWNER

    def get_queryset(self):
        return EndpointKey.objects.filter(project=self.project).annotate(used_by=Count("endpoints")).order_by("label")

    def perform_create(self, serializer: EndpointKeySerializer) -> None:
        data = serializer.validated_data
        if EndpointKey.objects.filter(project=self.project, label=data["label"].strip()).exists():
            raise ValidationError({"label": ["A key with this label is already stored."]})
        try:
            serializer.instance = services.endpoint_key_store(
                project=self.project, user=self.request.user, label=data["label"], plain_key=data["key"],
                base_url=data["base_url"],
            )
        except DjangoValidationError as exc:
            raise ValidationError(exc.message_dict) from exc

    def perform_destroy(self, instance: EndpointKey) -> None:
        services.endpoint_key_delete(key=instance, user=self.request.user)


class ConductSessionViewSet(ProjectScopedMixin, viewsets.ReadOnlyModelViewSet):
    serializer_class = ConductSessionSerializer
    lookup_field = "uuid"

    def get_queryset(self):
        seats = Seat.objects.select_related("interview__participant", "interview__rerun_of").order_by("position")
        return (
            ConductSession.objects.filter(project=self.project)
            .select_related("guide_version__guide")
            .prefetch_related(Prefetch("seats", queryset=seats))
            .order_by("-created_at")
        )
