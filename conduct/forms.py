from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError

from conduct.answering import deployment_base_url
from conduct.models import EndpointKey, LiveEndpoint
from conduct.services import KEY_LABEL_TAKEN, guide_name_checked
from conduct.throttle import DEFAULT_MAX_IN_FLIGHT
from interviews.models import Guide, GuideVersion, Participant
from interviews.services import participant_label_taken
from projects.models import Project
from projects.names import normalised_name

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
        try:
            return guide_name_checked(self.project, self.cleaned_data["name"], exclude=self.guide)
        except ValidationError as exc:
            raise ValidationError(exc.message_dict["name"]) from None

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
        max_length=500,
        help_text="OpenAI-compatible base URL, for endpoints that need no key. With a key, leave it empty: "
        "each key goes only to the endpoint it is bound to.",
    )
    temperature = forms.FloatField(required=False, min_value=0, max_value=2)
    top_p = forms.FloatField(required=False, min_value=0, max_value=1, label="top_p")
    seed = forms.IntegerField(required=False)
    max_tokens = forms.IntegerField(required=False, min_value=1, label="Max tokens")
    timeout_seconds = forms.FloatField(
        initial=60, min_value=1, max_value=600, label="Timeout (seconds)",
        help_text="How long to wait for the first and each next piece of the answer.",
    )
    max_in_flight = forms.IntegerField(
        required=False, initial=DEFAULT_MAX_IN_FLIGHT, min_value=1, max_value=256, label="Requests at once",
        help_text="The most requests this endpoint gets at the same time, from probes, the second reader and live "
        "interviews together, over all workers. Lower it for a small local server or a tight rate limit.",
    )
    key = forms.ChoiceField(label="API key", help_text="A key decides where requests go; no key can be re-aimed.")
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
        self.stored_keys = {str(key.uuid): key for key in EndpointKey.objects.filter(project=project)}
        self.fields["key"].choices = key_choices(self.stored_keys.values())

    def clean(self) -> dict[str, Any]:
        """The chosen key, as the service takes it: a stored key, the deployment's key, or none."""
        cleaned = super().clean()
        choice = cleaned.pop("key", KEY_NONE)
        cleaned["api_key"] = self.stored_keys.get(choice)
        cleaned["use_deployment_key"] = choice == KEY_DEPLOYMENT
        return cleaned

    def clean_max_in_flight(self) -> int:
        return self.cleaned_data.get("max_in_flight") or DEFAULT_MAX_IN_FLIGHT

    def clean_label(self) -> str:
        label = normalised_name(self.cleaned_data["label"])
        if taken := participant_label_taken(self.project.pk, label, exclude=self.participant.pk if self.participant else None):
            raise ValidationError(taken)
        return label


KEY_DEPLOYMENT, KEY_NONE = "deployment", "none"


def key_choices(stored_keys: Iterable[EndpointKey]) -> list[tuple[str, str]]:
    """The keys a participant may use, each named with the only endpoint it goes to."""
    return [
        (KEY_NONE, "No key (a server that needs none, e.g. a local Ollama or vLLM)"),
        (KEY_DEPLOYMENT, f"Deployment key (OPENAI_API_KEY{'' if settings.OPENAI_API_KEY else ', not set on this server'})"
                         f" → {deployment_base_url()}"),
        *((str(key.uuid), f"{key.label} {key.hint} → {key.base_url or 'no endpoint: store it again'}")
          for key in stored_keys),
    ]


def key_choice_of(live: LiveEndpoint | None) -> str:
    if live is None or live.key_source == LiveEndpoint.KeySource.NONE:
        return KEY_NONE
    if live.key_source == LiveEndpoint.KeySource.DEPLOYMENT:
        return KEY_DEPLOYMENT
    return str(live.api_key.uuid) if live.api_key else KEY_NONE


class EndpointKeyForm(forms.Form):
    label = forms.CharField(max_length=100, help_text="A name to pick it by, e.g. “OpenRouter (lab)”.")
    base_url = forms.URLField(
        label="Endpoint (base URL)", max_length=500, assume_scheme="https",
        help_text="The only endpoint this key is ever sent to, e.g. https://openrouter.ai/api/v1. "
        "It cannot be changed later: store the key again for another endpoint.",
    )
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
            raise ValidationError(KEY_LABEL_TAKEN)
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
