"""REST API for codes and codings, under /api/projects/<project_uuid>/ with the pages' rules.

Outsiders get 404, viewers may read but not write (403). Writes go through coding.services,
so the API records the same history and audit events and uses the same one-statement apply.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from coding.models import Code, Coding
from coding.services import CodeConflict, code_archive, code_create, code_move, code_update, coding_apply, coding_remove
from interviews.models import Interview
from projects.api_permissions import ProjectScopedMixin


class CodeSerializer(serializers.ModelSerializer):
    parent = serializers.SlugRelatedField(slug_field="uuid", queryset=Code.objects.none(), required=False, allow_null=True)
    merged_into = serializers.SlugRelatedField(slug_field="uuid", read_only=True, allow_null=True)
    reason = serializers.CharField(write_only=True, required=False, allow_blank=True)
    version = serializers.IntegerField(required=False)

    class Meta:
        model = Code
        fields = ["uuid", "name", "definition", "include_when", "exclude_when", "example", "kind", "colour", "parent",
                  "archived", "merged_into", "version", "reason", "created_at", "updated_at"]
        read_only_fields = ["uuid", "merged_into", "created_at", "updated_at"]
        extra_kwargs = {"colour": {"required": False}}

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        project = self.context.get("project")
        if project is not None:
            self.fields["parent"].queryset = Code.objects.for_project(project)


def _drf_error(exc: DjangoValidationError) -> serializers.ValidationError:
    return serializers.ValidationError(exc.message_dict if hasattr(exc, "error_dict") else {"detail": exc.messages})


class CodeViewSet(ProjectScopedMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin,
                  mixins.UpdateModelMixin, viewsets.GenericViewSet):
    """The codebook. PATCH needs `version` (optimistic locking: 409 with the current code if it changed)."""

    serializer_class = CodeSerializer
    lookup_field = "uuid"

    def get_queryset(self):
        return Code.objects.for_project(self.project).select_related("parent", "merged_into").order_by("position", "name")

    def get_serializer_context(self) -> dict:
        return {**super().get_serializer_context(), "project": self.project}

    def perform_create(self, serializer) -> None:
        d = serializer.validated_data
        try:
            serializer.instance = code_create(
                project=self.project, actor=self.request.user, name=d["name"], kind=d.get("kind", Code.Kind.SEMANTIC),
                definition=d.get("definition", ""), include_when=d.get("include_when", ""),
                exclude_when=d.get("exclude_when", ""), example=d.get("example", ""), colour=d.get("colour", ""),
                parent=d.get("parent"), reason=d.get("reason", ""))
        except DjangoValidationError as exc:
            raise _drf_error(exc) from exc

    def update(self, request: Request, *args, **kwargs) -> Response:
        code = self.get_object()
        serializer = self.get_serializer(code, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        d = dict(serializer.validated_data)
        if "version" not in d:
            raise serializers.ValidationError({"version": "Send the version you edited (optimistic locking)."})
        reason = d.pop("reason", "")
        version = d.pop("version")
        try:
            if "parent" in d:
                code_move(code=code, actor=request.user, parent=d.pop("parent"), reason=reason)
                version += 1
            if "archived" in d:
                archived = d.pop("archived")
                if archived != code.archived:
                    code_archive(code=code, actor=request.user, archived=archived, reason=reason)
                    version += 1
            code = code_update(code=Code.objects.get(pk=code.pk), actor=request.user, version=version, reason=reason, **d)
        except CodeConflict as conflict:
            return Response({"detail": str(conflict), "current": CodeSerializer(conflict.current, context=self.get_serializer_context()).data},
                            status=status.HTTP_409_CONFLICT)
        except DjangoValidationError as exc:
            raise _drf_error(exc) from exc
        return Response(CodeSerializer(code, context=self.get_serializer_context()).data)


class CodingSerializer(serializers.ModelSerializer):
    code = serializers.SlugRelatedField(slug_field="uuid", read_only=True)
    interview = serializers.SlugRelatedField(slug_field="uuid", read_only=True)
    segment = serializers.IntegerField(source="segment_id", read_only=True)
    coder = serializers.CharField(source="coder.username", read_only=True)

    class Meta:
        model = Coding
        fields = ["id", "interview", "segment", "code", "coder", "origin", "note", "created_at"]
        read_only_fields = fields


class CodingCreateSerializer(serializers.Serializer):
    interview = serializers.UUIDField()
    code = serializers.UUIDField()
    segments = serializers.ListField(child=serializers.IntegerField(), min_length=1, max_length=500)


class CodingViewSet(ProjectScopedMixin, mixins.ListModelMixin, mixins.DestroyModelMixin, viewsets.GenericViewSet):
    """Codings; filter with ?interview=<uuid>&code=<uuid>&coder=<username>. POST applies a code to segments.

    DELETE removes only your own coding: others' codings are never overwritten.
    """

    serializer_class = CodingSerializer

    def get_queryset(self):
        qs = Coding.objects.filter(interview__project=self.project, interview__deleted_at__isnull=True).select_related(
            "code", "interview", "coder").order_by("interview_id", "segment_id", "id")
        params = self.request.query_params
        if params.get("interview"):
            qs = qs.filter(interview__uuid=params["interview"])
        if params.get("code"):
            qs = qs.filter(code__uuid=params["code"])
        if params.get("coder"):
            qs = qs.filter(coder__username=params["coder"])
        return qs

    def create(self, request: Request, *args, **kwargs) -> Response:
        s = CodingCreateSerializer(data=request.data)
        s.is_valid(raise_exception=True)
        code = Code.objects.for_project(self.project).filter(uuid=s.validated_data["code"]).first()
        if code is None or not Interview.objects.for_project(self.project).filter(uuid=s.validated_data["interview"]).exists():
            raise serializers.ValidationError({"detail": "No such code or interview in this project."})
        result = coding_apply(project_uuid=self.project.uuid, interview_uuid=s.validated_data["interview"],
                              user_id=request.user.pk, code_id=code.pk, segment_ids=s.validated_data["segments"])
        if not result.code_found or not result.segments_found:
            raise serializers.ValidationError({"detail": "The code is archived or none of the segments can be coded."})
        return Response({"created": result.changed, "coded": result.coded, "codable": result.codable},
                        status=status.HTTP_201_CREATED if result.changed else status.HTTP_200_OK)

    def perform_destroy(self, instance: Coding) -> None:
        if instance.coder_id != self.request.user.pk:
            raise Http404("No such coding of yours.")
        coding_remove(project_uuid=self.project.uuid, interview_uuid=instance.interview.uuid, user_id=self.request.user.pk,
                      code_id=instance.code_id, segment_ids=[instance.segment_id])
