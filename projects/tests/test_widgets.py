"""QuickSelect writes the HTML Django's Select writes with its templates."""

from __future__ import annotations

from django import forms

from projects.widgets import QuickSelect

CHOICES = [("", "(top level)"), (1, "Belonging"), (2, 'Tom\'s <b>"code"</b> & more'), (3, "Third")]
GROUPED = [("", "none"), ("Semantic", [(1, "One"), (2, "Two")]), ("Latent <i>", [(3, "Three")])]


def _both(choices, value, attrs):
    django_html = str(forms.Select(choices=choices).render("parent", value, attrs=attrs))
    quick_html = str(QuickSelect(choices=choices).render("parent", value, attrs=attrs))
    return django_html, quick_html


def test_quick_select_writes_django_selects_html():
    for value in (None, "", 2, "3"):
        for attrs in (None, {"id": "id_parent"}, {"id": "id_parent", "required": True, "aria-invalid": "true",
                                                  "disabled": False, "data-x": '"quoted" <tag>'}):
            django_html, quick_html = _both(CHOICES, value, attrs)
            assert quick_html == django_html


def test_quick_select_writes_option_groups_like_django():
    django_html, quick_html = _both(GROUPED, 3, {"id": "g"})
    assert quick_html == django_html
    assert "<optgroup" in quick_html


def test_quick_select_in_a_form_field_keeps_the_bound_fields_attributes():
    class ParentForm(forms.Form):
        parent = forms.ChoiceField(choices=CHOICES, widget=QuickSelect, help_text="Where it sits.")

    class DjangoForm(forms.Form):
        parent = forms.ChoiceField(choices=CHOICES, help_text="Where it sits.")

    data = {"parent": "nonsense"}  # invalid: aria-invalid and the help text's aria-describedby
    quick, django_form = ParentForm(data), DjangoForm(data)
    assert not quick.is_valid() and not django_form.is_valid()
    assert str(quick["parent"]) == str(django_form["parent"])
