from __future__ import annotations

import json
from typing import Any

from django import forms

from interviews.models import Participant
from probes.models import ConditionVersion, OutputFormat, Probe
from projects import safejson


def _split(value: str) -> list[str]:
    """Comma- or line-separated words, trimmed, blanks dropped, order kept."""
    parts = [p.strip() for line in value.splitlines() for p in line.split(",")]
    return list(dict.fromkeys(p for p in parts if p))


def _json_value(raw: str) -> Any:
    try:
        return safejson.loads(raw)
    except safejson.JSONInputError as exc:
        raise forms.ValidationError(f"Not valid JSON: {exc}.") from None


class ProbeForm(forms.ModelForm):
    class Meta:
        model = Probe
        fields = ["name", "description"]
        widgets = {"description": forms.Textarea(attrs={"rows": 2})}


class ItemImportForm(forms.Form):
    file = forms.FileField(help_text="CSV (UTF-8), XLSX (first sheet) or JSONL: one item per row.")
    text_column = forms.CharField(initial="text", max_length=200)
    label_columns = forms.CharField(initial="label", max_length=500, help_text="Ground-truth column(s), comma-separated; the first is scored.")
    min_words = forms.IntegerField(min_value=0, required=False, help_text="Drop items with fewer words.")
    exclude_words = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}),
                                    help_text="Drop items containing any of these whole words (comma- or line-separated).")
    per_label = forms.IntegerField(min_value=1, required=False, label="Sample per label",
                                   help_text="Draw this many items of each ground-truth label; empty keeps all.")
    seed = forms.IntegerField(required=False, help_text="The sample's random seed; empty picks one and records it.")

    def clean_label_columns(self) -> list[str]:
        return _split(self.cleaned_data["label_columns"])

    def clean_exclude_words(self) -> list[str]:
        return _split(self.cleaned_data["exclude_words"])


class SetupForm(forms.Form):
    participants = forms.ModelMultipleChoiceField(
        queryset=Participant.objects.none(), widget=forms.CheckboxSelectMultiple, label="Models",
        help_text="The project's live participants; set them up under Interviews → Conduct.",
    )
    repetitions = forms.IntegerField(min_value=1, max_value=100, initial=1)
    concurrency = forms.IntegerField(min_value=1, max_value=64, initial=4, label="Answers at once")

    def __init__(self, *args: Any, probe: Probe, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["participants"].queryset = Participant.objects.filter(project_id=probe.project_id, is_live=True)


class ConditionForm(forms.Form):
    name = forms.CharField(max_length=100)
    system_prompt = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    template = forms.CharField(widget=forms.Textarea(attrs={"rows": 6}), label="Prompt template",
                               help_text="{text} and any item column in braces, e.g. {stars}, are filled in per item.")
    temperature = forms.FloatField(required=False, min_value=0, max_value=2)
    seed = forms.IntegerField(required=False)
    max_tokens = forms.IntegerField(required=False, min_value=1)
    output_format = forms.ChoiceField(choices=OutputFormat.choices)
    label_key = forms.CharField(max_length=100, initial="label", help_text="JSON property or line label, e.g. “Gender”.")
    categories_key = forms.CharField(max_length=100, required=False, initial="categories",
                                     help_text="e.g. “Codes Applied”; empty when answers name no categories.")
    rationale_key = forms.CharField(max_length=100, required=False, initial="rationale", help_text="e.g. “Rationale”.")
    labels = forms.CharField(help_text="The allowed labels, comma-separated, e.g. “woman, man”.")
    categories = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}),
                                 help_text="The evidence categories offered, comma- or line-separated.")
    json_schema = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 6}), label="JSON schema",
                                  help_text="Sent as structured output; empty builds one from the keys, labels and categories.")

    pipeline = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 6}), label="Agent pipeline",
        help_text="Optional agents after this prompt, as JSON: [{\"name\": \"analysis\", \"system_prompt\": \"…\", "
                  "\"template\": \"… {text} … {previous}\"}, …]. {previous} is the earlier agents' answers; the last "
                  "agent's answer is scored. Needs the JSON schema output.")

    def clean_pipeline(self) -> list[Any]:
        raw = self.cleaned_data["pipeline"].strip()
        if not raw:
            return []
        value = _json_value(raw)
        if not isinstance(value, list):
            raise forms.ValidationError("The pipeline is a JSON list of agents ([…]).")
        return value

    def clean_labels(self) -> list[str]:
        return _split(self.cleaned_data["labels"])

    def clean_categories(self) -> list[str]:
        return _split(self.cleaned_data["categories"])

    def clean_json_schema(self) -> dict[str, Any]:
        raw = self.cleaned_data["json_schema"].strip()
        if not raw:
            return {}
        value = _json_value(raw)
        if not isinstance(value, dict):
            raise forms.ValidationError("A JSON schema is an object ({…}).")
        return value

    def version_fields(self) -> dict[str, Any]:
        data = dict(self.cleaned_data)
        data.pop("name")
        return data

    @staticmethod
    def initial_from(version: ConditionVersion) -> dict[str, Any]:
        fields = {f: getattr(version, f) for f in ("system_prompt", "template", "temperature", "seed", "max_tokens",
                                                   "output_format", "label_key", "categories_key", "rationale_key")}
        return fields | {
            "name": version.condition.name, "labels": ", ".join(version.labels), "categories": ", ".join(version.categories),
            "json_schema": json.dumps(version.json_schema, indent=2) if version.json_schema else "",
            "pipeline": json.dumps(version.pipeline, indent=2, ensure_ascii=False) if version.pipeline else "",
        }
