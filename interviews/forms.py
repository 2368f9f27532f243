"""Forms for editing an interview's details and an imported participant's description."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from interviews.models import Interview, Participant
from projects.models import Project


class InterviewForm(forms.Form):
    title = forms.CharField(max_length=300)
    conducted_at = forms.DateTimeField(
        required=False, label="Conducted",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
        help_text="When the interview took place (UTC). Leave empty if unknown.",
    )
    depth = forms.ChoiceField(choices=Interview.Depth.choices,
                              help_text="Brief: a short exchange; comprehensive: a full interview.")
    participant = forms.ModelChoiceField(queryset=Participant.objects.none(), to_field_name="uuid", empty_label=None,
                                         help_text="The chatbot that answered.")
    notes = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 5}))

    def __init__(self, *args: Any, project: Project, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["participant"].queryset = Participant.objects.filter(project=project).order_by("label")

    @staticmethod
    def initial_from(interview: Interview) -> dict[str, Any]:
        return {"title": interview.title, "conducted_at": interview.conducted_at, "depth": interview.depth,
                "participant": interview.participant.uuid, "notes": interview.notes}


class ParticipantForm(forms.Form):
    label = forms.CharField(max_length=100, help_text="How the paper names it, e.g. “GPT-4o”. Unique in the project.")
    provider = forms.CharField(max_length=100, required=False, help_text="e.g. OpenAI, Anthropic, Meta, DeepSeek")
    model_id = forms.CharField(max_length=200, required=False, label="Model id",
                               help_text="Exact model id, e.g. gpt-4o-2024-08-06")
    interface = forms.ChoiceField(choices=Participant.Interface.choices)
    snapshot_date = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d"),
                                    help_text="The date of the model snapshot, if known.")

    @staticmethod
    def initial_from(participant: Participant) -> dict[str, Any]:
        return {field: getattr(participant, field) for field in ("label", "provider", "model_id", "interface", "snapshot_date")}


def shown_value(value: Any) -> str:
    """An attribute value as its text box shows it: text as is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


class AttributeRowForm(forms.Form):
    key = forms.CharField(max_length=100, required=False, label="Name")
    value = forms.CharField(max_length=1000, required=False, label="Value")


class BaseAttributeFormSet(forms.BaseFormSet):
    def clean(self) -> None:
        if any(self.errors):
            return
        seen: dict[str, int] = {}
        for row, form in enumerate(self.forms, start=1):
            key = form.cleaned_data.get("key", "").strip()
            value = form.cleaned_data.get("value", "")
            if not key and value.strip():
                form.add_error("key", f"Row {row}: give the value “{value[:40]}” a name, or clear the row.")
            elif key in seen:
                raise ValidationError(f"Case attribute “{key}” appears twice (rows {seen[key]} and {row}); names must be unique.")
            elif key:
                seen[key] = row

    def attributes(self, previous: dict[str, Any]) -> dict[str, Any]:
        """The rows as a mapping; a value left as shown keeps its original type (numbers stay numbers)."""
        result: dict[str, Any] = {}
        for form in self.forms:
            key = form.cleaned_data.get("key", "").strip()
            if not key:
                continue
            value = form.cleaned_data.get("value", "")
            old = previous.get(key) if isinstance(previous, dict) else None
            result[key] = old if old is not None and shown_value(old) == value else value
        return result


AttributeFormSet = forms.formset_factory(AttributeRowForm, formset=BaseAttributeFormSet, extra=2, max_num=200,
                                         validate_max=True)


def attribute_initial(attributes: Any) -> list[dict[str, str]]:
    attributes = attributes if isinstance(attributes, dict) else {}
    return [{"key": key, "value": shown_value(value)} for key, value in attributes.items()]
