"""templates/includes/form.html: every field is named for assistive technology, groups of choices by a legend."""

from __future__ import annotations

from django import forms
from django.template.loader import render_to_string


class Choices(forms.Form):
    name = forms.CharField()
    models = forms.MultipleChoiceField(choices=[("a", "GPT-4o"), ("b", "Claude")], widget=forms.CheckboxSelectMultiple)
    depth = forms.ChoiceField(choices=[("s", "Short"), ("l", "Long")], widget=forms.RadioSelect)
    agree = forms.BooleanField()


def test_groups_of_choices_are_fieldsets_with_a_legend_and_no_label_points_nowhere():
    html = render_to_string("includes/form.html", {"form": Choices()})
    assert '<label for="">' not in html
    assert '<fieldset class="choices"><legend>Models</legend>' in html
    assert '<fieldset class="choices"><legend>Depth</legend>' in html
    assert '<label for="id_name">Name</label>' in html
    assert '<label for="id_models_0"><input type="checkbox" name="models" value="a"' in html  # each box named by its own label
