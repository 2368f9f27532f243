"""{% page_url page n %}: the current URL's query string with page `n`, every filter kept; {% query_with name=value %} likewise."""

from __future__ import annotations

from django import template

from projects.pagination import Page

register = template.Library()


@register.simple_tag(takes_context=True)
def page_url(context, page: Page, number: int) -> str:
    query = context["request"].GET.copy()
    if number > 1:
        query[page.param] = str(number)
    else:
        query.pop(page.param, None)
    return f"?{query.urlencode()}" if query else "?"


@register.simple_tag(takes_context=True)
def query_with(context, **changes) -> str:
    """The current URL's query string with the given parameters set, every other one kept."""
    query = context["request"].GET.copy()
    for name, value in changes.items():
        query[name] = str(value)
    return f"?{query.urlencode()}"
