from __future__ import annotations

from django import forms
from django.contrib.auth import password_validation
from django.core.exceptions import ValidationError

from accounts.services import API_TOKEN_LIFETIMES
from projects.models import Membership, Project, Role

# The largest id a bigint column holds: a larger number in a statement is a database error, not "no such row".
MAX_ROW_ID = 2**63 - 1


def row_id(value: str | None) -> int | None:
    """A row id from a form or query string: a whole number from 1 to MAX_ROW_ID, else None (not an id)."""
    value = value or ""
    # isdigit() alone passes other scripts' digits, and the length check keeps int() off a 4,300-digit string.
    if not (value.isascii() and value.isdigit() and len(value) <= len(str(MAX_ROW_ID))):
        return None
    number = int(value)
    return number if 1 <= number <= MAX_ROW_ID else None


class ProjectForm(forms.ModelForm):
    class Meta:
        model = Project
        fields = ["name", "description", "research_question"]
        widgets = {"description": forms.Textarea(attrs={"rows": 3}), "research_question": forms.Textarea(attrs={"rows": 2})}


class ProjectSettingsForm(forms.ModelForm):
    class Meta:
        model = Project
        fields = ["name", "description", "research_question", "agreement_statistics_enabled"]
        widgets = {"description": forms.Textarea(attrs={"rows": 3}), "research_question": forms.Textarea(attrs={"rows": 2})}
        help_texts = {
            "agreement_statistics_enabled": "Off by default: reflexive TA does not use inter-rater reliability. "
            "Switch on for codebook-style teams (Cohen's κ, Krippendorff's α)."
        }


class MemberAddForm(forms.Form):
    user = forms.CharField(
        label="Username or email", max_length=254,
        help_text="Someone without an account yet gets an invitation link (by email, and shown here to copy).",
    )
    role = forms.ChoiceField(choices=Role.choices, initial=Role.ANALYST)


class ApiTokenForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="What the token is for, e.g. “analysis notebook on my laptop”.")
    lifetime_days = forms.TypedChoiceField(label="Expires after", coerce=int, initial=90, choices=list(API_TOKEN_LIFETIMES.items()))


def _new_password_rules() -> list:
    # Validators that only act on an existing account's password change (revoking its API tokens) say
    # nothing useful to someone creating an account.
    return [v for v in password_validation.get_default_password_validators() if not getattr(v, "on_change_only", False)]


class InvitationSignupForm(forms.Form):
    """A new account for an invited person; the services check the username and the password rules."""

    username = forms.CharField(max_length=150, help_text="Letters, digits and @ . + - _ only.",
                               widget=forms.TextInput(attrs={"autocomplete": "username", "autofocus": True}))
    password1 = forms.CharField(label="Password", strip=False, widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
                                help_text=" ".join(password_validation.password_validators_help_texts(_new_password_rules())))
    password2 = forms.CharField(label="Password again", strip=False, widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}))

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("password1") and cleaned.get("password2") and cleaned["password1"] != cleaned["password2"]:
            self.add_error("password2", "The two passwords differ: type the same password twice.")
        return cleaned


class MemberRoleForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices)


class PositionalityForm(forms.ModelForm):
    class Meta:
        model = Membership
        fields = ["positionality"]
        widgets = {"positionality": forms.Textarea(attrs={"rows": 6})}


def add_service_errors(form: forms.Form, exc: ValidationError, *, renamed: dict[str, str] | None = None) -> None:
    """Show a service's ValidationError on the form: next to the field it names (a service name the form calls
    otherwise through `renamed`), else above the form."""
    if not hasattr(exc, "error_dict"):
        form.add_error(None, exc.messages)
        return
    for name, problems in exc.message_dict.items():
        name = (renamed or {}).get(name, name)
        form.add_error(name if name in form.fields else None, problems)
