"""REST API for themes, memos, comments, review meetings and snapshots.

Under /api/projects/<project_uuid>/ with the pages' rules: outsiders get 404, viewers may
read but not write (403). Writes go through themes.services, like the pages.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from functools import cached_property

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import models, transaction
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from coding.models import Code
from interviews.models import Interview, Segment
from projects.api_exceptions import drf_error
from projects.api_filters import query_filters
from projects.api_permissions import ProjectScopedMixin
from projects.models import Project
from projects.submissions import created_once
from themes import services, snapshots
from themes.models import Comment, Decision, Exemplar, Memo, MemoRevision, Review, Snapshot, Theme, ThemeCode
from themes.queries import with_target_themes


class InProject(serializers.SlugRelatedField):
    """A row of the request's project (the serializer's context["project"]) named in the body by its uuid.

    Anything else is a 400 naming the field, never a 404 (the URL named nothing unknown), and a number or true is
    refused rather than read as a uuid.
    """

    def __init__(self, model: type[models.Model], noun: str, rows: Callable[[Project], models.QuerySet] | None = None, **kwargs):
        self.rows = rows or model.objects.for_project
        kwargs["error_messages"] = {"does_not_exist": f"No {noun} with this id in this project.",
                                    "invalid": f"Send the {noun}'s id: a uuid, as text."}
        super().__init__(slug_field="uuid", queryset=model.objects.none(), **kwargs)

    def get_queryset(self) -> models.QuerySet:
        project = self.context.get("project")
        return self.rows(project) if project is not None else self.queryset

    def to_internal_value(self, data):
        try:
            uuid.UUID(data if isinstance(data, str) else "")
        except ValueError:
            self.fail("invalid")
        return super().to_internal_value(data)


class WholeBody:
    """A PATCH body the view validates whole, its required fields (the version edited) required: says so to the
    schema, which otherwise marks every field of a PATCH body optional."""

    partial = property(lambda self: False, lambda self, value: None)


class DetailSerializer(serializers.Serializer):
    detail = serializers.CharField(help_text="What was refused and why.")


class ThemeSerializer(serializers.ModelSerializer):
    parent = serializers.SlugRelatedField(slug_field="uuid", read_only=True, allow_null=True)
    codes = serializers.SerializerMethodField()

    class Meta:
        model = Theme
        fields = ["uuid", "name", "definition", "status", "parent", "colour", "position", "version", "codes", "created_at", "updated_at"]
        read_only_fields = ["uuid", "status", "position", "version", "codes", "created_at", "updated_at"]

    def get_codes(self, theme: Theme) -> list[dict]:
        return [{"uuid": str(tc.code.uuid), "name": tc.code.name} for tc in theme.ordered_codes]


def _with_codes(themes):
    """Themes ready for ThemeSerializer: parent and ordered live codes in a fixed number of queries."""
    from django.db.models import Prefetch

    placements = ThemeCode.objects.filter(code__deleted_at__isnull=True).select_related("code").order_by("position")
    return themes.select_related("parent").prefetch_related(Prefetch("theme_codes", queryset=placements, to_attr="ordered_codes"))


class ThemeCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200, error_messages={"required": "Give the theme a name.", "blank": "Give the theme a name."})
    definition = serializers.CharField(required=False, allow_blank=True)
    colour = serializers.CharField(required=False, help_text="#rrggbb, like #4c78a8.")
    parent = InProject(Theme, "theme", required=False, allow_null=True, help_text="Make it a sub-theme of this theme.")


class ThemeEditSerializer(WholeBody, ThemeCreateSerializer):
    name = serializers.CharField(max_length=200, required=False)
    version = serializers.IntegerField(help_text="The theme's `version` you edited: 409 if someone saved since.", error_messages={
        "required": "Send the version you edited (the theme's `version`), so a colleague's newer edit is never overwritten."})


class ThemeStatusSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=Theme.Status.choices)
    reason = serializers.CharField(required=False, allow_blank=True, default="", trim_whitespace=False,
                                   help_text="Why, for the theme's history.")


class ThemeCodePlacementSerializer(serializers.Serializer):
    code = InProject(Code, "code", help_text="The code to add, remove or move.")
    action = serializers.ChoiceField(choices=["add", "remove", "move"], default="add",
                                     error_messages={"invalid_choice": "Use add, remove or move."})
    to = InProject(Theme, "theme", required=False, help_text="The theme to move the code to (move only).")
    before = InProject(Code, "code", required=False, allow_null=True,
                       help_text="Place it before this code of the theme (add, move); without it, at the end.")

    def validate(self, attrs: dict) -> dict:
        if attrs["action"] == "move" and attrs.get("to") is None:
            raise ValidationError({"to": "Name the theme to move the code to."})
        return attrs


class ThemeConflictSerializer(DetailSerializer):
    current = ThemeSerializer(help_text="The theme as it is now: merge your change into it and send its version.")


class ThemeViewSet(ProjectScopedMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Themes with their ordered codes; create, edit, change status, place codes, trash.

    PATCH must send the `version` it edited, and gets 409 with the theme as it is now if someone saved since.
    """

    serializer_class = ThemeSerializer
    lookup_field = "uuid"

    def get_queryset(self):
        return _with_codes(Theme.objects.for_project(self.project))

    @extend_schema(request=ThemeCreateSerializer, responses={201: ThemeSerializer})
    def create(self, request: Request, *args, **kwargs) -> Response:
        data = ThemeCreateSerializer(data=request.data, context={"project": self.project})
        data.is_valid(raise_exception=True)
        try:
            theme = services.theme_create(project=self.project, actor=request.user, name=data.validated_data.get("name", ""),
                                          definition=data.validated_data.get("definition", ""), parent=data.validated_data.get("parent"),
                                          colour=data.validated_data.get("colour", ""))
        except DjangoValidationError as exc:
            raise drf_error(exc) from None
        return Response(ThemeSerializer(self.get_queryset().get(pk=theme.pk)).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=ThemeEditSerializer, responses={200: ThemeSerializer, 409: ThemeConflictSerializer})
    def partial_update(self, request: Request, *args, **kwargs) -> Response:
        theme = self.get_object()
        data = ThemeEditSerializer(data=request.data, context={"project": self.project})
        data.is_valid(raise_exception=True)
        v = data.validated_data
        try:
            with transaction.atomic():  # a refused parent must not leave the new name saved
                services.theme_update(theme=theme, actor=request.user, base_version=v["version"], name=v.get("name"),
                                      definition=v.get("definition"), colour=v.get("colour"))
                if "parent" in v:
                    services.theme_set_parent(theme=theme, actor=request.user, parent=v["parent"])
        except services.ThemeConflict as exc:
            return Response({"detail": str(exc), "current": ThemeSerializer(self.get_queryset().get(pk=exc.current.pk)).data},
                            status=status.HTTP_409_CONFLICT)
        except DjangoValidationError as exc:
            raise drf_error(exc) from None
        return Response(ThemeSerializer(self.get_queryset().get(pk=theme.pk)).data)

    def destroy(self, request: Request, *args, **kwargs) -> Response:
        services.theme_delete(theme=self.get_object(), actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=ThemeStatusSerializer, responses=ThemeSerializer)
    @action(detail=True, methods=["post"])
    def status(self, request: Request, *args, **kwargs) -> Response:
        theme = self.get_object()
        data = ThemeStatusSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            services.theme_set_status(theme=theme, actor=request.user, status=data.validated_data["status"], reason=data.validated_data["reason"])
        except DjangoValidationError as exc:
            raise drf_error(exc) from None
        return Response(ThemeSerializer(self.get_queryset().get(pk=theme.pk)).data)

    @extend_schema(request=ThemeCodePlacementSerializer, responses=ThemeSerializer)
    @action(detail=True, methods=["post"])
    def codes(self, request: Request, *args, **kwargs) -> Response:
        """Place a code: add it to this theme, remove it, or move it to the theme `to` (before the code `before`)."""
        theme = self.get_object()
        data = ThemeCodePlacementSerializer(data=request.data, context={"project": self.project})
        data.is_valid(raise_exception=True)
        v = data.validated_data
        code, before = v["code"], v.get("before")
        try:
            if v["action"] == "add":
                services.theme_add_code(theme=theme, actor=request.user, code=code, before=before)
            elif v["action"] == "remove":
                services.theme_remove_code(theme=theme, actor=request.user, code=code)
            else:
                services.theme_move_code(code=code, source=theme, target=v["to"], actor=request.user, before=before)
        except DjangoValidationError as exc:
            raise drf_error(exc) from None
        return Response(ThemeSerializer(self.get_queryset().get(pk=theme.pk)).data)


class ExemplarSerializer(serializers.ModelSerializer):
    theme = serializers.SlugRelatedField(slug_field="uuid", read_only=True)
    interview = serializers.UUIDField(source="turn.interview.uuid", read_only=True)
    turn = serializers.SlugRelatedField(slug_field="uuid", read_only=True)
    segment = serializers.IntegerField(source="segment_id", read_only=True, allow_null=True,
                                       help_text="The segment it was pinned from (null once re-segmented).")
    spans = serializers.ListField(child=serializers.ListField(child=serializers.IntegerField(), min_length=2, max_length=2),
                                  read_only=True, help_text="[start, end) offsets of each piece in the turn's text.")
    verified = serializers.BooleanField(source="verify", read_only=True, help_text="The quote still matches the transcript.")
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)

    class Meta:
        model = Exemplar
        fields = ["uuid", "theme", "interview", "turn", "segment", "quote", "spans", "verified", "note", "position",
                  "created_by", "created_at"]
        read_only_fields = fields


class ExemplarPinSerializer(serializers.Serializer):
    segment = serializers.IntegerField(min_value=1, help_text="The segment the excerpt starts at.")
    end_segment = serializers.IntegerField(min_value=1, required=False, allow_null=True,
                                           help_text="The segment it ends at, in the same turn (default: the start segment).")
    quote = serializers.CharField(required=False, allow_blank=True, default="",
                                  help_text="The excerpt trimmed with [...]; each piece word for word (default: the whole excerpt).")


class ExemplarTrimSerializer(serializers.Serializer):
    quote = serializers.CharField(help_text="The quote trimmed with [...]; each piece word for word, in order.")
    note = serializers.CharField(required=False, allow_blank=True)


class ExemplarMoveSerializer(serializers.Serializer):
    offset = serializers.IntegerField(min_value=-1000, max_value=1000, help_text="Places to move: -1 is up one, 1 down one.")


THEME_UUID = OpenApiParameter("theme_uuid", OpenApiTypes.UUID, OpenApiParameter.PATH)


@extend_schema_view(**{name: extend_schema(parameters=[THEME_UUID])
                       for name in ("list", "retrieve", "create", "partial_update", "destroy", "move")})
class ExemplarViewSet(ProjectScopedMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """A theme's exemplar quotes in order: pin one from a segment, trim it with [...], move it up or down, unpin it."""

    serializer_class = ExemplarSerializer
    lookup_field = "uuid"

    @cached_property
    def theme(self) -> Theme:
        return get_object_or_404(Theme.objects.for_project(self.project), uuid=self.kwargs["theme_uuid"])

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Exemplar.objects.none()
        return (Exemplar.objects.filter(theme=self.theme, turn__interview__deleted_at__isnull=True)
                .select_related("theme", "turn__interview", "created_by").defer("turn__metadata").order_by("position", "id"))

    def _answer(self, exemplar: Exemplar, *, code: int = status.HTTP_200_OK) -> Response:
        return Response(ExemplarSerializer(self.get_queryset().get(pk=exemplar.pk)).data, status=code)

    @extend_schema(request=ExemplarPinSerializer, responses={201: ExemplarSerializer})
    def create(self, request: Request, *args, **kwargs) -> Response:
        data = ExemplarPinSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        segments = Segment.objects.filter(interview__project=self.project, interview__deleted_at__isnull=True).select_related("turn", "interview")
        found = {}
        for field in ("segment", "end_segment"):
            if v.get(field):
                found[field] = segments.filter(pk=v[field]).first()
                if found[field] is None:
                    raise ValidationError({field: [f"There is no segment {v[field]} in this project's interviews."]})
        try:
            exemplar = services.exemplar_pin(theme=self.theme, actor=request.user, segment=found["segment"],
                                             end_segment=found.get("end_segment"), quote=v["quote"])
        except DjangoValidationError as exc:
            raise drf_error(exc) from None
        return self._answer(exemplar, code=status.HTTP_201_CREATED)

    @extend_schema(request=ExemplarTrimSerializer, responses=ExemplarSerializer)
    def partial_update(self, request: Request, *args, **kwargs) -> Response:
        exemplar = self.get_object()
        data = ExemplarTrimSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            services.exemplar_trim(exemplar=exemplar, actor=request.user, quote=data.validated_data["quote"],
                                   note=data.validated_data.get("note"))
        except DjangoValidationError as exc:
            raise drf_error(exc) from None
        return self._answer(exemplar)

    def destroy(self, request: Request, *args, **kwargs) -> Response:
        services.exemplar_unpin(exemplar=self.get_object(), actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=ExemplarMoveSerializer, responses=ExemplarSerializer(many=True))
    @action(detail=True, methods=["post"], pagination_class=None)
    def move(self, request: Request, *args, **kwargs) -> Response:
        """Reorder: move the exemplar by `offset` places (clamped at the ends); answers with the theme's exemplars in the new order."""
        exemplar = self.get_object()
        data = ExemplarMoveSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        services.exemplar_shift(exemplar=exemplar, actor=request.user, offset=data.validated_data["offset"])
        return Response(ExemplarSerializer(self.get_queryset(), many=True).data)


class MemoSerializer(serializers.ModelSerializer):
    author = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)  # null once the account is deleted
    interview = InProject(Interview, "interview", required=False, allow_null=True)
    code = InProject(Code, "code", required=False, allow_null=True)
    theme = InProject(Theme, "theme", required=False, allow_null=True)

    class Meta:
        model = Memo
        fields = ["uuid", "title", "body", "kind", "interview", "code", "theme", "version", "author", "created_at", "updated_at"]
        read_only_fields = ["uuid", "version", "author", "created_at", "updated_at"]


class MemoRevisionSerializer(serializers.ModelSerializer):
    author = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)  # null once the account is deleted

    class Meta:
        model = MemoRevision
        fields = ["number", "title", "body", "kind", "author", "created_at"]
        read_only_fields = fields


class MemoConflictSerializer(DetailSerializer):
    latest = MemoRevisionSerializer(help_text="The newer revision: merge your change into it and send its number as base_version.")


class MemoEditSerializer(WholeBody, serializers.Serializer):
    """A memo edit: what it is attached to stays; title, body and kind left out keep their current value."""

    base_version = serializers.IntegerField(help_text="The memo's `version` you edited: 409 with the newer revision if someone saved since.",
                                            error_messages={"required": "Send the version you edited (base_version), so newer changes are never overwritten.",
                                                            "invalid": "Must be a number."})
    title = serializers.CharField(required=False, max_length=200, trim_whitespace=False)
    body = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)
    kind = serializers.ChoiceField(choices=Memo.Kind.choices, required=False)


class MemoFilter(serializers.Serializer):
    kind = serializers.ChoiceField(choices=Memo.Kind.choices, required=False)
    author = serializers.CharField(required=False, max_length=150, source="author__username", help_text="The author's username.")


@extend_schema_view(list=extend_schema(parameters=[MemoFilter]))
@created_once
class MemoViewSet(ProjectScopedMixin, viewsets.ModelViewSet):
    """Memos; an update must send base_version, and gets 409 with the newer revision if someone saved since."""

    serializer_class = MemoSerializer
    lookup_field = "uuid"
    http_method_names = ["get", "post", "patch", "delete"]

    def get_queryset(self):
        memos = Memo.objects.for_project(self.project)
        return memos.filter(**query_filters(self.request, MemoFilter)) if self.action == "list" else memos

    def get_serializer_context(self):
        return {**super().get_serializer_context(), "project": self.project}

    def perform_create(self, serializer):
        v = serializer.validated_data
        try:
            serializer.instance = services.memo_create(project=self.project, actor=self.request.user, title=v.get("title", ""), body=v.get("body", ""),
                                                       kind=v.get("kind", Memo.Kind.REFLEXIVE), interview=v.get("interview"), code=v.get("code"), theme=v.get("theme"))
        except DjangoValidationError as exc:
            raise drf_error(exc) from None

    @extend_schema(request=MemoEditSerializer, responses={200: MemoSerializer, 409: MemoConflictSerializer})
    def partial_update(self, request: Request, *args, **kwargs) -> Response:
        memo = self.get_object()
        data = MemoEditSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        try:
            memo = services.memo_update(memo=memo, actor=request.user, base_version=v["base_version"], title=v.get("title", memo.title),
                                        body=v.get("body", memo.body), kind=v.get("kind", memo.kind))
        except services.MemoConflict as exc:
            return Response({"detail": str(exc), "latest": MemoRevisionSerializer(exc.latest).data}, status=status.HTTP_409_CONFLICT)
        except DjangoValidationError as exc:
            raise drf_error(exc) from None
        return Response(self.get_serializer(memo).data)

    def perform_destroy(self, instance):
        services.memo_delete(memo=instance, actor=self.request.user)

    @extend_schema(responses=MemoRevisionSerializer(many=True))
    @action(detail=True, methods=["get"], pagination_class=None)
    def revisions(self, request: Request, *args, **kwargs) -> Response:
        """Every revision of the memo, newest first."""
        memo = self.get_object()
        return Response(MemoRevisionSerializer(memo.revisions.select_related("author"), many=True).data)


class CommentSerializer(serializers.ModelSerializer):
    theme = InProject(Theme, "theme")
    parent = InProject(Comment, "comment", rows=lambda project: Comment.objects.filter(theme__project=project), required=False,
                       allow_null=True)
    author = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)  # null once the account is deleted
    mentions = serializers.SlugRelatedField(slug_field="username", many=True, read_only=True)
    resolved = serializers.SerializerMethodField()

    class Meta:
        model = Comment
        fields = ["uuid", "theme", "parent", "author", "body", "mentions", "resolved", "resolved_at", "created_at"]
        read_only_fields = ["uuid", "author", "mentions", "resolved", "resolved_at", "created_at"]

    def get_resolved(self, comment: Comment) -> bool:
        return comment.resolved_at is not None


class CommentFilter(serializers.Serializer):
    theme = serializers.UUIDField(required=False, source="theme__uuid", help_text="Only this theme's discussion.")
    mentions = serializers.CharField(required=False, max_length=150, source="mentions__username",
                                     help_text="Only comments mentioning this username.")


class CommentResolveSerializer(serializers.Serializer):
    resolved = serializers.BooleanField(default=True, help_text="false reopens the thread.")


@extend_schema_view(list=extend_schema(parameters=[CommentFilter]))
@created_once
class CommentViewSet(ProjectScopedMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, viewsets.GenericViewSet):
    """Theme discussion: list (?theme=uuid, ?mentions=username), post, resolve/reopen."""

    serializer_class = CommentSerializer
    lookup_field = "uuid"

    def get_queryset(self):
        comments = (Comment.objects.filter(theme__project=self.project, theme__deleted_at__isnull=True)
                    .select_related("theme", "parent", "author").prefetch_related("mentions"))
        return comments.filter(**query_filters(self.request, CommentFilter)) if self.action == "list" else comments

    def get_serializer_context(self):
        return {**super().get_serializer_context(), "project": self.project}

    def perform_create(self, serializer):
        v = serializer.validated_data
        try:
            serializer.instance = services.comment_post(theme=v["theme"], actor=self.request.user, body=v["body"], parent=v.get("parent"))
        except DjangoValidationError as exc:
            raise drf_error(exc) from None

    @extend_schema(request=CommentResolveSerializer, responses=CommentSerializer)
    @action(detail=True, methods=["post"])
    def resolve(self, request: Request, *args, **kwargs) -> Response:
        comment = self.get_object()
        data = CommentResolveSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        top = services.comment_resolve(comment=comment, actor=request.user, resolved=data.validated_data["resolved"])
        return Response(self.get_serializer(top).data)


class DecisionSerializer(serializers.ModelSerializer):
    theme = serializers.SlugRelatedField(slug_field="uuid", read_only=True, allow_null=True)  # null once deleted from the trash
    theme_name = serializers.CharField(source="theme_label", read_only=True)
    cannot_apply = serializers.SerializerMethodField(
        help_text="Why this pending decision can no longer be applied as it stands (its theme, or the theme it merges "
                  "into or moves codes to, merged away, in the trash or deleted), or empty: set it aside instead.")

    class Meta:
        model = Decision
        fields = ["uuid", "theme", "theme_name", "theme_version", "kind", "payload", "note", "created_at", "applied_at",
                  "declined_at", "declined_reason", "cannot_apply"]

    def get_cannot_apply(self, decision: Decision) -> str:
        return "" if decision.applied_at or decision.declined_at else decision.cannot_apply


class DecisionRecordedSerializer(DecisionSerializer):
    notice = serializers.CharField(help_text="Empty unless the theme changed since `theme_version`; then says how.")

    class Meta(DecisionSerializer.Meta):
        fields = [*DecisionSerializer.Meta.fields, "notice"]


class DecisionAppliedSerializer(DecisionSerializer):
    message = serializers.CharField(help_text="What changed, in words.")

    class Meta(DecisionSerializer.Meta):
        fields = [*DecisionSerializer.Meta.fields, "message"]


class DecisionRecordSerializer(serializers.Serializer):
    theme = InProject(Theme, "theme", help_text="The theme the decision is about.")
    kind = serializers.ChoiceField(choices=Decision.Kind.choices)
    payload = serializers.DictField(required=False, allow_null=True, default=dict, help_text=(
        "By kind: rename {name}; merge {into: theme uuid}; split {name, codes: [code uuid]}; redefine {definition}; "
        "status {status}; move_codes {to: theme uuid, codes: [code uuid]}. Checked when recorded as the theme's own "
        "fields are (a name is text of at most 200 characters); a refusal names the key under `payload`."))
    note = serializers.CharField(required=False, allow_blank=True, default="", trim_whitespace=False)
    theme_version = serializers.IntegerField(required=False, allow_null=True, help_text=(
        "The theme version the decision was made on (default: the current one); an older one makes applying ask first."))


class DecisionConfirmSerializer(serializers.Serializer):
    version = serializers.IntegerField(required=False, min_value=0, help_text=(
        "The theme's current version, to apply over an edit made since the decision was recorded."))


class DecisionDeclineSerializer(serializers.Serializer):
    reason = serializers.CharField(required=False, allow_blank=True, default="", help_text="Why the theme stays as it is.")


class ReviewCreateSerializer(serializers.Serializer):
    title = serializers.CharField(max_length=200)
    date = serializers.DateField()
    agenda = serializers.ListField(child=serializers.UUIDField(), required=False, default=list,
                                   help_text="Uuids of this project's themes, in agenda order.")
    attendees = serializers.ListField(child=serializers.CharField(max_length=150), required=False, default=list,
                                      help_text="Members' usernames; a name that is no member's is refused (400).")


class ReviewNotesSerializer(serializers.Serializer):
    notes = serializers.CharField(allow_blank=True, trim_whitespace=False, help_text="Markdown.")
    notes_version = serializers.IntegerField(help_text="The meeting's `notes_version` you edited: 409 if someone saved since.",
                                             error_messages={"required": "Send the notes_version you edited, so a "
                                                                         "colleague's newer notes are never overwritten."})


class ReviewClosedSerializer(serializers.Serializer):
    snapshot = serializers.UUIDField(help_text="The snapshot of the theme structure the meeting left.")


class ReviewListSerializer(serializers.ListSerializer):
    def to_representation(self, data):
        reviews = list(data.all() if hasattr(data, "all") else data)
        with_target_themes([d for review in reviews for d in review.decisions.all()])  # one query for the page
        return super().to_representation(reviews)


class ReviewSerializer(serializers.ModelSerializer):
    attendees = serializers.SlugRelatedField(slug_field="username", many=True, read_only=True)
    agenda = serializers.SerializerMethodField()
    decisions = DecisionSerializer(many=True, read_only=True)

    class Meta:
        model = Review
        fields = ["uuid", "title", "date", "status", "notes", "notes_version", "attendees", "agenda", "decisions",
                  "created_at", "closed_at"]
        read_only_fields = ["uuid", "status", "notes", "notes_version", "created_at", "closed_at"]
        list_serializer_class = ReviewListSerializer

    def to_representation(self, review: Review) -> dict:
        with_target_themes(list(review.decisions.all()))  # a detail's; a page's are loaded by ReviewListSerializer
        return super().to_representation(review)

    def get_agenda(self, review: Review) -> list[str | None]:
        """Theme uuids in agenda order; null for a theme since deleted from the trash."""
        return [str(item.theme.uuid) if item.theme is not None else None for item in review.agenda.all()]


class NotesStateSerializer(serializers.Serializer):
    notes = serializers.CharField()
    notes_version = serializers.IntegerField()


class NotesConflictSerializer(DetailSerializer):
    current = NotesStateSerializer(required=False, help_text="The notes as they are now (absent when the meeting is closed).")


class DecisionConflictSerializer(DetailSerializer):
    decision = DecisionSerializer()
    current = ThemeSerializer(help_text="The theme as it is now.")


def _decision_refused(exc: DjangoValidationError) -> ValidationError:
    """A refused decision as a 400, each payload key's refusal under "payload", where the request put the key."""
    errors = drf_error(exc).detail
    keys = {key for keys in services.DECISION_PAYLOAD_KEYS.values() for key in keys}
    payload = {key: errors.pop(key) for key in [k for k in errors if k in keys]}
    return ValidationError({**errors, "payload": payload} if payload else errors)


def _closed(exc: services.ReviewClosed) -> Response:
    """A write to a closed meeting: 409, as for a notes conflict, with what can no longer change."""
    return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)


@created_once
class ReviewViewSet(ProjectScopedMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Review meetings: schedule (with agenda and attendees), record and apply decisions, close."""

    serializer_class = ReviewSerializer
    lookup_field = "uuid"

    def get_queryset(self):
        return Review.objects.filter(project=self.project).prefetch_related("attendees", "agenda__theme", "decisions__theme__merged_into")

    @extend_schema(request=ReviewCreateSerializer, responses={201: ReviewSerializer})
    def create(self, request: Request, *args, **kwargs) -> Response:
        data = ReviewCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        uuids = [str(u) for u in data.validated_data["agenda"]]
        themes = {str(t.uuid): t for t in Theme.objects.for_project(self.project).filter(uuid__in=uuids)}
        if len(themes) != len(set(uuids)):
            raise ValidationError({"agenda": "Every agenda item must be a theme of this project."})
        from projects.models import Membership

        usernames = data.validated_data["attendees"]
        members = {m.user.username: m.user for m in Membership.objects.filter(project=self.project, user__username__in=usernames).select_related("user")}
        if strangers := [name for name in dict.fromkeys(usernames) if name not in members]:
            raise ValidationError({"attendees": [f"“{name}” is not a member of this project." for name in strangers]})
        attendees = [members[name] for name in dict.fromkeys(usernames)]
        review = services.review_create(project=self.project, actor=request.user, title=data.validated_data["title"], date=data.validated_data["date"],
                                        attendees=attendees, themes=[themes[u] for u in uuids])
        return Response(ReviewSerializer(self.get_queryset().get(pk=review.pk)).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=DecisionRecordSerializer, responses={201: DecisionRecordedSerializer, 409: DetailSerializer})
    @action(detail=True, methods=["post"])
    def decisions(self, request: Request, *args, **kwargs) -> Response:
        review = self.get_object()
        data = DecisionRecordSerializer(data=request.data, context={"project": self.project})
        data.is_valid(raise_exception=True)
        v = data.validated_data
        theme = v["theme"]
        try:
            decision = services.decision_record(review=review, theme=theme, actor=request.user, kind=v["kind"],
                                                payload=v["payload"] or {}, note=v["note"], seen_version=v.get("theme_version"))
        except services.ReviewClosed as exc:
            return _closed(exc)
        except DjangoValidationError as exc:
            raise _decision_refused(exc) from None
        notice = services.decision_stale_notice(decision, theme)  # "" unless the theme changed since the caller read it
        return Response({**DecisionSerializer(decision).data, "notice": notice}, status=status.HTTP_201_CREATED)

    @extend_schema(request=DecisionConfirmSerializer, responses={200: DecisionAppliedSerializer, 409: DecisionConflictSerializer})
    @action(detail=True, methods=["post"], url_path=r"decisions/(?P<decision_uuid>[0-9a-f-]{36})/apply")
    def apply(self, request: Request, *args, decision_uuid: str = "", **kwargs) -> Response:
        """Apply a decision. If its theme was edited since it was recorded, 409 with the theme as it is now,
        unless `version` confirms that current version (the caller saw it and chose to apply anyway)."""
        review = self.get_object()
        decision = get_object_or_404(Decision.objects.filter(review=review), uuid=decision_uuid)
        confirm = DecisionConfirmSerializer(data=request.data)
        confirm.is_valid(raise_exception=True)
        try:
            outcome = services.decision_apply(decision=decision, actor=request.user, confirmed_version=confirm.validated_data.get("version"))
        except services.DecisionConflict as exc:
            return Response({"detail": str(exc), "decision": DecisionSerializer(exc.decision).data,
                             "current": ThemeSerializer(_with_codes(Theme.objects.filter(pk=exc.current.pk)).get()).data},
                            status=status.HTTP_409_CONFLICT)
        except services.ReviewClosed as exc:
            return _closed(exc)
        except DjangoValidationError as exc:
            raise drf_error(exc) from None
        return Response({**DecisionSerializer(outcome.decision).data, "message": outcome.message})

    @extend_schema(request=DecisionDeclineSerializer, responses={200: DecisionSerializer, 409: DetailSerializer})
    @action(detail=True, methods=["post"], url_path=r"decisions/(?P<decision_uuid>[0-9a-f-]{36})/decline")
    def decline(self, request: Request, *args, decision_uuid: str = "", **kwargs) -> Response:
        """Keep the theme as it is: the decision is marked not applied, with `reason` (optional) as its note."""
        review = self.get_object()
        decision = get_object_or_404(Decision.objects.filter(review=review), uuid=decision_uuid)
        data = DecisionDeclineSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            decision = services.decision_decline(decision=decision, actor=request.user, reason=data.validated_data["reason"])
        except services.ReviewClosed as exc:
            return _closed(exc)
        except DjangoValidationError as exc:
            raise drf_error(exc) from None
        return Response(DecisionSerializer(decision).data)

    @extend_schema(request=ReviewNotesSerializer, responses={200: ReviewSerializer, 409: NotesConflictSerializer})
    @action(detail=True, methods=["put"])
    def notes(self, request: Request, *args, **kwargs) -> Response:
        """Replace the meeting notes as of `notes_version`. 409 with the notes as they are now if someone saved
        since, and 409 once the meeting is closed (its notes are then read-only)."""
        review = self.get_object()
        data = ReviewNotesSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            services.review_save_notes(review=review, actor=request.user, notes=data.validated_data["notes"],
                                       base_version=data.validated_data["notes_version"])
        except services.ReviewClosed as exc:
            return _closed(exc)
        except services.ReviewNotesConflict as exc:
            return Response({"detail": str(exc), "current": {"notes": exc.current.notes, "notes_version": exc.current.notes_version}},
                            status=status.HTTP_409_CONFLICT)
        return Response(ReviewSerializer(self.get_queryset().get(pk=review.pk)).data)

    @extend_schema(request=None, responses={200: ReviewClosedSerializer, 409: DetailSerializer})
    @action(detail=True, methods=["post"])
    def close(self, request: Request, *args, **kwargs) -> Response:
        """Close the meeting (409 if it already was): its notes, agenda and decisions become read-only."""
        try:
            snapshot = services.review_close(review=self.get_object(), actor=request.user)
        except services.ReviewClosed as exc:
            return _closed(exc)
        return Response({"snapshot": str(snapshot.uuid)})


class SnapshotSerializer(serializers.ModelSerializer):
    class Meta:
        model = Snapshot
        fields = ["uuid", "label", "taken_at", "data"]


class SnapshotPairSerializer(serializers.Serializer):
    a = InProject(Snapshot, "snapshot", rows=lambda project: Snapshot.objects.filter(project=project))
    b = InProject(Snapshot, "snapshot", rows=lambda project: Snapshot.objects.filter(project=project))


class SnapshotViewSet(ProjectScopedMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Snapshots of the theme structure; /compare/?a=&b= lists what changed."""

    serializer_class = SnapshotSerializer
    lookup_field = "uuid"

    def get_queryset(self):
        return Snapshot.objects.filter(project=self.project)

    @extend_schema(parameters=[OpenApiParameter("a", OpenApiTypes.UUID, required=True, description="One snapshot."),
                               OpenApiParameter("b", OpenApiTypes.UUID, required=True, description="The other (order does not matter).")],
                   responses=OpenApiTypes.OBJECT)
    @action(detail=False, methods=["get"], pagination_class=None)
    def compare(self, request: Request, *args, **kwargs) -> Response:
        pair = SnapshotPairSerializer(data={k: request.query_params[k] for k in ("a", "b") if k in request.query_params},
                                      context={"project": self.project})
        pair.is_valid(raise_exception=True)
        a, b = pair.validated_data["a"], pair.validated_data["b"]
        before, after = (a, b) if (a.taken_at, a.id) <= (b.taken_at, b.id) else (b, a)
        return Response(snapshots.compare(before.data, after.data))
