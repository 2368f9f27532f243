from __future__ import annotations

from rest_framework import mixins, serializers, viewsets
from rest_framework.permissions import IsAuthenticated

from projects.models import Membership, Project
from projects.services import project_create


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

    class Meta:
        model = Membership
        fields = ["username", "role", "positionality", "joined_at"]


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
