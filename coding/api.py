"""REST API for codes and codings, under /api/projects/<project_uuid>/ with the pages' rules.

Outsiders get 404, viewers may read but not write (403). Writes go through coding.services,
so the API records the same history and audit events and uses the same one-statement apply.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.paginator import Paginator
from django.db.models import Q
from django.http import Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.response import Response

from coding.models import Code, Coding, Note
from coding.queries import code_participant_counts, interview_coding_counts, interview_segment_progress
from coding.services import (
    CodeConflict,
    code_archive,
    code_create,
    code_edit,
    code_merge,
    code_split,
    coding_apply,
    coding_remove,
    listed,
    note_save,
)
from interviews.models import Interview, Participant, Segment, Turn
from projects.api_exceptions import drf_error
from projects.api_filters import query_filters
from projects.api_permissions import ProjectScopedMixin
from projects.models import Project


class ParticipantUsageSerializer(serializers.Serializer):
    participant = serializers.UUIDField()
    label = serializers.CharField()
    uses = serializers.IntegerField()


class CodeUsage:
    """Each code's uses overall and per participant (every participant, zeros included), as the codebook page counts them.

    Read from the project's cached counts (coding.queries.code_participant_counts) for the codes serialised only:
    building the whole codebook tree for a page of codes grew with the codebook (10 → 100 codes from 1× to 50×).
    """

    def __init__(self, project: Project) -> None:
        # Each UUID as text once, not once per code for the JSON encoder.
        self.participants = [(p, str(p.uuid)) for p in Participant.objects.filter(project=project).order_by("label", "pk")]
        self.counts = code_participant_counts(project)
        self.totals: dict[int, int] = defaultdict(int)
        for (code_id, _), n in self.counts.items():
            self.totals[code_id] += n
        self._read: dict[int, dict[str, Any]] = {}  # each code is read twice, for `uses` and `uses_by_participant`

    def of(self, code: Code) -> dict[str, Any]:
        if code.pk not in self._read:
            self._read[code.pk] = {"uses": self.totals.get(code.pk, 0), "uses_by_participant": [
                {"participant": uuid, "label": p.label, "uses": self.counts.get((code.pk, p.pk), 0)}
                for p, uuid in self.participants]}
        return self._read[code.pk]


class CodeSerializer(serializers.ModelSerializer):
    parent = serializers.SlugRelatedField(slug_field="uuid", queryset=Code.objects.none(), required=False, allow_null=True)
    merged_into = serializers.SlugRelatedField(slug_field="uuid", read_only=True, allow_null=True)
    reason = serializers.CharField(write_only=True, required=False, allow_blank=True)
    version = serializers.IntegerField(required=False)
    uses = serializers.SerializerMethodField(help_text="Codings of this code in live interviews, by everyone.")
    uses_by_participant = serializers.SerializerMethodField(help_text="The same, per participant (model), in label order.")

    class Meta:
        model = Code
        fields = ["uuid", "name", "definition", "include_when", "exclude_when", "example", "kind", "colour", "parent",
                  "archived", "merged_into", "version", "reason", "uses", "uses_by_participant", "created_at", "updated_at"]
        read_only_fields = ["uuid", "merged_into", "created_at", "updated_at"]
        extra_kwargs = {"colour": {"required": False}}

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        project = self.context.get("project")
        if project is not None:
            self.fields["parent"].queryset = Code.objects.for_project(project)

    def _usage(self, code: Code) -> dict[str, Any]:
        # Lists read every code's counts from one CodeUsage (context["usage"]); a code just written is counted here.
        if self.context.get("usage") is None:
            self.context["usage"] = CodeUsage(code.project)
        return self.context["usage"].of(code)

    def get_uses(self, code: Code) -> int:
        return self._usage(code)["uses"]

    @extend_schema_field(ParticipantUsageSerializer(many=True))
    def get_uses_by_participant(self, code: Code) -> list[dict[str, Any]]:
        return self._usage(code)["uses_by_participant"]


class CodeCreateSerializer(CodeSerializer):
    """What creating a code takes: a new code is in use and at version 1, so neither `archived` nor `version`."""

    class Meta(CodeSerializer.Meta):
        fields = ["name", "definition", "include_when", "exclude_when", "example", "kind", "colour", "parent", "reason"]
        read_only_fields = []


class CodeFilter(serializers.Serializer):
    kind = serializers.ChoiceField(choices=Code.Kind.choices, required=False)
    archived = serializers.BooleanField(required=False, help_text="true: only archived (and merged) codes; false: only codes in use.")
    q = serializers.CharField(required=False, max_length=200, help_text="Words in the name or definition.")


class CodeMergeSerializer(serializers.Serializer):
    target = serializers.UUIDField(help_text="The code to merge into; it receives the codings and sub-codes.")
    reason = serializers.CharField(required=False, allow_blank=True, default="")


class SplitAssignmentSerializer(serializers.Serializer):
    segment = serializers.IntegerField(min_value=1)
    into = serializers.IntegerField(min_value=0, help_text="Index in `names` of the new code the segment's codings move to.")


class CodeSplitSerializer(serializers.Serializer):
    names = serializers.ListField(child=serializers.CharField(max_length=200), min_length=2, max_length=50,
                                  help_text="Names of the new sibling codes (two or more).")
    assignments = serializers.ListField(child=SplitAssignmentSerializer(), required=False, default=list, max_length=10000,
                                        help_text="Segments whose codings move to a new code; the others stay with this one.")
    archive_original = serializers.BooleanField(default=False)
    reason = serializers.CharField(required=False, allow_blank=True, default="")

    def validate_assignments(self, value: list[dict]) -> list[dict]:
        seen: set[int] = set()
        for assignment in value:
            if assignment["segment"] in seen:
                raise serializers.ValidationError(f"Segment {assignment['segment']} is assigned twice; give each one code.")
            seen.add(assignment["segment"])
        return value


class CodeArchiveSerializer(serializers.Serializer):
    archived = serializers.BooleanField(default=True, help_text="false brings the code back into use.")
    reason = serializers.CharField(required=False, allow_blank=True, default="")


@extend_schema_view(list=extend_schema(parameters=[CodeFilter]))
class CodeViewSet(ProjectScopedMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin,
                  mixins.UpdateModelMixin, viewsets.GenericViewSet):
    """The codebook with usage counts. PATCH needs `version` (optimistic locking: 409 with the current code if it changed).

    merge, split and archive are the codebook page's actions; each is recorded in the codebook history.
    """

    serializer_class = CodeSerializer
    lookup_field = "uuid"

    def get_queryset(self):
        codes = Code.objects.for_project(self.project).select_related("parent", "merged_into").order_by("position", "name")
        if self.action != "list":
            return codes
        wanted = query_filters(self.request, CodeFilter)
        words = wanted.pop("q", None)
        codes = codes.filter(**wanted)
        return codes.filter(Q(name__icontains=words) | Q(definition__icontains=words)) if words else codes

    def get_serializer_context(self) -> dict:
        context = {**super().get_serializer_context(), "project": self.project}
        if self.action in ("list", "retrieve") and not getattr(self, "swagger_fake_view", False):
            context["usage"] = CodeUsage(self.project)
        return context

    def _answer(self, code: Code, *, code_status: int = status.HTTP_200_OK) -> Response:
        return Response(CodeSerializer(code, context={"project": self.project}).data, status=code_status)

    @extend_schema(request=CodeMergeSerializer, responses=CodeSerializer)
    @action(detail=True, methods=["post"])
    def merge(self, request: Request, *args, **kwargs) -> Response:
        """Merge this code into `target`: codings and sub-codes move over; this code is archived, pointing to the target."""
        source = self.get_object()
        data = CodeMergeSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        target = Code.objects.for_project(self.project).filter(uuid=data.validated_data["target"]).first()
        if target is None:
            raise serializers.ValidationError({"target": ["There is no such code in this project."]})
        try:
            target = code_merge(source=source, target=target, actor=request.user, reason=data.validated_data["reason"])
        except DjangoValidationError as exc:
            raise drf_error(exc) from exc
        return self._answer(target)

    @extend_schema(request=CodeSplitSerializer, responses={201: CodeSerializer(many=True)})
    @action(detail=True, methods=["post"], pagination_class=None)
    def split(self, request: Request, *args, **kwargs) -> Response:
        """Split this code into new sibling codes, moving the assigned segments' codings to them; answers with the new codes."""
        code = self.get_object()
        data = CodeSplitSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        assignments = {a["segment"]: a["into"] for a in v["assignments"]}
        try:
            new_codes = code_split(code=code, actor=request.user, names=v["names"], reason=v["reason"],
                                   assignments=assignments, archive_original=v["archive_original"])
        except DjangoValidationError as exc:
            raise drf_error(exc) from exc
        context = {"project": self.project, "usage": CodeUsage(self.project)}
        return Response(CodeSerializer(new_codes, many=True, context=context).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=CodeArchiveSerializer, responses=CodeSerializer)
    @action(detail=True, methods=["post"])
    def archive(self, request: Request, *args, **kwargs) -> Response:
        """Archive the code (hidden from the picker, codings kept) or, with archived=false, bring it back."""
        code = self.get_object()
        data = CodeArchiveSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            code = code_archive(code=code, actor=request.user, archived=data.validated_data["archived"],
                                reason=data.validated_data["reason"])
        except DjangoValidationError as exc:
            raise drf_error(exc) from exc
        return self._answer(Code.objects.get(pk=code.pk))

    @extend_schema(request=CodeCreateSerializer, responses={201: CodeSerializer})
    def create(self, request: Request, *args, **kwargs) -> Response:
        serializer = CodeCreateSerializer(data=request.data, context=self.get_serializer_context())
        serializer.is_valid(raise_exception=True)
        self.perform_create(serializer)
        return self._answer(serializer.instance, code_status=status.HTTP_201_CREATED)

    def perform_create(self, serializer) -> None:
        d = serializer.validated_data
        try:
            serializer.instance = code_create(
                project=self.project, actor=self.request.user, name=d["name"], kind=d.get("kind", Code.Kind.SEMANTIC),
                definition=d.get("definition", ""), include_when=d.get("include_when", ""),
                exclude_when=d.get("exclude_when", ""), example=d.get("example", ""), colour=d.get("colour", ""),
                parent=d.get("parent"), reason=d.get("reason", ""))
        except DjangoValidationError as exc:
            raise drf_error(exc) from exc

    def update(self, request: Request, *args, **kwargs) -> Response:
        code = self.get_object()
        serializer = self.get_serializer(code, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        d = dict(serializer.validated_data)
        if "version" not in d:
            raise serializers.ValidationError({"version": "Send the version you edited (optimistic locking)."})
        reason = d.pop("reason", "")
        try:
            code = code_edit(code=code, actor=request.user, version=d.pop("version"), reason=reason, **d)
        except CodeConflict as conflict:
            return Response({"detail": str(conflict), "current": CodeSerializer(conflict.current, context=self.get_serializer_context()).data},
                            status=status.HTTP_409_CONFLICT)
        except DjangoValidationError as exc:
            raise drf_error(exc) from exc
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
    segments = serializers.ListField(child=serializers.IntegerField(min_value=1, max_value=2**63 - 1), min_length=1, max_length=500)
    any_speaker = serializers.BooleanField(
        default=False, help_text="Also code interviewer, system and tool turns (the coding page's “also code other speakers”); "
        "without it only the participant's segments are coded.")


class CodingResultSerializer(serializers.Serializer):
    created = serializers.ListField(child=serializers.IntegerField(), help_text="Segments newly coded (already coded ones are skipped).")
    coded = serializers.IntegerField(help_text="Participant segments of the interview coded by anyone.")
    codable = serializers.IntegerField(help_text="Participant segments of the interview.")


class CodingFilter(serializers.Serializer):
    interview = serializers.UUIDField(required=False, source="interview__uuid")
    code = serializers.UUIDField(required=False, source="code__uuid")
    coder = serializers.CharField(required=False, max_length=150, source="coder__username", help_text="A coder's username.")


class InterviewSpanPaginator(Paginator):
    """Page numbers over codings in (interview, segment, id) order that read only the interviews a page holds.

    `per_interview` is (interview id, codings) in id order, as the list is ordered. OFFSET over the whole
    list made the database walk every earlier coding (the project's, and other projects' whose interviews
    come first in the index) before the page: 8 → 24 ms from 1× to 50× the peer corpus for the first page,
    and more for each later one. Here page N costs the same whatever the project's size.
    """

    def __init__(self, object_list, per_page, per_interview: list[tuple[int, int]]) -> None:
        super().__init__(object_list, per_page)
        self.per_interview = per_interview
        self.count = sum(n for _, n in per_interview)  # Paginator.count is a cached_property: set, it is not counted

    def page(self, number):
        number = self.validate_number(number)
        bottom = (number - 1) * self.per_page
        top = min(bottom + self.per_page, self.count)
        held, skip, before = [], 0, 0
        for interview_id, n in self.per_interview:
            if before + n > bottom:
                if not held:
                    skip = bottom - before
                held.append(interview_id)
            before += n
            if before >= top:
                break
        rows = self.object_list.filter(interview_id__in=held)[skip:skip + top - bottom]
        return self._get_page(rows, number, self)


class CodingPagination(PageNumberPagination):
    """The API's page numbers and `count`; an unfiltered list pages by the project's cached per-interview counts.

    A COUNT(*) over every coding of the project on every page grew with the project (120 ms at 50× the peer
    corpus), and so did the OFFSET; the counts are kept under the version of the project's coding events
    (coding.queries.cached_counts), so a coding written through coding.services shows on the next request.
    """

    def paginate_queryset(self, queryset, request, view=None):
        self.per_interview = view.per_interview_counts()  # the pagination of CodingViewSet only
        return super().paginate_queryset(queryset, request, view)

    def django_paginator_class(self, object_list, per_page) -> Paginator:
        if self.per_interview is None:
            return Paginator(object_list, per_page)
        return InterviewSpanPaginator(object_list, per_page, self.per_interview)


@extend_schema_view(list=extend_schema(parameters=[CodingFilter]))
class CodingViewSet(ProjectScopedMixin, mixins.ListModelMixin, mixins.DestroyModelMixin, viewsets.GenericViewSet):
    """Codings; filter with ?interview=<uuid>&code=<uuid>&coder=<username>. POST applies a code to segments.

    DELETE removes only your own coding: others' codings are never overwritten.
    """

    serializer_class = CodingSerializer
    pagination_class = CodingPagination

    def per_interview_counts(self) -> list[tuple[int, int]] | None:
        """The unfiltered list's codings per interview, from the project's cached counts; None when filtered."""
        if query_filters(self.request, CodingFilter):
            return None
        return interview_coding_counts(self.project)

    def get_queryset(self):
        qs = Coding.objects.filter(interview__project=self.project, interview__deleted_at__isnull=True).select_related(
            "code", "interview", "coder").order_by("interview_id", "segment_id", "id")
        if self.action != "list":
            return qs
        return qs.filter(**query_filters(self.request, CodingFilter))

    @extend_schema(request=CodingCreateSerializer, responses={200: CodingResultSerializer, 201: CodingResultSerializer})
    def create(self, request: Request, *args, **kwargs) -> Response:
        """Apply a code to segments: 201 when something was coded, 200 when all were coded already."""
        s = CodingCreateSerializer(data=request.data)
        s.is_valid(raise_exception=True)
        code = Code.objects.for_project(self.project).filter(uuid=s.validated_data["code"]).first()
        if code is None:
            raise serializers.ValidationError({"code": ["No code with this id in this project."]})
        interview = Interview.objects.for_project(self.project).filter(uuid=s.validated_data["interview"]).first()
        if interview is None:
            raise serializers.ValidationError({"interview": ["No interview with this id in this project."]})
        result = coding_apply(project_uuid=self.project.uuid, interview_uuid=interview.uuid,
                              user_id=request.user.pk, code_id=code.pk, segment_ids=s.validated_data["segments"],
                              any_speaker=s.validated_data["any_speaker"])
        if not result.code_found:
            why = (f"was merged into “{code.merged_into.name}”; code with that instead" if code.merged_into_id
                   else "is archived; bring it back to code with it")
            raise serializers.ValidationError({"code": [f"“{code.name}” {why}."]})
        if not result.segments_found:
            raise serializers.ValidationError({"segments": [_uncodable(interview, s.validated_data["segments"])]})
        coded, codable = interview_segment_progress(result.interview_id)
        return Response({"created": result.changed, "coded": coded, "codable": codable},
                        status=status.HTTP_201_CREATED if result.changed else status.HTTP_200_OK)

    def perform_destroy(self, instance: Coding) -> None:
        if instance.coder_id != self.request.user.pk:
            raise Http404("No such coding of yours.")
        coding_remove(project_uuid=self.project.uuid, interview_uuid=instance.interview.uuid, user_id=self.request.user.pk,
                      code_id=instance.code_id, segment_ids=[instance.segment_id])


def _uncodable(interview: Interview, segment_ids: list[int]) -> str:
    """Why none of these segments could be coded in the interview (an error's message: one more query)."""
    speakers = dict(Segment.objects.filter(interview=interview, pk__in=segment_ids).values_list("pk", "speaker"))
    elsewhere = [pk for pk in segment_ids if pk not in speakers]
    if elsewhere:
        return f"Not segments of “{interview.title}”: {listed(elsewhere)}."
    return ("These are interviewer, system or tool segments; send any_speaker: true to code them "
            "(only the participant's segments are coded otherwise).")


class NoteSerializer(serializers.ModelSerializer):
    turn = serializers.SlugRelatedField(slug_field="uuid", read_only=True, allow_null=True,
                                        help_text="The turn the note is on; null for a note on the whole interview.")
    turn_position = serializers.IntegerField(source="turn.position", read_only=True, allow_null=True, default=None)
    author = serializers.CharField(source="author.username", read_only=True)
    mine = serializers.SerializerMethodField(help_text="Written by you (only your own notes can be changed).")

    class Meta:
        model = Note
        fields = ["turn", "turn_position", "author", "mine", "text", "created_at", "updated_at"]
        read_only_fields = fields

    def get_mine(self, note: Note) -> bool:
        return note.author_id == self.context["request"].user.pk


class NoteFilter(serializers.Serializer):
    turn = serializers.UUIDField(required=False, source="turn__uuid", help_text="Only the notes on this turn.")


class NotePlace(serializers.Serializer):
    turn = serializers.UUIDField(required=False, help_text="The turn your note is on; leave out for your note on the whole interview.")


class NoteTextSerializer(serializers.Serializer):
    text = serializers.CharField(max_length=20000, help_text="The note; it replaces your earlier note in the same place.")


INTERVIEW_UUID = OpenApiParameter("interview_uuid", OpenApiTypes.UUID, OpenApiParameter.PATH)


@extend_schema_view(list=extend_schema(parameters=[INTERVIEW_UUID, NoteFilter]))
class NoteViewSet(ProjectScopedMixin, mixins.ListModelMixin, viewsets.GenericViewSet):
    """Familiarisation notes on an interview and its turns, by every member; filter with ?turn=<uuid>.

    Each researcher has at most one note per place (the interview, or one turn): PUT notes/mine/ writes yours,
    DELETE notes/mine/ removes it; others' notes are never changed.
    """

    serializer_class = NoteSerializer

    def get_serializer_class(self):
        # What PUT notes/mine/ takes, so OPTIONS describes the body it really reads.
        return NoteTextSerializer if self.action == "mine" else NoteSerializer

    @property
    def interview(self) -> Interview:
        if not hasattr(self, "_interview"):
            self._interview = get_object_or_404(Interview.objects.for_project(self.project), uuid=self.kwargs["interview_uuid"])
        return self._interview

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Note.objects.none()
        notes = Note.objects.for_interview(self.interview).select_related("turn").defer("turn__text", "turn__metadata")
        return notes.filter(**query_filters(self.request, NoteFilter))

    def _place(self) -> Turn | None:
        """The turn named by ?turn= (None: the interview itself); 400 if it is not one of the interview's."""
        wanted = query_filters(self.request, NotePlace)
        if "turn" not in wanted:
            return None
        turn = Turn.objects.filter(interview=self.interview, uuid=wanted["turn"]).only("id", "uuid", "interview_id", "position").first()
        if turn is None:
            raise serializers.ValidationError({"turn": [f"This interview has no turn {wanted['turn']}."]})
        return turn

    @extend_schema(methods=["PUT"], parameters=[INTERVIEW_UUID, NotePlace], request=NoteTextSerializer,
                   responses={200: NoteSerializer, 201: NoteSerializer}, description="Write your note: 201 when new, 200 when it replaced yours.")
    @extend_schema(methods=["DELETE"], parameters=[INTERVIEW_UUID, NotePlace], request=None, responses={204: None},
                   description="Delete your note (404 if you have none there).")
    @action(detail=False, methods=["put", "delete"], url_path="mine")
    def mine(self, request: Request, *args, **kwargs) -> Response:
        turn = self._place()
        if request.method == "DELETE":
            if not Note.objects.filter(interview=self.interview, turn=turn, author=request.user).exists():
                raise Http404("You have no note here.")
            note_save(interview=self.interview, turn=turn, author=request.user, text="")
            return Response(status=status.HTTP_204_NO_CONTENT)
        data = NoteTextSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        existed = Note.objects.filter(interview=self.interview, turn=turn, author=request.user).exists()
        try:
            note = note_save(interview=self.interview, turn=turn, author=request.user, text=data.validated_data["text"])
        except DjangoValidationError as exc:
            raise drf_error(exc) from exc
        return Response(NoteSerializer(note, context=self.get_serializer_context()).data,
                        status=status.HTTP_200_OK if existed else status.HTTP_201_CREATED)
