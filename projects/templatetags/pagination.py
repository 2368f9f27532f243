"""{% page_url page n %}: the current URL's query string with page `n`, every filter kept."""

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
