from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from coding.models import Code
from coding.services import NAME_MAX_LENGTH
from interviews.models import Interview, Participant
from projects.models import Project
from projects.widgets import QuickSelect

REASON_HELP = "Optional: why — kept in the codebook's history."


class _CodeNames(forms.models.ModelChoiceIterator):
    """A code select's options as (pk, name) straight from one query. Django's iterator makes a Code for each
    option through a server-side cursor: 3.6 ms of a code's page in a 100-code codebook (its two selects list every
    code)."""

    def __iter__(self):
        if self.field.empty_label is not None:
            yield ("", self.field.empty_label)
        yield from self.queryset.values_list("pk", "name")


class _CodesInUse(_CodeNames):
    """Only codes in use (not archived, not in the trash) as options, whatever else the field accepts."""

    def __init__(self, field: forms.ModelChoiceField) -> None:
        super().__init__(field)
        self.queryset = self.queryset.alive().filter(archived=False)


class CodeChoiceField(forms.ModelChoiceField):
    """A choice of one of the project's codes: listed by name, cleaned to the Code through the queryset."""

    iterator = _CodeNames

    def __init__(self, **kwargs) -> None:
        super().__init__(queryset=Code.objects.none(), widget=QuickSelect, **kwargs)


class CodeForm(forms.Form):
    name = forms.CharField(max_length=NAME_MAX_LENGTH)
    kind = forms.ChoiceField(choices=Code.Kind.choices, help_text="Semantic: explicit content. Latent: underlying reasoning.")
    colour = forms.CharField(max_length=7, required=False, widget=forms.TextInput(attrs={"type": "color"}))
    definition = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    include_when = forms.CharField(label="What counts", required=False, widget=forms.Textarea(attrs={"rows": 2}))
    exclude_when = forms.CharField(label="What does not count", required=False, widget=forms.Textarea(attrs={"rows": 2}))
    example = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    reason = forms.CharField(required=False, help_text=REASON_HELP)


class CodeEditForm(CodeForm):
    version = forms.IntegerField(widget=forms.HiddenInput)


class CodeCreateForm(CodeForm):
    parent = CodeChoiceField(required=False, empty_label="(top level)")

    def __init__(self, *args, project=None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["parent"].queryset = Code.objects.for_project(project).filter(archived=False)
        self.fields["colour"].required = False


class MoveForm(forms.Form):
    parent = CodeChoiceField(required=False, empty_label="(top level)")
    reason = forms.CharField(required=False, help_text=REASON_HELP)

    def __init__(self, *args, code: Code, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["parent"].queryset = Code.objects.for_project(code.project).filter(archived=False).exclude(pk=code.pk)


class MergeForm(forms.Form):
    target = CodeChoiceField(label="Merge into")
    reason = forms.CharField(required=False, help_text=REASON_HELP)

    def __init__(self, *args, code: Code, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # Codes in use are offered, any of the project's accepted: one merged, archived or trashed since the page
        # loaded is refused by code_merge saying so (and who merged it), not as "not one of the available choices".
        target = self.fields["target"]
        target.iterator = _CodesInUse
        target.queryset = Code.objects.filter(project=code.project).exclude(pk=code.pk)


class SplitForm(forms.Form):
    names = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), label="New codes",
                            help_text="One name per line; at least two. The new codes sit beside this one.")
    archive_original = forms.BooleanField(required=False, label="Archive this code afterwards")
    reason = forms.CharField(required=False, help_text=REASON_HELP)


class ArchiveForm(forms.Form):
    archived = forms.BooleanField(required=False)
    reason = forms.CharField(required=False, help_text=REASON_HELP)


class ImportForm(forms.Form):
    file = forms.FileField(help_text="CSV with a header row (name, definition, what counts, what does not count, "
                                     "example, kind, colour, parent) or a REFI-QDA codebook (.qdc).")


class ReaderSettingsForm(forms.Form):
    enabled = forms.BooleanField(required=False, label="Let the AI second reader propose codes in this project")
    endpoint = forms.ModelChoiceField(
        queryset=Participant.objects.none(), required=False, to_field_name="uuid", label="Endpoint that reads",
        help_text="One of the project's live participants: its URL, model and key. Transcript text is sent there.",
    )
    local_only = forms.BooleanField(required=False, label="Send transcript text only to local endpoints",
                                    help_text="Refuse any endpoint outside this machine or its private network.")
    price_input_per_million = forms.DecimalField(
        required=False, min_value=0, max_digits=10, decimal_places=4, label="Price per million input tokens",
        help_text="Optional, in your provider's currency: the estimate before a run then shows its cost.")
    price_output_per_million = forms.DecimalField(
        required=False, min_value=0, max_digits=10, decimal_places=4, label="Price per million output tokens")

    def __init__(self, *args: Any, project: Project, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["endpoint"].queryset = Participant.objects.filter(project=project, is_live=True).order_by("label")

    @classmethod
    def for_current(cls, project: Project, current: Any) -> ReaderSettingsForm:
        """Unbound, showing the project's settings as saved (`current` is its ReaderSettings)."""
        return cls(project=project, initial={
            "enabled": current.enabled, "endpoint": current.endpoint.uuid if current.endpoint else None,
            "local_only": current.local_only, "price_input_per_million": current.price_input_per_million,
            "price_output_per_million": current.price_output_per_million})


class ReaderRunForm(forms.Form):
    participants = forms.ModelMultipleChoiceField(
        queryset=Participant.objects.none(), required=False, to_field_name="uuid", widget=forms.CheckboxSelectMultiple,
        label="Interviews of", help_text="Every interview of the models ticked.",
    )
    interview = forms.ModelChoiceField(queryset=Interview.objects.none(), required=False, to_field_name="uuid",
                                       widget=forms.HiddenInput)
    code = forms.ModelChoiceField(queryset=Code.objects.none(), required=False, to_field_name="uuid",
                                  widget=forms.HiddenInput)
    with_critic = forms.BooleanField(required=False, initial=True, label="A critic checks each proposal")
    new_code_ideas = forms.BooleanField(required=False, label="Also propose ideas for new codes")

    def __init__(self, *args: Any, project: Project, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.project = project
        self.fields["participants"].queryset = Participant.objects.filter(project=project).order_by("label")
        self.fields["interview"].queryset = Interview.objects.alive().filter(project=project)
        self.fields["code"].queryset = Code.objects.for_project(project).filter(archived=False)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        chosen = Interview.objects.alive().filter(project=self.project)
        if cleaned.get("interview"):
            chosen = chosen.filter(pk=cleaned["interview"].pk)
        elif cleaned.get("participants"):
            chosen = chosen.filter(participant__in=cleaned["participants"])
        elif cleaned.get("code"):
            pass  # finding more like a code reads every interview unless models are ticked
        else:
            raise ValidationError("Tick the models whose interviews the second reader should read.")
        cleaned["interviews"] = list(chosen.order_by("conducted_at", "pk"))
        if not cleaned["interviews"]:
            raise ValidationError("No interviews of these models yet.")
        return cleaned
