"""Template filters for answer text: every page shows a quote through the one renderer (interviews.rendering)."""

from __future__ import annotations

from django import template
from django.template.defaultfilters import linebreaksbr
from django.utils.safestring import SafeString, mark_safe

from interviews.rendering import RichText, markdown_to_safe_html, quote_html, runs_html

register = template.Library()


@register.filter
def quote(source: str) -> SafeString:
    """A piece of an answer's Markdown source as the reader saw it: markers gone, bold and italics kept."""
    return quote_html(source or "")


@register.filter
def cell(value: object) -> SafeString:
    """A table cell: a quote with its styles, anything else as escaped text with its line breaks."""
    if isinstance(value, RichText):
        return runs_html(value.runs)
    return linebreaksbr(value, autoescape=True)


@register.filter
def answer(text: str) -> SafeString:
    """A whole answer rendered (live columns, re-run comparison); not cached, since a streaming answer changes."""
    return mark_safe(markdown_to_safe_html(text or ""))  # noqa: S308 - sanitised by nh3
