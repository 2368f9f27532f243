from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from projects.api_exceptions import drf_error
from projects.api_filters import query_filters
from projects.api_permissions import ProjectScopedMixin
from projects.models import AuditEvent, Membership, Project, Role
from projects.services import membership_add, membership_change_role, membership_remove, project_create
from projects.submissions import created_once
from projects.trash import TrashList, trash_kinds, trash_restore
from projects.views_audit import AuditFilterForm


class ProjectSerializer(serializers.ModelSerializer):
    role = serializers.SerializerMethodField()

    class Meta:
        model = Project
        fields = ["uuid", "name", "description", "research_question", "agreement_statistics_enabled", "created_at", "role"]
        read_only_fields = ["uuid", "created_at", "role", "agreement_statistics_enabled"]

    def get_role(self, project: Project) -> str | None:
        return self.context.get("roles", {}).get(project.pk)


class MembershipSerializer(serializers.ModelSerializer):
    username = serializers.CharField(source="user.username", read_only=True)
    name = serializers.CharField(source="user.get_full_name", read_only=True)

    class Meta:
        model = Membership
        fields = ["username", "name", "role", "positionality", "joined_at"]
        read_only_fields = ["positionality", "joined_at"]


@created_once
class ProjectViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, viewsets.GenericViewSet):
    """Projects the user is a member of; creating one makes the user its owner."""

    serializer_class = ProjectSerializer
    permission_classes = [IsAuthenticated]
    lookup_field = "uuid"

    def get_queryset(self):
        return Project.objects.for_user(self.request.user)

    def get_serializer_context(self):
        context = super().get_serializer_context()
        if self.request.user.is_authenticated:
            context["roles"] = dict(Membership.objects.filter(user=self.request.user).values_list("project_id", "role"))
        return context

    def perform_create(self, serializer):
        serializer.instance = project_create(owner=self.request.user, **serializer.validated_data)
        # The roles in the context were read before the project existed.
        serializer.context["roles"][serializer.instance.pk] = Role.OWNER


class MembershipAddSerializer(serializers.Serializer):
    user = serializers.CharField(max_length=254, help_text="The username or email address of an existing account.")
    role = serializers.ChoiceField(choices=Role.choices, default=Role.ANALYST)


class MembershipRoleSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=Role.choices)


class MembershipFilter(serializers.Serializer):
    role = serializers.ChoiceField(choices=Role.choices, required=False, help_text="Only members with this role.")


@extend_schema_view(list=extend_schema(parameters=[MembershipFilter]))
class MembershipViewSet(ProjectScopedMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """The project's members, by username. Every member may read; owners add, change roles and remove.

    A project always keeps one owner who can log in: demoting or removing the last active one is a 400
    (inactive accounts do not count).
    """

    serializer_class = MembershipSerializer
    write_level = Role.OWNER
    lookup_field = "user__username"
    lookup_url_kwarg = "username"
    lookup_value_regex = r"[\w.@+-]+"  # Django's username characters

    def get_queryset(self):
        members = Membership.objects.filter(project=self.project).select_related("user").order_by("user__username")
        if self.action == "list":
            members = members.filter(**query_filters(self.request, MembershipFilter))
        return members

    @extend_schema(request=MembershipAddSerializer, responses={201: MembershipSerializer})
    def create(self, request: Request, *args, **kwargs) -> Response:
        data = MembershipAddSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            membership = membership_add(project=self.project, actor=request.user, username_or_email=data.validated_data["user"],
                                        role=data.validated_data["role"])
        except DjangoValidationError as exc:
            raise drf_error(exc) from None
        return Response(MembershipSerializer(membership).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=MembershipRoleSerializer, responses=MembershipSerializer)
    def partial_update(self, request: Request, *args, **kwargs) -> Response:
        membership = self.get_object()
        data = MembershipRoleSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            membership = membership_change_role(membership=membership, actor=request.user, role=data.validated_data["role"])
        except DjangoValidationError as exc:
            raise drf_error(exc) from None
        return Response(MembershipSerializer(membership).data)

    def destroy(self, request: Request, *args, **kwargs) -> Response:
        try:
            membership_remove(membership=self.get_object(), actor=request.user)
        except DjangoValidationError as exc:
            raise drf_error(exc) from None
        return Response(status=status.HTTP_204_NO_CONTENT)


class AuditEventSerializer(serializers.ModelSerializer):
    actor = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)  # null once the account is deleted

    class Meta:
        model = AuditEvent
        fields = ["id", "created_at", "actor", "action", "target_type", "target_id", "summary", "data"]
        read_only_fields = fields


@extend_schema_view(list=extend_schema(parameters=[
    OpenApiParameter("actor", str, description="Username of a member: only what they did."),
    OpenApiParameter("action", str, enum=AuditEvent.Action.values),
    OpenApiParameter("target_type", str, description="What was acted on (code, theme, membership, …)."),
    OpenApiParameter("since", OpenApiTypes.DATE, description="From this day on (inclusive)."),
    OpenApiParameter("until", OpenApiTypes.DATE, description="Up to this day (inclusive)."),
]))
class AuditEventViewSet(ProjectScopedMixin, mixins.ListModelMixin, viewsets.GenericViewSet):
    """The project's audit log, newest first (owners only): the audit page's filters, as query parameters."""

    serializer_class = AuditEventSerializer
    read_level = Role.OWNER
    write_level = Role.OWNER

    def get_queryset(self):
        events = AuditEvent.objects.for_project(self.project)
        if self.action != "list" or not any(self.request.query_params.get(f) for f in AuditFilterForm.base_fields):
            return events
        form = AuditFilterForm(self.request.query_params, project=self.project)
        if not form.is_valid():
            raise ValidationError(form.errors)
        return form.apply(events)


class TrashItemSerializer(serializers.Serializer):
    kind = serializers.CharField(source="kind.name", help_text="interview, code, theme, memo, …")
    uuid = serializers.UUIDField(source="obj.uuid")
    title = serializers.CharField()
    deleted_at = serializers.DateTimeField()
    deleted_by = serializers.CharField(source="deleted_by.username", allow_null=True, help_text="null when unknown")


class TrashRestoredSerializer(serializers.Serializer):
    restored = TrashItemSerializer(many=True, help_text="The item and whatever was deleted with it.")


class _TrashKindChoice:
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # Apps register what the trash holds when they are ready, after this module is imported.
        self.fields["kind"].choices = [kind.name for kind in trash_kinds()]


class TrashRestoreSerializer(_TrashKindChoice, serializers.Serializer):
    kind = serializers.ChoiceField(choices=[])
    uuid = serializers.UUIDField()


class TrashFilter(_TrashKindChoice, serializers.Serializer):
    kind = serializers.ChoiceField(choices=[], required=False, help_text="Only items of this kind.")


@extend_schema_view(list=extend_schema(parameters=[TrashFilter]))
class TrashViewSet(ProjectScopedMixin, mixins.ListModelMixin, viewsets.GenericViewSet):
    """The project's trash (owners only): what was deleted, by whom; restore brings an item back with everything attached."""

    serializer_class = TrashItemSerializer
    read_level = Role.OWNER
    write_level = Role.OWNER

    def get_queryset(self) -> TrashList:
        kind = query_filters(self.request, TrashFilter).get("kind") if self.action == "list" else None
        return TrashList(self.project, [k for k in trash_kinds() if k.name == kind] if kind else None)

    @extend_schema(request=TrashRestoreSerializer, responses=TrashRestoredSerializer)
    @action(detail=False, methods=["post"], pagination_class=None)
    def restore(self, request: Request, *args, **kwargs) -> Response:
        """Restore one item and whatever was deleted with it in the same operation."""
        data = TrashRestoreSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            restored = trash_restore(project=self.project, actor=request.user, **data.validated_data)
        except DjangoValidationError as exc:
            raise drf_error(exc) from None
        return Response(TrashRestoredSerializer({"restored": restored}).data)
