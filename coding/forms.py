from __future__ import annotations

from django import forms

from coding.models import Code
from projects.widgets import QuickSelect

REASON_HELP = "Optional: why — kept in the codebook's history."


class CodeForm(forms.Form):
    name = forms.CharField(max_length=200)
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
    parent = forms.ModelChoiceField(queryset=Code.objects.none(), required=False, empty_label="(top level)",
                                    widget=QuickSelect)

    def __init__(self, *args, project=None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["parent"].queryset = Code.objects.for_project(project).filter(archived=False)
        self.fields["colour"].required = False


class MoveForm(forms.Form):
    parent = forms.ModelChoiceField(queryset=Code.objects.none(), required=False, empty_label="(top level)",
                                    widget=QuickSelect)
    reason = forms.CharField(required=False, help_text=REASON_HELP)

    def __init__(self, *args, code: Code, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["parent"].queryset = Code.objects.for_project(code.project).filter(archived=False).exclude(pk=code.pk)


class MergeForm(forms.Form):
    target = forms.ModelChoiceField(queryset=Code.objects.none(), label="Merge into", widget=QuickSelect)
    reason = forms.CharField(required=False, help_text=REASON_HELP)

    def __init__(self, *args, code: Code, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["target"].queryset = Code.objects.for_project(code.project).filter(archived=False).exclude(pk=code.pk)


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
