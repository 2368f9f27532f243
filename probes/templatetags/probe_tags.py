from __future__ import annotations

from django import template

from projects.numbers import PValue, number_text

register = template.Library()


@register.filter
def rate(value) -> str:
    """A scoring Rate as "0.75 [0.30, 0.95]"; "—" when nothing was counted."""
    if value is None or value.value is None:
        return "—"
    low, high = value.interval
    return f"{value.value:.2f} [{low:.2f}, {high:.2f}]"


@register.filter
def p_value(test) -> str:
    if test is None:
        return "—"
    return PValue(test.p_value).text


@register.filter
def get(mapping, key):
    return mapping.get(key) if mapping else None


@register.filter
def table_cell(value) -> str:
    """A paper-table figure as the downloads print it (rounded, "< 0.001"); text as it is."""
    return number_text(value) if isinstance(value, float) else str(value)
