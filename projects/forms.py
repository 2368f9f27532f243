from __future__ import annotations

from django import forms

from projects.models import Membership, Project, Role


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
    user = forms.CharField(label="Username or email", max_length=254)
    role = forms.ChoiceField(choices=Role.choices, initial=Role.ANALYST)


class MemberRoleForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices)


class PositionalityForm(forms.ModelForm):
    class Meta:
        model = Membership
        fields = ["positionality"]
        widgets = {"positionality": forms.Textarea(attrs={"rows": 6})}
