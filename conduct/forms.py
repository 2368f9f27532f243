from __future__ import annotations

import ipaddress
from typing import Any
from urllib.parse import urlsplit

from django import forms
from django.core.exceptions import ValidationError

from conduct.models import EndpointKey
from interviews.models import Guide, GuideVersion, Participant
from projects.models import Project

PLANNED_HELP = (
    "One question per line. Probes go on the lines below their question, each starting with “-” "
    "(for example a line “- Can you give an example?”)."
)


def parse_planned_questions(text: str) -> list[dict[str, Any]]:
    """Questions one per line, probes below them starting with '-' (or indented)."""
    questions: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        is_probe = line.lstrip().startswith(("-", "*", "•")) or line[:1] in (" ", "\t")
        content = line.strip().lstrip("-*•").strip()
        if not content:
            raise ValidationError(f"Line {number}: the probe is empty.")
        if is_probe:
            if not questions:
                raise ValidationError(f"Line {number}: a probe (“{content[:40]}”) must come after its question.")
            questions[-1]["probes"].append(content)
        else:
            questions.append({"text": content, "probes": []})
    return questions


def planned_questions_text(questions: list[dict[str, Any]]) -> str:
    lines = []
    for question in questions:
        lines.append(question.get("text", ""))
        lines.extend(f"- {probe}" for probe in question.get("probes", []))
    return "\n".join(lines)


class GuideForm(forms.Form):
    name = forms.CharField(max_length=200)
    opening_prompt = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 5}),
        help_text="Sent to every model at once when an interview starts.",
    )
    system_prompt = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Optional. Sent as the system message before every question.",
    )
    planned_questions = forms.CharField(
        required=False, strip=False, widget=forms.Textarea(attrs={"rows": 8}), help_text=PLANNED_HELP
    )
    notes = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))

    def __init__(self, *args: Any, project: Project, guide: Guide | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.project, self.guide = project, guide

    def clean_name(self) -> str:
        name = self.cleaned_data["name"].strip()
        clash = Guide.objects.filter(project=self.project, name__iexact=name)
        if self.guide:
            clash = clash.exclude(pk=self.guide.pk)
        if clash.exists():
            raise ValidationError("This project already has a guide with that name.")
        return name

    def clean_planned_questions(self) -> list[dict[str, Any]]:
        return parse_planned_questions(self.cleaned_data.get("planned_questions", ""))

    @classmethod
    def initial_from(cls, version: GuideVersion) -> dict[str, Any]:
        return {
            "name": version.guide.name,
            "opening_prompt": version.opening_prompt,
            "system_prompt": version.system_prompt,
            "planned_questions": planned_questions_text(version.planned_questions),
            "notes": version.notes,
        }


class LiveParticipantForm(forms.Form):
    label = forms.CharField(max_length=100, help_text="How the paper names it, e.g. “GPT-4o”.")
    provider = forms.CharField(max_length=100, required=False, help_text="e.g. OpenAI, DeepSeek, a local vLLM")
    model_id = forms.CharField(max_length=200, label="Model", help_text="Exact model id sent to the endpoint.")
    base_url = forms.URLField(
        required=False,
        label="Base URL",
        assume_scheme="https",
        help_text="OpenAI-compatible base URL, e.g. http://localhost:11434/v1. Empty: OPENAI_BASE_URL or OpenAI.",
    )
    temperature = forms.FloatField(required=False, min_value=0, max_value=2)
    top_p = forms.FloatField(required=False, min_value=0, max_value=1, label="top_p")
    seed = forms.IntegerField(required=False)
    max_tokens = forms.IntegerField(required=False, min_value=1, label="Max tokens")
    timeout_seconds = forms.FloatField(
        initial=60, min_value=1, max_value=600, label="Timeout (seconds)",
        help_text="How long to wait for the first and each next piece of the answer.",
    )
    api_key = forms.ModelChoiceField(
        queryset=EndpointKey.objects.none(),
        required=False,
        label="API key",
        empty_label="Deployment key (OPENAI_API_KEY)",
    )
    stream_answers = forms.BooleanField(
        required=False,
        initial=True,
        label="Stream answers",
        help_text="Show each answer as it is written. Turn off for servers that cannot stream: "
        "the whole answer then appears at once, with the same provenance.",
    )

    def __init__(self, *args: Any, project: Project, participant: Participant | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.project, self.participant = project, participant
        self.fields["api_key"].queryset = EndpointKey.objects.filter(project=project)

    def clean_base_url(self) -> str:
        url = self.cleaned_data["base_url"].strip()
        host = urlsplit(url).hostname or ""
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return url
        # Link-local addresses are where cloud metadata services (and their credentials) live.
        if address.is_link_local or address.is_multicast or address.is_unspecified:
            raise ValidationError(f"{host} is not an address a model endpoint can have.")
        return url

    def clean_label(self) -> str:
        label = self.cleaned_data["label"].strip()
        clash = Participant.objects.filter(project=self.project, label=label)
        if self.participant:
            clash = clash.exclude(pk=self.participant.pk)
        if clash.exists():
            raise ValidationError("Another participant in this project already has this label.")
        return label


class EndpointKeyForm(forms.Form):
    label = forms.CharField(max_length=100, help_text="A name to pick it by, e.g. “OpenRouter (lab)”.")
    plain_key = forms.CharField(
        label="API key",
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        help_text="Stored encrypted; after saving only its last four characters are shown.",
    )

    def __init__(self, *args: Any, project: Project, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.project = project

    def clean_label(self) -> str:
        label = self.cleaned_data["label"].strip()
        if EndpointKey.objects.filter(project=self.project, label=label).exists():
            raise ValidationError("A key with this label is already stored.")
        return label


class StartForm(forms.Form):
    guide = forms.ModelChoiceField(queryset=Guide.objects.none(), empty_label=None)
    participants = forms.ModelMultipleChoiceField(
        queryset=Participant.objects.none(),
        widget=forms.CheckboxSelectMultiple,
        error_messages={"required": "Pick at least one live participant."},
        help_text="Each gets its own interview; the opening prompt goes to all at once.",
    )

    def __init__(self, *args: Any, project: Project, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["guide"].queryset = Guide.objects.filter(project=project).order_by("name")
        self.fields["participants"].queryset = Participant.objects.filter(project=project, is_live=True).order_by("label")
        self.fields["guide"].to_field_name = "uuid"
        self.fields["participants"].to_field_name = "uuid"


class AskForm(forms.Form):
    text = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), error_messages={"required": "Write a question first."})
    to = forms.CharField(required=False)  # "all" or an interview uuid
    planned = forms.IntegerField(required=False, min_value=0)


class RerunForm(forms.Form):
    participant = forms.ModelChoiceField(queryset=Participant.objects.none(), to_field_name="uuid")

    def __init__(self, *args: Any, project: Project, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["participant"].queryset = Participant.objects.filter(project=project, is_live=True)
